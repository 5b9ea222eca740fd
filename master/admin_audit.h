/* The audit log around one admin API write (docs/audit.md): status.c takes
 * the log before it dispatches an authenticated POST or DELETE, the
 * handlers (status.c, admin_keys.c) fill the record's key, arguments and
 * before/after, and status.c appends it with the answer's status. */
#ifndef KV_ADMIN_AUDIT_H
#define KV_ADMIN_AUDIT_H

#include <microhttpd.h>

#include "common/audit_log.h"
#include "common/config.h"

struct kv_admin_audit {
	struct kv_audit_log	log;
	struct kv_audit_rec	rec;
};

/* Take CF's audit log for METHOD on URL from connection C: the record's
 * who is the id of the admin token presented (its SHA-256's first 12 hex
 * digits, as a key's; never the token), [server] admin_name and the
 * client's address.
 * Returns 0 (also with the log off), or -1 when the log cannot be taken:
 * logged (KV0820), and the caller answers 503 and changes nothing. */
int	kv_admin_audit_begin(struct kv_admin_audit *aa, const struct kv_config *cf,
	    struct MHD_Connection *c, const char *method, const char *url);

/* Append the record with STATUS and let go of the log; a line that could
 * not be written is logged (KV0821): the write itself stands. */
void	kv_admin_audit_end(struct kv_admin_audit *aa, unsigned int status);

#endif

/* The admin API's issued keys, served by the status service (status.c
 * dispatches here once the admin token is checked and the body read):
 *   POST   /keys              issue a key: 201 {"key","id","account"}, the
 *                             raw key shown this once
 *   DELETE /keys/{id}         revoke it: every worker refuses it with 401
 *                             from its next request on
 *   POST   /keys/{id}/rotate  a new secret for the same account
 * {id} is a label, an id or an id prefix, as kvctl takes it (kv_keys_lookup). The
 * ledger work is shm/keys.c's, shared with kvctl keys; the bodies are
 * admin_keys_parse.c's. A refused call changes nothing in the ledger. */
#ifndef KV_ADMIN_KEYS_H
#define KV_ADMIN_KEYS_H

#include <stddef.h>
#include <stdio.h>

#include "common/audit.h"
#include "common/config.h"
#include "shm/ledger.h"

/* The longest {id}: a whole hash in hex (a label is shorter). */
#define KV_ADMIN_ID_MAX	64

/* 1 when URL is one of the three paths above, for some method, else 0. */
int	kv_admin_keys_route(const char *url);

/* 1 when METHOD is one URL (a kv_admin_keys_route path) takes. A label
 * may hold '/', so DELETE takes everything after /keys/ as the label,
 * while POST reads a last "/rotate" as the action. */
int	kv_admin_keys_takes(const char *url, const char *method);

/* The methods URL takes, for the Allow header of a 405: "POST",
 * "DELETE", or "POST, DELETE" (/keys/team/rotate: rotate "team", or
 * revoke "team/rotate"). */
const char *kv_admin_keys_allow(const char *url);

/* The one account NAME names (kv_keys_lookup) into *A: returns 200, or
 * 404 (none) or 409 (an ambiguous id prefix, or a label an older build
 * let in that is another key's id prefix) with the reason in WHY. The
 * admin API resolves every {id} with it. */
unsigned int kv_admin_find_key(const struct kv_ledger *l, const char *name,
	    struct kv_account **a, char *why, size_t whylen);

/* Serve METHOD on URL (kv_admin_keys_takes) with BODY (LEN bytes)
 * against ledger L and the running config CF ([key] names, [budget]
 * defaults). Writes the JSON answer, or {"error","code"}, to OUT and
 * returns the HTTP status. Logs each write (never a secret), and fills
 * REC's op, key, args and before/after for the audit log (admin_audit.h;
 * a rotation's secrets by their ids only). */
unsigned int kv_admin_keys_serve(FILE *out, struct kv_ledger *l,
	    const struct kv_config *cf, const char *method, const char *url,
	    const char *body, size_t len, struct kv_audit_rec *rec);

/* An admin call's refusal into OUT: {"error": MSG, "code": CODE}.
 * Returns STATUS. */
unsigned int kv_admin_fail(FILE *out, unsigned int status, const char *code, const char *msg);

#endif

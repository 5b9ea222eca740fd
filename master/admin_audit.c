/* The audit log around one admin API write (admin_audit.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/admin_audit.h"

#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "common/log.h"
#include "shm/ledger.h"

/* The client's address, numeric, into O's "peer". */
static void
who_peer(struct kv_audit_obj *o, struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci;
	const struct sockaddr *sa;
	char host[64];
	socklen_t sl;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci == NULL || (sa = ci->client_addr) == NULL)
		return;
	sl = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    sizeof(struct sockaddr_in);
	if (getnameinfo(sa, sl, host, sizeof(host), NULL, 0, NI_NUMERICHOST) == 0)
		kv_audit_obj_str(o, "peer", host);
}

int
kv_admin_audit_begin(struct kv_admin_audit *aa, const struct kv_config *cf,
    struct MHD_Connection *c, const char *method, const char *url)
{
	char path[KV_AUDIT_PATH_MAX], err[512];
	const char *tok;
	uint8_t h[32];
	char id[13];

	memset(&aa->rec, 0, sizeof(aa->rec));
	aa->rec.via = "api";
	snprintf(aa->rec.request, sizeof(aa->rec.request), "%s %s", method, url);
	/* The token presented, which status.c matched to the config's on the
	 * request's first call (a reload since may have changed the config's). */
	tok = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (tok != NULL && strncasecmp(tok, "Bearer ", 7) == 0) {
		for (tok += 7; *tok == ' '; tok++)
			;
		kv_key_hash(tok, strlen(tok), h);
		kv_key_id(h, id);
		kv_audit_obj_str(&aa->rec.who, "admin_token", id);
	} else {
		kv_audit_obj_str(&aa->rec.who, "admin_token", NULL);
	}
	kv_audit_obj_str(&aa->rec.who, "name", cf->admin_name[0] ? cf->admin_name : NULL);
	who_peer(&aa->rec.who, c);
	if (kv_audit_path(cf, path, sizeof(path)) == -1) {
		kv_log_warnx("KV0820", "audit log unavailable: its path is too long; "
		    "admin write %s refused", aa->rec.request);
		return -1;
	}
	if (kv_audit_begin(&aa->log, path, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0820", "audit log unavailable: %s; admin write %s refused",
		    err, aa->rec.request);
		return -1;
	}
	return 0;
}

void
kv_admin_audit_end(struct kv_admin_audit *aa, unsigned int status)
{
	char err[512];

	aa->rec.status = (int)status;
	if (kv_audit_commit(&aa->log, &aa->rec, err, sizeof(err)) == -1)
		kv_log_warnx("KV0821", "audit line not written: %s; admin write %s (%u) "
		    "stands", err, aa->rec.request, status);
}

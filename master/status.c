/* The status service: an HTML page, /status.json, Prometheus /metrics,
 * /healthz and two admin writes, served by libmicrohttpd from the master's
 * own poll loop. MHD runs in external-epoll mode: it owns one epoll fd that
 * the master polls, and MHD_run() never blocks. No MHD thread ever exists,
 * so the master can fork workers at any moment. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/crypto.h>

#include "common/clock.h"
#include "common/jsonline.h"
#include "common/log.h"
#include "master/admin_audit.h"
#include "master/admin_keys.h"
#include "master/admin_teams.h"
#include "master/admin_keys_parse.h"
#include "master/loop.h"
#include "master/status_metrics.h"
#include "master/status_html.h"
#include "shm/audit_fields.h"
#include "shm/keys.h"
#include "shm/lease.h"
#include "shm/report.h"

#define STATUS_MAX_BODY		1024	/* admin bodies are one small object */
#define STATUS_HEARTBEAT_MAX	10	/* seconds a worker heartbeat stays fresh */
#define STATUS_CONN_LIMIT	64
#define STATUS_CONN_TIMEOUT	10	/* seconds */

struct kv_status {
	struct MHD_Daemon	*d;
	const struct kv_config	*cf;
	struct kv_ledger	*l;
	int			 epfd;
	struct kv_mloop		*lp;
	struct kv_mloop_io	 io;		/* epfd */
	struct kv_mloop_timer	 timer;		/* MHD's next connection timeout */
};

/* Per-request state, only for requests that carry a body. */
struct status_req {
	size_t	 len;
	int	 too_large;
	char	 body[STATUS_MAX_BODY + 1];
};

/* A response under construction: everything is rendered into memory with
 * open_memstream and handed to MHD, which frees it. */
struct status_out {
	FILE	*f;
	char	*buf;
	size_t	 len;
};

/* ---- responses ------------------------------------------------------- */

static int
out_open(struct status_out *o)
{
	o->buf = NULL;
	o->len = 0;
	o->f = open_memstream(&o->buf, &o->len);
	if (o->f == NULL) {
		kv_log_warn("KV0709", "status: open_memstream");
		return -1;
	}
	return 0;
}

/* Queue what was written to O with STATUS and CTYPE (and an Allow header
 * when ALLOW is set, for 405). Consumes O. */
static enum MHD_Result
out_send_allow(struct MHD_Connection *c, struct status_out *o,
    unsigned int status, const char *ctype, const char *allow)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (fclose(o->f) != 0) {
		free(o->buf);
		return MHD_NO;
	}
	r = MHD_create_response_from_buffer(o->len, o->buf, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(o->buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		    "Bearer realm=\"kilovolt\"");
	if (allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (strncmp(ctype, "text/html", 9) == 0)
		MHD_add_response_header(r, "Content-Security-Policy",
		    "default-src 'none'; script-src 'unsafe-inline'; "
		    "style-src 'unsafe-inline'; connect-src 'self'; img-src data:");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
out_send(struct MHD_Connection *c, struct status_out *o, unsigned int status,
    const char *ctype)
{
	return out_send_allow(c, o, status, ctype, NULL);
}

/* {"error": MSG} into F; returns STATUS. */
static unsigned int
write_error(FILE *f, unsigned int status, const char *msg)
{
	fputs("{\"error\":", f);
	kv_json_write_string(f, msg);
	fputs("}\n", f);
	return status;
}

/* A small JSON error: {"error":"MSG"}, with an Allow header when ALLOW
 * is not NULL. */
static enum MHD_Result
send_error_allow(struct MHD_Connection *c, unsigned int status, const char *msg,
    const char *allow)
{
	struct status_out o;

	if (out_open(&o) == -1)
		return MHD_NO;
	return out_send_allow(c, &o, write_error(o.f, status, msg), "application/json",
	    allow);
}

static enum MHD_Result
send_error(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	return send_error_allow(c, status, msg, NULL);
}

/* ---- health ---------------------------------------------------------- */

static int64_t
ld64(const _Atomic int64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

/* NULL when healthy, else why not. */
static const char *
health_problem(const struct kv_ledger *l, int64_t now)
{
	uint32_t i;

	if (l->hdr == NULL || l->hdr->magic != KV_LEDGER_MAGIC ||
	    l->hdr->version != KV_LEDGER_VERSION)
		return "ledger is not valid";
	for (i = 0; i < l->hdr->worker_slots; i++) {
		const struct kv_worker_slot *w = &l->workers[i];
		int64_t hb;

		if (atomic_load_explicit(&w->state, memory_order_relaxed) !=
		    KV_WORKER_RUNNING || atomic_load(&w->pid) <= 0)
			continue;
		hb = ld64(&w->heartbeat);
		if (now - hb < STATUS_HEARTBEAT_MAX && hb - now < STATUS_HEARTBEAT_MAX)
			return NULL;
	}
	return "no running worker with a fresh heartbeat";
}

static enum MHD_Result
serve_healthz(struct MHD_Connection *c, const struct kv_ledger *l, int64_t now)
{
	const char *why = health_problem(l, now);
	struct status_out o;

	if (out_open(&o) == -1)
		return MHD_NO;
	fprintf(o.f, "%s\n", why ? why : "ok");
	return out_send(c, &o, why ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK,
	    "text/plain; charset=utf-8");
}

/* ---- admin writes ---------------------------------------------------- */

/* Constant-time check of "Bearer TOKEN" against the configured token.
 * Both sides are hashed first so the comparison length never depends on
 * the secret. Returns the HTTP status to refuse with, or 0 to allow. */
static unsigned int
admin_check(const struct kv_config *cf, struct MHD_Connection *c)
{
	const char *h, *tok;
	uint8_t want[32], got[32];

	if (cf->admin_token == NULL || cf->admin_token[0] == '\0')
		return MHD_HTTP_FORBIDDEN;
	h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	if (h == NULL)
		return MHD_HTTP_UNAUTHORIZED;
	if (strncasecmp(h, "Bearer ", 7) != 0)
		return MHD_HTTP_FORBIDDEN;
	for (tok = h + 7; *tok == ' '; tok++)
		;
	kv_key_hash(cf->admin_token, strlen(cf->admin_token), want);
	kv_key_hash(tok, strlen(tok), got);
	return CRYPTO_memcmp(want, got, sizeof(want)) == 0 ? 0 : MHD_HTTP_FORBIDDEN;
}

static unsigned int
write_account(FILE *f, const struct kv_account *a, unsigned int status)
{
	kv_report_account_json(f, a);
	fputc('\n', f);
	return status;
}

/* reset: the spend, exchanged, never stored (workers add to it
 * concurrently); in a cluster it is Redis's, reset on every host at the
 * master's next sync (docs/cluster.md). */
static unsigned int
apply_reset(struct kv_status *st, FILE *f, struct kv_account *a, const char *kid,
    struct kv_audit_rec *rec)
{
	int64_t old;

	if (atomic_load(&st->l->hdr->cluster)) {
		kv_audit_obj_int(&rec->before, "spent_nusd", kv_account_spent(a));
		kv_lease_reset_ask(a);
		kv_audit_obj_bool(&rec->after, "reset_on_every_host_asked", 1);
		kv_log_info("status: key %s reset on every host requested by admin", kid);
		return write_account(f, a, MHD_HTTP_ACCEPTED);
	}
	old = kv_account_reset(a);
	kv_audit_obj_int(&rec->before, "spent_nusd", old);
	kv_audit_obj_int(&rec->after, "spent_nusd", 0);
	kv_log_info("status: key %s reset by admin (was %" PRId64 " nusd)", kid, old);
	return write_account(f, a, MHD_HTTP_OK);
}

/* Apply ACTION ("reset", "budget" or "limits") to account ID with BODY,
 * the answer into F and what changed into REC. Returns the status. */
static unsigned int
admin_apply(struct kv_status *st, FILE *f, const char *id, const char *action,
    const char *body, struct kv_audit_rec *rec)
{
	unsigned int status = 0;
	struct kv_account *a;
	char kid[13], err[256];
	int64_t v = 0, rpm = -1, tpm = -1;

	snprintf(rec->op, sizeof(rec->op), "key.%s", action);
	if (strcmp(action, "budget") == 0 &&
	    kv_admin_parse_budget(body, strlen(body), &v, err, sizeof(err)) == -1)
		return write_error(f, MHD_HTTP_BAD_REQUEST, err);
	if (strcmp(action, "limits") == 0 &&
	    kv_admin_parse_limits(body, strlen(body), &rpm, &tpm, err, sizeof(err)) == -1)
		return write_error(f, MHD_HTTP_BAD_REQUEST, err);
	if ((status = kv_admin_find_key(st->l, id, &a, err, sizeof(err))) != MHD_HTTP_OK)
		return write_error(f, status, err);
	kv_key_id(a->hash, kid);
	kv_audit_key(rec, a);
	if (strcmp(action, "reset") == 0)
		return apply_reset(st, f, a, kid, rec);
	if (strcmp(action, "limits") == 0) {
		kv_audit_obj_int(&rec->before, "rpm", atomic_load(&a->rpm));
		kv_audit_obj_int(&rec->before, "tpm", atomic_load(&a->tpm));
		/* A limit set at run time starts from a full bucket, as a new key does. */
		kv_account_set_limits(a, rpm, tpm);
		kv_audit_obj_int(&rec->after, "rpm", atomic_load(&a->rpm));
		kv_audit_obj_int(&rec->after, "tpm", atomic_load(&a->tpm));
		kv_log_info("status: key %s limits set to rpm %u tpm %u by admin", kid,
		    atomic_load(&a->rpm), atomic_load(&a->tpm));
	} else {
		kv_audit_obj_int(&rec->args, "budget_nusd", v);
		/* An override, as kvctl budget's: see master apply_budget. */
		kv_audit_obj_int(&rec->before, "budget_nusd", kv_account_set_budget(a, v));
		kv_audit_obj_int(&rec->after, "budget_nusd", v);
		kv_log_info("status: key %s budget set to %" PRId64 " nusd by admin",
		    kid, v);
	}
	return write_account(f, a, MHD_HTTP_OK);
}

/* ---- routing --------------------------------------------------------- */

enum route { R_NONE, R_PAGE, R_JSON, R_METRICS, R_HEALTH, R_ADMIN, R_KEYS, R_TEAMS };

/* Split "/keys/ID/ACTION" into ID and ACTION; returns 0 or -1. ID may
 * hold '/' (a label "team/bot"): ACTION is the last part. */
static int
parse_admin_path(const char *url, char *id, size_t idlen, const char **action)
{
	const char *p, *slash;

	if (strncmp(url, "/keys/", 6) != 0)
		return -1;
	p = url + 6;
	slash = strrchr(p, '/');
	if (slash == NULL || slash == p || (size_t)(slash - p) >= idlen)
		return -1;
	if (strcmp(slash + 1, "reset") != 0 && strcmp(slash + 1, "budget") != 0 &&
	    strcmp(slash + 1, "limits") != 0)
		return -1;
	memcpy(id, p, slash - p);
	id[slash - p] = '\0';
	*action = slash + 1;
	return 0;
}

/* The route of METHOD on URL. DELETE /keys/NAME is a revocation whatever
 * NAME ends with: a label may be "team/reset". */
static enum route
route_of(const char *url, const char *method)
{
	char id[KV_ADMIN_ID_MAX + 1];
	const char *action;

	if (strcmp(url, "/") == 0 || strcmp(url, "/index.html") == 0)
		return R_PAGE;
	if (strcmp(url, "/status.json") == 0)
		return R_JSON;
	if (strcmp(url, "/metrics") == 0)
		return R_METRICS;
	if (strcmp(url, "/healthz") == 0)
		return R_HEALTH;
	if (strcmp(method, "DELETE") == 0 && kv_admin_keys_takes(url, method))
		return R_KEYS;
	if (parse_admin_path(url, id, sizeof(id), &action) == 0)
		return R_ADMIN;
	if (kv_admin_keys_route(url))
		return R_KEYS;
	if (kv_admin_teams_route(url))
		return R_TEAMS;
	return R_NONE;
}

/* The page's ?q=SEARCH&page=N (MHD has decoded them), into V. */
static const struct kv_status_view *
page_view(struct MHD_Connection *c, struct kv_status_view *v)
{
	const char *p = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "page");

	v->q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "q");
	v->page = p != NULL ? strtol(p, NULL, 10) : 1;
	v->cf = NULL;
	return v;
}

static enum MHD_Result
serve_get(struct kv_status *st, struct MHD_Connection *c, enum route r, const char *url)
{
	int64_t now = (int64_t)time(NULL);
	struct kv_status_view view;
	struct status_out o;

	switch (r) {
	case R_PAGE:
		if (out_open(&o) == -1)
			return MHD_NO;
		(void)page_view(c, &view);
		view.cf = st->cf;
		kv_status_html(o.f, st->l, now, &view);
		return out_send(c, &o, MHD_HTTP_OK, "text/html; charset=utf-8");
	case R_HEALTH:
		return serve_healthz(c, st->l, now);
	case R_JSON:
		if (out_open(&o) == -1)
			return MHD_NO;
		kv_report_status_json(o.f, st->l, now);
		return out_send(c, &o, MHD_HTTP_OK, "application/json");
	case R_METRICS:
		if (out_open(&o) == -1)
			return MHD_NO;
		kv_status_metrics(o.f, st->l, now);
		return out_send(c, &o, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8");
	case R_TEAMS:
		if (out_open(&o) == -1)
			return MHD_NO;
		return out_send(c, &o, kv_admin_teams_get(o.f, st->l, st->cf, url),
		    "application/json");
	default:
		return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
	}
}

static enum MHD_Result
method_not_allowed(struct MHD_Connection *c, enum route r, const char *url)
{
	return send_error_allow(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
	    r == R_KEYS ? kv_admin_keys_allow(url) : r == R_ADMIN ? "POST, DELETE" :
	    r == R_TEAMS ? "GET, HEAD, POST" : "GET, HEAD");
}

/* First call of a POST: refuse early what needs no body, else set up the
 * body buffer. Returns MHD_YES with *req set to go on reading. */
static enum MHD_Result
admin_begin(struct kv_status *st, struct MHD_Connection *c, void **req)
{
	const char *cl;
	unsigned int deny;
	struct status_req *sr;

	if ((deny = admin_check(st->cf, c)) != 0)
		return send_error(c, deny, deny == MHD_HTTP_UNAUTHORIZED ?
		    "admin token required" : "forbidden");
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl != NULL && strtoull(cl, NULL, 10) > STATUS_MAX_BODY)
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	if ((sr = calloc(1, sizeof(*sr))) == NULL)
		return MHD_NO;
	*req = sr;
	return MHD_YES;
}

static void
admin_append(struct status_req *sr, const char *data, size_t len)
{
	if (sr->too_large || len > STATUS_MAX_BODY - sr->len) {
		sr->too_large = 1;
		return;
	}
	memcpy(sr->body + sr->len, data, len);
	sr->len += len;
	sr->body[sr->len] = '\0';
}

/* The write METHOD on URL with the body SR, its answer into F and what
 * changed into REC. Returns the status. POST /keys, DELETE /keys/ID, POST
 * /keys/ID/rotate: admin_keys.c. */
static unsigned int
admin_dispatch(struct kv_status *st, FILE *f, const char *method, const char *url,
    const struct status_req *sr, struct kv_audit_rec *rec)
{
	char id[KV_ADMIN_ID_MAX + 1];
	const char *action;

	if (sr->too_large)
		return write_error(f, MHD_HTTP_CONTENT_TOO_LARGE, "body too large");
	if (memchr(sr->body, '\0', sr->len) != NULL)
		return write_error(f, MHD_HTTP_BAD_REQUEST, "NUL in body");
	if (route_of(url, method) == R_KEYS)
		return kv_admin_keys_serve(f, st->l, st->cf, method, url, sr->body, sr->len,
		    rec);
	if (route_of(url, method) == R_TEAMS)
		return kv_admin_teams_serve(f, st->l, st->cf, method, url, sr->body, sr->len,
		    rec);
	if (parse_admin_path(url, id, sizeof(id), &action) == -1)
		return write_error(f, MHD_HTTP_NOT_FOUND, "not found");
	return admin_apply(st, f, id, action, sr->body, rec);
}

/* Every authenticated write goes through the audit log (admin_audit.h):
 * none is made while the log cannot be taken. */
static enum MHD_Result
admin_finish(struct kv_status *st, struct MHD_Connection *c, const char *method,
    const char *url, struct status_req *sr)
{
	struct kv_admin_audit aa;
	struct status_out o;
	unsigned int status;

	if (kv_admin_audit_begin(&aa, st->cf, c, method, url) == -1)
		return send_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the audit log cannot be "
		    "written (see the daemon's log, KV0820): nothing was changed");
	if (out_open(&o) == -1) {
		kv_audit_end(&aa.log);
		return MHD_NO;
	}
	status = admin_dispatch(st, o.f, method, url, sr, &aa.rec);
	kv_admin_audit_end(&aa, status);
	return out_send(c, &o, status, "application/json");
}

/* MHD calls the handler first with the head only. Answering then makes
 * libmicrohttpd 0.9.75 close the connection, which is right for refusals
 * (an unread body must not be read) but loses keep-alive for scrapers, so
 * GETs are answered on the second call; this marker tells the two apart. */
static char status_get_pending;

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data,
    size_t *data_size, void **req)
{
	struct kv_status *st = cls;
	enum route r = route_of(url, method);
	int is_get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;

	if (*req == &status_get_pending) {
		if (*data_size > 0) {	/* a GET with a body: ignore it */
			*data_size = 0;
			return MHD_YES;
		}
		return serve_get(st, c, r, url);
	}
	if (*req != NULL) {
		if (*data_size > 0) {
			admin_append(*req, data, *data_size);
			*data_size = 0;
			return MHD_YES;
		}
		return admin_finish(st, c, method, url, *req);
	}
	if (r == R_NONE)
		return send_error(c, MHD_HTTP_NOT_FOUND, "not found");
	if ((r == R_ADMIN && strcmp(method, "POST") == 0) ||
	    (r == R_KEYS && kv_admin_keys_takes(url, method)) ||
	    (r == R_TEAMS && kv_admin_teams_takes(url, method)))
		return admin_begin(st, c, req);
	if (r == R_ADMIN || r == R_KEYS || !is_get)
		return method_not_allowed(c, r, url);
	*req = &status_get_pending;
	return MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **req,
    enum MHD_RequestTerminationCode toe)
{
	if (*req != &status_get_pending)
		free(*req);
	*req = NULL;
}

static void
on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	kv_log_warnx("KV0702", "status: %s", buf);
}

/* ---- life cycle ------------------------------------------------------ */

/* A bound, listening, non-blocking socket on HOST:PORT, or -1. Sets *v6. */
static int
status_listen(const char *host, const char *port, int *v6)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, one = 1, rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		kv_log_warnx("KV0703", "status: %s:%s: %s", host, port, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    ai->ai_protocol);
		if (fd == -1)
			continue;
		if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
		    bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0) {
			*v6 = ai->ai_family == AF_INET6;
			break;
		}
		kv_log_warn("KV0704", "status: listen on %s:%s", host, port);
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static void
log_bound(int fd, const char *host)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[128], p[16];

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == -1 ||
	    getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
	    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		kv_log_info("status service on %s", host);
		return;
	}
	kv_log_info("status service on %s%s%s:%s", strchr(h, ':') ? "[" : "", h,
	    strchr(h, ':') ? "]" : "", p);
}

static struct MHD_Daemon *
status_daemon(struct kv_status *st, int fd, int v6)
{
	unsigned int flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	if (v6)
		flags |= MHD_USE_IPv6;
	/* The logger must come first or MHD logs the earlier options' errors
	 * to stderr by itself. */
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, st,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, st,
	    MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)STATUS_CONN_LIMIT,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)STATUS_CONN_TIMEOUT,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, st,
	    MHD_OPTION_END);
}

/* Serve whatever is ready, then wake again at MHD's next connection
 * timeout (it needs a call to expire idle connections). Never blocks. */
static void
serve(struct kv_status *st)
{
	MHD_UNSIGNED_LONG_LONG t;

	if (MHD_run(st->d) != MHD_YES)
		kv_log_warnx("KV0708", "status: MHD_run failed");
	if (MHD_get_timeout(st->d, &t) == MHD_YES)
		kv_mloop_timer_at(st->lp, &st->timer,
		    kv_now_ms() + (t > INT32_MAX ? INT32_MAX : (int64_t)t));
	else
		kv_mloop_timer_stop(st->lp, &st->timer);
}

static void
on_ready(void *arg, uint32_t events)
{
	(void)events;
	serve(arg);
}

static void
on_timer(void *arg)
{
	serve(arg);
}

struct kv_status *
kv_status_start(const struct kv_config *cf, struct kv_ledger *l, struct kv_mloop *lp)
{
	struct kv_status *st;
	const union MHD_DaemonInfo *info;
	int fd, v6 = 0;

	if (cf->status_host[0] == '\0')
		return NULL;
	if ((st = calloc(1, sizeof(*st))) == NULL) {
		kv_log_warn("KV0705", "status: calloc");
		return NULL;
	}
	st->cf = cf;
	st->l = l;
	if ((fd = status_listen(cf->status_host, cf->status_port, &v6)) == -1)
		goto fail;
	if ((st->d = status_daemon(st, fd, v6)) == NULL) {
		kv_log_warnx("KV0706", "status: cannot start libmicrohttpd");
		close(fd);
		goto fail;
	}
	info = MHD_get_daemon_info(st->d, MHD_DAEMON_INFO_EPOLL_FD);
	if (info == NULL || info->epoll_fd < 0) {
		kv_log_warnx("KV0707", "status: libmicrohttpd has no epoll fd");
		MHD_stop_daemon(st->d);
		goto fail;
	}
	st->epfd = info->epoll_fd;
	st->lp = lp;
	kv_mloop_io_init(&st->io, on_ready, st);
	kv_mloop_timer_init(&st->timer, on_timer, st);
	if (kv_mloop_io_set(lp, &st->io, st->epfd, EPOLLIN) == -1) {
		kv_log_warn("KV0719", "status: epoll_ctl");
		MHD_stop_daemon(st->d);
		goto fail;
	}
	log_bound(fd, cf->status_host);
	return st;
fail:
	free(st);
	return NULL;
}

void
kv_status_set_config(struct kv_status *st, const struct kv_config *cf)
{
	if (st != NULL)
		st->cf = cf;
}

void
kv_status_stop(struct kv_status *st)
{
	if (st == NULL)
		return;
	kv_mloop_io_clear(st->lp, &st->io);
	kv_mloop_timer_stop(st->lp, &st->timer);
	MHD_stop_daemon(st->d);
	free(st);
}

/* A worker's upstream connections: TLS contexts, DNS refreshed without
 * blocking, non-blocking connect, a keep-alive pool; see upstream.h. */

#include "worker/upstream.h"
#include "worker/tls_handoff.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "common/log.h"
#include "common/tls_client.h"
#include "shm/targets.h"

static int
is_ip_literal(const char *host)
{
	struct in6_addr a6;
	struct in_addr a4;

	return inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1;
}

/* ---- the handshake gate (kv_upstream_gate) ---------------------------- */

static int
gate_admits(const struct kv_upstream_rt *rt)
{
	if (rt->nidle > rt->granted)
		return 1;	/* a pooled connection needs no handshake */
	if (rt->handshaking + rt->granted >= KV_TLS_HANDSHAKES_MAX)
		return 0;
	/* No session yet: one full handshake at a time until its ticket
	 * comes (or it shows the server gives none). */
	if (rt->session == NULL && !rt->no_tickets && !rt->ticket_late &&
	    (rt->unsettled > 0 || rt->granted > 0))
		return 0;
	return 1;
}

/* Wake parked requests while there is room; each keeps its slot until it
 * comes back to kv_upstream_gate (or is ungated). */
static void
gate_wake(struct kv_upstream_rt *rt)
{
	struct kv_upwait *w;

	while ((w = rt->waiters) != NULL && gate_admits(rt)) {
		if ((rt->waiters = w->next) != NULL)
			w->next->pprev = &rt->waiters;
		else
			rt->waiters_tail = &rt->waiters;
		w->next = NULL;
		w->pprev = NULL;
		w->granted = 1;
		rt->granted++;
		rt->nwaiting--;
		w->wake(w);
	}
}

int
kv_upstream_gate(struct kv_upstream_rt *rt, struct kv_upwait *w)
{
	if (w->granted) {
		w->granted = 0;
		rt->granted--;
		w->rt = NULL;
		return 0;
	}
	if (w->pprev != NULL)
		return 1;
	if (rt->ctx == NULL || (rt->waiters == NULL && gate_admits(rt)))
		return 0;
	if (rt->waiters_tail == NULL)
		rt->waiters_tail = &rt->waiters;
	w->rt = rt;
	w->next = NULL;
	w->pprev = rt->waiters_tail;
	*rt->waiters_tail = w;
	rt->waiters_tail = &w->next;
	rt->nwaiting++;
	return 1;
}

void
kv_upstream_ungate(struct kv_upwait *w)
{
	struct kv_upstream_rt *rt = w->rt;

	if (rt == NULL)
		return;
	w->rt = NULL;
	if (w->granted) {
		w->granted = 0;
		rt->granted--;
	} else if (w->pprev != NULL) {
		if ((*w->pprev = w->next) != NULL)
			w->next->pprev = w->pprev;
		else
			rt->waiters_tail = w->pprev;
		w->next = NULL;
		w->pprev = NULL;
		rt->nwaiting--;
	}
	gate_wake(rt);
}

void
kv_upstream_gate_stop_waiting(struct kv_upstream_rt *rt)
{
	if (rt == NULL || rt->ctx == NULL)
		return;
	rt->ticket_late = 1;
	gate_wake(rt);
}

/* ---- the pool's two lists ---------------------------------------------- */

/* The loop's turn (kv_upstreams_turn), and whether its epoll_wait
 * returned every ready event. */
static uint64_t pool_turn;
static int pool_watched;

void
kv_upstreams_turn(int complete)
{
	pool_turn++;
	pool_watched = complete;
}

/* Connections released in an earlier turn join the idle list. */
static void
pool_settle(struct kv_upstream_rt *rt)
{
	struct kv_upconn *tail;

	if (rt->fresh == NULL || rt->fresh_turn == pool_turn)
		return;
	for (tail = rt->fresh; tail->next != NULL; tail = tail->next)
		;
	tail->next = rt->idle;
	rt->idle = rt->fresh;
	rt->fresh = NULL;
}

/* ---- a connection's part in the gate --------------------------------- */

/* The connection's part in one of the gate's counts is over: *MINE (its
 * flag) and *COUNT (the upstream's count) go down, and a request held
 * back by the gate may go. */
static void
gate_leave(struct kv_upconn *uc, int *mine, int *count)
{
	if (!*mine)
		return;
	*mine = 0;
	(*count)--;
	gate_wake(uc->rt);
}

/* The connection no longer holds back requests waiting for a ticket. */
static void
upconn_settle(struct kv_upconn *uc)
{
	if (uc->rt != NULL)
		gate_leave(uc, &uc->unsettled, &uc->rt->unsettled);
}

static void
upconn_handshake_over(struct kv_upconn *uc)
{
	if (uc->rt != NULL)
		gate_leave(uc, &uc->in_handshake, &uc->rt->handshaking);
}

/* First read after the handshake that found something other than "wait":
 * a ticket sent ahead of the answer would have come by now. */
static void
upconn_settled_read(struct kv_stream *s)
{
	struct kv_upconn *uc = (struct kv_upconn *)s;

	if (uc->unsettled && uc->rt != NULL && uc->rt->session == NULL)
		uc->rt->no_tickets = 1;
	upconn_settle(uc);
}

static void
info_cb(const SSL *ssl, int where, int ret)
{
	struct kv_upconn *uc = SSL_get_app_data(ssl);

	(void)ret;
	if ((where & SSL_CB_HANDSHAKE_DONE) && uc != NULL)
		upconn_handshake_over(uc);
}

/* TLS 1.3 delivers sessions after the handshake, so keep the newest here. */
static int
session_new_cb(SSL *ssl, SSL_SESSION *sess)
{
	struct kv_upstream_rt *rt = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	struct kv_upconn *uc = SSL_get_app_data(ssl);

	if (rt == NULL)
		return 0;
	if (rt->session != NULL)
		SSL_SESSION_free(rt->session);
	rt->session = sess;
	rt->ticket_late = 0;
	if (uc != NULL)
		upconn_settle(uc);
	gate_wake(rt);
	return 1;	/* we keep the reference */
}

/* An earlier upstream's trust store loaded from the same source (the same
 * ca_file, or both the system's), or NULL. A store parsed from the system
 * bundle holds about 0.85 MB of certificates: each upstream loading its
 * own copy cost the bundled config (two TLS providers) that much again
 * in every worker. */
static X509_STORE *
shared_store(const struct kv_upstream_rt *rts, const struct kv_upstream_rt *rt)
{
	const struct kv_upstream_rt *o;

	for (o = rts; o < rt; o++) {
		if (o->ctx == NULL)
			continue;
		if (o->cf->ca_file == NULL ? rt->cf->ca_file == NULL :
		    rt->cf->ca_file != NULL && strcmp(o->cf->ca_file, rt->cf->ca_file) == 0)
			return SSL_CTX_get_cert_store(o->ctx);
	}
	return NULL;
}

static int
tls_ctx_init(struct kv_upstream_rt *rts, struct kv_upstream_rt *rt, char *err, size_t errlen)
{
	const struct kv_upstream *up = rt->cf;
	SSL_CTX *ctx;

	/* An idle stream must not pin ~34 KB of record buffers. */
	ctx = kv_tls_client_ctx(up->ca_file, shared_store(rts, rt), SSL_MODE_RELEASE_BUFFERS |
	    SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (ctx == NULL) {
		snprintf(err, errlen, "upstream %s: cannot load trust anchors%s%s",
		    up->name, up->ca_file ? " from " : "", up->ca_file ? up->ca_file : "");
		return -1;
	}
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, session_new_cb);
	/* TLS 1.3 legs leave OpenSSL after the handshake (worker/tls13_io.c,
	 * docs/tls-memory.md "Own record layer") unless tls_record_layer =
	 * openssl: the callbacks record the secrets the hand-off needs. */
	if (up->tls_record_layer != KV_TLS_RECORDS_OPENSSL && kv_tls_handoff_ctx(ctx) < 0) {
		SSL_CTX_free(ctx);
		snprintf(err, errlen, "upstream %s: TLS hand-off set-up failed", up->name);
		return -1;
	}
	SSL_CTX_set_info_callback(ctx, info_cb);
	SSL_CTX_set_app_data(ctx, rt);
	rt->ctx = ctx;
	return 0;
}

static void
dns_hints(struct addrinfo *h, int numeric)
{
	memset(h, 0, sizeof(*h));
	h->ai_family = AF_UNSPEC;
	h->ai_socktype = SOCK_STREAM;
	h->ai_flags = AI_ADDRCONFIG | (numeric ? AI_NUMERICHOST : 0);
}

int
kv_upstreams_init(struct kv_upstream_rt **rtsp, const struct kv_config *cf,
    kv_ev_fn *ready, char *err, size_t errlen)
{
	struct kv_upstream_rt *rts;
	struct addrinfo hints;
	size_t i;
	int r;

	if ((rts = calloc(cf->nupstreams ? cf->nupstreams : 1, sizeof(*rts))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < cf->nupstreams; i++) {
		struct kv_upstream_rt *rt = &rts[i];

		rt->cf = &cf->upstreams[i];
		rt->ready = ready;
		/* Per request it cost 1.6 k instructions of snprintf. */
		kv_target_label(rt->label, sizeof(rt->label), rt->cf->name, rt->cf->host,
		    rt->cf->port);
		rt->tslot = KV_TSLOT_UNKNOWN;
		rt->numeric = is_ip_literal(rt->cf->host);
		if (rt->cf->tls && tls_ctx_init(rts, rt, err, errlen) == -1) {
			kv_upstreams_free(rts, i);
			return -1;
		}
		/* Start-up may block; a failure here is retried by the tick. */
		dns_hints(&hints, rt->numeric);
		r = getaddrinfo(rt->cf->host, rt->cf->port, &hints, &rt->ai);
		if (r != 0) {
			kv_log_warnx("KV0301", "upstream %s: cannot resolve %s: %s",
			    rt->cf->name, rt->cf->host, gai_strerror(r));
			rt->ai = NULL;
		}
		rt->resolved_at = (int64_t)time(NULL);
	}
	*rtsp = rts;
	return 0;
}

void
kv_upstreams_free(struct kv_upstream_rt *rts, size_t n)
{
	size_t i;

	if (rts == NULL)
		return;
	for (i = 0; i < n; i++) {
		struct kv_upstream_rt *rt = &rts[i];

		rt->fresh_turn = pool_turn - 1;
		pool_settle(rt);
		while (rt->idle != NULL) {
			struct kv_upconn *uc = rt->idle;
			rt->idle = uc->next;
			uc->rt = NULL;
			kv_upconn_close(uc, 0);
		}
		if (rt->resolving)
			gai_cancel(&rt->gcb);
		if (rt->ai != NULL)
			freeaddrinfo(rt->ai);
		if (rt->session != NULL)
			SSL_SESSION_free(rt->session);
		if (rt->ctx != NULL)
			SSL_CTX_free(rt->ctx);
	}
	free(rts);
}

struct kv_upstream_rt *
kv_upstreams_find(struct kv_upstream_rt *rts, size_t n, const struct kv_upstream *up)
{
	/* rts[i] runs cf->upstreams[i] (kv_upstreams_init) */
	uintptr_t first = n > 0 ? (uintptr_t)rts[0].cf : 0, p = (uintptr_t)up;

	if (n == 0 || p < first || (p - first) / sizeof(*up) >= n)
		return NULL;
	return &rts[(p - first) / sizeof(*up)];
}

/* getaddrinfo_a runs the lookup on glibc's helper thread; we only poll. */
static void
dns_tick(struct kv_upstream_rt *rt, int64_t now)
{
	struct gaicb *list[1] = { &rt->gcb };
	char again[96];
	uint64_t fails;
	int r;

	if (rt->numeric && rt->ai != NULL)
		return;
	if (rt->resolving) {
		r = gai_error(&rt->gcb);
		if (r == EAI_INPROGRESS)
			return;
		rt->resolving = 0;
		if (r == 0 && rt->gcb.ar_result != NULL) {
			if (rt->ai != NULL)
				freeaddrinfo(rt->ai);
			rt->ai = rt->gcb.ar_result;
			if ((fails = kv_backoff_ok(&rt->dns_log)) > 0)
				kv_log_info("upstream %s: %s resolves again after %llu failures",
				    rt->cf->name, rt->cf->host, (unsigned long long)fails);
		} else if (kv_backoff_fail(&rt->dns_log, now)) {
			/* Every 2 s while it fails: logged with back-off. */
			kv_backoff_describe(&rt->dns_log, now, again, sizeof(again));
			kv_log_warnx("KV0302", "upstream %s: cannot resolve %s: %s%s",
			    rt->cf->name, rt->cf->host, gai_strerror(r), again);
		}
		rt->resolved_at = now;
		return;
	}
	if (rt->ai != NULL && now - rt->resolved_at < KV_DNS_REFRESH_SECS)
		return;
	if (rt->ai == NULL && now - rt->resolved_at < 2)
		return;
	memset(&rt->gcb, 0, sizeof(rt->gcb));
	dns_hints(&rt->ghints, rt->numeric);
	rt->gcb.ar_name = rt->cf->host;
	rt->gcb.ar_service = rt->cf->port;
	rt->gcb.ar_request = &rt->ghints;
	if (getaddrinfo_a(GAI_NOWAIT, list, 1, NULL) == 0)
		rt->resolving = 1;
	else
		rt->resolved_at = now;
}

static void
pool_expire(struct kv_upstream_rt *rt, int64_t now)
{
	struct kv_upconn **pp, *uc;

	pool_settle(rt);
	pp = &rt->idle;
	while ((uc = *pp) != NULL) {
		if (now - uc->idle_since >= KV_POOL_IDLE_SECS) {
			*pp = uc->next;
			rt->nidle--;
			uc->rt = NULL;
			kv_upconn_close(uc, 0);
		} else
			pp = &uc->next;
	}
}

void
kv_upstreams_tick(struct kv_upstream_rt *rts, size_t n, int64_t now)
{
	size_t i;

	for (i = 0; i < n; i++) {
		dns_tick(&rts[i], now);
		pool_expire(&rts[i], now);
	}
}

/* An idle connection that is readable was closed by the server (or sent
 * bytes nobody asked for): either way it cannot carry a request. */
static int
idle_is_alive(struct kv_upconn *uc)
{
	struct pollfd pfd = { .fd = uc->s.fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;
}

struct kv_upconn *
kv_upconn_take_idle(struct kv_upstream_rt *rt, int64_t now)
{
	struct kv_upconn **list, *uc;

	(void)now;
	pool_settle(rt);
	for (;;) {
		list = rt->idle != NULL ? &rt->idle : &rt->fresh;
		if ((uc = *list) == NULL)
			return NULL;
		*list = uc->next;
		rt->nidle--;
		uc->next = NULL;
		/* Watched by the last epoll_wait, which said nothing of it: no
		 * poll(2) (one a request, a fifth of the worker's syscalls). */
		if ((list == &rt->idle && pool_watched && uc->registered) || idle_is_alive(uc)) {
			uc->reused = 1;
			return uc;
		}
		uc->rt = NULL;
		kv_upconn_close(uc, 0);
	}
}

static int
tls_session_init(struct kv_upconn *uc, char *err, size_t errlen)
{
	struct kv_upstream_rt *rt = uc->rt;
	const char *host = rt->cf->host;
	SSL_SESSION *dup;
	SSL *ssl;

	if ((ssl = SSL_new(rt->ctx)) == NULL || SSL_set_fd(ssl, uc->s.fd) != 1 ||
	    kv_tls_expect_host(ssl, host, rt->numeric) == -1)
		goto fail;
	/* Each connection resumes from its own copy: OpenSSL marks the
	 * session a handshake used not resumable (SSL_CTX_remove_session on
	 * the TLS 1.3 session id it derives from the ticket), which, shared,
	 * sent two of three of a burst into full handshakes. The copy shares
	 * the peer's certificates (references, not copies). */
	if (rt->session != NULL && (dup = SSL_SESSION_dup(rt->session)) != NULL) {
		SSL_set_session(ssl, dup);
		SSL_SESSION_free(dup);
	} else {
		uc->unsettled = 1;
		rt->unsettled++;
	}
	SSL_set_app_data(ssl, uc);
	uc->in_handshake = 1;
	rt->handshaking++;
	uc->s.settled = upconn_settled_read;
	uc->s.ssl = ssl;
	uc->s.ktls_want = rt->cf->tls_record_layer == KV_TLS_RECORDS_KERNEL;
	return 0;
fail:
	snprintf(err, errlen, "upstream %s: cannot set up TLS", rt->cf->name);
	ERR_clear_error();
	if (ssl != NULL)
		SSL_free(ssl);
	return -1;
}

struct kv_upconn *
kv_upconn_connect(struct kv_upstream_rt *rt, char *err, size_t errlen)
{
	struct kv_upconn *uc;
	struct addrinfo *ai;
	int fd = -1, one = 1;

	if ((ai = rt->ai) == NULL) {
		snprintf(err, errlen, "upstream %s: host %s not resolved", rt->cf->name, rt->cf->host);
		gate_wake(rt);	/* the slot it was granted is free again */
		return NULL;
	}
	for (; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd == -1)
			continue;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS)
			break;
		snprintf(err, errlen, "upstream %s: connect: %s", rt->cf->name, strerror(errno));
		close(fd);
		fd = -1;
	}
	if (fd == -1) {
		if (err[0] == '\0')
			snprintf(err, errlen, "upstream %s: socket: %s", rt->cf->name, strerror(errno));
		gate_wake(rt);
		return NULL;
	}
	if ((uc = calloc(1, sizeof(*uc))) == NULL) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		gate_wake(rt);
		return NULL;
	}
	uc->s.fd = fd;
	uc->rt = rt;
	uc->ev.kind = KV_EV_UPSTREAM;
	uc->ev.fn = rt->ready;
	if (rt->ctx != NULL && tls_session_init(uc, err, errlen) == -1) {
		kv_upconn_close(uc, 0);
		gate_wake(rt);
		return NULL;
	}
	return uc;
}

int
kv_upconn_connected(struct kv_upconn *uc, char *err, size_t errlen)
{
	socklen_t sl = sizeof(int);
	int soerr = 0;

	if (getsockopt(uc->s.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1)
		soerr = errno;
	if (soerr != 0) {
		snprintf(err, errlen, "upstream %s: connect: %s", uc->rt->cf->name, strerror(soerr));
		return -1;
	}
	return 0;
}

void
kv_upconn_release(struct kv_upconn *uc, int64_t now)
{
	struct kv_upstream_rt *rt = uc->rt;

	upconn_settle(uc);
	if (rt == NULL || rt->nidle >= KV_POOL_MAX_IDLE) {
		kv_upconn_close(uc, 0);
		return;
	}
	pool_settle(rt);
	uc->idle_since = now;
	uc->next = rt->fresh;
	rt->fresh = uc;
	rt->fresh_turn = pool_turn;
	rt->nidle++;
	gate_wake(rt);
}

/* Closed connections that were in the epoll set, to free after the turn. */
static struct kv_upconn *graveyard;

void
kv_upconn_close(struct kv_upconn *uc, int abort)
{
	if (uc == NULL)
		return;
	if (uc->s.ssl != NULL)
		SSL_set_app_data(uc->s.ssl, NULL);	/* no callback sees it now */
	upconn_settle(uc);
	upconn_handshake_over(uc);
	kv_stream_close(&uc->s, abort);	/* close() also leaves epoll */
	if (!uc->registered) {
		free(uc);
		return;
	}
	uc->dead = 1;
	uc->ev.ptr = NULL;
	uc->next = graveyard;
	graveyard = uc;
}

void
kv_upconn_reap(void)
{
	struct kv_upconn *uc;

	while ((uc = graveyard) != NULL) {
		graveyard = uc->next;
		free(uc);
	}
}

void
kv_upconn_idle_event(struct kv_upconn *uc)
{
	struct kv_upstream_rt *rt = uc->rt;
	struct kv_upconn **pp;

	if (uc->dead || rt == NULL)
		return;
	pool_settle(rt);
	for (pp = &rt->idle; *pp != NULL && *pp != uc; pp = &(*pp)->next)
		;
	if (*pp == NULL)
		for (pp = &rt->fresh; *pp != NULL && *pp != uc; pp = &(*pp)->next)
			;
	if (*pp == NULL)
		return;		/* not in the pool: whoever holds it reads it */
	*pp = uc->next;
	rt->nidle--;
	uc->rt = NULL;
	kv_upconn_close(uc, 0);
}

/* Active health checks; see health_check.h. One probe per target, each a
 * small state machine: IDLE (until next_ms) -> CONNECT -> TLS (https) ->
 * WRITE -> READ -> IDLE. Every probe's socket is in one epoll set; the
 * master polls the epoll fd. One result flips the mark (HAProxy's rise and
 * fall of 1): the check is a second opinion beside the passive ejection,
 * which still counts failures of real requests. */
#include "master/health_check.h"

#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tls_client.h"
#include "shm/targets.h"
#include "common/http.h"
#include "master/loop.h"

#define PROBE_TIMEOUT_MS	5000	/* a head later than this is a failure */
#define RESOLVE_EVERY_MS	60000
#define PROBE_IN_MAX		8192	/* a head past this is a failure */

enum pstate { P_IDLE, P_CONNECT, P_TLS, P_WRITE, P_READ };

struct probe {
	const struct kv_upstream *u;	/* the target: host, port, tls */
	const struct kv_upstream *g;	/* its upstream: path, interval, ca_file */
	char		 label[KV_TARGET_NAME];
	int		 slot;		/* ledger target slot, -1 when the table is full */
	enum pstate	 st;
	int		 fd;
	struct kv_mloop_io io;		/* fd, in the master's loop */
	struct kv_health *h;
	SSL_CTX		*ctx;		/* https targets */
	SSL		*ssl;
	int		 numeric;	/* host is an IP literal */
	struct addrinfo	*ai;
	int64_t		 resolved_ms;
	int64_t		 next_ms;	/* IDLE: next start; else the deadline */
	char		 out[600];
	size_t		 olen, opos;
	char		 in[PROBE_IN_MAX];
	size_t		 ilen;
};

struct kv_health {
	struct kv_ledger *l;
	struct kv_mloop	 *lp;
	struct kv_mloop_timer timer;	/* the next probe start or deadline */
	struct probe	 *p;
	size_t		  n;
};

static int
is_numeric(const char *host)
{
	struct addrinfo hints, *ai = NULL;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0)
		return 0;
	freeaddrinfo(ai);
	return 1;
}

static void
probe_close(struct kv_health *h, struct probe *p)
{
	if (p->ssl != NULL) {
		SSL_free(p->ssl);
		p->ssl = NULL;
	}
	if (p->fd != -1) {
		kv_mloop_io_clear(h->lp, &p->io);
		if (close(p->fd) == -1)
			kv_log_warn("KV0725", "health check: close");
		p->fd = -1;
	}
	ERR_clear_error();
}

static int64_t
interval_ms(const struct probe *p)
{
	return (int64_t)p->g->health_interval * 1000;
}

/* The probe is over: mark the target, sleep until the next round. A
 * change is logged once, not each round. */
static void
probe_done(struct kv_health *h, struct probe *p, int up, const char *why)
{
	int64_t now = kv_now_ms();
	uint32_t was;

	probe_close(h, p);
	p->st = P_IDLE;
	p->next_ms = now + interval_ms(p);
	p->ilen = 0;
	was = kv_target_set_health(h->l, p->slot, up ? KV_HEALTH_UP : KV_HEALTH_DOWN, now);
	if (!up && was != KV_HEALTH_DOWN)
		kv_log_warnx("KV0720", "upstream target %s failed its health check "
		    "(GET %s: %s): no requests while another target is usable",
		    p->label, p->g->health_path, why);
	else if (up && was == KV_HEALTH_DOWN)
		kv_log_info("upstream target %s passed its health check: back in use", p->label);
}

static int
resolve(struct probe *p, int64_t now)
{
	struct addrinfo hints;
	int rc;

	if (p->ai != NULL && now - p->resolved_ms < RESOLVE_EVERY_MS)
		return 0;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | (p->numeric ? AI_NUMERICHOST : 0);
	if (p->ai != NULL)
		freeaddrinfo(p->ai);
	p->ai = NULL;
	if ((rc = getaddrinfo(p->u->host, p->u->port, &hints, &p->ai)) != 0) {
		p->ai = NULL;
		return -1;
	}
	p->resolved_ms = now;
	return 0;
}

static void
watch(struct kv_health *h, struct probe *p, uint32_t events)
{
	if (kv_mloop_io_set(h->lp, &p->io, p->fd, events) == -1)
		probe_done(h, p, 0, "epoll_ctl");
}

static void
probe_start(struct kv_health *h, struct probe *p, int64_t now)
{
	/* Not cut to a short interval: the next check starts an interval
	 * after this one ends, so they never overlap, and a busy target that
	 * answers in 3 s is not marked down for a 2 s interval. */
	p->next_ms = now + PROBE_TIMEOUT_MS;
	p->ilen = 0;
	p->opos = 0;
	if (resolve(p, now) == -1) {
		probe_done(h, p, 0, "cannot resolve the host");
		return;
	}
	p->fd = socket(p->ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (p->fd == -1) {
		kv_log_warn("KV0721", "health check %s: socket", p->label);
		probe_done(h, p, 0, "no socket");
		return;
	}
	if (connect(p->fd, p->ai->ai_addr, p->ai->ai_addrlen) == -1 && errno != EINPROGRESS) {
		probe_done(h, p, 0, strerror(errno));
		return;
	}
	if (kv_mloop_io_set(h->lp, &p->io, p->fd, EPOLLOUT) == -1) {
		kv_log_warn("KV0722", "health check %s: epoll_ctl", p->label);
		probe_done(h, p, 0, "epoll_ctl");
		return;
	}
	p->st = P_CONNECT;
}

static int
tls_begin(struct probe *p)
{
	const char *host = p->u->host;

	if ((p->ssl = SSL_new(p->ctx)) == NULL || SSL_set_fd(p->ssl, p->fd) != 1)
		return -1;
	return kv_tls_expect_host(p->ssl, host, p->numeric);
}

/* An SSL call's WANT_READ/WANT_WRITE becomes the epoll interest; 0 to
 * wait, -1 on a failure. */
static int
tls_want(struct kv_health *h, struct probe *p, int rc)
{
	switch (SSL_get_error(p->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		watch(h, p, EPOLLIN);
		return 0;
	case SSL_ERROR_WANT_WRITE:
		watch(h, p, EPOLLOUT);
		return 0;
	default:
		return -1;
	}
}

static void
on_connect(struct kv_health *h, struct probe *p)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0) {
		probe_done(h, p, 0, strerror(err));
		return;
	}
	if (p->ctx != NULL) {
		if (tls_begin(p) == -1) {
			probe_done(h, p, 0, "TLS set-up failed");
			return;
		}
		p->st = P_TLS;
		return;
	}
	p->st = P_WRITE;
}

static void
on_tls(struct kv_health *h, struct probe *p)
{
	int rc = SSL_connect(p->ssl);

	if (rc == 1) {
		p->st = P_WRITE;
		watch(h, p, EPOLLOUT);
		return;
	}
	if (tls_want(h, p, rc) == -1) {
		long v = SSL_get_verify_result(p->ssl);

		probe_done(h, p, 0, v != X509_V_OK ? X509_verify_cert_error_string(v) :
		    "TLS handshake failed");
	}
}

static void
on_write(struct kv_health *h, struct probe *p)
{
	ssize_t n;

	while (p->opos < p->olen) {
		if (p->ssl != NULL) {
			int rc = SSL_write(p->ssl, p->out + p->opos, (int)(p->olen - p->opos));

			if (rc <= 0) {
				if (tls_want(h, p, rc) == -1)
					probe_done(h, p, 0, "TLS write failed");
				return;
			}
			n = rc;
		} else if ((n = send(p->fd, p->out + p->opos, p->olen - p->opos,
		    MSG_NOSIGNAL)) == -1) {
			if (errno != EAGAIN && errno != EINTR)
				probe_done(h, p, 0, strerror(errno));
			return;
		}
		p->opos += (size_t)n;
	}
	p->st = P_READ;
	watch(h, p, EPOLLIN);
}

/* The head is all a check needs: its status decides. */
static void
on_read(struct kv_health *h, struct probe *p)
{
	struct kv_http_response res;
	ssize_t n;
	int r;
	char why[48];

	for (;;) {
		if (p->ilen == sizeof(p->in)) {
			probe_done(h, p, 0, "response head too large");
			return;
		}
		if (p->ssl != NULL) {
			int rc = SSL_read(p->ssl, p->in + p->ilen, (int)(sizeof(p->in) - p->ilen));

			if (rc <= 0) {
				if (SSL_get_error(p->ssl, rc) == SSL_ERROR_ZERO_RETURN ||
				    tls_want(h, p, rc) == -1)
					probe_done(h, p, 0, "closed before a response head");
				return;
			}
			n = rc;
		} else if ((n = recv(p->fd, p->in + p->ilen, sizeof(p->in) - p->ilen, 0)) <= 0) {
			if (n == 0)
				probe_done(h, p, 0, "closed before a response head");
			else if (errno != EAGAIN && errno != EINTR)
				probe_done(h, p, 0, strerror(errno));
			return;
		}
		p->ilen += (size_t)n;
		r = kv_http_parse_response(p->in, p->ilen, &res, NULL);
		if (r == 0)
			continue;
		if (r < 0) {
			probe_done(h, p, 0, "malformed response");
			return;
		}
		snprintf(why, sizeof(why), "status %d", res.status);
		probe_done(h, p, res.status >= 200 && res.status <= 299, why);
		return;
	}
}

static void
step(struct kv_health *h, struct probe *p)
{
	switch (p->st) {
	case P_CONNECT:
		on_connect(h, p);
		if (p->st != P_TLS && p->st != P_WRITE)
			return;
		/* FALLTHROUGH */
	case P_TLS:
		if (p->st == P_TLS) {
			on_tls(h, p);
			return;
		}
		/* FALLTHROUGH */
	case P_WRITE:
		on_write(h, p);
		return;
	case P_READ:
		on_read(h, p);
		return;
	case P_IDLE:
		return;
	}
}

/* Wake at the first probe start or deadline. */
static void
rearm(struct kv_health *h)
{
	int64_t at = INT64_MAX;
	size_t i;

	for (i = 0; i < h->n; i++)
		if (h->p[i].next_ms < at)
			at = h->p[i].next_ms;
	if (at != INT64_MAX)
		kv_mloop_timer_at(h->lp, &h->timer, at);
}

/* A probe's events. Its deadline holds here too, not only at the timer: a
 * target that keeps its socket busy (records without data, a trickle)
 * would otherwise be stepped for as long as it likes. */
static void
on_probe(void *arg, uint32_t events)
{
	struct probe *p = arg;

	(void)events;
	if (p->st != P_IDLE && kv_now_ms() >= p->next_ms)
		probe_done(p->h, p, 0, "no response head in time");
	else
		step(p->h, p);
	rearm(p->h);
}

/* Start the probes that are due, fail those past their deadline. */
static void
on_timer(void *arg)
{
	struct kv_health *h = arg;
	int64_t now = kv_now_ms();
	size_t k;

	for (k = 0; k < h->n; k++) {
		struct probe *p = &h->p[k];

		if (now < p->next_ms)
			continue;
		if (p->st == P_IDLE)
			probe_start(h, p, now);
		else
			probe_done(h, p, 0, "no response head in time");
	}
	rearm(h);
}

static int
probe_init(struct kv_health *h, struct probe *p, const struct kv_upstream *g,
    const struct kv_upstream *u)
{
	int n;

	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->h = h;
	kv_mloop_io_init(&p->io, on_probe, p);
	p->u = u;
	p->g = g;
	kv_target_label(p->label, sizeof(p->label), u->name, u->host, u->port);
	if ((p->slot = kv_target_slot(h->l, p->label)) < 0)
		kv_log_warnx("KV0723", "upstream target table full (%d): %s is not "
		    "health-checked", KV_TARGET_SLOTS, p->label);
	p->numeric = is_numeric(u->host);
	n = snprintf(p->out, sizeof(p->out), "GET %s HTTP/1.1\r\nHost: %s\r\n"
	    "User-Agent: kilovolt-health-check\r\nAccept: */*\r\nConnection: close\r\n\r\n",
	    g->health_path, u->host_header);
	if (n < 0 || (size_t)n >= sizeof(p->out))
		return -1;
	p->olen = (size_t)n;
	/* a target's ca_file is its upstream's (config.c add_target) */
	if (u->tls && (p->ctx = kv_tls_client_ctx(u->ca_file, NULL,
	    SSL_MODE_ENABLE_PARTIAL_WRITE)) == NULL) {
		kv_log_warnx("KV0724", "health check %s: cannot set up TLS (CA file %s)",
		    p->label, g->ca_file != NULL ? g->ca_file : "of the system");
		return -1;
	}
	return 0;
}

/* Target slots no probe of this config writes: no mark of an earlier
 * config or run is left standing. */
static void
clear_unprobed(struct kv_ledger *l, const struct kv_health *h)
{
	int t;
	size_t i;

	for (t = 0; t < KV_TARGET_SLOTS; t++) {
		int probed = 0;

		for (i = 0; h != NULL && i < h->n; i++)
			probed |= h->p[i].slot == t;
		if (!probed)
			atomic_store(&l->targets[t].health, KV_HEALTH_UNCHECKED);
	}
}

static size_t
count_targets(const struct kv_config *cf)
{
	size_t i, n = 0;

	for (i = 0; i < cf->nupstreams; i++)
		if (cf->upstreams[i].target_of == 0 && cf->upstreams[i].health_path[0] != '\0')
			n += 1 + cf->upstreams[i].nextra;
	return n;
}

struct kv_health *
kv_health_start(const struct kv_config *cf, struct kv_ledger *l, struct kv_mloop *lp)
{
	struct kv_health *h;
	size_t n = count_targets(cf), i, k;

	if (n == 0) {
		clear_unprobed(l, NULL);
		return NULL;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL || (h->p = calloc(n, sizeof(*h->p))) == NULL) {
		kv_log_warnx("KV0726", "health checks: out of memory; targets run unchecked");
		free(h);
		return NULL;
	}
	h->l = l;
	h->lp = lp;
	kv_mloop_timer_init(&h->timer, on_timer, h);
	for (i = 0; i < cf->nupstreams; i++) {
		const struct kv_upstream *g = &cf->upstreams[i];

		if (g->target_of != 0 || g->health_path[0] == '\0')
			continue;
		for (k = 0; k <= g->nextra; k++) {
			const struct kv_upstream *u = k == 0 ? g : &cf->upstreams[g->first_extra + k - 1];

			if (probe_init(h, &h->p[h->n], g, u) == -1) {
				SSL_CTX_free(h->p[h->n].ctx);
				continue;	/* logged; the target runs unchecked */
			}
			h->n++;
		}
	}
	clear_unprobed(l, h);
	kv_mloop_timer_at(lp, &h->timer, kv_now_ms());	/* the first round at once */
	return h;
}

void
kv_health_free(struct kv_health *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < h->n; i++) {
		probe_close(h, &h->p[i]);
		SSL_CTX_free(h->p[i].ctx);
		if (h->p[i].ai != NULL)
			freeaddrinfo(h->p[i].ai);
	}
	kv_mloop_timer_stop(h->lp, &h->timer);
	free(h->p);
	free(h);
}

void
kv_health_forget(struct kv_health *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < h->n; i++)
		if (h->p[i].fd != -1)
			(void)close(h->p[i].fd);
}

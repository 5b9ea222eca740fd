/* The master's Redis connection; see redis.h. States: IDLE (waiting for the
 * next attempt), CONNECTING (non-blocking connect in progress), TLS (the
 * rediss:// handshake, the server's certificate verified against ca_file or
 * the system's anchors, and its name or IP), AUTH (AUTH sent, its reply
 * awaited), READY. With redis+sentinel:// each connection is preceded by one
 * to a Sentinel (SENTINEL, its get-master-addr-by-name awaited), which names
 * the master to connect to; any drop asks again (the next Sentinel when one
 * failed), so a failover is followed, and a master that answers READONLY
 * (demoted to a replica) is dropped too. Any socket error, protocol error or a
 * reply overdue by REPLY_TIMEOUT_MS drops the connection: every pending
 * callback gets NULL, which the lease code treats as "not known to have
 * happened" (its scripts are idempotent, so a resend is safe). */
#include "master/redis.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/tls_client.h"

#define CONNECT_TIMEOUT_MS	2000
#define REPLY_TIMEOUT_MS	3000
#define BACKOFF_MIN_MS		100
#define BACKOFF_MAX_MS		5000
#define OUT_MAX			(4 << 20)	/* queued command bytes */
#define IN_MAX			(KV_RESP_MAX_BULK + 4096)
#define PENDING_MAX		4096

enum state { ST_IDLE, ST_CONNECTING, ST_TLS, ST_SENTINEL, ST_AUTH, ST_READY };

struct pending {
	kv_redis_cb	 cb;
	void		*arg;
	int64_t		 sent_ms;
};

struct kv_redis {
	struct kv_cluster	 c;		/* copy; password is ours */
	kv_redis_ready_cb	 ready;
	void			*ready_arg;
	enum state		 st;
	int			 fd;
	SSL_CTX			*ctx;		/* rediss:// only */
	SSL			*ssl;		/* ... while connected */
	short			 tls_want;	/* POLLIN or POLLOUT: the handshake waits */
	int			 ask_sentinel;	/* the next connection is to sentinel si */
	int			 si;
	int64_t			 next_try_ms;
	int64_t			 deadline_ms;	/* connect deadline */
	int			 backoff_ms;
	int			 warned;	/* logged this outage already */
	char			*out;
	size_t			 olen, opos, ocap;
	char			*in;
	size_t			 ilen, icap;
	struct pending		 pend[PENDING_MAX];
	size_t			 phead, pcount;
	struct kv_resp_reply	 reply;
};

static void on_auth(void *arg, const struct kv_resp_value *v);
static void became_ready(struct kv_redis *r);

struct kv_redis *
kv_redis_new(const struct kv_cluster *c, kv_redis_ready_cb ready, void *arg)
{
	struct kv_redis *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->c = *c;
	r->c.password = NULL;
	if (c->password != NULL && (r->c.password = strdup(c->password)) == NULL) {
		free(r);
		return NULL;
	}
	if (c->redis_tls && (r->ctx = kv_tls_client_ctx(c->ca_file[0] ? c->ca_file : NULL,
	    NULL, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)) == NULL) {
		kv_log_warnx("KV0767", "redis: cannot load the trust anchors for rediss:// "
		    "from %s", c->ca_file[0] ? c->ca_file : "the system's store");
		free(r->c.password);
		free(r);
		return NULL;
	}
	r->ready = ready;
	r->ready_arg = arg;
	r->fd = -1;
	r->ask_sentinel = c->nsentinels > 0;
	r->backoff_ms = BACKOFF_MIN_MS;
	return r;
}

/* Fail every pending callback, oldest first. */
static void
fail_pending(struct kv_redis *r)
{
	while (r->pcount > 0) {
		struct pending p = r->pend[r->phead];

		r->phead = (r->phead + 1) % PENDING_MAX;
		r->pcount--;
		if (p.cb != NULL)
			p.cb(p.arg, NULL);
	}
	r->phead = 0;
}

static void
drop(struct kv_redis *r)
{
	if (r->c.nsentinels > 0) {
		if (r->ask_sentinel)	/* that one failed: ask the next */
			r->si = (r->si + 1) % r->c.nsentinels;
		r->ask_sentinel = 1;
	}
	SSL_free(r->ssl);	/* no close_notify: the socket goes at once */
	r->ssl = NULL;
	if (r->fd != -1)
		close(r->fd);
	r->fd = -1;
	r->st = ST_IDLE;
	r->olen = r->opos = r->ilen = 0;
	r->next_try_ms = kv_now_ms() + r->backoff_ms;
	r->backoff_ms = r->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff_ms * 2;
	fail_pending(r);
}

void
kv_redis_reset(struct kv_redis *r, const char *why)
{
	if (!r->warned)
		kv_log_warnx("KV0750", "redis: %s; reconnecting", why);
	r->warned = 1;
	drop(r);
}

static void
fail_errno(struct kv_redis *r, const char *what)
{
	if (!r->warned)
		kv_log_warn("KV0751", "redis: %s", what);
	r->warned = 1;
	drop(r);
}

void
kv_redis_free(struct kv_redis *r)
{
	if (r == NULL)
		return;
	drop(r);
	if (r->c.password != NULL) {
		explicit_bzero(r->c.password, strlen(r->c.password));
		free(r->c.password);
	}
	SSL_CTX_free(r->ctx);
	free(r->out);
	free(r->in);
	free(r);
}

void
kv_redis_forget(struct kv_redis *r)
{
	if (r != NULL && r->fd != -1)
		close(r->fd);
}

/* The address is resolved on each attempt, so a moved Redis is found; a
 * name needs DNS, which blocks: use an IP literal or a unix socket where
 * the master must never wait (the usual case: localhost or a service IP). */
static int
open_socket(struct kv_redis *r)
{
	struct addrinfo hints, *ai = NULL, *a;
	struct sockaddr_un sun;
	const char *host = r->c.redis_host, *port = r->c.redis_port;
	int fd = -1, rc;

	if (r->ask_sentinel) {
		host = r->c.sentinel_host[r->si];
		port = r->c.sentinel_port[r->si];
	}

	if (r->c.redis_unix[0] != '\0') {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, r->c.redis_unix, strlen(r->c.redis_unix) + 1);
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1)
			return -1;
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 &&
		    errno != EINPROGRESS && errno != EAGAIN) {
			close(fd);
			return -1;
		}
		return fd;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0) {
		errno = EHOSTUNREACH;
		if (!r->warned)
			kv_log_warnx("KV0752", "redis: %s: %s", host, gai_strerror(rc));
		r->warned = 1;
		return -1;
	}
	for (a = ai; a != NULL; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd == -1)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static int
queue(struct kv_redis *r, int argc, const char *const *argv, const size_t *lens,
    kv_redis_cb cb, void *arg)
{
	long n;
	size_t need = 64;
	int i;

	if (r->pcount >= PENDING_MAX)
		return -1;
	for (i = 0; i < argc; i++)
		need += lens[i] + 24;
	if (r->opos > 0 && r->opos == r->olen)
		r->opos = r->olen = 0;
	if (r->olen + need > r->ocap) {
		size_t cap = r->ocap ? r->ocap : 4096;
		char *p;

		while (cap < r->olen + need)
			cap *= 2;
		if (cap > OUT_MAX || (p = realloc(r->out, cap)) == NULL)
			return -1;
		r->out = p;
		r->ocap = cap;
	}
	if ((n = kv_resp_command(r->out + r->olen, r->ocap - r->olen, argc, argv, lens)) < 0)
		return -1;
	r->olen += (size_t)n;
	r->pend[(r->phead + r->pcount) % PENDING_MAX] = (struct pending){ cb, arg, kv_now_ms() };
	r->pcount++;
	return 0;
}

/* The Sentinel's answer: the master's address, or nil for a name it does
 * not know. The Sentinel's connection is closed and the master's opened
 * at once. */
static void
on_master(void *arg, const struct kv_resp_value *v)
{
	struct kv_redis *r = arg;

	if (v == NULL || r->st != ST_SENTINEL)
		return;
	if (v->type != KV_RESP_ARRAY || v->nil || v->n != 2 ||
	    v->elem[0].type != KV_RESP_BULK || v->elem[0].len >= sizeof(r->c.redis_host) ||
	    v->elem[1].type != KV_RESP_BULK || v->elem[1].len >= sizeof(r->c.redis_port)) {
		if (!r->warned)
			kv_log_warnx("KV0769", "redis: Sentinel %s:%s names no master %s",
			    r->c.sentinel_host[r->si], r->c.sentinel_port[r->si],
			    r->c.sentinel_master);
		r->warned = 1;
		drop(r);
		return;
	}
	if (v->elem[0].len != strlen(r->c.redis_host) ||
	    memcmp(v->elem[0].str, r->c.redis_host, v->elem[0].len) != 0 ||
	    v->elem[1].len != strlen(r->c.redis_port) ||
	    memcmp(v->elem[1].str, r->c.redis_port, v->elem[1].len) != 0)
		kv_log_info("redis: Sentinel %s:%s names %.*s:%.*s master %s",
		    r->c.sentinel_host[r->si], r->c.sentinel_port[r->si],
		    (int)v->elem[0].len, v->elem[0].str, (int)v->elem[1].len, v->elem[1].str,
		    r->c.sentinel_master);
	memcpy(r->c.redis_host, v->elem[0].str, v->elem[0].len);
	r->c.redis_host[v->elem[0].len] = '\0';
	memcpy(r->c.redis_port, v->elem[1].str, v->elem[1].len);
	r->c.redis_port[v->elem[1].len] = '\0';
	if (close(r->fd) == -1)
		kv_log_warn("KV0770", "redis: closing the Sentinel's connection");
	r->fd = -1;
	r->olen = r->opos = r->ilen = 0;
	r->st = ST_IDLE;
	r->ask_sentinel = 0;
	r->next_try_ms = 0;	/* the master, now */
}

static void
connected(struct kv_redis *r)
{
	const char *argv[3] = { "AUTH", r->c.user, r->c.password };
	size_t lens[3] = { 4, strlen(r->c.user), 0 };
	int argc = r->c.user[0] != '\0' ? 3 : 2;

	if (r->ask_sentinel) {
		const char *q[3] = { "SENTINEL", "get-master-addr-by-name", r->c.sentinel_master };
		size_t ql[3] = { 8, 23, strlen(r->c.sentinel_master) };

		r->st = ST_SENTINEL;
		if (queue(r, 3, q, ql, on_master, r) == -1)
			kv_redis_reset(r, "cannot queue SENTINEL");
		return;
	}
	if (r->c.password == NULL) {
		became_ready(r);
		return;
	}
	if (argc == 2)	/* AUTH password: the default user */
		argv[1] = r->c.password;
	lens[argc - 1] = strlen(r->c.password);
	r->st = ST_AUTH;
	if (queue(r, argc, argv, lens, on_auth, r) == -1)
		kv_redis_reset(r, "cannot queue AUTH");
}

/* AUTH's reply; NULL when the connection was lost before it (drop()
 * reconnects). */
static void
on_auth(void *arg, const struct kv_resp_value *v)
{
	struct kv_redis *r = arg;

	if (v == NULL || r->st != ST_AUTH)
		return;
	if (v->type == KV_RESP_ERROR) {
		if (!r->warned)
			kv_log_warnx("KV0753", "redis: AUTH refused: %.*s", (int)v->len, v->str);
		r->warned = 1;
		drop(r);
		return;
	}
	became_ready(r);
}

static void
became_ready(struct kv_redis *r)
{
	r->st = ST_READY;
	r->backoff_ms = BACKOFF_MIN_MS;
	if (r->warned)
		kv_log_info("redis: connected again to %s%s%s", r->c.redis_unix[0] ?
		    r->c.redis_unix : r->c.redis_host, r->c.redis_unix[0] ? "" : ":",
		    r->c.redis_unix[0] ? "" : r->c.redis_port);
	else
		kv_log_info("redis: connected to %s%s%s", r->c.redis_unix[0] ?
		    r->c.redis_unix : r->c.redis_host, r->c.redis_unix[0] ? "" : ":",
		    r->c.redis_unix[0] ? "" : r->c.redis_port);
	r->warned = 0;
	if (r->ready != NULL)
		r->ready(r->ready_arg);
}

int
kv_redis_call(struct kv_redis *r, int argc, const char *const *argv, const size_t *lens,
    kv_redis_cb cb, void *arg)
{
	if (r->st != ST_READY)
		return -1;
	return queue(r, argc, argv, lens, cb, arg);
}

int
kv_redis_ready(const struct kv_redis *r)
{
	return r->st == ST_READY;
}

static int
min_timeout(int cur, int64_t at, int64_t now)
{
	int64_t d = at - now;

	if (d < 0)
		d = 0;
	if (cur < 0 || d < cur)
		return (int)d;
	return cur;
}

int
kv_redis_pollfd(struct kv_redis *r, struct pollfd *pfd, int *timeout_ms)
{
	int64_t now = kv_now_ms();

	if (r->st == ST_IDLE) {
		*timeout_ms = min_timeout(*timeout_ms, r->next_try_ms, now);
		return 0;
	}
	pfd->fd = r->fd;
	pfd->events = r->st == ST_TLS ? r->tls_want : POLLIN;
	pfd->revents = 0;
	if (r->st == ST_CONNECTING || (r->st != ST_TLS && r->opos < r->olen))
		pfd->events |= POLLOUT;
	if (r->st == ST_CONNECTING || r->st == ST_TLS)
		*timeout_ms = min_timeout(*timeout_ms, r->deadline_ms, now);
	else if (r->pcount > 0)
		*timeout_ms = min_timeout(*timeout_ms,
		    r->pend[r->phead].sent_ms + REPLY_TIMEOUT_MS, now);
	return 1;
}

static void
try_connect(struct kv_redis *r)
{
	if (kv_now_ms() < r->next_try_ms)
		return;
	if ((r->fd = open_socket(r)) == -1) {
		fail_errno(r, "connect");
		return;
	}
	r->st = ST_CONNECTING;
	r->deadline_ms = kv_now_ms() + CONNECT_TIMEOUT_MS;
}

/* One step of the rediss:// handshake; AUTH (or ready) once it is done. */
static void
tls_step(struct kv_redis *r)
{
	long vr;
	int rc = SSL_connect(r->ssl);

	if (rc == 1) {
		connected(r);
		return;
	}
	switch (SSL_get_error(r->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		r->tls_want = POLLIN;
		return;
	case SSL_ERROR_WANT_WRITE:
		r->tls_want = POLLOUT;
		return;
	default:
		break;
	}
	vr = SSL_get_verify_result(r->ssl);
	if (!r->warned)
		kv_log_warnx("KV0768", "redis: TLS handshake with %s:%s failed: %s",
		    r->c.redis_host, r->c.redis_port, vr != X509_V_OK ?
		    X509_verify_cert_error_string(vr) : "the server broke it off");
	ERR_clear_error();
	r->warned = 1;
	drop(r);
}

static void
tls_start(struct kv_redis *r)
{
	unsigned char ip[16];
	int numeric = inet_pton(AF_INET, r->c.redis_host, ip) == 1 ||
	    inet_pton(AF_INET6, r->c.redis_host, ip) == 1;

	if ((r->ssl = SSL_new(r->ctx)) == NULL || SSL_set_fd(r->ssl, r->fd) != 1 ||
	    kv_tls_expect_host(r->ssl, r->c.redis_host, numeric) == -1) {
		ERR_clear_error();
		kv_redis_reset(r, "cannot set up TLS");
		return;
	}
	r->st = ST_TLS;
	tls_step(r);
}

static void
finish_connect(struct kv_redis *r, const struct pollfd *pfd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (pfd == NULL || pfd->revents == 0) {
		if (kv_now_ms() >= r->deadline_ms) {
			errno = ETIMEDOUT;
			fail_errno(r, "connect");
		}
		return;
	}
	if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0) {
		if (err != 0)
			errno = err;
		fail_errno(r, "connect");
		return;
	}
	if (r->ctx != NULL)
		tls_start(r);
	else
		connected(r);
}

/* What a TLS read or write that returned N <= 0 means: 0 to wait for the
 * socket, -1 when the connection is gone (dropped here). */
static int
tls_io_failed(struct kv_redis *r, int n)
{
	switch (SSL_get_error(r->ssl, n)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		kv_redis_reset(r, "connection closed by the server");
		return -1;
	default:
		ERR_clear_error();
		kv_redis_reset(r, "TLS connection failed");
		return -1;
	}
}

static int
flush_out(struct kv_redis *r)
{
	while (r->opos < r->olen) {
		ssize_t n;

		if (r->ssl != NULL) {
			n = SSL_write(r->ssl, r->out + r->opos, (int)(r->olen - r->opos));
			if (n <= 0)
				return tls_io_failed(r, (int)n);
			r->opos += (size_t)n;
			continue;
		}
		n = send(r->fd, r->out + r->opos, r->olen - r->opos, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n == -1) {
			fail_errno(r, "send");
			return -1;
		}
		r->opos += (size_t)n;
	}
	r->opos = r->olen = 0;
	return 0;
}

/* Hand every complete reply in the input to its callback. A callback may
 * queue commands but may also drop the connection (r->fd == -1 then). */
static void
dispatch(struct kv_redis *r)
{
	size_t off = 0, used;
	int rc;

	while (r->fd != -1 && off < r->ilen) {
		rc = kv_resp_parse(r->in + off, r->ilen - off, &r->reply, &used);
		if (rc == 0)
			break;
		if (rc == -1 || r->pcount == 0) {
			kv_redis_reset(r, rc == -1 ? "malformed reply" : "reply to no command");
			return;
		}
		{
			struct pending p = r->pend[r->phead];

			r->phead = (r->phead + 1) % PENDING_MAX;
			r->pcount--;
			off += used;
			if (p.cb != NULL)
				p.cb(p.arg, &r->reply.nodes[0]);
			/* a failover demoted this master: ask the Sentinels again */
			if (r->fd != -1 && r->c.nsentinels > 0 &&
			    r->reply.nodes[0].type == KV_RESP_ERROR &&
			    r->reply.nodes[0].len >= 8 &&
			    memcmp(r->reply.nodes[0].str, "READONLY", 8) == 0) {
				kv_redis_reset(r, "the master is a replica now");
				return;
			}
		}
	}
	if (r->fd == -1)
		return;
	memmove(r->in, r->in + off, r->ilen - off);
	r->ilen -= off;
}

static void
read_in(struct kv_redis *r)
{
	for (;;) {
		ssize_t n;

		if (r->icap - r->ilen < 4096) {
			size_t cap = r->icap ? r->icap * 2 : 16384;
			char *p;

			if (cap > IN_MAX || (p = realloc(r->in, cap)) == NULL) {
				kv_redis_reset(r, "reply over its bound");
				return;
			}
			r->in = p;
			r->icap = cap;
		}
		if (r->ssl != NULL) {
			n = SSL_read(r->ssl, r->in + r->ilen, (int)(r->icap - r->ilen));
			if (n <= 0) {
				(void)tls_io_failed(r, (int)n);
				return;
			}
			r->ilen += (size_t)n;
			dispatch(r);
			if (r->fd == -1)
				return;
			continue;
		}
		n = recv(r->fd, r->in + r->ilen, r->icap - r->ilen, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n == 0) {
			kv_redis_reset(r, "connection closed by the server");
			return;
		}
		if (n == -1) {
			fail_errno(r, "recv");
			return;
		}
		r->ilen += (size_t)n;
		dispatch(r);
		if (r->fd == -1)
			return;
	}
}

void
kv_redis_run(struct kv_redis *r, const struct pollfd *pfd)
{
	if (r->st == ST_IDLE) {
		try_connect(r);
		return;
	}
	if (r->st == ST_CONNECTING) {
		finish_connect(r, pfd);
		if (r->st == ST_CONNECTING || r->st == ST_TLS || r->fd == -1)
			return;
	} else if (r->st == ST_TLS) {
		/* the handshake counts against the connect deadline, also for
		 * a server that keeps the socket busy without finishing it */
		if (kv_now_ms() >= r->deadline_ms) {
			errno = ETIMEDOUT;
			fail_errno(r, "TLS handshake");
		} else if (pfd != NULL && pfd->revents != 0)
			tls_step(r);
		if (r->st == ST_TLS || r->fd == -1)
			return;
	} else if (pfd != NULL && (pfd->revents & (POLLIN | POLLHUP | POLLERR))) {
		read_in(r);
		if (r->fd == -1)
			return;
	}
	if (r->pcount > 0 && kv_now_ms() - r->pend[r->phead].sent_ms > REPLY_TIMEOUT_MS) {
		kv_redis_reset(r, "no reply within 3 s");
		return;
	}
	flush_out(r);
}

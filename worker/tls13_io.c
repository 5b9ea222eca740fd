/* kv_stream over kilovolt's TLS 1.3 record layer (tls13_io.h). A worker is
 * one single-threaded process: one cipher context and one record buffer
 * serve all its connections. Per connection: the keys, and bytes only
 * while they cannot go anywhere (a record that arrived in part, a record
 * the socket took in part, a record's plaintext larger than the caller's
 * buffer). */
#include "worker/tls13_io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <openssl/crypto.h>

#include "common/log.h"
#include "shm/ledger-t.h"
#include "worker/ktls.h"
#include "worker/stream.h"
#include "worker/tls13.h"
#include "worker/tls_handoff.h"

struct kv_tls13_io {
	struct kv_tls13_conn t;
	struct kv_tls13_part in; /* a record half arrived */
	struct held {
		uint8_t	*p;
		size_t	 len, off;
		size_t	 plain;  /* write: plaintext bytes the held record carries
				  * (0: our KeyUpdate) */
	} r, w;                  /* plaintext still to be read; a record half sent */
	uint8_t idle;            /* empty records and KeyUpdates since the last data */
};

/* A read takes at most this many records without data before it gives the
 * loop back (the socket stays readable: epoll is level-triggered): a peer
 * sending them back to back held a worker, and every client on it, for as
 * long as it kept on (issue 34: 4 s for another client's request). */
#define YIELD_AFTER 4
/* Empty records and KeyUpdates in a row, no data between, that fail the
 * connection: OpenSSL allows 32 empty records in a row; no real server
 * sends 32 KeyUpdates without a byte of data between them. */
#define IDLE_MAX 32

static uint8_t rec[KV_TLS13_HDR + KV_TLS13_MAX_CIPHER + 64];
static EVP_CIPHER_CTX *cctx;
static struct kv_counters *counters;

void
kv_tls13_io_counters(struct kv_counters *c)
{
	counters = c;
}

void
kv_tls13_io_count_handshake(void)
{
	if (counters != NULL)
		atomic_fetch_add(&counters->upstream_tls_handshakes_total, 1);
}

void
kv_tls13_io_free(struct kv_tls13_io *t)
{
	if (t == NULL)
		return;
	kv_tls13_part_free(&t->in);
	free(t->r.p);
	free(t->w.p);
	OPENSSL_cleanse(t, sizeof *t);
	free(t);
}

/* The leg has left OpenSSL: free its SSL quietly (nothing is written, the
 * session stays resumable) and count the hand-off. */
static void
free_ssl(struct kv_stream *s)
{
	SSL_set_quiet_shutdown(s->ssl, 1);
	(void)SSL_shutdown(s->ssl);
	SSL_free(s->ssl);
	s->ssl = NULL;
	if (counters != NULL && s->ktls != -1)
		atomic_fetch_add(&counters->upstream_tls_handoffs_total, 1);
}

void
kv_tls13_io_adopt(struct kv_stream *s)
{
	struct kv_tls13_conn c;
	struct kv_tls13_io *t;
	int r;

	if (s->ssl == NULL || kv_tls_handoff(s->ssl, &c) < 0)
		return;
	if (s->ktls_want && kv_ktls_available() && (r = kv_ktls_start(s->fd, &c)) != 1) {
		OPENSSL_cleanse(&c, sizeof c);
		s->ktls = r == 0 ? 1 : -1;
		free_ssl(s);
		return;
	}
	if ((cctx == NULL && (cctx = EVP_CIPHER_CTX_new()) == NULL) ||
	    (t = calloc(1, sizeof *t)) == NULL) {
		OPENSSL_cleanse(&c, sizeof c);
		return;          /* stays on OpenSSL */
	}
	t->t = c;
	OPENSSL_cleanse(&c, sizeof c);
	s->t13 = t;
	free_ssl(s);
}

/* Keeps n bytes of p (the rest of a record, or plaintext) in h. */
static int
hold(struct held *h, const uint8_t *p, size_t n, size_t plain)
{
	if ((h->p = malloc(n)) == NULL)
		return -1;
	memcpy(h->p, p, n);
	h->len = n;
	h->off = 0;
	h->plain = plain;
	return 0;
}

static void
unhold(struct held *h)
{
	free(h->p);
	memset(h, 0, sizeof *h);
}

/* Sends p[0..n); the count sent, or -1 on a socket error. */
static ssize_t
send_some(int fd, const uint8_t *p, size_t n)
{
	ssize_t r;
	do
		r = send(fd, p, n, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	return r;
}

/* Our KeyUpdate, asked for by the peer. RFC 8446 §4.6.3 wants it before
 * our next application data, not at once: with a record of ours half sent
 * it waits for kv_tls13_io_write; a socket that takes it in part keeps the
 * rest as a held write (plain 0) that the next write sends first. */
static int
send_key_update(struct kv_stream *s, struct kv_tls13_io *t)
{
	if (t->w.p != NULL)
		return 0;
	long n = kv_tls13_key_update(cctx, &t->t, rec);
	if (n < 0)
		return -1;
	ssize_t r = send_some(s->fd, rec, (size_t)n);
	if (r < 0)
		return -1;
	return r == n ? 0 : hold(&t->w, rec + r, (size_t)(n - r), 0);
}

/* Whether an opened record that is not data only costs its reader: an
 * empty application-data record, or a KeyUpdate (kv_tls13_post checked its
 * shape). Tickets are neither: a server may send many. */
static int
costs_only(uint8_t type, const uint8_t *pt, long m)
{
	return (type == KV_TLS13_APPDATA && m == 0) ||
	    (type == KV_TLS13_HANDSHAKE && m > 0 && pt[0] == 24);
}

/* After a record without data: 0 to read on, KV_IO_AGAIN to give the
 * loop its turn, KV_IO_ERROR when the peer only makes us spin. */
static ssize_t
after_nothing(struct kv_stream *s, struct kv_tls13_io *t, uint8_t type, long m, int *spare)
{
	if (t->t.key_update_due && send_key_update(s, t) < 0)
		return KV_IO_ERROR;
	if (costs_only(type, rec + KV_TLS13_HDR, m) && ++t->idle >= IDLE_MAX) {
		kv_log_warnx("KV0665", "upstream TLS: %d records in a row without data "
		    "(empty records or KeyUpdates); closed", IDLE_MAX);
		return KV_IO_ERROR;
	}
	if (--*spare > 0)
		return 0;
	s->want = EPOLLIN;
	return KV_IO_AGAIN;
}

ssize_t
kv_tls13_io_read(struct kv_stream *s, void *buf, size_t len)
{
	struct kv_tls13_io *t = s->t13;
	int spare = YIELD_AFTER;
	ssize_t r;

	if (t->r.p != NULL) {
		size_t n = t->r.len - t->r.off < len ? t->r.len - t->r.off : len;
		memcpy(buf, t->r.p + t->r.off, n);
		t->r.off += n;
		if (t->r.off == t->r.len)
			unhold(&t->r);
		return (ssize_t)n;
	}
	for (;;) {
		long n = kv_tls13_recv(s->fd, rec, &t->in);
		uint8_t type, alert = 0;
		if (n == 0) {
			s->want = EPOLLIN;
			return KV_IO_AGAIN;
		}
		if (n == -3)
			kv_log_warnx("KV0661", "upstream TLS: a record with a header TLS 1.3 "
			    "does not allow (type, version or length); closed");
		if (n < 0)
			return KV_IO_ERROR;      /* -2 too: no close_notify */
		long m = kv_tls13_open(cctx, &t->t.rd, rec, (size_t)n, &type);
		if (m < 0) {
			kv_log_warnx("KV0661", "upstream TLS: a record failed to open (bad tag or record); closed");
			return KV_IO_ERROR;
		}
		switch (kv_tls13_post(&t->t, type, rec + KV_TLS13_HDR, (size_t)m, &alert)) {
		case KV_TLS13_DATA:
			t->idle = 0;
			if ((size_t)m > len) {
				if (hold(&t->r, rec + KV_TLS13_HDR + len, (size_t)m - len, 0) < 0)
					return KV_IO_ERROR;
				m = (long)len;
			}
			memcpy(buf, rec + KV_TLS13_HDR, (size_t)m);
			return m;
		case KV_TLS13_NOTHING:
			if ((r = after_nothing(s, t, type, m, &spare)) != 0)
				return r;
			continue;
		case KV_TLS13_END:
			return 0;
		case KV_TLS13_FAIL:
			kv_log_warnx("KV0662", "upstream TLS: fatal record (alert %u or bad message); closed",
			    (unsigned)alert);
			return KV_IO_ERROR;
		}
	}
}

/* Sends the rest of a held record: 1 when it is all out, 0 when the socket
 * is full again, -1 on an error. */
static int
flush_held(struct kv_stream *s, struct held *w)
{
	ssize_t r = send_some(s->fd, w->p + w->off, w->len - w->off);
	if (r < 0)
		return -1;
	w->off += (size_t)r;
	if (w->off < w->len) {
		s->want = EPOLLOUT;
		return 0;
	}
	return 1;
}

ssize_t
kv_tls13_io_write(struct kv_stream *s, const void *buf, size_t len)
{
	struct kv_tls13_io *t = s->t13;
	ssize_t r;

	if (t->w.p != NULL) {
		int f = flush_held(s, &t->w);
		if (f <= 0)
			return f < 0 ? KV_IO_ERROR : KV_IO_AGAIN;
		size_t plain = t->w.plain;
		unhold(&t->w);
		if (plain > 0)
			return (ssize_t)plain;
	}
	if (t->t.key_update_due) {
		if (send_key_update(s, t) < 0)
			return KV_IO_ERROR;
		if (t->w.p != NULL) {
			s->want = EPOLLOUT;
			return KV_IO_AGAIN;
		}
	}
	size_t k = len > KV_TLS13_MAX_PLAIN ? KV_TLS13_MAX_PLAIN : len;
	long n = kv_tls13_seal(cctx, &t->t.wd, KV_TLS13_APPDATA, buf, k, rec);
	if (n < 0)
		return KV_IO_ERROR;
	r = send_some(s->fd, rec, (size_t)n);
	if (r < 0)
		return KV_IO_ERROR;
	if (r == n)
		return (ssize_t)k;
	if (hold(&t->w, rec + r, (size_t)(n - r), k) < 0)
		return KV_IO_ERROR;
	s->want = EPOLLOUT;
	return KV_IO_AGAIN;
}

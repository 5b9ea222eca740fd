/* One non-blocking byte stream to a peer, plain socket or TLS session;
 * see stream.h. */

#include "worker/stream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include "worker/ktls.h"
#include "worker/tls13_io.h"

/* SSL_MODE_RELEASE_BUFFERS frees the read buffer only once a record is
 * consumed; the next SSL_read (the one that finds the socket empty) sets
 * up a fresh 16.7 KB buffer and keeps it while the stream waits for its
 * next token: 1,000 paced streams held 8 MB so (docs/tls-memory.md).
 * SSL_free_buffers leaves a buffer that holds part of a record alone. */
static void
tls_idle(struct kv_stream *s)
{
	(void)SSL_free_buffers(s->ssl);
}

void
kv_stream_idle(struct kv_stream *s)
{
	if (s->ssl != NULL)
		tls_idle(s);
}

/* Map an OpenSSL result to KV_IO_AGAIN / KV_IO_ERROR, recording the wait. */
static ssize_t
tls_result(struct kv_stream *s, int r)
{
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		s->want = EPOLLIN;
		tls_idle(s);
		return KV_IO_AGAIN;
	case SSL_ERROR_WANT_WRITE:
		s->want = EPOLLOUT;
		return KV_IO_AGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	default:
		ERR_clear_error();
		return KV_IO_ERROR;
	}
}

/* A plaintext recv's or send's result N: a full socket buffer (or an
 * empty one) waits for WANT. */
static ssize_t
plain_result(struct kv_stream *s, ssize_t n, int want)
{
	if (n >= 0)
		return n;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		s->want = want;
		return KV_IO_AGAIN;
	}
	return KV_IO_ERROR;
}

ssize_t
kv_stream_read(struct kv_stream *s, void *buf, size_t len)
{
	ssize_t n;
	int r;

	if (s->ssl != NULL) {
		ERR_clear_error();
		r = SSL_read(s->ssl, buf, len > 0x7fffffff ? 0x7fffffff : (int)len);
		n = r > 0 ? r : tls_result(s, r);
		if (n != KV_IO_AGAIN && s->settled != NULL) {
			void (*cb)(struct kv_stream *) = s->settled;

			s->settled = NULL;
			cb(s);
		}
		/* Once settled (the first ticket kept for resumption), a TLS
		 * 1.3 leg leaves OpenSSL as soon as OpenSSL holds nothing
		 * unread (docs/tls-memory.md, "Own record layer"). */
		if (n > 0 && s->settled == NULL)
			kv_tls13_io_adopt(s);
		return n;
	}
	if (s->t13 != NULL)
		return kv_tls13_io_read(s, buf, len);
	if (s->ktls == 1)
		return kv_ktls_read(s->fd, buf, len, &s->want);
	if (s->ktls == -1)
		return KV_IO_ERROR;
	return kv_stream_recv(s, buf, len);
}

ssize_t
kv_stream_recv(struct kv_stream *s, void *buf, size_t len)
{
	ssize_t n;

	/* recv, not read: a socket's read goes through the VFS layer first
	 * (vfs_read, fdget_pos, sock_read_iter: 1.4 us of a small request's
	 * samples in perf, none for HAProxy's recvfrom) */
	do
		n = recv(s->fd, buf, len, 0);
	while (n == -1 && errno == EINTR);
	return plain_result(s, n, EPOLLIN);
}

ssize_t
kv_stream_write(struct kv_stream *s, const void *buf, size_t len)
{
	ssize_t n;
	int r;

	if (s->ssl != NULL) {
		ERR_clear_error();
		r = SSL_write(s->ssl, buf, len > 0x7fffffff ? 0x7fffffff : (int)len);
		if (r > 0 && (size_t)r == len)
			tls_idle(s);
		return r > 0 ? r : tls_result(s, r);
	}
	if (s->t13 != NULL)
		return kv_tls13_io_write(s, buf, len);
	if (s->ktls == -1)
		return KV_IO_ERROR;
	/* on kernel TLS (s->ktls 1) a send is sealed by the kernel */
	do
		n = send(s->fd, buf, len, MSG_NOSIGNAL);
	while (n == -1 && errno == EINTR);
	return plain_result(s, n, EPOLLOUT);
}

int
kv_stream_handshake(struct kv_stream *s, char *err, size_t errlen)
{
	unsigned long e;
	long vr;
	int r;

	ERR_clear_error();
	r = SSL_connect(s->ssl);
	if (r == 1) {
		tls_idle(s);
		kv_tls13_io_count_handshake();
		return 1;
	}
	switch (SSL_get_error(s->ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return tls_result(s, r);	/* records the wait */
	default:
		break;
	}
	vr = SSL_get_verify_result(s->ssl);
	e = ERR_peek_last_error();
	if (vr != X509_V_OK)
		snprintf(err, errlen, "certificate verify failed: %s",
		    X509_verify_cert_error_string(vr));
	else if (e != 0)
		snprintf(err, errlen, "TLS handshake failed: %s",
		    ERR_reason_error_string(e) ? ERR_reason_error_string(e) : "unknown");
	else
		snprintf(err, errlen, "TLS handshake failed: connection closed");
	ERR_clear_error();
	return KV_IO_ERROR;
}

void
kv_stream_close(struct kv_stream *s, int abort)
{
	struct linger lg = { 1, 0 };

	if (s->ssl != NULL) {
		/* A clean close_notify costs a write we may not be able to do;
		 * providers do not require it. */
		SSL_set_quiet_shutdown(s->ssl, 1);
		/* Quiet, it writes nothing, but marks the close as clean: an
		 * SSL_free without it flags the session not resumable. A
		 * handshake that never finished has no session worth keeping
		 * (and SSL_shutdown would queue an error). */
		if (!SSL_in_init(s->ssl))
			(void)SSL_shutdown(s->ssl);
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	kv_tls13_io_free(s->t13);
	s->t13 = NULL;
	s->ktls = 0;
	if (s->fd != -1) {
		if (abort)
			(void)setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(s->fd);
		s->fd = -1;
	}
}

/* One bounded HTTP/1.1 exchange for helper processes: see http_fetch.h.
 * The socket is non-blocking throughout and every wait is a poll() up to
 * the one deadline, so connect, handshake, write and read share it (name
 * resolution, getaddrinfo, is the one step it cannot bound). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/http_fetch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/clock.h"
#include "common/http.h"
#include "common/tls_client.h"

struct fconn {
	int	 fd;
	SSL_CTX	*ctx;
	SSL	*ssl;
	int64_t	 until;		/* kv_now_ms() deadline */
	char	*err;
	size_t	 errlen;
};

int
kv_fetch_parse_url(const char *url, struct kv_fetch_url *out)
{
	const char *h, *hend, *p;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (strncmp(url, "https://", 8) == 0)
		out->tls = 1;
	else if (strncmp(url, "http://", 7) != 0)
		return -1;
	h = url + (out->tls ? 8 : 7);
	p = h + strcspn(h, "/?#");
	if (*p != '\0' && *p != '/')
		return -1;
	if (*h == '[') {
		out->v6 = 1;
		if ((hend = memchr(h, ']', (size_t)(p - h))) == NULL)
			return -1;
		h++;
	} else if ((hend = memchr(h, ':', (size_t)(p - h))) == NULL)
		hend = p;
	if ((n = (size_t)(hend - h)) == 0 || n >= sizeof(out->host))
		return -1;
	memcpy(out->host, h, n);
	hend += out->v6;	/* past ']' */
	if (hend < p && *hend == ':') {
		n = (size_t)(p - hend - 1);
		if (n == 0 || n >= sizeof(out->port) || strspn(hend + 1, "0123456789") < n)
			return -1;
		memcpy(out->port, hend + 1, n);
	} else if (hend != p)
		return -1;
	else
		snprintf(out->port, sizeof(out->port), "%s", out->tls ? "443" : "80");
	if (strlen(*p ? p : "/") >= sizeof(out->path) || strpbrk(p, " \r\n") != NULL)
		return -1;
	snprintf(out->path, sizeof(out->path), "%s", *p ? p : "/");
	return 0;
}

/* Wait for EV on the socket until the deadline: 0, or -1 (timed out). */
static int
wait_io(struct fconn *k, short ev)
{
	struct pollfd p = { .fd = k->fd, .events = ev };
	int64_t left;
	int r;

	for (;;) {
		if ((left = k->until - kv_now_ms()) <= 0) {
			snprintf(k->err, k->errlen, "timed out");
			return -1;
		}
		if ((r = poll(&p, 1, (int)left)) == 1)
			return 0;
		if (r == -1 && errno != EINTR) {
			snprintf(k->err, k->errlen, "poll: %s", strerror(errno));
			return -1;
		}
	}
}

static int
connect_one(struct fconn *k, const struct addrinfo *ai)
{
	int e = 0;
	socklen_t el = sizeof(e);

	k->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    ai->ai_protocol);
	if (k->fd == -1) {
		snprintf(k->err, k->errlen, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(k->fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return 0;
	if (errno != EINPROGRESS)
		e = errno;
	else if (wait_io(k, POLLOUT) == -1)
		return -1;
	else if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &e, &el) == -1)
		e = errno;
	if (e != 0)
		snprintf(k->err, k->errlen, "connect: %s", strerror(e));
	return e != 0 ? -1 : 0;
}

static int
dial(struct fconn *k, const struct kv_fetch_url *u)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int rc;

	if ((rc = getaddrinfo(u->host, u->port, &hints, &res)) != 0) {
		snprintf(k->err, k->errlen, "%s", gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (connect_one(k, ai) == 0)
			break;
		if (k->fd != -1)
			close(k->fd);
		k->fd = -1;
	}
	freeaddrinfo(res);
	return k->fd == -1 ? -1 : 0;
}

/* After an SSL call returned R: wait for what it wants (0: call again),
 * or -1 with the reason. */
static int
tls_want(struct fconn *k, int r, const char *what)
{
	switch (SSL_get_error(k->ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return wait_io(k, POLLIN);
	case SSL_ERROR_WANT_WRITE:
		return wait_io(k, POLLOUT);
	default:
		snprintf(k->err, k->errlen, "TLS %s: %s", what,
		    ERR_reason_error_string(ERR_peek_last_error()) ?
		    ERR_reason_error_string(ERR_peek_last_error()) : "connection closed");
		ERR_clear_error();
		return -1;
	}
}

static int
tls_open(struct fconn *k, const struct kv_fetch_url *u, const char *ca_file)
{
	unsigned char a[16];
	int numeric = inet_pton(AF_INET, u->host, a) == 1 || inet_pton(AF_INET6, u->host, a) == 1;
	int r;

	if ((k->ctx = kv_tls_client_ctx(ca_file != NULL && ca_file[0] ? ca_file : NULL,
	    NULL, 0)) == NULL || (k->ssl = SSL_new(k->ctx)) == NULL ||
	    SSL_set_fd(k->ssl, k->fd) != 1 || kv_tls_expect_host(k->ssl, u->host, numeric) != 0) {
		snprintf(k->err, k->errlen, "TLS set-up failed (CA file?)");
		ERR_clear_error();
		return -1;
	}
	while ((r = SSL_connect(k->ssl)) != 1)
		if (tls_want(k, r, "handshake") == -1)
			return -1;
	return 0;
}

static int
send_all(struct fconn *k, const char *p, size_t n)
{
	ssize_t w;
	int r;

	while (n > 0) {
		if (k->ssl != NULL) {
			if ((r = SSL_write(k->ssl, p, (int)n)) > 0) {
				p += r;
				n -= (size_t)r;
			} else if (tls_want(k, r, "write") == -1)
				return -1;
			continue;
		}
		if ((w = write(k->fd, p, n)) > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w == -1 && errno != EAGAIN && errno != EINTR) {
			snprintf(k->err, k->errlen, "write: %s", strerror(errno));
			return -1;
		} else if (wait_io(k, POLLOUT) == -1)
			return -1;
	}
	return 0;
}

/* Some bytes into P[0..CAP): their count, 0 at the end of the stream, or
 * -1 with the reason. */
static ssize_t
recv_some(struct fconn *k, char *p, size_t cap)
{
	ssize_t n;
	int r, e;

	for (;;) {
		if (k->ssl != NULL) {
			if ((r = SSL_read(k->ssl, p, (int)cap)) > 0)
				return r;
			e = SSL_get_error(k->ssl, r);
			if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && r == 0)) {
				ERR_clear_error();
				return 0;	/* the answer's framing says if it was whole */
			}
			if (tls_want(k, r, "read") == -1)
				return -1;
			continue;
		}
		if ((n = read(k->fd, p, cap)) >= 0)
			return n;
		if (errno != EAGAIN && errno != EINTR) {
			snprintf(k->err, k->errlen, "read: %s", strerror(errno));
			return -1;
		}
		if (wait_io(k, POLLIN) == -1)
			return -1;
	}
}

/* Whether BUF[0..GOT) holds a whole answer with a Content-Length (then
 * reading can stop before the peer closes). */
static int
complete(const char *buf, size_t got, struct kv_http_response *res)
{
	const char *reason;

	return kv_http_parse_response(buf, got, res, &reason) > 0 && !res->chunked &&
	    res->content_length >= 0 && got - res->head_len >= (size_t)res->content_length;
}

/* A chunked body at P[0..*N) decoded in place (the payload never runs
 * ahead of its framing). 0, or -1 when malformed or cut. */
static int
unchunk(char *p, size_t *n)
{
	struct kv_chunked ck;
	const char *data;
	size_t in = 0, out = 0, dlen;
	ssize_t r;

	kv_chunked_init(&ck);
	while (in < *n && !ck.done) {
		if ((r = kv_chunked_feed(&ck, p + in, *n - in, &data, &dlen)) == -1)
			return -1;
		if (dlen > 0)	/* a run of framing only hands out no data */
			memmove(p + out, data, dlen);
		out += dlen;
		in += (size_t)r;
	}
	*n = out;
	return ck.done ? 0 : -1;
}

/* The answer read into BUF and framed: its status, *BODY and *BODY_LEN. */
static int
read_answer(struct fconn *k, char *buf, size_t cap, const char **body, size_t *body_len)
{
	struct kv_http_response res;
	const char *reason = "cut short";
	size_t got = 0;
	ssize_t n;

	while (!complete(buf, got, &res)) {
		if (got + 1 >= cap) {
			snprintf(k->err, k->errlen, "answer longer than %zu bytes", cap - 1);
			return -1;
		}
		if ((n = recv_some(k, buf + got, cap - 1 - got)) == -1)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (kv_http_parse_response(buf, got, &res, &reason) <= 0) {
		snprintf(k->err, k->errlen, "malformed answer: %s", reason);
		return -1;
	}
	*body_len = got - res.head_len;
	if (res.content_length >= 0 && *body_len < (size_t)res.content_length) {
		snprintf(k->err, k->errlen, "answer cut short");
		return -1;
	}
	if (res.content_length >= 0)
		*body_len = (size_t)res.content_length;
	else if (res.chunked && unchunk(buf + res.head_len, body_len) == -1) {
		snprintf(k->err, k->errlen, "malformed chunked answer");
		return -1;
	}
	buf[res.head_len + *body_len] = '\0';
	*body = buf + res.head_len;
	return res.status;
}

int
kv_fetch(const struct kv_fetch_req *r, char *buf, size_t cap, const char **body,
    size_t *body_len, char *err, size_t errlen)
{
	struct fconn k = { .fd = -1, .until = kv_now_ms() + r->timeout_ms, .err = err,
	    .errlen = errlen };
	const struct kv_fetch_url *u = r->url;
	char head[4096], port[16] = "";
	int n, status = -1;

	if (strcmp(u->port, u->tls ? "443" : "80") != 0)
		snprintf(port, sizeof(port), ":%s", u->port);
	n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: %s%s%s%s\r\n"
	    "User-Agent: kilovolt\r\nConnection: close\r\n%s", r->method,
	    r->path != NULL ? r->path : u->path, u->v6 ? "[" : "", u->host, u->v6 ? "]" : "",
	    port, r->headers != NULL ? r->headers : "");
	if (n > 0 && (size_t)n < sizeof(head) && (r->body != NULL || strcmp(r->method, "POST") == 0))
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Content-Length: %zu\r\n",
		    r->body_len);
	if (n < 0 || (size_t)n + 3 > sizeof(head)) {
		snprintf(err, errlen, "request head too long");
		return -1;
	}
	memcpy(head + n, "\r\n", 3);
	if (dial(&k, u) == 0 && (!u->tls || tls_open(&k, u, r->ca_file) == 0) &&
	    send_all(&k, head, (size_t)n + 2) == 0 &&
	    (r->body_len == 0 || send_all(&k, r->body, r->body_len) == 0))
		status = read_answer(&k, buf, cap, body, body_len);
	SSL_free(k.ssl);
	SSL_CTX_free(k.ctx);
	if (k.fd != -1)
		close(k.fd);
	return status;
}

int
kv_fetch_form_add(char *out, size_t cap, size_t *at, const char *name, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(name);

	if (*at + n + 2 >= cap)
		return -1;
	if (*at > 0)
		out[(*at)++] = '&';
	memcpy(out + *at, name, n);
	*at += n;
	out[(*at)++] = '=';
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (*at + 4 >= cap)
			return -1;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			out[(*at)++] = (char)c;
		} else {
			out[(*at)++] = '%';
			out[(*at)++] = hex[c >> 4];
			out[(*at)++] = hex[c & 15];
		}
	}
	out[*at] = '\0';
	return 0;
}

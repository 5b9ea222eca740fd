/* kvctl's Redis client (kvctl_redis.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl_redis.h"
#include "cli/kvctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <openssl/err.h>

#include "common/clock.h"
#include "common/tls_client.h"

#define IO_TIMEOUT_S	3


static int
dial(const struct kv_cluster *c)
{
	struct sockaddr_un sun;
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	int fd = -1;

	if (c->redis_unix[0] != '\0') {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, c->redis_unix, strlen(c->redis_unix) + 1);
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1 &&
		    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
			close(fd);
			fd = -1;
		}
	} else {
		fd = kvctl_tcp_connect(c->redis_host, c->redis_port);
	}
	if (fd != -1 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* rediss://: TLS over the connected FD, the server's certificate verified
 * against [cluster] ca_file (or the system's anchors) and its name or IP.
 * Blocking, within the socket's timeouts. Returns 0, or -1 with a reason
 * printed. */
static int
tls_wrap(struct kvctl_redis *c, const struct kv_cluster *cl)
{
	unsigned char ip[16];
	long vr;
	int numeric = inet_pton(AF_INET, cl->redis_host, ip) == 1 ||
	    inet_pton(AF_INET6, cl->redis_host, ip) == 1;

	/* the master's set-up (common/tls_client.h), auto-retry off */
	if ((c->ctx = kv_tls_client_ctx(cl->ca_file[0] ? cl->ca_file : NULL, NULL, 0)) == NULL ||
	    (c->ssl = SSL_new(c->ctx)) == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
	    kv_tls_expect_host(c->ssl, cl->redis_host, numeric) != 0) {
		fprintf(stderr, "kvctl: cannot set up TLS to Redis%s%s\n",
		    cl->ca_file[0] ? " with ca_file " : "", cl->ca_file);
		ERR_clear_error();
		return -1;
	}
	if (SSL_connect(c->ssl) == 1)
		return 0;
	vr = SSL_get_verify_result(c->ssl);
	fprintf(stderr, "kvctl: TLS to Redis %s:%s failed: %s\n", cl->redis_host,
	    cl->redis_port, vr != X509_V_OK ? X509_verify_cert_error_string(vr) :
	    "the handshake did not complete");
	ERR_clear_error();
	return -1;
}

static ssize_t
io_send(struct kvctl_redis *c, const char *p, size_t n)
{
	if (c->ssl != NULL) {
		int w = SSL_write(c->ssl, p, (int)n);

		return w > 0 ? w : (errno = EIO, -1);
	}
	return send(c->fd, p, n, MSG_NOSIGNAL);
}

static ssize_t
io_recv(struct kvctl_redis *c, char *p, size_t n)
{
	/* a ticket or KeyUpdate ends a read (no auto-retry): read on, but
	 * not past the socket's timeout from now */
	int64_t until = kv_now_ms() + IO_TIMEOUT_S * 1000;

	while (c->ssl != NULL) {
		int r = SSL_read(c->ssl, p, (int)n);

		if (r > 0)
			return r;
		switch (SSL_get_error(c->ssl, r)) {
		case SSL_ERROR_ZERO_RETURN:
			return 0;
		case SSL_ERROR_WANT_READ:
			if (kv_now_ms() < until)
				continue;
			/* FALLTHROUGH */
		default:
			ERR_clear_error();
			errno = EIO;
			return -1;
		}
	}
	return recv(c->fd, p, n, 0);
}


/* redis+sentinel://: ask each Sentinel in turn for the master's address
 * and put it in CL. Returns 0, or -1 with a reason printed. */
static int
ask_sentinels(struct kv_cluster *cl)
{
	const char *q[] = { "SENTINEL", "get-master-addr-by-name", cl->sentinel_master };
	const struct kv_resp_value *v;
	struct kvctl_redis s;
	struct kv_cluster one;
	int i, ok;

	for (i = 0; i < cl->nsentinels; i++) {
		one = *cl;
		one.redis_unix[0] = '\0';
		strcpy(one.redis_host, cl->sentinel_host[i]);
		strcpy(one.redis_port, cl->sentinel_port[i]);
		memset(&s, 0, sizeof(s));
		if ((s.fd = dial(&one)) == -1)
			continue;
		v = kvctl_redis_call(&s, 3, q);
		ok = v != NULL && v->type == KV_RESP_ARRAY && !v->nil && v->n == 2 &&
		    v->elem[0].len < sizeof(cl->redis_host) && v->elem[1].len < sizeof(cl->redis_port);
		if (ok) {
			memcpy(cl->redis_host, v->elem[0].str, v->elem[0].len);
			cl->redis_host[v->elem[0].len] = '\0';
			memcpy(cl->redis_port, v->elem[1].str, v->elem[1].len);
			cl->redis_port[v->elem[1].len] = '\0';
		}
		close(s.fd);
		free(s.buf);
		if (ok)
			return 0;
	}
	fprintf(stderr, "kvctl: no Sentinel named the master %s\n", cl->sentinel_master);
	return -1;
}

const struct kv_resp_value *
kvctl_redis_call(struct kvctl_redis *c, int argc, const char *const *argv)
{
	size_t lens[8], off = 0;
	char out[1024];
	long n;
	int i, rc;

	for (i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	if ((n = kv_resp_command(out, sizeof(out), argc, argv, lens)) < 0)
		return NULL;
	while (off < (size_t)n) {
		ssize_t w = io_send(c, out + off, (size_t)n - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return NULL;
		off += (size_t)w;
	}
	if (c->used > 0) {
		memmove(c->buf, c->buf + c->used, c->len - c->used);
		c->len -= c->used;
		c->used = 0;
	}
	while ((rc = kv_resp_parse(c->buf, c->len, &c->r, &c->used)) == 0) {
		ssize_t r;

		if (c->cap - c->len < 4096) {
			char *p = realloc(c->buf, c->cap ? c->cap * 2 : 65536);
			if (p == NULL || c->cap > (64u << 20))
				return NULL;
			c->buf = p;
			c->cap = c->cap ? c->cap * 2 : 65536;
		}
		r = io_recv(c, c->buf + c->len, c->cap - c->len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = ECONNRESET;
			return NULL;
		}
		c->len += (size_t)r;
	}
	return rc == 1 ? &c->r.nodes[0] : NULL;
}


int
kvctl_redis_open(struct kvctl_redis *c, const struct kv_cluster *cl)
{
	struct kv_cluster where = *cl;
	const struct kv_resp_value *v;
	const char *auth[] = { "AUTH", cl->password, NULL };
	int argc = 2;

	c->fd = -1;
	if (where.nsentinels > 0 && ask_sentinels(&where) == -1)
		return -1;
	if ((c->fd = dial(&where)) == -1) {
		fprintf(stderr, "kvctl: cannot reach Redis: %s\n", strerror(errno));
		return -1;
	}
	if (where.redis_tls && tls_wrap(c, &where) == -1)
		return -1;
	if (cl->password == NULL)
		return 0;
	if (cl->user[0] != '\0') {	/* AUTH user password */
		auth[1] = cl->user;
		auth[2] = cl->password;
		argc = 3;
	}
	if ((v = kvctl_redis_call(c, argc, auth)) == NULL || v->type == KV_RESP_ERROR) {
		fprintf(stderr, "kvctl: Redis refused AUTH\n");
		return -1;
	}
	return 0;
}

void
kvctl_redis_close(struct kvctl_redis *c)
{
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

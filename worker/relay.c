/* The response body: relayed as it arrives (splice for plaintext bytes
 * nobody needs to see), re-framed when the client needs it, scanned for
 * usage and filtered of the usage event we injected (sse_filter.c). The
 * response head is read in relay_head.c, the charge settled in settle.c. */
#include "worker/relay.h"
#include "worker/relay_head.h"
#include "worker/request_send.h"
#include "worker/upstream_set.h"
#include "common/fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/money.h"
#include "worker/errors.h"
#include "worker/settle.h"
#include "worker/sse_filter.h"

#define RELAY_READS_PER_TURN 2

/* Write "LEN-in-hex\r\n" at p; returns its length. sprintf cost ~300
 * instructions per SSE event, as much as relaying a short event's bytes. */
static size_t
chunk_line(char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[2 * sizeof(size_t)];
	size_t n = 0, i;

	do
		tmp[n++] = hex[len & 15];
	while ((len >>= 4) != 0);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	p[n] = '\r';
	p[n + 1] = '\n';
	return n + 2;
}

/* Emit payload bytes a then b to the client, framed as one chunk when we
 * re-frame (b lets an event go out with a piece cut from its middle). */
static int
emit2(struct kv_conn *c, const char *a, size_t alen, const char *b, size_t blen)
{
	size_t len = alen + blen;

	if (len == 0)
		return 0;
	if (conn_obuf_reserve(c, len + 24) == -1)
		return -1;
	if (c->out_chunked)
		c->olen += chunk_line(c->obuf + c->olen, len);
	if (alen > 0)
		memcpy(c->obuf + c->olen, a, alen);
	if (blen > 0)
		memcpy(c->obuf + c->olen + alen, b, blen);
	c->olen += len;
	if (c->out_chunked) {
		memcpy(c->obuf + c->olen, "\r\n", 2);
		c->olen += 2;
	}
	return 0;
}

static int
emit(struct kv_conn *c, const char *p, size_t len)
{
	return emit2(c, p, len, NULL, 0);
}

/* The SSE filter's output (sse_filter.h) goes to the client as emit2's. */
int
relay_sse_out(void *arg, const char *a, size_t alen, const char *b, size_t blen)
{
	return emit2(arg, a, alen, b, blen);
}


static int
payload(struct kv_conn *c, const char *p, size_t len)
{
	if (c->scan_on)
		kv_usage_feed(&c->scan, p, len);
	if (!c->reframe)
		return 0;
	return c->inject && c->scan_on ? kv_sse_filter_feed(&c->sse, p, len) : emit(c, p, len);
}

/* Account for bytes read from the upstream: returns how many belong to
 * this response (the rest is discarded), or -1 for broken framing. */
ssize_t
relay_consume(struct kv_conn *c, const char *p, size_t len)
{
	const char *data;
	size_t dlen, used = 0;
	ssize_t n;

	if (c->resp_chunked) {
		while (used < len && !c->resp_dec.done) {
			n = kv_chunked_feed(&c->resp_dec, p + used, len - used, &data, &dlen);
			if (n == -1 || payload(c, data, dlen) == -1)
				return -1;
			used += (size_t)n;
		}
		c->resp_done = c->resp_dec.done;
	} else {
		used = len;
		if (c->resp_left >= 0 && (int64_t)used > c->resp_left)
			used = (size_t)c->resp_left;
		if (payload(c, p, used) == -1)
			return -1;
		if (c->resp_left >= 0) {
			c->resp_left -= (int64_t)used;
			c->resp_done = c->resp_left == 0;
		}
	}
	if (used < len)
		c->up_keepalive = 0;	/* bytes past the response: do not reuse */
	if (c->resp_done && c->reframe) {
		if (kv_sse_filter_flush(&c->sse) == -1)
			return -1;
		if (c->out_chunked && conn_obuf_reserve(c, 5) == 0) {
			memcpy(c->obuf + c->olen, "0\r\n\r\n", 5);
			c->olen += 5;
		}
	}
	return (ssize_t)used;
}

static enum step
cut(struct kv_conn *c)
{
	c->cut = 1;
	conn_close(c);
	return STEP_CLOSED;
}

/* A cut because the client's side failed: not the gateway's error. */
static enum step
client_cut(struct kv_conn *c)
{
	c->client_cut = 1;
	return cut(c);
}

static enum step
wait_client(struct kv_conn *c)
{
	if (c->upos >= c->ulen) {
		/* Nothing of the read is pending (it went to obuf, or out):
		 * a stream held up by a slow client keeps only its output. */
		free(c->ubuf);
		c->ubuf = NULL;
		c->ulen = c->upos = 0;
	}
	c->read_big = 0;
	kv_stream_idle(&c->uc->s);
	conn_watch_upstream(c, 0);
	conn_watch_client(c, EPOLLOUT | EPOLLRDHUP);
	conn_set_deadline(c, 0);
	return STEP_WAIT;
}

static enum step
wait_upstream(struct kv_conn *c, uint32_t ev)
{
	conn_quiet_client(c);
	conn_watch_upstream(c, ev);
	conn_set_deadline(c, 1);
	return STEP_WAIT;
}

/* A stream waiting for its next token holds no buffer: memory follows the
 * streams that are moving bytes right now, not the streams that are open. */
static void
idle_buffers(struct kv_conn *c)
{
	if (c->uc != NULL)
		kv_stream_idle(&c->uc->s);	/* OpenSSL's record buffers too */
	free(c->ubuf);
	c->ubuf = NULL;
	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	kv_sse_filter_idle(&c->sse);
}

/* Account for n bytes the client took from obuf, then from ubuf. */
static void
sent(struct kv_conn *c, size_t n)
{
	size_t o = c->olen - c->opos < n ? c->olen - c->opos : n;

	c->opos += o;
	c->upos += n - o;
	c->bytes_out += (uint64_t)n;
	c->sent_any = 1;
}

/* Write what waits for the client: obuf, then (unless we re-frame) the
 * bytes read into ubuf, in one sendmsg, so a JSON response's head and body
 * leave in one segment and one syscall. The client leg is plaintext.
 * 1 all written, 0 would block, -1 error. */
static int
flush_client(struct kv_conn *c)
{
	struct iovec iov[2];
	struct msghdr m = { .msg_iov = iov };
	ssize_t n;

	if (c->client_gone) {
		/* nobody to send to: the bytes were scanned, that is all */
		c->upos = c->ulen;
		c->olen = c->opos = 0;
		return 1;
	}
	for (;;) {
		m.msg_iovlen = 0;
		if (c->opos < c->olen)
			iov[m.msg_iovlen++] = (struct iovec){ c->obuf + c->opos, c->olen - c->opos };
		if (!c->reframe && c->upos < c->ulen)
			iov[m.msg_iovlen++] = (struct iovec){ c->ubuf + c->upos, c->ulen - c->upos };
		if (m.msg_iovlen == 0)
			break;
		n = sendmsg(c->cfd, &m, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		sent(c, (size_t)n);
	}
	c->olen = c->opos = 0;
	return 1;
}

static int
splice_eligible(const struct kv_conn *c)
{
	/* Bytes in the pipe leave through it, even when the upstream is done
	 * with this response: read on, and they would wait there forever. */
	if (c->pipe_len > 0)
		return 1;
	return c->w->splice_ok && !c->reframe && !c->scan_on && !kv_stream_tls(&c->uc->s) &&
	    !c->resp_chunked && !c->resp_done && (c->resp_left > 0 || c->resp_close);
}

/* Zero-copy upstream → pipe → client for bytes nobody needs to see. */
static enum step
relay_splice(struct kv_conn *c)
{
	size_t want;
	ssize_t n;

	if (c->pipefd[0] == -1 && pipe2(c->pipefd, O_NONBLOCK | O_CLOEXEC) == -1) {
		c->pipefd[0] = c->pipefd[1] = -1;
		c->w->splice_ok = 0;
		return STEP_CONT;
	}
	for (;;) {
		if (c->pipe_len > 0) {
			n = splice(c->pipefd[0], NULL, c->cfd, NULL, c->pipe_len,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				c->pipe_len -= (size_t)n;
				c->bytes_out += (uint64_t)n;
				c->sent_any = 1;
				continue;
			}
			if (n == -1 && errno == EAGAIN)
				return wait_client(c);
			return client_cut(c);
		}
		if (c->resp_done)
			return STEP_CONT;
		want = 65536;
		if (!c->resp_close && c->resp_left < (int64_t)want)
			want = (size_t)c->resp_left;
		n = splice(c->uc->s.fd, NULL, c->pipefd[1], NULL, want,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			c->pipe_len += (size_t)n;
			if (!c->resp_close) {
				c->resp_left -= n;
				c->resp_done = c->resp_left == 0;
			}
			conn_set_deadline(c, 1);
			continue;
		}
		if (n == 0) {
			if (!c->resp_close)
				return cut(c);
			c->resp_done = 1;
			c->up_keepalive = 0;
			continue;
		}
		/* The pipe is empty here, so EAGAIN means the socket is. */
		if (errno == EAGAIN)
			return wait_upstream(c, EPOLLIN);
		if (errno == EINVAL || errno == ENOSYS) {
			c->w->splice_ok = 0;
			return STEP_CONT;
		}
		return cut(c);
	}
}

/* An empty ubuf sized for the next read: 64 KB while the upstream fills
 * what we read and the client takes it all (a quarter of the reads and
 * writes of 16 KB: the benchmark's 256 full-speed streams took 1.7 CPU
 * seconds instead of 2.55), else 16 KB: a paced stream's read is one event,
 * and a stream held up by its client keeps little. Returns the size, or -1. */
static ssize_t
read_buffer(struct kv_conn *c)
{
	size_t want = c->read_big ? KV_UBUF_FAST : KV_UBUF_SIZE;

	if (c->ubuf != NULL && c->ucap != want) {
		free(c->ubuf);
		c->ubuf = NULL;
	}
	if (c->ubuf == NULL) {
		if ((c->ubuf = malloc(want)) == NULL)
			return -1;
		c->ucap = want;
	}
	return (ssize_t)want;
}

/* A stream drained for its usage took N more bytes: 1 when that passes
 * drain_max or the drain deadline (then it is cut and charged as one). */
static int
drain_spent(struct kv_conn *c, size_t n)
{
	if (n > c->drain_left || c->w->now_ms >= c->drain_until_ms)
		return 1;
	c->drain_left -= n;
	return 0;
}

enum step
relay_body(struct kv_conn *c)
{
	ssize_t n;
	int i, r;

	for (i = 0;; i++) {
		if ((r = flush_client(c)) == -1 && relay_client_left(c))
			r = flush_client(c);
		if (r != 1)
			return r == 0 ? wait_client(c) : client_cut(c);
		if (c->resp_done && c->pipe_len == 0) {
			settle_request(c);
			if (!c->client_keep) {
				conn_close(c);
				return STEP_CLOSED;
			}
			return conn_next_request(c);
		}
		if (i == RELAY_READS_PER_TURN) {
			/* Everything read went out: a stream waiting for its next
			 * turn holds no buffer (256 streams at full speed held
			 * 34 KB each here). */
			idle_buffers(c);
			conn_ready(c);	/* TLS may hold decrypted bytes epoll cannot see */
			return STEP_WAIT;
		}
		if (splice_eligible(c))
			return relay_splice(c);
		c->ulen = c->upos = 0;
		if ((n = read_buffer(c)) == -1)
			return cut(c);
		n = kv_stream_read(&c->uc->s, c->ubuf, (size_t)n);
		if (n == KV_IO_AGAIN) {
			idle_buffers(c);
			return wait_upstream(c, (uint32_t)c->uc->s.want);
		}
		if (n == 0 && c->resp_close) {
			c->resp_done = 1;
			if (relay_consume(c, "", 0) == -1)
				return cut(c);
			continue;
		}
		if (n <= 0)
			return cut(c);	/* the upstream broke off: the client must see it */
		c->read_big = (size_t)n == c->ucap;	/* wait_client resets it */
		if (c->drain_until_ms > 0 && drain_spent(c, (size_t)n))
			return cut(c);
		conn_set_deadline(c, 1);
		/* Re-framed output is the read plus a chunk line per event: make
		 * room at once, not one realloc per event (a ladder of freed sizes
		 * that fragments the heap under many streams). */
		if (c->reframe && conn_obuf_reserve(c, (size_t)n + (size_t)n / 16 + 64) == -1)
			return cut(c);
		if ((n = relay_consume(c, c->ubuf, (size_t)n)) == -1)
			return cut(c);
		c->ulen = c->reframe ? 0 : (size_t)n;
	}
}

/* The relay phase: the response body relayed as it arrives (splice for
 * plaintext bytes nobody needs to see, else read -> resp_filter.c's chain
 * -> the client), and what happens when the client leaves while the
 * response is on its way. The engine settles it (settle.c). */
#include "worker/relay.h"

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
#include "worker/resp_filter.h"
#include "worker/sse_filter.h"

#define RELAY_READS_PER_TURN 2

/* The client left while a metered, non-streamed response is on its way:
 * the provider generates (and bills) all of it anyway, so it is read to its
 * end (up to upstream_timeout) and charged by its usage; the bytes go
 * nowhere. A stream is read on the same way under on_cut = drain, for at
 * most drain_timeout and drain_max (the client's buffers are dropped as
 * for any client gone). Returns 1 when the connection goes on without its
 * client. */
int
relay_client_left(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;

	if (c->client_gone)
		return 1;
	if (c->req.api == KV_API_OTHER || (c->req.ri.stream && !cf->on_cut_drain) || !c->req_sent ||
	    c->resp.pipe_len > 0)
		return 0;
	if (c->req.ri.stream) {
		/* on_cut = drain: read on to the usage, within bounds (README
		 * "What a request is charged"); past them, a cut */
		c->resp.drain_until_ms = c->w->now_ms + (int64_t)cf->drain_timeout * 1000;
		c->resp.drain_left = cf->drain_max;
	}
	if (epoll_ctl(c->w->epfd, EPOLL_CTL_DEL, c->cfd, NULL) == -1) {
		kv_log_warn("KV0550", "epoll_ctl del client");
		return 0;
	}
	atomic_fetch_add(&c->w->ledger->hdr->counters.client_aborts_total, 1);
	c->client_gone = 1;
	c->client_keep = 0;
	c->drain = 1;
	c->cwatch = 0;
	return 1;
}

/* A cut because the client's side failed: not the gateway's error. */
static enum kv_rc
client_cut(struct kv_conn *c)
{
	c->client_cut = 1;
	return KV_CUT;
}

static enum kv_rc
wait_client(struct kv_conn *c)
{
	if (c->att.upos >= c->att.ulen) {
		/* Nothing of the read is pending (it went to obuf, or out):
		 * a stream held up by a slow client keeps only its output. */
		free(c->att.ubuf);
		c->att.ubuf = NULL;
		c->att.ulen = c->att.upos = 0;
	}
	c->att.read_big = 0;
	kv_stream_idle(&c->att.uc->s);
	conn_watch_upstream(c, 0);
	conn_watch_client(c, EPOLLOUT | EPOLLRDHUP);
	conn_set_deadline(c, CONN_CLIENT);
	return KV_AGAIN;
}

/* A stream waiting for its next token holds no buffer: memory follows the
 * streams that are moving bytes right now, not the streams that are open. */
static void
idle_buffers(struct kv_conn *c)
{
	if (c->att.uc != NULL)
		kv_stream_idle(&c->att.uc->s);	/* OpenSSL's record buffers too */
	free(c->att.ubuf);
	c->att.ubuf = NULL;
	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	kv_sse_filter_idle(&c->resp.sse);
}

/* Account for n bytes the client took from obuf, then from ubuf. */
static void
sent(struct kv_conn *c, size_t n)
{
	size_t o = c->olen - c->opos < n ? c->olen - c->opos : n;

	c->opos += o;
	c->att.upos += n - o;
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
		c->att.upos = c->att.ulen;
		c->olen = c->opos = 0;
		return 1;
	}
	for (;;) {
		m.msg_iovlen = 0;
		if (c->opos < c->olen)
			iov[m.msg_iovlen++] = (struct iovec){ c->obuf + c->opos, c->olen - c->opos };
		if (!c->resp.reframe && c->att.upos < c->att.ulen)
			iov[m.msg_iovlen++] = (struct iovec){ c->att.ubuf + c->att.upos, c->att.ulen - c->att.upos };
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
	if (c->resp.pipe_len > 0)
		return 1;
	return c->w->splice_ok && !c->resp.reframe && !c->resp.scan_on && !kv_stream_tls(&c->att.uc->s) &&
	    !c->resp.chunked && !c->resp.done && (c->resp.left > 0 || c->resp.until_close);
}

/* Zero-copy upstream → pipe → client for bytes nobody needs to see. */
static enum kv_rc
relay_splice(struct kv_conn *c)
{
	size_t want;
	ssize_t n;

	if (c->resp.pipefd[0] == -1 && pipe2(c->resp.pipefd, O_NONBLOCK | O_CLOEXEC) == -1) {
		c->resp.pipefd[0] = c->resp.pipefd[1] = -1;
		c->w->splice_ok = 0;
		return KV_NEXT;
	}
	for (;;) {
		if (c->resp.pipe_len > 0) {
			n = splice(c->resp.pipefd[0], NULL, c->cfd, NULL, c->resp.pipe_len,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				c->resp.pipe_len -= (size_t)n;
				c->bytes_out += (uint64_t)n;
				c->sent_any = 1;
				continue;
			}
			if (n == -1 && errno == EAGAIN)
				return wait_client(c);
			return client_cut(c);
		}
		if (c->resp.done)
			return KV_NEXT;
		want = 65536;
		if (!c->resp.until_close && c->resp.left < (int64_t)want)
			want = (size_t)c->resp.left;
		n = splice(c->att.uc->s.fd, NULL, c->resp.pipefd[1], NULL, want,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			c->resp.pipe_len += (size_t)n;
			if (!c->resp.until_close) {
				c->resp.left -= n;
				c->resp.done = c->resp.left == 0;
			}
			conn_set_deadline(c, CONN_UPSTREAM);
			continue;
		}
		if (n == 0) {
			if (!c->resp.until_close)
				return KV_CUT;
			c->resp.done = 1;
			c->resp.up_keepalive = 0;
			continue;
		}
		/* The pipe is empty here, so EAGAIN means the socket is. */
		if (errno == EAGAIN)
			return conn_wait_upstream(c, EPOLLIN);
		if (errno == EINVAL || errno == ENOSYS) {
			c->w->splice_ok = 0;
			return KV_NEXT;
		}
		return KV_CUT;
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
	size_t want = c->att.read_big ? KV_UBUF_FAST : KV_UBUF_SIZE;

	if (c->att.ubuf != NULL && c->att.ucap != want) {
		free(c->att.ubuf);
		c->att.ubuf = NULL;
	}
	if (c->att.ubuf == NULL) {
		if ((c->att.ubuf = malloc(want)) == NULL)
			return -1;
		c->att.ucap = want;
	}
	return (ssize_t)want;
}

/* A stream drained for its usage took N more bytes: 1 when that passes
 * drain_max or the drain deadline (then it is cut and charged as one). */
static int
drain_spent(struct kv_conn *c, size_t n)
{
	if (n > c->resp.drain_left || c->w->now_ms >= c->resp.drain_until_ms)
		return 1;
	c->resp.drain_left -= n;
	return 0;
}

/* One turn of the relay: KV_NEXT to run another at once (the splice
 * path gave way, or finished the body). */
static enum kv_rc
relay_turn(struct kv_conn *c)
{
	ssize_t n;
	int i, r;

	for (i = 0;; i++) {
		if ((r = flush_client(c)) == -1 && relay_client_left(c))
			r = flush_client(c);
		if (r != 1)
			return r == 0 ? wait_client(c) : client_cut(c);
		if (c->resp.done && c->resp.pipe_len == 0)
			return KV_DONE;
		if (i == RELAY_READS_PER_TURN) {
			/* Everything read went out: a stream waiting for its next
			 * turn holds no buffer (256 streams at full speed held
			 * 34 KB each here). */
			idle_buffers(c);
			conn_ready(c);	/* TLS may hold decrypted bytes epoll cannot see */
			return KV_AGAIN;
		}
		if (splice_eligible(c))
			return relay_splice(c);
		c->att.ulen = c->att.upos = 0;
		if ((n = read_buffer(c)) == -1)
			return KV_CUT;
		n = kv_stream_read(&c->att.uc->s, c->att.ubuf, (size_t)n);
		if (n == KV_IO_AGAIN) {
			idle_buffers(c);
			return conn_wait_upstream(c, (uint32_t)c->att.uc->s.want);
		}
		if (n == 0 && c->resp.until_close) {
			c->resp.done = 1;
			if (resp_filter_consume(c, "", 0) == -1)
				return KV_CUT;
			continue;
		}
		if (n <= 0)
			return KV_CUT;	/* the upstream broke off: the client must see it */
		c->att.read_big = (size_t)n == c->att.ucap;	/* wait_client resets it */
		if (c->resp.drain_until_ms > 0 && drain_spent(c, (size_t)n))
			return KV_CUT;
		conn_set_deadline(c, CONN_UPSTREAM);
		/* Re-framed output is the read plus a chunk line per event: make
		 * room at once, not one realloc per event (a ladder of freed sizes
		 * that fragments the heap under many streams). */
		if (c->resp.reframe && conn_obuf_reserve(c, (size_t)n + (size_t)n / 16 + 64) == -1)
			return KV_CUT;
		if ((n = resp_filter_consume(c, c->att.ubuf, (size_t)n)) == -1)
			return KV_CUT;
		c->att.ulen = c->resp.reframe ? 0 : (size_t)n;
	}
}

enum kv_rc
relay_body(struct kv_conn *c)
{
	enum kv_rc rc;

	if (c->resp.ws_open)
		return KV_NEXT;	/* a WebSocket's 101: the session phase (ws_session.c) */
	while ((rc = relay_turn(c)) == KV_NEXT)
		;
	return rc;
}

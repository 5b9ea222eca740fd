/* Body intake: every byte scanned, small bodies in memory, the rest
 * spooled to an unlinked file, with all of the spool's policy (its share
 * of spool_max, the file); nothing is forwarded before admission, the
 * phase after this one. */
#include "worker/request_body.h"

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"
#include "worker/reply.h"
#include "worker/spool.h"

/* Charge n more spooled bytes to the worker's spool_max. */
static int
spool_charge(struct kv_conn *c, int64_t n)
{
	struct kv_worker *w = c->w;

	if (w->spool_bytes + (uint64_t)n > w->cf->spool_max)
		return -1;
	w->spool_bytes += (uint64_t)n;
	c->req.sp_charged += n;
	return 0;
}

/* Past the window: move what memory holds to a new spool file. A
 * Content-Length body is charged whole at once, so a body that cannot fit
 * is refused before it is read. */
static int
spool_start(struct kv_conn *c, const char **msg)
{
	int64_t want = c->req.chunked ? (int64_t)c->req.ilen : c->req.body_bytes + c->req.body_left;

	*msg = "the gateway's request spool is full, retry later";
	if (spool_charge(c, want) == -1)
		return -1;
	if ((c->req.spfd = kv_spool_open(c->w->cf)) == -1) {
		kv_log_warn("KV0504", "cannot create a request spool file");
		*msg = "the gateway cannot spool the request body, retry later";
		return -1;
	}
	if (c->req.ilen > 0 && kv_spool_append(c->req.spfd, c->req.ibuf, c->req.ilen) == -1) {
		kv_log_warn("KV0505", "writing the request spool");
		*msg = "the gateway cannot spool the request body, retry later";
		return -1;
	}
	free(c->req.ibuf);
	c->req.ibuf = NULL;
	return 0;
}

/* Take n decoded body bytes: scan them, then keep them in the window or
 * the spool. Returns 0, or the status to refuse with (*msg why). */
static int
body_take(struct kv_conn *c, const char *p, size_t n, const char **msg)
{
	const struct kv_config *cf = c->w->cf;

	if (n == 0)
		return 0;
	c->req.body_bytes += (int64_t)n;
	if (cf->max_body > 0 && c->req.body_bytes > (int64_t)cf->max_body) {
		*msg = "request body exceeds max_body";
		return 413;
	}
	if (c->req.rs != NULL && kv_reqscan_feed(c->req.rs, p, n) == -1) {
		*msg = c->req.rs->err;
		return 400;
	}
	if (c->req.spfd == -1 && c->req.ilen + n <= c->req.icap) {
		if (c->req.ibuf == NULL && (c->req.ibuf = malloc(c->req.icap)) == NULL) {
			*msg = "out of memory";
			return 503;
		}
		memcpy(c->req.ibuf + c->req.ilen, p, n);
		c->req.ilen += n;
		return 0;
	}
	if (c->req.spfd == -1 && spool_start(c, msg) == -1)
		return 503;
	if (c->req.chunked && spool_charge(c, (int64_t)n) == -1) {
		*msg = "the gateway's request spool is full, retry later";
		return 503;
	}
	if (kv_spool_append(c->req.spfd, p, n) == -1) {
		kv_log_warn("KV0505", "writing the request spool");
		*msg = "the gateway cannot spool the request body, retry later";
		return 503;
	}
	return 0;
}

/* Decode the body bytes read into cbuf. Returns 0, or a status (*msg). */
static int
body_consume(struct kv_conn *c, const char **msg)
{
	const char *data;
	size_t dlen;
	ssize_t n;
	int st;

	while (c->cpos < c->clen && !c->req.body_done) {
		if (!c->req.chunked) {
			n = (ssize_t)(c->clen - c->cpos);
			if ((int64_t)n > c->req.body_left)
				n = (ssize_t)c->req.body_left;
			data = c->cbuf + c->cpos;
			dlen = (size_t)n;
			c->req.body_left -= n;
			c->req.body_done = c->req.body_left == 0;
		} else {
			n = kv_chunked_feed(&c->req.dec, c->cbuf + c->cpos, c->clen - c->cpos,
			    &data, &dlen);
			if (n == -1) {
				*msg = "malformed chunked request body";
				return 400;
			}
			c->req.body_done = c->req.dec.done;
		}
		c->cpos += (size_t)n;
		if ((st = body_take(c, data, dlen, msg)) != 0)
			return st;
	}
	return 0;
}


/* Where the next body read goes. A spooled Content-Length body is read
 * KV_SPOOL_IO bytes at a time into the worker's one buffer, scanned and
 * written to the file before the loop serves anyone else: 8 times fewer
 * read and write calls than through cbuf's window (bench scenario 6), and
 * no memory per connection. Returns 1 for that buffer (the bytes are
 * taken at once), 0 for cbuf (decoded by body_consume). */
static int
body_read_into(struct kv_conn *c, char **buf, size_t *want)
{
	struct kv_worker *w = c->w;

	if (c->req.spfd != -1 && !c->req.chunked && c->cpos == c->clen &&
	    (w->spool_io != NULL || (w->spool_io = malloc(KV_SPOOL_IO)) != NULL)) {
		*buf = w->spool_io;
		*want = c->req.body_left < KV_SPOOL_IO ? (size_t)c->req.body_left : KV_SPOOL_IO;
		return 1;
	}
	if (c->cpos == c->clen)		/* keep the head, reuse the rest */
		c->cpos = c->clen = c->head_len;
	/* Reads stay within the window's size past the head: a large
	 * upload touches no more of cbuf than a small one does. */
	*want = c->head_len + KV_BODY_WINDOW > c->clen ?
	    c->head_len + KV_BODY_WINDOW - c->clen : 0;
	if (*want == 0 || *want > KV_CBUF_SIZE - c->clen)
		*want = KV_CBUF_SIZE - c->clen;
	if (!c->req.chunked && (int64_t)*want > c->req.body_left)
		*want = (size_t)c->req.body_left;
	*buf = c->cbuf + c->clen;
	return 0;
}

static enum kv_rc
body_refuse(struct kv_conn *c, int st, const char *msg)
{
	c->retry_after = st == 503 ? 5 : 0;
	return reply_error(c, st, msg);
}

enum kv_rc
request_body(struct kv_conn *c)
{
	const char *msg;
	char *buf;
	size_t want;
	ssize_t n;
	int st, direct;

	for (;;) {
		if ((st = body_consume(c, &msg)) != 0)
			return body_refuse(c, st, msg);
		if (c->req.body_done)
			return KV_NEXT;
		direct = body_read_into(c, &buf, &want);
		n = conn_client_read(c, buf, want, 0);
		if (n == KV_IO_AGAIN) {
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return KV_AGAIN;
		}
		if (n <= 0)
			return KV_CLOSE;
		if (!direct) {
			c->clen += (size_t)n;
			continue;
		}
		c->req.body_left -= n;
		c->req.body_done = c->req.body_left == 0;
		if ((st = body_take(c, buf, (size_t)n, &msg)) != 0)
			return body_refuse(c, st, msg);
	}
}

/* One connection's tools, below the phases: the connection's memory count
 * and the shedding of silent connections and slow heads, deadlines, epoll interest, the obuf and ubuf
 * (and the worker's spares of them), client reads, the request id, the
 * ready list, and letting go of a request's buffers and upstream. Nothing
 * here runs a phase or changes a connection's state. */
#include "worker/conn-t.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/aws_stream_filter.h"
#include "worker/drops.h"
#include "worker/ws_session-t.h"

/* ---- the connections' memory (the memory guard's count) -------------- */

void
conn_heads_unlink(struct kv_conn *c)
{
	struct kv_connq *q = c->queue;

	if (q == NULL)
		return;
	if (c->qprev != NULL)
		c->qprev->qnext = c->qnext;
	else
		q->first = c->qnext;
	if (c->qnext != NULL)
		c->qnext->qprev = c->qprev;
	else
		q->last = c->qprev;
	c->qprev = c->qnext = NULL;
	c->queue = NULL;
}

/* C joins Q as its newest (a no-op when it is on Q already). */
static void
conn_enqueue(struct kv_conn *c, struct kv_connq *q)
{
	if (c->queue == q)
		return;
	conn_heads_unlink(c);
	c->qprev = q->last;
	c->qnext = NULL;
	if (q->last != NULL)
		q->last->qnext = c;
	else
		q->first = c;
	q->last = c;
	c->queue = q;
	c->queued_ms = c->w->now_ms;
}

/* The next to shed: the oldest silent connection, unless it has been
 * silent for a moment only and came after the oldest unfinished head (a
 * real client's, accepted before its request arrived, must not make way
 * for a flood of slow heads); then the oldest head. */
static struct kv_conn *
shed_next(struct kv_worker *w)
{
	struct kv_conn *i = w->idle.first, *h = w->heads.first;

	if (i == NULL || h == NULL)
		return i != NULL ? i : h;
	if (i->queued_ms <= h->queued_ms || w->now_ms - i->queued_ms >= CONN_SILENT_GRACE_MS)
		return i;
	return h;
}

int
conn_heads_shed(struct kv_worker *w, int64_t more, struct kv_conn *self)
{
	struct kv_conn *v;
	int n = 0, hit = 0;

	while (kv_memguard_conns_over(&w->mem, more) && (v = shed_next(w)) != NULL) {
		n++;
		v->drain = 1;
		kv_drop_shed(w, v->queue == &w->idle ? KV_DROP_IDLE : KV_DROP_HEAD, v->bytes_in);
		if (v != self) {
			w->shed_close(v);
			continue;
		}
		/* C itself: out of the count now, closed by the engine when its
		 * step returns */
		hit = 1;
		conn_heads_unlink(v);
		kv_memguard_hold(&w->mem, -v->held);
		v->held = 0;
	}
	/* the episode ends a tenth under the share: no flapping */
	if (n > 0 || (w->mem.shedding && !kv_memguard_conns_over(&w->mem,
	    more + w->mem.held_max / 10)))
		kv_memguard_shed(&w->mem, n, w->now_ms);
	return hit;
}

/* C's count is NOW bytes. */
static void
conn_held(struct kv_conn *c, int64_t now)
{
	kv_memguard_hold(&c->w->mem, now - c->held);
	c->held = now;
}

void
conn_idle_held(struct kv_conn *c)
{
	conn_enqueue(c, &c->w->idle);
	conn_held(c, CONN_BASE_COST);
}

int
conn_head_held(struct kv_conn *c, int partial)
{
	int64_t now = CONN_BASE_COST;

	if (partial) {
		now += ((int64_t)c->clen + HEAD_PAGE - 1) / HEAD_PAGE * HEAD_PAGE;
		conn_enqueue(c, &c->w->heads);
	} else
		conn_heads_unlink(c);
	conn_held(c, now);
	return partial && now > CONN_BASE_COST && conn_heads_shed(c->w, 0, c) ? -1 : 0;
}

void
conn_deadline(struct kv_conn *c, int64_t at)
{
	kv_deadline_set(&c->w->deadlines, &c->dl, at);
}

void
conn_head_deadline(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	int secs = cf->header_timeout < cf->client_timeout ? cf->header_timeout :
	    cf->client_timeout;

	conn_deadline(c, c->w->now_ms + (int64_t)secs * 1000);
}

void
conn_watch_client(struct kv_conn *c, uint32_t ev)
{
	struct epoll_event e;

	if (c->cwatch == ev || c->client_gone)
		return;
	e.events = ev;
	e.data.ptr = &c->cev;
	if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, c->cfd, &e) == -1)
		kv_log_warn("KV0403", "epoll_ctl mod client");
	c->cwatch = ev;
}

void
conn_quiet_client(struct kv_conn *c)
{
	if (c->cwatch == (EPOLLIN | EPOLLRDHUP) && !c->client_woke)
		return;
	conn_watch_client(c, EPOLLRDHUP);
}

enum kv_rc
conn_wait_upstream(struct kv_conn *c, uint32_t ev)
{
	conn_quiet_client(c);
	conn_watch_upstream(c, ev);
	conn_set_deadline(c, CONN_UPSTREAM);
	return KV_AGAIN;
}

void
conn_watch_upstream(struct kv_conn *c, uint32_t ev)
{
	struct kv_upconn *uc = c->att.uc;
	struct epoll_event e;

	if (uc == NULL)
		return;
	uc->ev.ptr = c;
	if (uc->registered && uc->watch == ev)
		return;
	e.events = ev;
	e.data.ptr = &uc->ev;
	if (epoll_ctl(c->w->epfd, uc->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
	    uc->s.fd, &e) == -1)
		kv_log_warn("KV0404", "epoll_ctl upstream");
	else
		uc->registered = 1;
	uc->watch = ev;
}

void
conn_set_deadline(struct kv_conn *c, enum conn_side side)
{
	const struct kv_config *cf = c->w->cf;
	int64_t at;
	int secs;

	if (side == CONN_CLIENT)
		secs = cf->client_timeout;
	else if (side == CONN_CONNECT)
		secs = cf->upstream_timeout < cf->connect_timeout ?
		    cf->upstream_timeout : cf->connect_timeout;
	else
		secs = cf->upstream_timeout;
	/* a stream read on for its usage after its client left (on_cut =
	 * drain) is cut at its drain deadline, however the upstream paces it */
	at = c->w->now_ms + (int64_t)secs * 1000;
	if (c->resp.drain_until_ms > 0 && at > c->resp.drain_until_ms)
		at = c->resp.drain_until_ms;
	conn_deadline(c, at);
}

/* The worker's spare buffers: a small request mallocs and frees its obuf
 * and ubuf once each (~300 instructions a pair); the next request takes
 * them back instead. One of each, per worker process (single-threaded), so
 * idle connections still hold no buffer. */
#define OBUF_SPARE_CAP	4096
static char *spare_obuf, *spare_ubuf;

void
conn_spares_free(void)
{
	free(spare_obuf);
	spare_obuf = NULL;
	free(spare_ubuf);
	spare_ubuf = NULL;
}

char *
conn_ubuf_take(void)
{
	char *p = spare_ubuf;

	if (p == NULL)
		return malloc(KV_UBUF_SIZE);
	spare_ubuf = NULL;
	return p;
}

/* Make sure obuf can take `need` more bytes. */
int
conn_obuf_reserve(struct kv_conn *c, size_t need)
{
	char *nb;
	size_t cap;

	if (c->olen + need <= c->ocap)
		return 0;
	cap = c->olen + need;
	if (cap < OBUF_SPARE_CAP)
		cap = OBUF_SPARE_CAP;
	if (c->olen == 0 && cap == OBUF_SPARE_CAP && spare_obuf != NULL) {
		/* nothing to keep: the spare, not a realloc that copies */
		free(c->obuf);
		c->obuf = spare_obuf;
		c->ocap = OBUF_SPARE_CAP;
		spare_obuf = NULL;
		return 0;
	}
	if ((nb = realloc(c->obuf, cap)) == NULL)
		return -1;
	c->obuf = nb;
	c->ocap = cap;
	return 0;
}

int
conn_obuf_put(struct kv_conn *c, const char *p, size_t len)
{
	if (len == 0)
		return 0;	/* a bodiless request has no ibuf: memcpy(NULL) is UB */
	if (conn_obuf_reserve(c, len) == -1)
		return -1;
	memcpy(c->obuf + c->olen, p, len);
	c->olen += len;
	return 0;
}

int
conn_obuf_printf(struct kv_conn *c, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(c->obuf + c->olen, c->ocap - c->olen, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= c->ocap - c->olen)
		return -1;
	c->olen += (size_t)n;
	return 0;
}

int
conn_obuf_cat(struct kv_conn *c, ...)
{
	const char *s;
	va_list ap;
	int rc = 0;

	va_start(ap, c);
	while (rc == 0 && (s = va_arg(ap, const char *)) != NULL)
		rc = conn_obuf_put(c, s, strlen(s));
	va_end(ap);
	return rc;
}

/* memcpy, not vsnprintf("%.*s: %.*s\r\n"): a fifth of the cost per header. */
int
conn_obuf_header(struct kv_conn *c, const struct kv_http_header *h)
{
	if (conn_obuf_reserve(c, h->name_len + h->value_len + 4) == -1)
		return -1;
	conn_obuf_add_header(c, h);
	return 0;
}

void
conn_upstream_detach(struct kv_conn *c, int reuse)
{
	struct kv_upconn *uc = c->att.uc;
	struct epoll_event e = { .events = EPOLLIN };

	if (uc == NULL)
		return;
	uc->ev.ptr = NULL;	/* its events now go to the pool */
	if (reuse && uc->registered && uc->watch != EPOLLIN) {
		/* In the pool it watches for the server's close only. */
		e.data.ptr = &uc->ev;
		if (epoll_ctl(c->w->epfd, EPOLL_CTL_MOD, uc->s.fd, &e) == -1)
			kv_log_warn("KV0405", "epoll_ctl mod upstream");
		uc->watch = EPOLLIN;
	}
	if (reuse)
		/* The pool's clock is the one the tick passes: time(NULL). */
		kv_upconn_release(c->att.uc, (int64_t)time(NULL));
	else
		/* A reset tells the provider at once that nobody is listening. */
		kv_upconn_close(c->att.uc, 1);
	c->att.uc = NULL;
}

/* See conn-t.h: obuf and ubuf of the usual sizes become the spares. */
void
conn_free_buf(struct kv_conn *c)
{
	conn_request_release(c);
	free(c->req.ibuf);
	c->req.ibuf = NULL;
	c->req.ilen = c->req.icap = 0;
	if (c->obuf != NULL && c->ocap == OBUF_SPARE_CAP && spare_obuf == NULL)
		spare_obuf = c->obuf;
	else
		free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	if (c->att.ubuf != NULL && c->att.ucap == KV_UBUF_SIZE && spare_ubuf == NULL)
		spare_ubuf = c->att.ubuf;
	else
		free(c->att.ubuf);
	c->att.ubuf = NULL;
	c->att.ulen = c->att.upos = 0;
	kv_sse_filter_free(&c->resp.sse);
	kv_aws_stream_free(c->resp.aws);
	c->resp.aws = NULL;
	free(c->req.target);
	c->req.target = NULL;
	if (c->resp.pipefd[0] != -1) {
		close(c->resp.pipefd[0]);
		close(c->resp.pipefd[1]);
		c->resp.pipefd[0] = c->resp.pipefd[1] = -1;
	}
	c->resp.pipe_len = 0;
	kv_ws_sess_free(c->resp.ws);
	c->resp.ws = NULL;
}

void
conn_request_release(struct kv_conn *c)
{
	if (c->req.spfd != -1) {
		close(c->req.spfd);
		c->req.spfd = -1;
	}
	c->w->spool_bytes -= (uint64_t)c->req.sp_charged;
	c->req.sp_charged = 0;
	free(c->att.sbuf);
	c->att.sbuf = NULL;
	c->att.slen = c->att.spos = 0;
	free(c->req.rs);
	c->req.rs = NULL;
	free(c->req.inj);
	c->req.inj = NULL;
	c->req.injlen = 0;
}

ssize_t
conn_client_read(struct kv_conn *c, char *buf, size_t len, int head)
{
	struct kv_stream cs = { .fd = c->cfd };
	ssize_t n = kv_stream_recv(&cs, buf, len);	/* the client leg is plaintext */

	if (n > 0) {
		c->bytes_in += (uint64_t)n;
		/* A head must arrive whole within header_timeout of its first
		 * byte, or of the connection for its first request
		 * (slow-loris); a body only must not stall client_timeout. */
		if (!head)
			conn_set_deadline(c, CONN_CLIENT);
		else if (c->clen == 0 && c->served)
			conn_head_deadline(c);
	}
	return n;
}

const char *
conn_request_id(struct kv_conn *c)
{
	if (c->req.id[0] == '\0')
		kv_reqlog_new_id(c->req.id);
	return c->req.id;
}

void
conn_ready(struct kv_conn *c)
{
	if (c->on_ready)
		return;
	c->on_ready = 1;
	c->ready_next = c->w->ready;
	c->w->ready = c;
}


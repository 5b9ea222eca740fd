/* Connection lifecycle: accept, epoll interest, the state loop, errors we
 * answer ourselves, timeouts and close. The request leg is in
 * request_head.c, request_body.c, admission.c and request_send.c, the
 * response leg in relay_head.c and relay.c, its settlement in settle.c. */
#include "worker/conn-t.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/errors.h"
#include "worker/leasewait.h"
#include "worker/upstream_set.h"
#include "worker/relay.h"
#include "worker/relay_head.h"
#include "worker/admission.h"
#include "worker/request_body.h"
#include "worker/request_head.h"
#include "worker/request_send.h"
#include "worker/settle.h"

#define STEPS_PER_EVENT 64	/* then yield to other connections */
/* What a connection holds from accept on: its state, and the kernel's
 * socket (its structures; buffers come with the bytes). */
#define CONN_BASE_COST	((int64_t)sizeof(struct kv_conn) + 2048)
#define HEAD_PAGE	4096	/* a head's buffer is touched page by page */

static void conn_run(struct kv_conn *c);

/* The upstream admits the handshake this connection waits for. */
static void
conn_upwake(struct kv_upwait *w)
{
	conn_ready((struct kv_conn *)((char *)w - offsetof(struct kv_conn, upwait)));
}

/* ---- the connections' memory (the memory guard's count) -------------- */

static void
heads_unlink(struct kv_conn *c)
{
	struct kv_worker *w = c->w;

	if (!c->on_heads)
		return;
	if (c->hprev != NULL)
		c->hprev->hnext = c->hnext;
	else
		w->heads = c->hnext;
	if (c->hnext != NULL)
		c->hnext->hprev = c->hprev;
	else
		w->heads_tail = c->hprev;
	c->hprev = c->hnext = NULL;
	c->on_heads = 0;
}

/* Drop the oldest unfinished heads -- the slowest: a client's head comes
 * in one go -- while the connections' memory, with MORE to come, is past
 * its share. Returns 1 when SELF was one of them. */
static int
heads_shed(struct kv_worker *w, int64_t more, const struct kv_conn *self)
{
	struct kv_conn *v;
	int n = 0, hit = 0;

	while (kv_memguard_conns_over(&w->mem, more) && (v = w->heads) != NULL) {
		hit |= v == self;
		v->drain = 1;
		conn_close(v);
		n++;
	}
	/* the episode ends a tenth under the share: no flapping */
	if (n > 0 || (w->mem.shedding && !kv_memguard_conns_over(&w->mem,
	    more + w->mem.held_max / 10)))
		kv_memguard_shed(&w->mem, n, w->now_ms);
	return hit;
}

int
conn_head_held(struct kv_conn *c, int partial)
{
	struct kv_worker *w = c->w;
	int64_t now = CONN_BASE_COST;

	if (partial) {
		now += ((int64_t)c->clen + HEAD_PAGE - 1) / HEAD_PAGE * HEAD_PAGE;
		if (!c->on_heads) {
			c->hprev = w->heads_tail;
			c->hnext = NULL;
			if (w->heads_tail != NULL)
				w->heads_tail->hnext = c;
			else
				w->heads = c;
			w->heads_tail = c;
			c->on_heads = 1;
		}
	} else
		heads_unlink(c);
	kv_memguard_hold(&w->mem, now - c->held);
	c->held = now;
	return partial && now > CONN_BASE_COST && heads_shed(w, 0, c) ? -1 : 0;
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

/* Room for one more connection: past the connections' share, the slowest
 * heads make way; past the memory limit itself, nothing new comes in. */
static int
accept_room(struct kv_worker *w)
{
	(void)heads_shed(w, CONN_BASE_COST, NULL);
	if (kv_memguard_conns_over(&w->mem, CONN_BASE_COST))
		return 0;
	return !kv_memguard_full_accept(&w->mem, w->now_ms);
}

static void
refuse_full(int fd)
{
	char msg[1024];
	int n;

	n = kv_error_response(msg, sizeof(msg), 0, 503, "the gateway is at its memory limit; "
	    "retry shortly", 0, "retry-after: 1\r\n");
	if (n > 0)
		(void)send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(fd);
}

void
kv_conn_client_ready(struct kv_worker *w, struct kv_evsrc *src, uint32_t events)
{
	(void)w;
	kv_conn_event(src->ptr, 0, events);
}

void
kv_conn_upstream_ready(struct kv_worker *w, struct kv_evsrc *src, uint32_t events)
{
	(void)w;
	if (src->ptr != NULL)	/* NULL: released after the wait, stale */
		kv_conn_event(src->ptr, 1, events);
}

void
kv_conn_accept(struct kv_worker *w, int fd)
{
	struct epoll_event ev;
	struct kv_conn *c;

	if (!accept_room(w)) {
		refuse_full(fd);
		return;
	}
	if (kv_deadlines_reserve(&w->deadlines, w->nconns + 1) == -1 ||
	    (c = calloc(1, sizeof(*c))) == NULL) {
		kv_log_warnx("KV0401", "out of memory accepting a connection");
		close(fd);
		return;
	}
	c->w = w;
	c->cfd = fd;
	c->resv = -1;
	c->spfd = -1;
	c->pipefd[0] = c->pipefd[1] = -1;
	c->cev.kind = KV_EV_CLIENT;
	c->cev.fn = kv_conn_client_ready;
	c->cev.ptr = c;
	c->upwait.wake = conn_upwake;
	c->state = CS_HEAD;
	c->cwatch = EPOLLIN | EPOLLRDHUP;
	ev.events = c->cwatch;
	ev.data.ptr = &c->cev;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		kv_log_warn("KV0402", "epoll_ctl add client");
		close(fd);
		free(c);
		return;
	}
	c->next = w->conns;
	if (w->conns != NULL)
		w->conns->prev = c;
	w->conns = c;
	w->nconns++;
	atomic_fetch_add(&w->slot->connections, 1);
	(void)conn_head_held(c, 0);
	conn_head_deadline(c);
	conn_run(c);
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

void
conn_watch_upstream(struct kv_conn *c, uint32_t ev)
{
	struct kv_upconn *uc = c->uc;
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
conn_set_deadline(struct kv_conn *c, int upstream_side)
{
	const struct kv_config *cf = c->w->cf;
	int64_t at;
	int secs;

	if (!upstream_side)
		secs = cf->client_timeout;
	else if (c->state == CS_UPWAIT && !c->ticket_waited) {
		/* parked for another request's TLS ticket: not for long (a
		 * target that never finishes a handshake must not make each
		 * parked request wait for the one before it) */
		conn_deadline(c, c->w->now_ms + KV_GATE_TICKET_MS);
		return;
	} else if (c->state == CS_CONNECT || c->state == CS_HANDSHAKE)
		secs = cf->upstream_timeout < cf->connect_timeout ?
		    cf->upstream_timeout : cf->connect_timeout;
	else
		secs = cf->upstream_timeout;
	/* a stream read on for its usage after its client left (on_cut =
	 * drain) is cut at its drain deadline, however the upstream paces it */
	at = c->w->now_ms + (int64_t)secs * 1000;
	if (c->drain_until_ms > 0 && at > c->drain_until_ms)
		at = c->drain_until_ms;
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

static void
upstream_detach(struct kv_conn *c, int reuse)
{
	struct kv_upconn *uc = c->uc;
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
		kv_upconn_release(c->uc, (int64_t)time(NULL));
	else
		/* A reset tells the provider at once that nobody is listening. */
		kv_upconn_close(c->uc, 1);
	c->uc = NULL;
}

/* See conn-t.h: obuf and ubuf of the usual sizes become the spares. */
void
conn_free_buf(struct kv_conn *c)
{
	kv_request_release(c);
	free(c->ibuf);
	c->ibuf = NULL;
	c->ilen = c->icap = 0;
	if (c->obuf != NULL && c->ocap == OBUF_SPARE_CAP && spare_obuf == NULL)
		spare_obuf = c->obuf;
	else
		free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	if (c->ubuf != NULL && c->ucap == KV_UBUF_SIZE && spare_ubuf == NULL)
		spare_ubuf = c->ubuf;
	else
		free(c->ubuf);
	c->ubuf = NULL;
	c->ulen = c->upos = 0;
	kv_sse_filter_free(&c->sse);
	free(c->target);
	c->target = NULL;
	if (c->pipefd[0] != -1) {
		close(c->pipefd[0]);
		close(c->pipefd[1]);
		c->pipefd[0] = c->pipefd[1] = -1;
	}
	c->pipe_len = 0;
}

void
conn_close(struct kv_conn *c)
{
	struct kv_worker *w = c->w;
	struct kv_conn **pp;

	kv_upstream_ungate(&c->upwait);
	conn_lease_unpark(c);
	if (c->resv >= 0 || c->counted_stream)
		settle_request(c);	/* settles and logs what was relayed */
	upstream_detach(c, 0);
	conn_free_buf(c);
	free(c->cbuf);
	heads_unlink(c);
	kv_deadline_cancel(&w->deadlines, &c->dl);
	kv_memguard_hold(&w->mem, -c->held);
	c->held = 0;
	/* A cut stream ends with a reset so the client can tell. */
	kv_stream_close(&(struct kv_stream){ .fd = c->cfd }, c->cut);
	if (c->on_ready)
		for (pp = &w->ready; *pp != NULL; pp = &(*pp)->ready_next)
			if (*pp == c) {
				*pp = c->ready_next;
				break;
			}
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	w->nconns--;
	if (w->nconns == 0)
		conn_spares_free();	/* an idle worker holds no buffer */
	atomic_fetch_sub(&w->slot->connections, 1);
	c->closed = 1;
	c->next = w->dead;
	w->dead = c;
}

void
kv_conn_reap(struct kv_worker *w)
{
	struct kv_conn *c;

	while ((c = w->dead) != NULL) {
		w->dead = c->next;
		free(c);
	}
}

/* Answer with an error of our own. After response bytes went out, all we can
 * do is cut the stream. */
const char *
conn_request_id(struct kv_conn *c)
{
	if (c->reqid[0] == '\0')
		kv_reqlog_new_id(c->reqid);
	return c->reqid;
}

enum step
conn_fail(struct kv_conn *c, int status, const char *msg)
{
	char extra[1024] = "";
	size_t xl;
	int n, keep, k;

	if (c->sent_any || c->state == CS_RELAY) {
		c->cut = 1;
		conn_close(c);
		return STEP_CLOSED;
	}
	upstream_detach(c, 0);
	/* Keep the connection only when the whole request was read. */
	keep = c->keep_alive && !c->drain && c->body_done &&
	    status != 400 && status != 414 && status != 431 && status != 501 &&
	    status != 505;
	if (c->keyid[0] != '\0')
		snprintf(extra, sizeof(extra), "x-kilovolt-key: %s\r\n", c->keyid);
	k = (int)strlen(extra);
	if (conn_error_headers(c, status, extra + k, sizeof(extra) - (size_t)k) == -1)
		extra[k] = '\0';
	xl = strlen(extra);
	snprintf(extra + xl, sizeof(extra) - xl, "x-kilovolt-request-id: %s\r\n",
	    conn_request_id(c));
	xl = strlen(extra);
	if (c->cors_origin[0] != '\0')	/* so a browser app can read the error */
		(void)kv_cors_response_headers(extra + xl, sizeof(extra) - xl, c->cors_origin);
	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	if (conn_obuf_reserve(c, 2048) == -1 ||
	    (n = kv_error_response_typed(c->obuf, c->ocap, c->anthropic, status,
	    status == 429 && c->rl.refused_by == 't' ? "tokens" : NULL, msg,
	    keep, extra)) == -1) {
		conn_close(c);
		return STEP_CLOSED;
	}
	c->olen = (size_t)n;
	c->status = status;
	c->client_keep = keep;
	c->state = CS_ERRWRITE;
	if (status >= 500 && status != 501)
		atomic_fetch_add(&c->w->ledger->hdr->counters.upstream_errors_total,
		    status == 502 || status == 504);
	return STEP_CONT;
}

static enum step
conn_errwrite(struct kv_conn *c)
{
	struct kv_stream cs = { .fd = c->cfd };
	ssize_t n;

	while (c->opos < c->olen) {
		n = kv_stream_write(&cs, c->obuf + c->opos, c->olen - c->opos);
		if (n == KV_IO_AGAIN) {
			conn_watch_client(c, EPOLLOUT | EPOLLRDHUP);
			conn_set_deadline(c, 0);
			return STEP_WAIT;
		}
		if (n < 0) {
			conn_close(c);
			return STEP_CLOSED;
		}
		c->opos += (size_t)n;
		c->bytes_out += (uint64_t)n;
	}
	if (c->method[0] != '\0' || c->status != 0)
		settle_request(c);
	if (!c->client_keep && !c->body_done && shutdown(c->cfd, SHUT_WR) == 0) {
		c->state = CS_LINGER;
		conn_deadline(c, c->w->now_ms + KV_LINGER_MS);
		return STEP_CONT;
	}
	if (!c->client_keep) {
		conn_close(c);
		return STEP_CLOSED;
	}
	return conn_next_request(c);
}

/* A response refused a request whose body is still arriving (413, 503,
 * 402...). Closing at once with unread bytes makes the kernel send a reset,
 * which can destroy the response before the client reads it (curl then
 * reports only "100" or a broken pipe). Like nginx's lingering close, our
 * side is shut and the client's bytes are read and dropped until it closes,
 * or until it stays silent for KV_LINGER_MS (the tick closes it then). */
static enum step
conn_linger(struct kv_conn *c)
{
	struct kv_stream cs = { .fd = c->cfd };
	char sink[4096];
	ssize_t n;

	for (;;) {
		n = kv_stream_read(&cs, sink, sizeof(sink));
		if (n == KV_IO_AGAIN) {
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return STEP_WAIT;
		}
		if (n <= 0) {
			conn_close(c);
			return STEP_CLOSED;
		}
		c->bytes_in += (uint64_t)n;
	}
}

/* Reset for the next request on a keep-alive connection; bytes of a
 * pipelined request stay in cbuf. */
enum step
conn_next_request(struct kv_conn *c)
{
	size_t left;

	upstream_detach(c, c->uc != NULL && c->resp_done && c->up_keepalive && !c->cut);
	conn_free_buf(c);
	c->served = 1;
	if (c->drain || c->w->draining) {
		conn_close(c);
		return STEP_CLOSED;
	}
	left = c->clen - c->cpos;
	c->head_parse = 0;	/* the head is gone or moved: w->req is not its parse */
	if (left == 0) {
		free(c->cbuf);
		c->cbuf = NULL;
		c->clen = c->cpos = 0;
	} else {
		memmove(c->cbuf, c->cbuf + c->cpos, left);
		c->clen = left;
		c->cpos = 0;
	}
	/* Everything from `method` on is per-request. */
	memset(&c->method, 0, sizeof(*c) - offsetof(struct kv_conn, method));
	c->resv = -1;
	c->spfd = -1;
	c->pipefd[0] = c->pipefd[1] = -1;
	c->state = CS_HEAD;
	conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
	conn_set_deadline(c, 0);
	/* Nothing pipelined: the next request is not here yet, so wait for
	 * it rather than find an empty socket (a wasted read per request). */
	return left > 0 ? STEP_CONT : STEP_WAIT;
}

static enum step
conn_step(struct kv_conn *c)
{
	switch (c->state) {
	case CS_HEAD:		return request_head(c);
	case CS_BODY_IN:	return request_body_in(c);
	case CS_LEASEWAIT:	return request_lease_retry(c);
	case CS_UPWAIT:		return request_connect(c);
	case CS_CONNECT:	return request_connect_done(c);
	case CS_HANDSHAKE:	return request_handshake(c);
	case CS_SEND_REQ:	return request_send(c);
	case CS_SEND_BODY:	return request_send_body(c);
	case CS_RESP_HEAD:	return relay_head(c);
	case CS_RELAY:		return relay_body(c);
	case CS_ERRWRITE:	return conn_errwrite(c);
	case CS_LINGER:		return conn_linger(c);
	}
	return STEP_WAIT;
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

static void
conn_run(struct kv_conn *c)
{
	int i;

	for (i = 0; i < STEPS_PER_EVENT; i++)
		if (conn_step(c) != STEP_CONT)
			return;
	conn_ready(c);	/* more to do: come back after others had a turn */
}

void
kv_conn_resume(struct kv_conn *c)
{
	c->on_ready = 0;
	if (!c->closed)
		conn_run(c);
}

void
kv_conn_event(struct kv_conn *c, int upstream, uint32_t events)
{
	if (c->closed)
		return;
	/* Client bytes while the upstream has the turn: see conn_quiet_client. */
	c->client_woke = !upstream && (events & EPOLLIN) && (c->state == CS_SEND_REQ ||
	    c->state == CS_RESP_HEAD || c->state == CS_RELAY);
	/* The client left while we wait on the upstream or relay to it: stop
	 * the upstream at once so the provider stops generating (and billing). */
	if (!upstream && c->client_gone)
		return;		/* an event from before it left */
	if (!upstream && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
	    c->state != CS_HEAD && c->state != CS_BODY_IN && c->state != CS_ERRWRITE &&
	    c->state != CS_LINGER) {
		/* ... unless it is a non-streamed response the provider bills
		 * whole anyway: that is read to its end and charged exactly */
		if (relay_client_left(c)) {
			conn_run(c);
			return;
		}
		if (c->state == CS_RELAY)
			atomic_fetch_add(&c->w->ledger->hdr->counters.client_aborts_total, 1);
		c->cut = 1;
		c->client_cut = 1;
		if (c->status == 0)
			c->status = 499;	/* nginx's "client closed request" */
		conn_close(c);
		return;
	}
	conn_run(c);
}

void
kv_conn_tick(struct kv_conn *c, int64_t now_ms)
{
	if (now_ms < c->dl.at)
		return;
	switch (c->state) {
	case CS_LEASEWAIT:
		return;		/* its own bound (kv_lease_poll) */
	case CS_UPWAIT:
		if (!c->ticket_waited) {
			/* The first handshake's ticket is late: handshake on our
			 * own (still within the gate's count of handshakes). */
			c->ticket_waited = 1;
			conn_deadline(c, now_ms + (int64_t)c->w->cf->upstream_timeout * 1000);
			kv_upstream_gate_stop_waiting(c->rt);
			return;
		}
		kv_upstream_ungate(&c->upwait);
		if (conn_fail(c, 504, "upstream timed out") == STEP_CONT)
			conn_run(c);
		return;
	case CS_CONNECT:
	case CS_HANDSHAKE:
		/* connect_timeout, the TLS handshake included: nothing of the
		 * request was sent, so it moves to another target */
		kv_log_warnx("KV0423", "upstream %s: no %s within connect_timeout (%d s)",
		    c->tlabel != NULL ? c->tlabel : "-",
		    c->state == CS_CONNECT ? "TCP connection" : "TLS handshake",
		    c->w->cf->connect_timeout);
		if (conn_failover(c, 504, "upstream connect timed out", 1) == STEP_CONT)
			conn_run(c);
		return;
	case CS_SEND_REQ:
	case CS_RESP_HEAD:
		if (conn_fail(c, 504, "upstream timed out") == STEP_CONT)
			conn_run(c);
		return;
	case CS_RELAY:
		/* Idle upstream or a client that stopped reading: cut. */
		c->cut = 1;
		conn_close(c);
		return;
	default:
		conn_close(c);
		return;
	}
}

void
kv_conn_drain(struct kv_conn *c)
{
	c->drain = 1;
	/* Only a keep-alive connection idle between requests is closed now (a
	 * client retries a request on a reused connection that closed). A new
	 * connection whose first request is still on its way gets its answer:
	 * closing it would drop a request during a reload (t_signals). */
	if (c->state == CS_HEAD && c->clen == 0 && c->served)
		conn_close(c);
}

void
kv_conn_close_all(struct kv_worker *w)
{
	while (w->conns != NULL) {
		w->conns->cut = w->conns->state == CS_RELAY;
		conn_close(w->conns);
	}
	kv_conn_reap(w);
}

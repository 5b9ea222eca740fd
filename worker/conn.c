/* The phase engine: a connection's life from accept to close. The phases
 * (the table below, one file each) return a code; the engine alone keeps
 * their order and writes c->state, retries an attempt that failed before
 * any response byte (peer.c picks, the attempt is reset here), finishes a
 * request exactly once (settle.c), writes the answers we make ourselves,
 * and goes on to the next request or closes. Deadlines and a client that
 * leaves are handed to the phase's hooks. docs/design.md draws the floors:
 * engine -> phases -> services (conn_io.c, reply.c, peer.c, settle.c,
 * resp_filter.c, leasewait.c, upstream.c) -> pure parsers. */
#include "worker/conn-t.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/admission.h"
#include "worker/drops.h"
#include "worker/errors.h"
#include "worker/leasewait.h"
#include "worker/peer.h"
#include "worker/relay.h"
#include "worker/relay_head.h"
#include "worker/reply.h"
#include "worker/request_body.h"
#include "worker/request_build.h"
#include "worker/request_head.h"
#include "worker/request_send.h"
#include "worker/settle.h"
#include "worker/ws_session.h"

#define STEPS_PER_EVENT 64	/* then yield to other connections */

static enum kv_rc admit_timeout(struct kv_conn *);
static enum kv_rc head_timeout(struct kv_conn *);
static enum kv_rc relay_timeout(struct kv_conn *);

/* The phases, in order. run: one step of the phase. timeout: its deadline
 * passed (NULL: close quietly). client_left: the client hung up while the phase
 * waits on the upstream; 1 when the request goes on without it (NULL: a
 * cut). */
static const struct kv_phase {
	enum kv_rc	(*run)(struct kv_conn *);
	enum kv_rc	(*timeout)(struct kv_conn *);
	int		(*client_left)(struct kv_conn *);
} phases[CS_NPHASES] = {
	[CS_HEAD]	= { request_head,	NULL,			NULL },
	[CS_BODY]	= { request_body,	NULL,			NULL },
	[CS_ADMIT]	= { request_admit,	admit_timeout,		NULL },
	[CS_BUILD]	= { request_build,	NULL,			NULL },
	[CS_SEND]	= { request_send,	request_send_timeout,	NULL },
	[CS_RESP_HEAD]	= { relay_head,		head_timeout,		relay_client_left },
	[CS_RELAY]	= { relay_body,		relay_timeout,		relay_client_left },
	[CS_WS]		= { ws_session,		ws_timeout,		ws_client_left },
};

static void conn_run(struct kv_conn *c);
static void conn_close(struct kv_conn *c);

/* Parked for lease: its own bound (kv_lease_poll), not the deadline's. */
static enum kv_rc
admit_timeout(struct kv_conn *c)
{
	return c->adm.lease_parked ? KV_AGAIN : KV_CLOSE;
}

static enum kv_rc
head_timeout(struct kv_conn *c)
{
	return reply_error(c, 504, "upstream timed out");
}

/* An idle upstream, or a client that stopped reading: cut. */
static enum kv_rc
relay_timeout(struct kv_conn *c)
{
	(void)c;
	return KV_CUT;
}

/* The upstream admits the handshake this connection waits for. */
static void
conn_upwake(struct kv_upwait *w)
{
	conn_ready((struct kv_conn *)((char *)w - offsetof(struct kv_conn, upwait)));
}

/* Room for one more connection: past the connections' share, those that
 * sent nothing, then the slowest heads, make way; only with the memory
 * itself at the refusal point is the new one refused. A flood of silent
 * connections so sheds its own oldest, never a real client's request. */
static int
accept_room(struct kv_worker *w)
{
	(void)conn_heads_shed(w, CONN_BASE_COST, NULL);
	return !kv_memguard_at_limit(&w->mem, w->now_ms);
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
		kv_drop_refuse(w, fd, KV_DROP_FULL);
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
	c->adm.resv = -1;
	c->req.spfd = -1;
	c->resp.pipefd[0] = c->resp.pipefd[1] = -1;
	c->cev.kind = KV_EV_CLIENT;
	c->cev.fn = kv_conn_client_ready;
	c->cev.ptr = c;
	c->upwait.wake = conn_upwake;
	c->state = CS_HEAD;
	w->shed_close = conn_close;
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
	conn_idle_held(c);
	conn_head_deadline(c);
	conn_run(c);
}

/* ---- the engine ------------------------------------------------------- */

/* Close C for good (a reset when c->cut): what it reserved is settled, its
 * buffers and upstream let go; freed after this epoll batch. */
static void
conn_close(struct kv_conn *c)
{
	struct kv_worker *w = c->w;
	struct kv_conn **pp;

	kv_upstream_ungate(&c->upwait);
	conn_lease_unpark(c);
	if (c->adm.resv >= 0 || c->adm.counted_stream)
		settle_request(c);	/* settles and logs what was relayed */
	conn_upstream_detach(c, 0);
	conn_free_buf(c);
	free(c->cbuf);
	conn_heads_unlink(c);
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

/* A response refused a request whose body is still arriving (413, 503,
 * 402...). Closing at once with unread bytes makes the kernel send a reset,
 * which can destroy the response before the client reads it (curl then
 * reports only "100" or a broken pipe). Like nginx's lingering close, our
 * side is shut and the client's bytes are read and dropped until it closes,
 * or until it stays silent for KV_LINGER_MS (the tick closes it then). */
static int
conn_linger(struct kv_conn *c)
{
	struct kv_stream cs = { .fd = c->cfd };
	char sink[4096];
	ssize_t n;

	for (;;) {
		n = kv_stream_read(&cs, sink, sizeof(sink));
		if (n == KV_IO_AGAIN) {
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return 0;
		}
		if (n <= 0) {
			conn_close(c);
			return 0;
		}
		c->bytes_in += (uint64_t)n;
	}
}

/* Reset for the next request on a keep-alive connection; bytes of a
 * pipelined request stay in cbuf. Returns 1 to run on (they are there). */
static int
conn_next_request(struct kv_conn *c)
{
	size_t left;

	conn_upstream_detach(c, c->att.uc != NULL && c->resp.done && c->resp.up_keepalive && !c->cut);
	conn_free_buf(c);
	c->served = 1;
	if (c->drain || c->w->draining) {
		conn_close(c);
		return 0;
	}
	left = c->clen - c->cpos;
	c->head_parse = 0;	/* the head is gone or moved: w->req is not its parse */
	if (left == 0) {
		free(c->cbuf);
		c->cbuf = NULL;
		c->clen = c->cpos = 0;
		conn_idle_held(c);	/* the first to shed while it sends nothing */
	} else {
		memmove(c->cbuf, c->cbuf + c->cpos, left);
		c->clen = left;
		c->cpos = 0;
	}
	/* Everything from `method` on is per-request. */
	memset(&c->req, 0, sizeof(*c) - offsetof(struct kv_conn, req));
	c->adm.resv = -1;
	c->req.spfd = -1;
	c->resp.pipefd[0] = c->resp.pipefd[1] = -1;
	c->state = CS_HEAD;
	conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
	conn_set_deadline(c, CONN_CLIENT);
	/* Nothing pipelined: the next request is not here yet, so wait for
	 * it rather than find an empty socket (a wasted read per request). */
	return left > 0;
}

/* Write our own answer (obuf), then finish the request and linger, close
 * or go on to the next. Returns 1 to run on. */
static int
conn_errwrite(struct kv_conn *c)
{
	struct kv_stream cs = { .fd = c->cfd };
	ssize_t n;

	while (c->opos < c->olen) {
		n = kv_stream_write(&cs, c->obuf + c->opos, c->olen - c->opos);
		if (n == KV_IO_AGAIN) {
			conn_watch_client(c, EPOLLOUT | EPOLLRDHUP);
			conn_set_deadline(c, CONN_CLIENT);
			return 0;
		}
		if (n < 0) {
			conn_close(c);
			return 0;
		}
		c->opos += (size_t)n;
		c->bytes_out += (uint64_t)n;
	}
	if (c->req.method[0] != '\0' || c->status != 0)
		settle_request(c);
	if (!c->client_keep && !c->req.body_done && shutdown(c->cfd, SHUT_WR) == 0) {
		c->state = CS_LINGER;
		conn_deadline(c, c->w->now_ms + KV_LINGER_MS);
		return 1;
	}
	if (!c->client_keep) {
		conn_close(c);
		return 0;
	}
	return conn_next_request(c);
}

/* Reset the attempt: the upstream connection (closed, a reset when ABORT),
 * what was read from it and how much of the request went out; the request
 * in obuf (and the spool) stays for the next. */
static void
attempt_reset(struct kv_conn *c, int abort)
{
	if (c->att.uc != NULL)
		kv_upconn_close(c->att.uc, abort);	/* close() also leaves epoll */
	free(c->att.ubuf);
	free(c->att.sbuf);
	memset(&c->att, 0, sizeof(c->att));	/* SEND_GATE: from the gate again */
	c->opos = 0;		/* the request in obuf goes again from its start */
	c->status = 0;
}

static int conn_apply(struct kv_conn *c, enum kv_rc rc);

/* KV_RETRY: the attempt failed before any response byte (c->att.fail). A
 * pooled connection the server had closed before any byte of the request
 * was written to it gets one fresh connection to the same target, when the
 * whole request is still in obuf (a request goes upstream at most once:
 * once any byte was written, the provider may have read it all and bill
 * it); else the next target (peer_next) with the request rebuilt for it,
 * or our answer. Returns 1 to run on. */
static int
conn_retry(struct kv_conn *c)
{
	if (c->att.fail.closed && c->att.uc != NULL && c->att.uc->reused && !c->att.retried &&
	    c->keep_obuf && c->opos == 0 && !c->req_sent) {
		attempt_reset(c, 0);
		c->att.retried = 1;
		c->state = CS_SEND;
		return 1;
	}
	if (peer_next(c) == -1)
		return conn_apply(c, reply_error(c, c->att.fail.status, c->att.fail.msg));
	attempt_reset(c, 1);
	c->state = CS_BUILD;
	return 1;
}

/* What a phase said, done: 1 to run on, 0 to stop (waiting, or closed). */
static int
conn_apply(struct kv_conn *c, enum kv_rc rc)
{
	switch (rc) {
	case KV_NEXT:
		c->state++;
		return 1;
	case KV_AGAIN:
		return 0;
	case KV_REPLY:
		if (c->state >= CS_RELAY)	/* the client has a head: only a cut */
			break;
		conn_upstream_detach(c, 0);	/* the attempt is over */
		c->state = CS_ERRWRITE;
		return 1;
	case KV_RETRY:
		return conn_retry(c);
	case KV_DONE:
		settle_request(c);
		if (c->client_keep)
			return conn_next_request(c);
		conn_close(c);
		return 0;
	case KV_CLOSE:
		conn_close(c);
		return 0;
	case KV_CUT:
		break;
	}
	c->cut = 1;
	conn_close(c);
	return 0;
}

static int
conn_step(struct kv_conn *c)
{
	enum kv_rc rc;

	switch (c->state) {
	case CS_ERRWRITE:	return conn_errwrite(c);
	case CS_LINGER:		return conn_linger(c);
	default:
		/* the common answer, without a call: six of a request's
		 * phase steps are KV_NEXT (conn_apply was 165 of a small
		 * request's instructions, callgrind) */
		if ((rc = phases[c->state].run(c)) == KV_NEXT) {
			c->state++;
			return 1;
		}
		return conn_apply(c, rc);
	}
}

static void
conn_run(struct kv_conn *c)
{
	int i;

	for (i = 0; i < STEPS_PER_EVENT; i++)
		if (!conn_step(c))
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

/* The client left while the phase waits on the upstream or relays to it:
 * the upstream is stopped at once so the provider stops generating (and
 * billing) -- unless the phase goes on without the client (a metered
 * response the provider bills whole anyway is read to its end). */
static void
conn_client_left(struct kv_conn *c)
{
	const struct kv_phase *ph = &phases[c->state];

	if (ph->client_left != NULL && ph->client_left(c)) {
		conn_run(c);
		return;
	}
	if (c->state == CS_RELAY)
		atomic_fetch_add(&c->w->ledger->hdr->counters.client_aborts_total, 1);
	c->client_cut = 1;
	if (c->status == 0)
		c->status = 499;	/* nginx's "client closed request" */
	(void)conn_apply(c, KV_CUT);
}

void
kv_conn_event(struct kv_conn *c, int upstream, uint32_t events)
{
	if (c->closed)
		return;
	/* Client bytes while the upstream has the turn: see conn_quiet_client. */
	c->client_woke = !upstream && (events & EPOLLIN) &&
	    ((c->state == CS_SEND && c->att.send_step == SEND_HEAD) ||
	    c->state == CS_RESP_HEAD || c->state == CS_RELAY);
	if (!upstream && c->client_gone)
		return;		/* an event from before it left */
	if (!upstream && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) &&
	    c->state >= CS_ADMIT && c->state < CS_NPHASES) {
		conn_client_left(c);
		return;
	}
	conn_run(c);
}

void
kv_conn_tick(struct kv_conn *c, int64_t now_ms)
{
	enum kv_rc (*timeout)(struct kv_conn *);

	if (now_ms < c->dl.at)
		return;
	timeout = c->state < CS_NPHASES ? phases[c->state].timeout : NULL;
	if (conn_apply(c, timeout != NULL ? timeout(c) : KV_CLOSE))
		conn_run(c);
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
		w->conns->cut = w->conns->state == CS_RELAY || w->conns->state == CS_WS;
		conn_close(w->conns);
	}
	kv_conn_reap(w);
}

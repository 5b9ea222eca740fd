/* Connections dropped before a request is served: the 503 at accept and
 * its graceful close (the lingering refused sockets), and the count, the
 * request-log line and the once-a-minute log line of every refusal and
 * shed; see drops.h. One worker process, single-threaded: the state is
 * the module's own. */
#include "worker/drops.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "shm/ledger.h"
#include "worker/errors.h"
#include "worker/reqlog.h"
#include "worker/worker.h"

#define SAY_EVERY_MS	60000

/* A refused connection being read away until it closes. Static, so that
 * an event of this epoll batch for one closed already finds fd == -1. */
static struct lingering {
	int		 fd;		/* -1: free */
	int64_t		 until_ms;
	struct kv_evsrc	 ev;
} linger[KV_DROP_LINGER];
static int linger_next;		/* the oldest (or a free one): the next to take */
static int linger_set;

static uint64_t dropped[KV_DROP_CAUSES];	/* since the last log line */
static int64_t said_ms = -SAY_EVERY_MS;

static void
linger_close(struct lingering *s)
{
	if (s->fd == -1)
		return;
	close(s->fd);
	s->fd = -1;
}

/* Read what the client sent and drop it: 1 while it is still open. */
static int
read_away(int fd)
{
	char sink[4096];
	ssize_t n;

	for (;;) {
		n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n > 0)
			continue;
		return n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
	}
}

static void
linger_ready(struct kv_worker *w, struct kv_evsrc *src, uint32_t events)
{
	struct lingering *s = src->ptr;

	(void)w;
	if (s->fd != -1 && (!read_away(s->fd) || (events & (EPOLLHUP | EPOLLERR))))
		linger_close(s);
}

/* Keep FD, shut on our side, until the client closes or the bound
 * passes; the oldest makes way when all are taken. */
static void
linger_add(struct kv_worker *w, int fd)
{
	struct lingering *s;
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	int i;

	if (!linger_set) {
		for (i = 0; i < KV_DROP_LINGER; i++)
			linger[i].fd = -1;
		linger_set = 1;
	}
	s = &linger[linger_next];
	linger_next = (linger_next + 1) % KV_DROP_LINGER;
	linger_close(s);
	if (shutdown(fd, SHUT_WR) == -1 || !read_away(fd)) {
		close(fd);
		return;
	}
	s->ev.fn = linger_ready;
	s->ev.kind = KV_EV_CLIENT;
	s->ev.ptr = s;
	ev.data.ptr = &s->ev;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		kv_log_warn("KV0406", "epoll_ctl add refused connection");
		close(fd);
		return;
	}
	s->fd = fd;
	s->until_ms = w->now_ms + KV_DROP_LINGER_MS;
}

/* Count it, and write its request-log line: no method nor path, as no
 * request was read; STATUS is what the client got (444: nothing). */
static void
drop_count(struct kv_worker *w, enum kv_drop_cause cause, int status,
    uint64_t bytes_in, uint64_t bytes_out)
{
	struct kv_counters *k = &w->ledger->hdr->counters;
	char id[KV_REQID_LEN + 1];
	struct kv_reqlog_rec r;

	dropped[cause]++;
	atomic_fetch_add(cause == KV_DROP_IDLE ? &k->idle_shed_total :
	    cause == KV_DROP_HEAD ? &k->heads_shed_total : &k->accept_refusals_total, 1);
	if (!kv_reqlog_enabled())
		return;
	kv_reqlog_new_id(id);
	memset(&r, 0, sizeof(r));
	r.time_ms = kv_clock_ns(CLOCK_REALTIME) / 1000000;
	r.request_id = id;
	r.key_id = r.label = r.method = r.path = r.model = r.upstream = "";
	r.status = status;
	r.ttfb_ms = -1;
	r.bytes_in = bytes_in;
	r.bytes_out = bytes_out;
	kv_reqlog_write(&r);
}

void
kv_drop_refuse(struct kv_worker *w, int fd, enum kv_drop_cause cause)
{
	char msg[1024];
	ssize_t sent = 0;
	int n;

	/* The path is unknown before the request is read: OpenAI's shape. */
	n = kv_error_response(msg, sizeof(msg), 0, 503, cause == KV_DROP_FULL ?
	    "the gateway is at its memory limit; retry shortly" :
	    "gateway connection limit reached", 0, "retry-after: 1\r\n");
	if (n > 0 && (sent = send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0)
		sent = 0;
	drop_count(w, cause, 503, 0, (uint64_t)sent);
	linger_add(w, fd);
}

void
kv_drop_shed(struct kv_worker *w, enum kv_drop_cause cause, uint64_t bytes_in)
{
	drop_count(w, cause, 444, bytes_in, 0);	/* nginx's 444: closed, no answer */
}

/* One line: what was dropped since the last, by cause (when a minute
 * has passed since it, or FORCE). */
static void
say(struct kv_worker *w, int force)
{
	const struct kv_memguard *g = &w->mem;

	if (dropped[KV_DROP_FULL] + dropped[KV_DROP_MAXCONN] + dropped[KV_DROP_IDLE] +
	    dropped[KV_DROP_HEAD] == 0 || (!force && w->now_ms - said_ms < SAY_EVERY_MS))
		return;
	kv_log_warnx("KV0655", "connections dropped before a request (since the last such "
	    "line, at most a minute): %llu that had sent nothing and %llu unfinished heads "
	    "closed to keep the connections' memory under its %lld kB share (%lld kB now); "
	    "%llu refused with 503 at accept, memory at the refusal point (%lld kB of "
	    "%lld kB, refusing past %lld kB); %llu refused at max_connections (%d)",
	    (unsigned long long)dropped[KV_DROP_IDLE], (unsigned long long)dropped[KV_DROP_HEAD],
	    (long long)(g->held_max >> 10), (long long)(g->held >> 10),
	    (unsigned long long)dropped[KV_DROP_FULL], (long long)(g->used >> 10),
	    (long long)(g->limit >> 10), (long long)(g->refuse_at >> 10),
	    (unsigned long long)dropped[KV_DROP_MAXCONN], w->cf->max_connections);
	memset(dropped, 0, sizeof(dropped));
	said_ms = w->now_ms;
}

void
kv_drop_tick(struct kv_worker *w)
{
	int i;

	for (i = 0; linger_set && i < KV_DROP_LINGER; i++)
		if (linger[i].fd != -1 && w->now_ms >= linger[i].until_ms)
			linger_close(&linger[i]);
	say(w, 0);
}

void
kv_drop_close_all(struct kv_worker *w)
{
	int i;

	say(w, 1);

	for (i = 0; linger_set && i < KV_DROP_LINGER; i++)
		linger_close(&linger[i]);
}

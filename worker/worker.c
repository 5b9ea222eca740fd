/* The worker process: accept, dispatch epoll events to connections, tick
 * timers, drain on SIGTERM, leave when the master is gone. */
#include "worker/reqlog.h"
#include "worker/worker.h"

#include <errno.h>
#include <stddef.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "common/log.h"
#include "shm/lock.h"
#include "worker/conn.h"
#include "worker/conn-t.h"
#include "worker/drops.h"
#include "worker/leasewait.h"
#include "worker/tls13_io.h"

#define MAX_EVENTS	128
#define ACCEPTS_PER_TURN 64
#define SHARE_SLACK	8	/* connections over the average before stepping back */
#define SHARE_PAUSE_MS	5

static volatile sig_atomic_t worker_stop, worker_reopen;

static void
on_stop(int sig)
{
	(void)sig;
	worker_stop = 1;
}

/* SIGUSR1: reopen the request log (logrotate; the master forwards it). */
static void
on_reopen(int sig)
{
	(void)sig;
	worker_reopen = 1;
}

static void
worker_signals(void)
{
	struct sigaction sa;
	sigset_t none;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_reopen;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static void
listener_watch(struct kv_worker *w, int on)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &w->lev };

	if (w->lfd == -1)
		return;
	if (on && epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->lfd, &ev) == -1)
		kv_log_warn("KV0511", "epoll_ctl add listener");
	if (!on && epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->lfd, NULL) == -1)
		kv_log_warn("KV0512", "epoll_ctl del listener");
}

static void
accept_pause(struct kv_worker *w, int ms)
{
	if (!w->accept_paused)
		listener_watch(w, 0);
	w->accept_paused = 1;
	w->accept_resume_ms = w->now_ms + ms;
}

static void
accept_resume(struct kv_worker *w)
{
	if (w->accept_paused && !w->draining && w->now_ms >= w->accept_resume_ms) {
		w->accept_paused = 0;
		listener_watch(w, 1);
	}
}

/* Connections come in bursts, and EPOLLEXCLUSIVE wakes the first idle
 * worker, which then took nearly all of them (bench: 253 of 256 streams on
 * one worker, one CPU relaying). A worker holding more than its share of
 * the running workers' connections steps back a moment so another is woken. */
static int
over_share(const struct kv_worker *w)
{
	const struct kv_worker_slot *ws;
	uint64_t total = 0;
	int i, n = 0;

	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		ws = &w->ledger->workers[i];
		if (atomic_load_explicit(&ws->pid, memory_order_relaxed) == 0 ||
		    atomic_load_explicit(&ws->state, memory_order_relaxed) != KV_WORKER_RUNNING)
			continue;
		total += atomic_load_explicit(&ws->connections, memory_order_relaxed);
		n++;
	}
	return n > 1 && w->nconns > total / (uint64_t)n + SHARE_SLACK;
}

static void
accept_some(struct kv_worker *w)
{
	int i, fd, one = 1;

	for (i = 0; i < ACCEPTS_PER_TURN && w->lfd != -1; i++) {
		if (over_share(w)) {
			accept_pause(w, SHARE_PAUSE_MS);
			return;
		}
		fd = accept4(w->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* Out of descriptors: stop listening a moment instead
				 * of spinning on a listener that stays readable. */
				kv_log_warn("KV0513", "accept");
				accept_pause(w, 200);
			}
			return;	/* EAGAIN: another worker took it */
		}
		if (w->nconns >= (size_t)w->cf->max_connections) {
			kv_drop_refuse(w, fd, KV_DROP_MAXCONN);
			continue;
		}
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		kv_conn_accept(w, fd);
	}
}

static void
start_drain(struct kv_worker *w)
{
	struct kv_conn *c, *next;

	if (w->draining)
		return;
	w->draining = 1;
	w->drain_deadline_ms = w->now_ms + (int64_t)w->cf->shutdown_timeout * 1000;
	atomic_store(&w->slot->state, KV_WORKER_DRAINING);
	if (!w->accept_paused)
		listener_watch(w, 0);
	if (w->lfd != -1)
		close(w->lfd);
	w->lfd = -1;
	for (c = w->conns; c != NULL; c = next) {
		next = c->next;
		kv_conn_drain(c);
	}
}

static void
tick(struct kv_worker *w, pid_t master)
{
	atomic_store(&w->slot->heartbeat, (int64_t)time(NULL));
	if (getppid() != master)
		start_drain(w);	/* orphaned: finish what we have and leave */
	kv_upstreams_tick(w->ups, w->cf->nupstreams, (int64_t)time(NULL));
	kv_drop_tick(w);
#ifdef __GLIBC__
	/* Relay buffers come and go with the bytes in flight, but glibc keeps
	 * freed heap pages resident below the highest live chunk: without
	 * this, a worker's memory is its worst burst ever (t_memory measured
	 * +3-5 MB for 200 streams of 64 KB events), not what moves now. */
	malloc_trim(0);
#endif
}

/* The connections whose deadline came. One that is still open and set
 * itself no new deadline is looked at again in a second, as a sweep of
 * every connection once a second did before (a parked request waits on
 * its own bound, for one). */
static void
expire(struct kv_worker *w)
{
	struct kv_deadline *d;
	struct kv_conn *c;

	while ((d = kv_deadlines_expired(&w->deadlines, w->now_ms)) != NULL) {
		c = (struct kv_conn *)((char *)d - offsetof(struct kv_conn, dl));
		kv_conn_tick(c, w->now_ms);
		if (!c->closed && c->dl.idx == 0)
			conn_deadline(c, w->now_ms + 1000);
	}
}

static void
listener_ready(struct kv_worker *w, struct kv_evsrc *src, uint32_t events)
{
	(void)src;
	(void)events;
	accept_some(w);
}

/* Before anything else of the turn can take a pooled connection: the
 * events of those that sat in the pool when epoll_wait returned (a close
 * of the server's, or bytes nobody asked for) take them out of it, so that
 * one taken this turn is known open without a poll(2) (upstream.h,
 * kv_upconn_take_idle). Their entries are cleared for the second pass. */
static void
pool_events(struct epoll_event *evs, int n)
{
	struct kv_evsrc *src;
	int i;

	for (i = 0; i < n; i++) {
		src = evs[i].data.ptr;
		if (src->kind != KV_EV_UPSTREAM || src->ptr != NULL)
			continue;
		kv_upconn_idle_event((struct kv_upconn *)((char *)src -
		    offsetof(struct kv_upconn, ev)));
		evs[i].data.ptr = NULL;
	}
}

static void
run_ready(struct kv_worker *w)
{
	struct kv_conn *list = w->ready, *c;

	w->ready = NULL;
	while ((c = list) != NULL) {
		list = c->ready_next;
		c->ready_next = NULL;
		kv_conn_resume(c);
	}
}

/* How long epoll may sleep: not at all with work queued, until the listener
 * comes back when accepting is paused or the first connection deadline,
 * else a second (the tick). */
static int
wait_ms(const struct kv_worker *w)
{
	int64_t d;

	int ms = 1000;

	if (w->ready != NULL)
		return 0;
	if (w->accept_paused && !w->draining) {
		d = w->accept_resume_ms - w->now_ms;
		ms = d < 0 ? 0 : d > 1000 ? 1000 : (int)d;
	}
	return kv_lease_wait_ms(w, kv_deadlines_wait_ms(&w->deadlines, w->now_ms, ms));
}

static void
worker_loop(struct kv_worker *w, pid_t master)
{
	struct epoll_event evs[MAX_EVENTS];
	struct kv_evsrc *src;
	int64_t last_tick = 0;
	int i, n;

	for (;;) {
		if (worker_stop)
			start_drain(w);
		if (worker_reopen) {
			worker_reopen = 0;
			kv_reqlog_reopen();
		}
		if (w->draining && (w->nconns == 0 || w->now_ms >= w->drain_deadline_ms))
			return;
		kv_reqlog_flush();
		kv_log_flush();
		n = epoll_wait(w->epfd, evs, MAX_EVENTS, wait_ms(w));
		if (n == -1 && errno != EINTR) {
			kv_log_warn("KV0514", "epoll_wait");
			return;
		}
		w->now_ms = kv_now_ms();
		kv_upstreams_turn(n >= 0 && n < MAX_EVENTS);
		pool_events(evs, n);
		accept_resume(w);
		for (i = 0; i < n; i++)
			if ((src = evs[i].data.ptr) != NULL)
				src->fn(w, src, evs[i].events);
		kv_lease_poll(w);
		run_ready(w);
		expire(w);
		kv_memguard_observe(&w->mem, w->now_ms);
		if (w->now_ms - last_tick >= 1000) {
			last_tick = w->now_ms;
			tick(w, master);
		}
		kv_conn_reap(w);
		kv_upconn_reap();
	}
}

void
kv_worker_main(const struct kv_config *cf, struct kv_ledger *l, int slot,
    uint32_t generation, int lfd)
{
	static struct kv_worker w;	/* one per process: the process owns it */
	char role[32], err[256] = "";
	pid_t master = getppid();

	snprintf(role, sizeof(role), "worker %d", slot);
	kv_log_set_role(role);
	/* Leave when the master dies; getppid() catches the race at fork. */
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) == -1)
		kv_log_warn("KV0515", "prctl(PR_SET_PDEATHSIG)");
	worker_signals();
	w.cf = cf;
	w.ledger = l;
	w.slot_index = slot;
	w.slot = &l->workers[slot];
	l->self = w.slot;	/* this process's ledger operations announce themselves */
	kv_tls13_io_counters(&l->hdr->counters);
	atomic_store(&w.slot->pid_start, kv_pid_start((int)getpid()));
	w.generation = generation;
	w.lfd = lfd;
	w.lev.kind = KV_EV_LISTEN;
	w.lev.fn = listener_ready;
	w.splice_ok = 1;
	w.now_ms = kv_now_ms();
	/* power-of-two choices between targets (peer.c) */
	srand((unsigned)getpid() ^ (unsigned)w.now_ms);
	if (kv_upstreams_init(&w.ups, cf, kv_conn_upstream_ready, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0516", "%s", err);
		_exit(KV_EXIT_CONFIG);
	}
	kv_memguard_init(&w.mem, cf, cf->workers, w.ups, cf->nupstreams, &w.nconns, &w.conns,
	    w.ledger);
	if ((w.epfd = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		kv_log_warn("KV0517", "epoll_create1");
		_exit(1);
	}
	listener_watch(&w, 1);
	(void)kv_reqlog_open(cf->request_log);	/* on failure: logged, served without */
	kv_log_batch_access(1);
	atomic_store(&w.slot->heartbeat, (int64_t)time(NULL));
	atomic_store(&w.slot->state, KV_WORKER_RUNNING);
	worker_loop(&w, master);
	kv_conn_close_all(&w);
	kv_drop_close_all(&w);
	kv_reqlog_flush();
	kv_log_flush();
	kv_upstreams_free(w.ups, cf->nupstreams);
	kv_upconn_reap();
	kv_memguard_close(&w.mem);
	atomic_store(&w.slot->state, KV_WORKER_DRAINING);
	_exit(0);
}

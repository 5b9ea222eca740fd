/* Budget leases across hosts; see cluster.h and docs/cluster.md. This file
 * starts and stops a host's leasing and runs its loop: the Redis socket,
 * the workers' kick and the timer decide when cluster_sync.c syncs. */
#include "master/cluster.h"
#include "master/cluster_host.h"
#include "master/cluster_lease.h"
#include "master/cluster_acl.h"
#include "master/cluster_persist.h"
#include "master/cluster_keys.h"
#include "master/cluster_sync.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "master/loop.h"
#include "master/redis.h"
#include "shm/incarnation.h"

#define NEED_MS		100	/* a refusal for want of lease is answered this soon */
#define KICK_MS		10	/* a parked request's kick syncs at most this often */

/* Leasing starts only from a Redis found durable enough (cluster_persist.h);
 * one refused is asked again every PERSIST_RECHECK_MS. */
#define PERSIST_RECHECK_MS	5000

static void
on_persist(void *arg, int ok)
{
	struct kv_cluster_host *h = arg;

	if (ok)
		kv_cluster_load_script(h);
	else
		h->persist_recheck_ms = kv_now_ms() + PERSIST_RECHECK_MS;
}

static void
persist_recheck(struct kv_cluster_host *h, int64_t now)
{
	if (h->persist_recheck_ms == 0 || now < h->persist_recheck_ms)
		return;
	h->persist_recheck_ms = 0;
	if (kv_redis_ready(h->redis))
		kv_cluster_persist_check(h->redis, h->c.require_persistence,
		    &h->persist_warned, on_persist, h);
}

static void
on_ready(void *arg)
{
	struct kv_cluster_host *h = arg;

	h->persist_recheck_ms = 0;
	kv_cluster_acl_check(h->redis, h->c.user, &h->acl_warned);
	kv_cluster_persist_check(h->redis, h->c.require_persistence, &h->persist_warned,
	    on_persist, h);
}



/* ---- the loop ----------------------------------------------------------- */

/* A worker parked a request for want of lease (worker/leasewait.c): sync
 * now, or as soon as the batch in flight is back, so the request waits
 * one Redis round trip rather than the next NEED_MS look. */
static void
kicked(struct kv_cluster_host *h, int64_t now)
{
	uint64_t v;

	if (read(h->kick_fd, &v, sizeof(v)) == -1 && errno != EAGAIN)
		kv_log_warn("KV0762", "cluster: reading the workers' lease kick");
	if (h->inflight > 0) {
		h->kicked = 1;
		return;
	}
	if (h->next_sync_ms > h->last_sync_ms + KICK_MS)
		h->next_sync_ms = h->last_sync_ms + KICK_MS;
	if (h->next_sync_ms < now)
		h->next_sync_ms = now;
}

/* Every NEED_MS: note each account's reservations in flight (the lease
 * must hold their peak), and whether a worker refused a request for want
 * of lease since the last sync. */
static int
lease_wanted(struct kv_cluster_host *h)
{
	uint32_t i, max = h->l->hdr->max_keys;
	int wanted = 0;

	for (i = 0; i < max; i++) {
		struct kv_account *a = &h->l->accounts[i];
		int64_t r;

		if (!kv_slot_ready(&a->state))
			continue;
		r = atomic_load_explicit(&a->reserved_nusd, memory_order_relaxed);
		if (r > h->acct[i].peak_reserved)
			h->acct[i].peak_reserved = r;
		if (atomic_load_explicit(&a->lease_need_nusd, memory_order_relaxed) != 0 ||
		    atomic_load_explicit(&a->rl_need, memory_order_relaxed) != 0)
			wanted = 1;
		r = atomic_load_explicit(&a->rl_tok_reserved, memory_order_relaxed);
		if (r > h->acct[i].rl[1].peak)
			h->acct[i].rl[1].peak = r;
	}
	return wanted;
}

/* Hand the loop what comes next: the Redis socket with the events the
 * connection waits for, and a timer at the first of its deadline, the next
 * look for refusals and the next sync. */
static void
arm(struct kv_cluster_host *h)
{
	struct pollfd pfd;
	int64_t now = kv_now_ms(), at;
	int t = -1;

	at = h->next_need_ms < h->next_sync_ms ? h->next_need_ms : h->next_sync_ms;
	if (kv_redis_pollfd(h->redis, &pfd, &t) == 1) {
		if (kv_mloop_io_set(h->lp, &h->redis_io, pfd.fd, (uint32_t)pfd.events) == -1)
			kv_log_warn("KV0774", "cluster: epoll_ctl on the Redis socket");
	} else {
		kv_mloop_io_clear(h->lp, &h->redis_io);
	}
	if (t >= 0 && now + t < at)
		at = now + t;
	kv_mloop_timer_at(h->lp, &h->timer, at);
}

/* After the connection ran: what is due by the clock, then arm again. */
static void
after_run(struct kv_cluster_host *h)
{
	int64_t now = kv_now_ms();

	persist_recheck(h, now);
	if (!h->clash)
		kv_cluster_keys_sync(h->keys, h->redis, now);
	if (now >= h->next_need_ms) {
		h->next_need_ms = now + NEED_MS;
		if (lease_wanted(h) && now < h->next_sync_ms && h->inflight == 0)
			h->next_sync_ms = now;
	}
	if (now >= h->next_sync_ms) {
		h->next_sync_ms = now + SYNC_MS;
		h->last_sync_ms = now;
		kv_cluster_sync_all(h, 0);
		kv_cluster_when_down(h, now);
	}
	arm(h);
}

/* EVENTS have poll()'s values (loop.h), as kv_redis_run reads them. */
static void
on_redis(void *arg, uint32_t events)
{
	struct kv_cluster_host *h = arg;
	struct pollfd pfd = { .fd = h->redis_io.fd, .events = (short)h->redis_io.events,
	    .revents = (short)events };

	kv_redis_run(h->redis, &pfd);
	after_run(h);
}

static void
on_kick(void *arg, uint32_t events)
{
	struct kv_cluster_host *h = arg;

	(void)events;
	kicked(h, kv_now_ms());
	kv_redis_run(h->redis, NULL);
	after_run(h);
}

static void
on_timer(void *arg)
{
	struct kv_cluster_host *h = arg;

	kv_redis_run(h->redis, NULL);
	after_run(h);
}

void
kv_cluster_forget(struct kv_cluster_host *h)
{
	if (h != NULL)
		kv_redis_forget(h->redis);
}

/* H with its account table and its Redis connection (not yet dialled),
 * or NULL (out of memory, logged). */
static struct kv_cluster_host *
host_new(const struct kv_config *cf, struct kv_ledger *l)
{
	struct kv_cluster_host *h;

	if ((h = calloc(1, sizeof(*h))) == NULL ||
	    (h->acct = calloc(l->hdr->max_keys, sizeof(*h->acct))) == NULL ||
	    (h->redis = kv_redis_new(&cf->cluster, on_ready, h)) == NULL) {
		kv_log_warnx("KV0759", "cluster: out of memory");
		if (h != NULL)
			free(h->acct);
		free(h);
		return NULL;
	}
	return h;
}

/* This ledger's incarnation and this instance's name, as Redis is told
 * them; -1 when the incarnation cannot be drawn (logged). */
static int
host_names(struct kv_cluster_host *h, struct kv_ledger *l)
{
	uint64_t inc;
	int drawn;

	if ((inc = kv_ledger_incarnation(l, h->c.host_id, &drawn)) == 0) {
		kv_log_warn("KV0771", "cluster: cannot draw this ledger's incarnation: "
		    "not leasing");
		return -1;
	}
	snprintf(h->inc, sizeof(h->inc), "%016" PRIx64, inc);
	if (drawn)
		kv_log_info("cluster: this ledger is incarnation %s of host %s (a new or "
		    "copied ledger)", h->inc, h->c.host_id);
	snprintf(h->me, sizeof(h->me), "%016" PRIx64 " %.64s pid %d",
	    (uint64_t)atomic_load(&l->hdr->instance), l->hdr->master_host,
	    (int)atomic_load(&l->hdr->master_pid));
	h->prev_instance = l->prev_instance;
	return 0;
}

/* What a previous run was granted is unknown until the first sync:
 * every account admits nothing new until then. */
static void
accounts_closed(struct kv_cluster_host *h)
{
	uint32_t i;

	KV_FOR_EACH_SLOT(h->l, i) {
		struct kv_account *a = &h->l->accounts[i];
		struct acct *s = &h->acct[i];

		s->period = kv_cluster_acct_period(h, a);
		s->last_spent = kv_account_spent(a);
		s->known_budget = -1;
		s->resets = -1;
		kv_cluster_close_acct(a, s);
	}
}

struct kv_cluster_host *
kv_cluster_start(const struct kv_config *cf, struct kv_ledger *l, struct kv_mloop *lp)
{
	struct kv_cluster_host *h;

	atomic_store(&l->hdr->cluster, 0);
	if (!cf->cluster.enabled || (h = host_new(cf, l)) == NULL)
		return NULL;
	/* Workers inherit it: their kick wakes this loop (worker/leasewait.c). */
	if ((h->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		kv_log_warn("KV0763", "cluster: eventfd: parked requests wait for the "
		    "regular lease sync");
	l->lease_kick_fd = h->kick_fd;
	h->c = cf->cluster;
	h->c.password = NULL;	/* the connection keeps its own copy */
	h->period = cf->period;
	h->l = l;
	h->last_ok_ms = kv_now_ms();
	if (host_names(h, l) == -1) {
		/* not leasing: no kick for the workers, and no descriptor kept */
		if (h->kick_fd != -1)
			close(h->kick_fd);
		l->lease_kick_fd = -1;
		kv_redis_free(h->redis);
		free(h->acct);
		free(h);
		return NULL;
	}
	accounts_closed(h);
	/* Without it (out of memory, logged) keys issued here stay here. */
	h->keys = kv_cluster_keys_new(l);
	atomic_store(&l->hdr->cluster_up, 0);
	atomic_store(&l->hdr->cluster, 1);
	kv_log_info("cluster: host %s leasing budgets from %s%s (on_redis_down = %s)",
	    h->c.host_id, h->c.redis_unix[0] ? "unix:" : h->c.nsentinels > 0 ?
	    "the Sentinels of master " : h->c.redis_tls ? "rediss://" : "redis://",
	    h->c.redis_unix[0] ? h->c.redis_unix : h->c.nsentinels > 0 ?
	    h->c.sentinel_master : h->c.redis_host,
	    h->c.open_when_down ? "open" : "closed");
	h->lp = lp;
	kv_mloop_io_init(&h->redis_io, on_redis, h);
	kv_mloop_io_init(&h->kick_io, on_kick, h);
	kv_mloop_timer_init(&h->timer, on_timer, h);
	if (h->kick_fd != -1 && kv_mloop_io_set(lp, &h->kick_io, h->kick_fd, EPOLLIN) == -1)
		kv_log_warn("KV0763", "cluster: eventfd: parked requests wait for the "
		    "regular lease sync");
	arm(h);
	return h;
}

/* At stop, the master's loop is gone: drive the connection until every
 * reply in flight has come back and the issued keys' last pass is done,
 * or until the deadline. */
static void
await_replies(struct kv_cluster_host *h, int64_t until)
{
	while ((h->inflight > 0 || kv_cluster_keys_busy(h->keys, h->redis)) &&
	    kv_now_ms() < until) {
		struct pollfd pfd;
		int t = 100, n;

		kv_cluster_keys_sync(h->keys, h->redis, kv_now_ms());
		n = kv_redis_pollfd(h->redis, &pfd, &t);

		if (poll(&pfd, (nfds_t)n, t) == -1 && errno != EINTR)
			break;
		kv_redis_run(h->redis, n > 0 ? &pfd : NULL);
	}
}

void
kv_cluster_stop(struct kv_cluster_host *h)
{
	int64_t until = kv_now_ms() + 1000;

	if (h == NULL)
		return;
	h->stopping = 1;
	kv_mloop_io_clear(h->lp, &h->redis_io);
	kv_mloop_io_clear(h->lp, &h->kick_io);
	kv_mloop_timer_stop(h->lp, &h->timer);
	kv_cluster_keys_last_pass(h->keys);
	await_replies(h, until);
	kv_cluster_sync_all(h, 1);
	await_replies(h, until);
	kv_redis_free(h->redis);
	kv_cluster_keys_free(h->keys);
	if (h->kick_fd != -1 && close(h->kick_fd) == -1)
		kv_log_warn("KV0764", "cluster: closing the workers' lease kick");
	h->l->lease_kick_fd = -1;
	free(h->acct);
	free(h);
}

/* Upstream target slots, the ledger's target table; see shm/targets.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/targets.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

void
kv_target_label(char *buf, size_t len, const char *name, const char *host, const char *port)
{
	snprintf(buf, len, "%.24s/%.30s:%.6s", name, host, port);
}

int
kv_target_slot(struct kv_ledger *l, const char *name)
{
	struct kv_target_slot *s;
	uint32_t st, zero;
	int i, spins;

	for (i = 0; i < KV_TARGET_SLOTS; i++) {
		s = &l->targets[i];
		st = atomic_load_explicit(&s->state, memory_order_acquire);
		if (st == 0) {
			zero = 0;
			if (atomic_compare_exchange_strong(&s->state, &zero, 1)) {
				memset(s->name, 0, sizeof(s->name));
				strncpy(s->name, name, sizeof(s->name) - 1);
				atomic_store_explicit(&s->state, 2, memory_order_release);
				return i;
			}
			st = zero;
		}
		/* A claimer only copies a name: it is ready in a moment. */
		for (spins = 0; st == 1 && spins < 1000; spins++) {
			sched_yield();
			st = atomic_load_explicit(&s->state, memory_order_acquire);
		}
		if (st == 2 && strncmp(s->name, name, sizeof(s->name) - 1) == 0)
			return i;
	}
	return -1;
}

uint64_t
kv_target_inflight(const struct kv_ledger *l, int t)
{
	uint64_t sum = 0;
	int i;

	if (t < 0)
		return 0;
	for (i = 0; i < KV_WORKER_SLOTS; i++)
		if (atomic_load(&l->workers[i].pid) != 0)
			sum += atomic_load(&l->targets[t].inflight[i]);
	return sum;
}

void
kv_target_count(struct kv_ledger *l, const struct kv_worker_slot *w, int t, int delta)
{
	_Atomic uint16_t *n;
	uint16_t cur;

	if (t < 0 || w < l->workers || w >= l->workers + KV_WORKER_SLOTS)
		return;
	n = &l->targets[t].inflight[w - l->workers];
	/* Only this worker writes its own counter (the master zeroes it only
	 * once the worker is dead): a plain load and store, no locked
	 * read-modify-write on a line that every worker's counter shares.
	 * Readers (kv_target_inflight, the P2C chooser) see a whole value. */
	cur = atomic_load_explicit(n, memory_order_relaxed);
	if (delta > 0)
		atomic_store_explicit(n, (uint16_t)(cur + 1), memory_order_relaxed);
	else if (cur > 0)
		atomic_store_explicit(n, (uint16_t)(cur - 1), memory_order_relaxed);
}

int
kv_target_down(const struct kv_ledger *l, int t, int64_t now_ms)
{
	return t >= 0 && (atomic_load(&l->targets[t].down_until_ms) > now_ms ||
	    atomic_load(&l->targets[t].health) == KV_HEALTH_DOWN);
}

uint32_t
kv_target_set_health(struct kv_ledger *l, int t, uint32_t health, int64_t now_ms)
{
	if (t < 0)
		return KV_HEALTH_UNCHECKED;
	atomic_store(&l->targets[t].health_checked_ms, now_ms);
	return atomic_exchange(&l->targets[t].health, health);
}

void
kv_target_ok(struct kv_ledger *l, int t)
{
	struct kv_target_slot *s;

	if (t < 0)
		return;
	s = &l->targets[t];
	/* A success resets the runs of failures; stored only when there is
	 * one, so that the common case reads a line every worker shares
	 * instead of writing it on every response. A failure racing this
	 * success lands before or after it: their order is arbitrary anyway. */
	if (atomic_load_explicit(&s->fails, memory_order_relaxed) != 0)
		atomic_store(&s->fails, 0);
	if (atomic_load_explicit(&s->ejections, memory_order_relaxed) != 0)
		atomic_store(&s->ejections, 0);
}

int
kv_target_fail(struct kv_ledger *l, int t, int64_t now_ms, int eject_after,
    int eject_secs, int may_eject)
{
	struct kv_target_slot *s;
	uint32_t n, fails;

	if (t < 0)
		return 0;
	s = &l->targets[t];
	atomic_fetch_add(&s->failures, 1);
	fails = atomic_fetch_add(&s->fails, 1) + 1;
	if (fails < (uint32_t)eject_after || !may_eject)
		return 0;
	/* One of the workers that see the threshold ejects it. */
	if (!atomic_compare_exchange_strong(&s->fails, &fails, 0))
		return 0;
	n = atomic_fetch_add(&s->ejections, 1) + 1;
	atomic_store(&s->down_until_ms, now_ms + (int64_t)eject_secs * 1000 * n);
	atomic_fetch_add(&s->ejections_total, 1);
	return 1;
}

void
kv_target_cool(struct kv_ledger *l, int t, int64_t now_ms, int secs)
{
	int64_t until = now_ms + (int64_t)secs * 1000, old;

	if (t < 0 || secs <= 0)
		return;
	old = atomic_load(&l->targets[t].down_until_ms);
	while (old < until &&
	    !atomic_compare_exchange_weak(&l->targets[t].down_until_ms, &old, until))
		;
}

void
kv_targets_release_worker(struct kv_ledger *l, const struct kv_worker_slot *w)
{
	int i;

	if (w < l->workers || w >= l->workers + KV_WORKER_SLOTS)
		return;
	for (i = 0; i < KV_TARGET_SLOTS; i++)
		atomic_store(&l->targets[i].inflight[w - l->workers], 0);
}

void
kv_targets_reset(struct kv_ledger *l)
{
	int i;

	for (i = 0; i < KV_TARGET_SLOTS; i++) {
		atomic_store(&l->targets[i].down_until_ms, 0);
		atomic_store(&l->targets[i].fails, 0);
		atomic_store(&l->targets[i].ejections, 0);
		atomic_store(&l->targets[i].health, KV_HEALTH_UNCHECKED);
	}
}

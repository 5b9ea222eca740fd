/* The master's ledger repair: counters recomputed from recorded
 * reservations, half-claimed slots tombstoned, dead workers released. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/repair.h"
#include "shm/keys.h"
#include "shm/ratelimit.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"

int
kv_ledger_quiesce(struct kv_ledger *l, uint64_t live_mask, int wait_ms)
{
	int64_t deadline;
	int i;

	/* Dekker with the worker's op_enter: it stores in_ledger then loads
	 * quiesce; we store quiesce then load in_ledger (both seq_cst), so at
	 * least one of us sees the other. */
	atomic_store(&l->hdr->quiesce, 1);
	deadline = kv_mono_ns() + (int64_t)wait_ms * 1000000LL;
	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		if (!(live_mask & (UINT64_C(1) << i)))
			continue;
		while (atomic_load(&l->workers[i].in_ledger) != 0) {
			if (kv_mono_ns() > deadline) {
				kv_ledger_unquiesce(l);
				return -1;
			}
			sched_yield();
		}
	}
	return 0;
}

void
kv_ledger_unquiesce(struct kv_ledger *l)
{
	atomic_store(&l->hdr->quiesce, 0);
}

/* accounts_used - 1, never below 0: a ledger of an older build did not
 * count link slots (kv_ledger_repair recounts at start-up). */
static void
used_drop(struct kv_ledger *l)
{
	uint32_t cur = atomic_load(&l->hdr->accounts_used);

	while (cur > 0 && !atomic_compare_exchange_weak(&l->hdr->accounts_used, &cur,
	    cur - 1))
		;
}

static void
slot_retire(struct kv_ledger *l, struct kv_account *a)
{
	uint32_t st = atomic_load(&a->state);

	if (st == KV_SLOT_READY || st == KV_SLOT_LINK)
		used_drop(l);
	memset(a, 0, sizeof(*a));
	memset(&l->history[a - l->accounts], 0, sizeof(*l->history));
	atomic_store(&a->state, KV_SLOT_DEAD);
	atomic_store(&a->tag, KV_TAG_DEAD);
}

/* The links of the issued account in slot AI - 1 (tag TAG): its later
 * secrets, rotated out or live. Returns how many were retired. */
static int
retire_links(struct kv_ledger *l, uint32_t ai, uint64_t tag)
{
	uint32_t i;
	int n = 0;

	KV_FOR_EACH_SLOT(l, i) {
		struct kv_account *s = &l->accounts[i];

		if (atomic_load(&s->state) == KV_SLOT_LINK && atomic_load(&s->link) == ai &&
		    atomic_load(&s->link_tag) == tag) {
			slot_retire(l, s);
			n++;
		}
	}
	return n;
}

int
kv_account_retire(struct kv_ledger *l, struct kv_account *a)
{
	uint32_t ai = kv_ledger_account_index(l, a) + 1;
	uint64_t tag = atomic_load(&a->tag);
	int issued = atomic_load(&a->state) == KV_SLOT_READY &&
	    (atomic_load(&a->aflags) & KV_AF_ISSUED);

	slot_retire(l, a);
	/* Only an issued account has links: a stranger's costs no scan. */
	return issued ? retire_links(l, ai, tag) : 0;
}

/* A slot with a key's tag but not READY has no live claimer once
 * quiesced: retire it (a retired slot may be claimed again). */
static int
tombstone_half_claims(struct kv_ledger *l)
{
	uint32_t i, st;
	uint64_t t;
	int n = 0;

	KV_FOR_EACH_SLOT(l, i) {
		struct kv_account *a = &l->accounts[i];

		st = atomic_load(&a->state);
		t = atomic_load(&a->tag);
		if (t != 0 && t != KV_TAG_DEAD && st != KV_SLOT_READY &&
		    st != KV_SLOT_LINK) {
			kv_account_retire(l, a);
			n++;
		}
	}
	for (i = 0; i < KV_MODEL_SLOTS; i++) {
		struct kv_model_slot *m = &l->models[i];

		st = atomic_load(&m->state);
		if (atomic_load(&m->tag) != 0 && (st == KV_SLOT_FREE ||
		    st == KV_SLOT_CLAIMING)) {
			atomic_store(&m->state, KV_SLOT_DEAD);
			n++;
		}
	}
	return n;
}

/* Per account: the dollars (sum) and, with cluster leases, the tokens
 * (tok) that the live reservation records hold. */
static void
sum_reservations(const struct kv_ledger *l, int64_t *sum, int64_t *tok)
{
	uint32_t n = l->hdr->max_keys, idx, j;
	int i;

	for (i = 0; i < KV_WORKER_SLOTS; i++)
		for (j = 0; j < kv_ledger_resv_end(&l->workers[i]); j++) {
			const struct kv_resv *r = &l->workers[i].resv[j];

			idx = atomic_load(&r->account);
			if (idx == 0 || idx > n)
				continue;
			sum[idx - 1] = kv_sat_add(sum[idx - 1],
			    atomic_load(&r->amount_nusd));
			if (tok != NULL)
				tok[idx - 1] += atomic_load(&r->tokens);
		}
}

/* With cluster leases, an account's rl_tok_reserved is the sum of the
 * tokens its live records hold (shm/ratelimit.c keeps it so, inside the
 * workers' ledger-op bracket): set it so, by CAS as reserved_nusd. */
static void
fix_tokens(struct kv_account *a, int64_t want, struct kv_repair_report *rep)
{
	int64_t cur = atomic_load(&a->rl_tok_reserved);

	if (cur == want)
		return;
	if (atomic_compare_exchange_strong(&a->rl_tok_reserved, &cur, want))
		rep->tokens_fixed++;
	else
		rep->skipped++;
}

int
kv_ledger_repair(struct kv_ledger *l, uint64_t dead_mask,
    struct kv_repair_report *rep)
{
	uint32_t n = l->hdr->max_keys, i, used0, used = 0;
	int64_t *sum, *tok = NULL, cur;
	int w;

	memset(rep, 0, sizeof(*rep));
	if ((sum = calloc(n, sizeof(*sum))) == NULL)
		return -1;
	if (atomic_load(&l->hdr->cluster) && (tok = calloc(n, sizeof(*tok))) == NULL) {
		free(sum);
		return -1;
	}
	for (w = 0; w < KV_WORKER_SLOTS; w++) {
		if (!(dead_mask & (UINT64_C(1) << w)))
			continue;
		/* tokens first: their refund reads the records the release clears */
		(void)kv_ratelimit_release_worker(l, &l->workers[w]);
		rep->released += kv_ledger_release_worker(l, &l->workers[w]);
	}
	rep->claims_fixed = tombstone_half_claims(l);
	sum_reservations(l, sum, tok);
	used0 = atomic_load(&l->hdr->accounts_used);
	KV_FOR_EACH_SLOT(l, i) {	/* a reservation names a claimed slot */
		struct kv_account *a = &l->accounts[i];

		used += atomic_load(&a->state) == KV_SLOT_READY ||
		    atomic_load(&a->state) == KV_SLOT_LINK;
		if (atomic_load(&a->state) == KV_SLOT_READY)
			rep->rolls_fixed += kv_ledger_roll_finish(a);
		if (tok != NULL)
			fix_tokens(a, tok[i], rep);
		cur = atomic_load(&a->reserved_nusd);
		if (cur == sum[i])
			continue;
		if (atomic_compare_exchange_strong(&a->reserved_nusd, &cur, sum[i]))
			rep->reserved_fixed++;
		else
			rep->skipped++;
	}
	/* Slots in use, links included (a ledger of an older build did not
	 * count them); kvctl may claim one meanwhile: then next time. */
	if (used != used0)
		rep->used_fixed = atomic_compare_exchange_strong(&l->hdr->accounts_used,
		    &used0, used);
	free(sum);
	free(tok);
	atomic_fetch_add(&l->hdr->repairs, (uint64_t)(rep->reserved_fixed +
	    rep->claims_fixed + rep->rolls_fixed + rep->tokens_fixed));
	return 0;
}

int
kv_ledger_roll_all(struct kv_ledger *l, enum kv_period period, int64_t now)
{
	int64_t start;
	uint32_t i;
	int n = 0;

	KV_FOR_EACH_SLOT(l, i) {
		struct kv_account *a = &l->accounts[i];

		if (atomic_load(&a->state) != KV_SLOT_READY)
			continue;
		/* An issued key may have a period of its own (shm/keys.h). */
		if (kv_keys_period(a, period) == KV_PERIOD_NONE)
			continue;
		start = kv_period_start(kv_keys_period(a, period), now);
		/* A roll a dead worker left half-way first: quiesced, nobody
		 * else is inside one. */
		n += kv_ledger_roll_finish(a);
		if (atomic_load(&a->period_start) >= start)
			continue;
		kv_ledger_period_roll(l, a, period, now);
		n++;
	}
	return n;
}

/* Never charged, never answered 2xx, not the config's, no override, and
 * idle: a stranger's key (a junk token) that must not hold a slot. */
static int
reclaimable(const struct kv_account *a, int64_t now, int64_t idle_s)
{
	/* Never used: idle since its creation (period_start is set then). */
	int64_t used = atomic_load(&a->last_used);

	if (used == 0)
		used = kv_account_period(a);
	return !(a->flags & KV_ACCOUNT_NAMED) &&
	    !(atomic_load(&a->aflags) & (KV_AF_CONFIG | KV_AF_KEPT | KV_AF_OVERRIDE)) &&
	    kv_account_spent(a) == 0 && atomic_load(&a->reserved_nusd) == 0 &&
	    now - used >= idle_s;
}

int
kv_ledger_reclaimable(const struct kv_ledger *l, int64_t now, int64_t idle_s,
    int64_t grace_s)
{
	uint32_t i;
	int n = 0;

	KV_FOR_EACH_SLOT(l, i) {
		const struct kv_account *a = &l->accounts[i];

		if (atomic_load(&a->state) == KV_SLOT_LINK)
			n += kv_keys_link_reclaimable(l, a, now, grace_s);
		else if (atomic_load(&a->state) == KV_SLOT_READY)
			/* A forgotten account in flight waits for its settlement:
			 * no quiesce every tick meanwhile. */
			n += ((atomic_load(&a->aflags) & KV_AF_FORGET) &&
			    atomic_load(&a->reserved_nusd) == 0) ||
			    (idle_s >= 0 && reclaimable(a, now, idle_s));
	}
	return n;
}

void
kv_ledger_reclaim(struct kv_ledger *l, int64_t now, int64_t idle_s, int64_t grace_s,
    struct kv_reclaim_report *rep)
{
	uint32_t i;

	memset(rep, 0, sizeof(*rep));
	KV_FOR_EACH_SLOT(l, i) {
		struct kv_account *a = &l->accounts[i];

		if (kv_keys_link_reclaimable(l, a, now, grace_s)) {
			slot_retire(l, a);
			rep->links++;
		} else if (atomic_load(&a->state) != KV_SLOT_READY) {
			continue;
		} else if (atomic_load(&a->aflags) & KV_AF_FORGET) {
			/* In flight: wait for its settlement. */
			if (atomic_load(&a->reserved_nusd) != 0)
				continue;
			rep->links += kv_account_retire(l, a);
			rep->forgotten++;
		} else if (idle_s >= 0 && reclaimable(a, now, idle_s)) {
			kv_account_retire(l, a);
			rep->strangers++;
		}
	}
}

/* GCRA rate limits in the ledger's account slots; see shm/ratelimit.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/ratelimit.h"

#include "common/clock.h"

#include <stdio.h>
#include <time.h>

/* A TAT never runs further ahead than this (an overrun past the window is
 * kept for one more window), so a TAT beyond it means the clock went back. */
#define KV_RL_AHEAD_MAX	(2 * KV_RL_WINDOW_NS)

static int64_t rl_offset_ns;	/* unix time less CLOCK_MONOTONIC, at the anchor */
static int rl_anchored;

void
kv_rl_clock_anchor(void)
{
	rl_offset_ns = kv_clock_ns(CLOCK_REALTIME) - kv_clock_ns(CLOCK_MONOTONIC);
	rl_anchored = 1;
}

int64_t
kv_rl_now_ns(void)
{
	/* A duration clock (CLOCK_MONOTONIC, which a step of the wall clock
	 * leaves alone) read as unix time from the anchor: the master's,
	 * inherited by every worker it forks. */
	if (!rl_anchored)
		kv_rl_clock_anchor();
	return kv_clock_ns(CLOCK_MONOTONIC) + rl_offset_ns;
}

/* A TAT further ahead than any overrun leaves it was written by a clock
 * that has gone back since (a restart after a step): what the bucket held
 * is unknown, and waiting for the old clock would lock the key for as
 * long as the step. Start it again from a full bucket, at most one burst
 * freed. Returns the TAT to use. */
static int64_t
rebase(_Atomic int64_t *tat, int64_t old, int64_t now)
{
	if (old <= now + KV_RL_AHEAD_MAX)
		return old;
	(void)atomic_compare_exchange_strong(tat, &old, now);
	return atomic_load(tat);
}

/* COST units in nanoseconds of the window at LIMIT per minute, rounded
 * down so that exactly LIMIT units fit in a full bucket. */
static int64_t
units_ns(uint32_t limit, int64_t cost)
{
	__int128 ns = (__int128)cost * KV_RL_WINDOW_NS / limit;

	if (ns > KV_RL_AHEAD_MAX)
		return KV_RL_AHEAD_MAX;
	if (ns < -KV_RL_AHEAD_MAX)
		return -KV_RL_AHEAD_MAX;
	return (int64_t)ns;
}

/* kv_gcra_take, storing COST into *REC (when not NULL) the instant after
 * the CAS that takes it: a kill -9 between the two is a window of a few
 * instructions (docs/ledger.md, "Rate limits and kill -9"). */
static int
gcra_take_into(_Atomic int64_t *tat, uint32_t limit, int64_t cost, int64_t now,
    int64_t *wait_ns, _Atomic uint32_t *rec)
{
	int64_t old, base, next, inc;

	if (limit == 0)
		return 0;
	if (cost > (int64_t)limit) {
		*wait_ns = -1;
		return -1;
	}
	inc = units_ns(limit, cost);
	old = rebase(tat, atomic_load(tat), now);
	for (;;) {
		base = old > now ? old : now;
		if (base > now + KV_RL_AHEAD_MAX) {
			old = rebase(tat, old, now);
			continue;
		}
		next = base + inc;
		if (next - now > KV_RL_WINDOW_NS) {
			*wait_ns = next - KV_RL_WINDOW_NS - now;
			return -1;
		}
		if (atomic_compare_exchange_weak(tat, &old, next)) {
			if (rec != NULL)
				atomic_store(rec, (uint32_t)cost);
			return 0;
		}
	}
}

int
kv_gcra_take(_Atomic int64_t *tat, uint32_t limit, int64_t cost, int64_t now,
    int64_t *wait_ns)
{
	return gcra_take_into(tat, limit, cost, now, wait_ns, NULL);
}

/* A TAT move computed ahead (the division and the clock read), so that
 * applying it is one short CAS loop. */
struct gcra_move {
	int64_t	 inc;		/* ns; 0 = nothing to do */
	int64_t	 now;		/* for an overrun (inc > 0) */
};

static void
gcra_move_prepare(struct gcra_move *mv, uint32_t limit, int64_t cost)
{
	mv->inc = limit == 0 || cost == 0 ? 0 : units_ns(limit, cost);
	mv->now = mv->inc > 0 ? kv_rl_now_ns() : 0;
}

static inline void
gcra_move_apply(_Atomic int64_t *tat, const struct gcra_move *mv)
{
	int64_t old, next;

	if (mv->inc == 0)
		return;
	old = mv->inc > 0 ? rebase(tat, atomic_load(tat), mv->now) : atomic_load(tat);
	do {
		next = old + mv->inc;
		/* An overrun counts from a full bucket at the latest: tokens a
		 * request used in the past cannot be charged to the past. */
		if (mv->inc > 0 && old < mv->now)
			next = mv->now + mv->inc;
		if (mv->inc > 0 && next > mv->now + KV_RL_AHEAD_MAX)
			next = mv->now + KV_RL_AHEAD_MAX;
	} while (!atomic_compare_exchange_weak(tat, &old, next));
}

void
kv_gcra_adjust(_Atomic int64_t *tat, uint32_t limit, int64_t cost)
{
	struct gcra_move mv;

	gcra_move_prepare(&mv, limit, cost);
	gcra_move_apply(tat, &mv);
}

void
kv_gcra_state(int64_t tat, uint32_t limit, int64_t now, int64_t *remaining,
    int64_t *reset_ms)
{
	int64_t ahead = tat > now ? tat - now : 0;
	__int128 r;

	if (ahead > KV_RL_AHEAD_MAX)
		ahead = 0;	/* an older clock's: rebased on the next take */
	r = (__int128)(KV_RL_WINDOW_NS - ahead) * limit / KV_RL_WINDOW_NS;
	*remaining = r < 0 ? 0 : r > limit ? (int64_t)limit : (int64_t)r;
	*reset_ms = (ahead + 999999) / 1000000;
}

static void
fill_view(const struct kv_account *a, uint32_t rpm, uint32_t tpm, int64_t now,
    struct kv_rl_view *v)
{
	v->rpm = rpm;
	v->tpm = tpm;
	v->req_remaining = v->tok_remaining = 0;
	v->req_reset_ms = v->tok_reset_ms = 0;
	if (rpm != 0)
		kv_gcra_state(atomic_load(&a->rpm_tat), rpm, now, &v->req_remaining,
		    &v->req_reset_ms);
	if (tpm != 0)
		kv_gcra_state(atomic_load(&a->tpm_tat), tpm, now, &v->tok_remaining,
		    &v->tok_reset_ms);
}

static int
refuse(const struct kv_account *a, uint32_t rpm, uint32_t tpm, int64_t now,
    int by, int64_t wait_ns, struct kv_rl_view *v)
{
	fill_view(a, rpm, tpm, now, v);
	v->refused_by = by;
	v->retry_after_s = wait_ns < 0 ? -1 : (wait_ns + 999999999) / 1000000000;
	if (v->retry_after_s == 0)
		v->retry_after_s = 1;
	v->tokens = 0;
	return -1;
}

/* Note a lease refusal of TOKENS for the master (the largest one wins). */
static void
lease_need(struct kv_account *a, int64_t tokens)
{
	int64_t cur = atomic_load(&a->rl_need);

	while (cur < tokens + 1 && !atomic_compare_exchange_weak(&a->rl_need, &cur, tokens + 1))
		;
}

/* Take one request (if RPM) and TOKENS from this host's cluster lease.
 * The master lowers a cap before it reads the used words to return the
 * rest, so a cap seen lower after the CAS means undo and retry (as the
 * budget's admission does, shm/ledger.c). Returns 0, or -1 with nothing
 * taken. */
static int
lease_take(struct kv_account *a, uint32_t rpm, int64_t tokens)
{
	int64_t used, res, cap;

	for (;;) {
		if (rpm != 0) {
			used = atomic_load(&a->rl_req_used);
			cap = atomic_load(&a->rl_req_cap);
			if (used + 1 > cap)
				return -1;
			if (!atomic_compare_exchange_strong(&a->rl_req_used, &used, used + 1))
				continue;
			if (atomic_load(&a->rl_req_cap) < cap) {
				atomic_fetch_sub(&a->rl_req_used, 1);
				continue;
			}
		}
		if (tokens == 0)
			return 0;
		/* reserved before used: settlement adds to used first */
		res = atomic_load(&a->rl_tok_reserved);
		used = atomic_load(&a->rl_tok_used);
		cap = atomic_load(&a->rl_tok_cap);
		if (used + res + tokens <= cap &&
		    atomic_compare_exchange_strong(&a->rl_tok_reserved, &res, res + tokens)) {
			if (atomic_load(&a->rl_tok_cap) >= cap)
				return 0;
			atomic_fetch_sub(&a->rl_tok_reserved, tokens);
		}
		if (rpm != 0)
			atomic_fetch_sub(&a->rl_req_used, 1);
		if (used + res + tokens > cap)
			return -1;
	}
}

int
kv_ratelimit_admit(struct kv_worker_slot *w, int resv, struct kv_account *a,
    int64_t tokens, int64_t now, int leased, struct kv_rl_view *v)
{
	uint32_t rpm = atomic_load(&a->rpm), tpm = atomic_load(&a->tpm);
	_Atomic uint32_t *rec;
	int64_t wait;

	v->refused_by = 0;
	v->retry_after_s = 0;
	v->tokens = 0;
	if (tokens < 0)
		tokens = 0;
	if (tpm != 0 && tokens > (int64_t)tpm)
		tokens = tpm;
	if (tpm == 0)
		tokens = 0;
	if (rpm != 0 && kv_gcra_take(&a->rpm_tat, rpm, 1, now, &wait) == -1)
		return refuse(a, rpm, tpm, now, 'r', wait, v);
	/* Recorded the instant after the CAS (gcra_take_into): a worker dying
	 * in between leaks a charge that refills within a minute; recorded
	 * before, the master would refund tokens never taken and let the key
	 * past its limit. */
	rec = resv >= 0 && resv < KV_RESV_PER_WORKER ? &w->resv[resv].tokens : NULL;
	if (tokens > 0 && gcra_take_into(&a->tpm_tat, tpm, tokens, now, &wait, rec) == -1) {
		kv_gcra_adjust(&a->rpm_tat, rpm, -1);	/* all or nothing */
		return refuse(a, rpm, tpm, now, 't', wait, v);
	}
	if (leased && lease_take(a, rpm, tokens) == -1) {
		/* The cluster has room (as last synced) but this host's lease
		 * is short: the master leases more within 100 ms. Record
		 * emptied first, as a settle does. */
		if (rec != NULL && tokens > 0)
			atomic_store(rec, 0);
		kv_gcra_adjust(&a->rpm_tat, rpm, -1);
		kv_gcra_adjust(&a->tpm_tat, tokens > 0 ? tpm : 0, -tokens);
		lease_need(a, tokens);
		return refuse(a, rpm, tpm, now, 'l', 1000000000LL, v);
	}
	v->tokens = tokens;
	fill_view(a, rpm, tpm, now, v);
	return 0;
}

/* The account a reservation belongs to, or NULL. */
static struct kv_account *
resv_account(struct kv_ledger *l, const struct kv_resv *r)
{
	uint32_t idx = atomic_load(&r->account);

	if (idx == 0 || idx > l->hdr->max_keys)
		return NULL;
	return &l->accounts[idx - 1];
}

void
kv_ratelimit_lease_sent(struct kv_ledger *l, struct kv_account *a, int64_t committed)
{
	if (committed <= 0 || !atomic_load(&l->hdr->cluster))
		return;
	atomic_fetch_add(&a->rl_tok_used, committed);
	atomic_fetch_sub(&a->rl_tok_reserved, committed);
}

int64_t
kv_ratelimit_sent(struct kv_worker_slot *w, int resv, int64_t input)
{
	int64_t held;

	if (resv < 0 || resv >= KV_RESV_PER_WORKER || input <= 0)
		return 0;
	held = (int64_t)atomic_load(&w->resv[resv].tokens);
	if (input > held)
		input = held;
	if (input > 0)
		atomic_store(&w->resv[resv].tokens, (uint32_t)(held - input));
	return input;
}

/* The order decides what a kill -9 between the two steps leaves (the
 * master then refunds what the record still holds): the record is
 * emptied first, so the tokens held stay taken and only their adjustment
 * to the real count is lost: an over-count that drains within a window
 * when the request used less than it held, an under-count of at most the
 * overrun when it used more (docs/ledger.md, "Rate limits and kill -9"). */
void
kv_ratelimit_settle(struct kv_ledger *l, struct kv_worker_slot *w, int resv,
    int64_t tokens, int64_t committed)
{
	struct gcra_move mv;
	struct kv_account *a;
	int64_t held;

	if (resv < 0 || resv >= KV_RESV_PER_WORKER)
		return;
	if ((a = resv_account(l, &w->resv[resv])) == NULL)
		return;
	/* Only this worker writes its record (the master only a dead one's),
	 * so the move is computed before the record is emptied and the
	 * window between the two stores is a few instructions. */
	held = (int64_t)atomic_load(&w->resv[resv].tokens);
	if (tokens < 0)
		tokens = 0;
	if (committed < 0)
		committed = 0;
	/* A key whose tpm was off at admission held nothing; it counts from
	 * when its limit is on, like a request admitted before the limit. */
	if (held == 0 && committed == 0 && tokens > 0 && atomic_load(&a->tpm) == 0)
		return;
	gcra_move_prepare(&mv, atomic_load(&a->tpm), tokens - held - committed);
	atomic_store(&w->resv[resv].tokens, 0);
	gcra_move_apply(&a->tpm_tat, &mv);
	if (atomic_load(&l->hdr->cluster)) {
		/* used first, then reserved: a reader over-counts, never under;
		 * the committed part moved to used when it was sent */
		if (tokens > committed)
			atomic_fetch_add(&a->rl_tok_used, tokens - committed);
		atomic_fetch_sub(&a->rl_tok_reserved, held);
	}
}

int64_t
kv_ratelimit_release_worker(struct kv_ledger *l, struct kv_worker_slot *w)
{
	struct kv_account *a;
	int64_t held, total = 0;
	uint32_t i;

	for (i = 0; i < kv_ledger_resv_end(w); i++) {
		if ((a = resv_account(l, &w->resv[i])) == NULL)
			continue;
		held = (int64_t)atomic_exchange(&w->resv[i].tokens, 0);
		if (held == 0)
			continue;
		kv_gcra_adjust(&a->tpm_tat, atomic_load(&a->tpm), -held);
		if (atomic_load(&l->hdr->cluster))
			atomic_fetch_sub(&a->rl_tok_reserved, held);
		total += held;
	}
	return total;
}

/* Each account's lease on this host (see cluster.h, docs/cluster.md): the
 * free lease sized to the demand seen, the cap words lowered before
 * anything goes back, a grant's figures applied, a reset followed, and
 * what admission is bounded by while Redis is down. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/cluster_lease.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "shm/keys.h"
#include "shm/lease.h"
#include "shm/ratelimit.h"

#define DEMAND_SECS	2	/* a lease covers this many seconds of spend */
#define IDLE_SECS	60	/* an unnamed key unused this long returns its lease */
/* A lease grown for a refusal is kept for the retry-after the client was
 * told (1 s, worker/limits.c) plus two syncs, so that the retry finds it:
 * shrunk at the next sync, a client that obeyed never got in (issue 22). */
#define HOLD_MS		(1000 + 2 * SYNC_MS)
#define OPEN_AFTER_MS	2000	/* Redis silent this long: on_redis_down applies */
#define CAP_OPEN	(INT64_MAX / 4)

int64_t
kv_cluster_acct_period(const struct kv_cluster_host *h, struct kv_account *a)
{
	/* a team's own period, or an issued key's; else the config's */
	return kv_period_start(kv_keys_period(a, h->period), atomic_load(&a->period_start));
}

void
kv_cluster_cap_lower(struct kv_account *a, struct acct *s, int64_t v)
{
	s->cap = kv_lease_cap_lower(a, v);
}

void
kv_cluster_follow_local(struct kv_account *a, struct acct *s, int64_t period,
    int64_t spent)
{
	if (period != s->period) {
		struct rlease rl[2];

		/* rate leases do not follow budget periods */
		memcpy(rl, s->rl, sizeof(rl));
		memset(s, 0, sizeof(*s));
		memcpy(s->rl, rl, sizeof(rl));
		s->resets = -1;
		s->period = period;
		s->known_budget = -1;
		kv_lease_base_clear(a);
	} else if (spent < s->last_spent) {
		kv_lease_base_add(a, s->last_spent - spent);
	}
	s->last_spent = spent;
}

/* W, or what a refusal less than HOLD_MS ago grew it to; a refusal
 * (NEED > 0) starts a new hold. */
static int64_t
held(struct acct *s, int64_t now, int64_t w, int64_t need)
{
	if (need > 0) {
		s->hold = w > need ? w : need;
		s->hold_until_ms = now + HOLD_MS;
	} else if (now < s->hold_until_ms && w < s->hold) {
		w = s->hold;
	}
	return w;
}

int64_t
kv_cluster_free_want(struct kv_cluster_host *h, struct kv_account *a, struct acct *s,
    int64_t u, int64_t reserved, int64_t need)
{
	int64_t now = kv_now_ms(), dt = now - s->rate_ms, w;

	if (s->rate_ms != 0 && dt > 0) {
		int64_t r = (u - s->last_u) * 1000 / dt;
		/* Up at once, down with a half-life of about 5 s: traffic that
		 * pauses for a few seconds finds its lease still there. */
		s->rate = r > s->rate ? r : s->rate - s->rate / 16;
	}
	s->rate_ms = now;
	s->last_u = u;
	if (h->stopping)
		return 0;
	if (!(a->flags & KV_ACCOUNT_NAMED) && reserved == 0 && need == 0 && s->rate == 0 &&
	    now >= s->hold_until_ms &&
	    atomic_load(&a->last_used) + IDLE_SECS < (int64_t)time(NULL))
		return 0;
	/* Room for the most the workers had in flight since the last sync:
	 * reservations are often far above what requests end up costing,
	 * so the spend rate alone would not admit a steady concurrency. */
	w = s->rate * DEMAND_SECS;
	if (w < s->peak_reserved)
		w = s->peak_reserved;
	s->peak_reserved = reserved;
	/* Refused for want of lease: the rate lags a new burst, so grow fast. */
	if (need > 0 && w < 4 * s->free)
		w = 4 * s->free;
	if (w < h->c.lease_min_nusd)
		w = h->c.lease_min_nusd;
	if (w > h->c.lease_max_nusd)
		w = h->c.lease_max_nusd;
	w = held(s, now, w, need);
	s->free = w;
	return w > need ? w : need;
}

int64_t
kv_cluster_rl_free(struct kv_cluster_host *h, struct kv_account *a, struct rlease *r,
    int64_t used, int64_t reserved, int64_t need, int64_t least, uint32_t lim)
{
	int64_t now = kv_now_ms(), dt = now - r->rate_ms, w;

	if (r->rate_ms != 0 && dt > 0) {
		int64_t x = (used - r->last_used) * 1000 / dt;

		/* Down fast (half-life one sync): a held rate lease is
		 * headroom the other hosts lack, and a refusal regrows it
		 * within 100 ms. */
		r->rate = x > r->rate ? x : r->rate / 2;
	}
	r->rate_ms = now;
	r->last_used = used;
	if (h->stopping || lim == 0)
		return 0;
	/* A named key keeps LEAST (one request; the largest request seen),
	 * so its first request after a pause is not refused: a lease that is
	 * held costs the others only that much headroom. */
	if (!(a->flags & KV_ACCOUNT_NAMED) && reserved == 0 && need == 0 && r->rate == 0 &&
	    atomic_load(&a->last_used) + IDLE_SECS < (int64_t)time(NULL))
		return 0;
	w = r->rate;
	if (w < r->peak)
		w = r->peak;
	r->peak = reserved;
	if (need > 0 && w < 4 * r->free)
		w = 4 * r->free;
	if (w < least)
		w = least;
	if (w < need)
		w = need;
	/* One host holds at most lease_share percent of the limit unused, so
	 * what a busy host strands for the others stays bounded. */
	if (w > (int64_t)lim * h->c.lease_share / 100)
		w = (int64_t)lim * h->c.lease_share / 100;
	if (w < need)
		w = need;
	if (w < 1)
		w = 1;
	r->free = w;
	return w;
}

void
kv_cluster_rl_cap_lower(struct kv_account *a, enum kv_lease_rate which, struct rlease *r,
    int64_t v)
{
	r->cap = kv_lease_rate_cap_lower(a, which, v);
}

void
kv_cluster_close_acct(struct kv_account *a, struct acct *s)
{
	kv_cluster_cap_lower(a, s, kv_account_spent(a) + atomic_load(&a->reserved_nusd));
	kv_cluster_rl_cap_lower(a, KV_LEASE_REQUESTS, &s->rl[0], atomic_load(&a->rl_req_used));
	kv_cluster_rl_cap_lower(a, KV_LEASE_TOKENS, &s->rl[1],
	    atomic_load(&a->rl_tok_used) + atomic_load(&a->rl_tok_reserved));
}

void
kv_cluster_overdraft(struct kv_cluster_host *h, struct kv_account *a, struct acct *s,
    int64_t u)
{
	char id[13], usd[32];

	s->open = 0;
	if (u <= s->granted)
		return;
	kv_key_id(a->hash, id);
	kv_format_usd(u - s->granted, usd, sizeof(usd));
	kv_log_warnx("KV0757", "key %s spent $%s past its lease while Redis was down "
	    "(on_redis_down = open); Redis has it now", id, usd);
	atomic_fetch_add(&h->l->hdr->counters.cluster_overdraft_nusd_total,
	    (uint64_t)(u - s->granted));
}

void
kv_cluster_rl_apply(struct kv_account *a, enum kv_lease_rate which, struct rlease *r,
    uint32_t lim, int64_t grant, int64_t ahead_us)
{
	int64_t cur = r->cap;

	if (lim == 0)
		return;
	r->granted = grant;
	if (kv_lease_rate_grant(a, which, &cur, grant, kv_rl_now_ns() + ahead_us * 1000))
		r->cap = grant;
}

void
kv_cluster_reset_local(struct kv_account *a, struct acct *s)
{
	char id[13], usd[32];
	int64_t x;

	kv_cluster_cap_lower(a, s, 0);
	x = kv_account_spent_reset(a);
	kv_lease_base_add(a, x);
	s->last_spent = 0;
	kv_key_id(a->hash, id);
	kv_format_usd(x, usd, sizeof(usd));
	kv_log_info("cluster: key %s reset on every host; $%s spent here cleared", id, usd);
}

void
kv_cluster_zero_follow(struct kv_account *a, struct acct *s, int64_t zero)
{
	if (kv_lease_zero_follow(a, zero) == 0)
		return;
	kv_cluster_cap_lower(a, s, 0);	/* closed already: records it */
	s->last_spent = kv_account_spent(a);
}

void
kv_cluster_close_all(struct kv_cluster_host *h)
{
	uint32_t i, max = h->l->hdr->max_keys;

	for (i = 0; i < max; i++) {
		struct kv_account *a = &h->l->accounts[i];
		struct acct *s = &h->acct[i];

		if (!kv_slot_ready(&a->state))
			continue;
		s->open = 0;
		kv_cluster_close_acct(a, s);
	}
}

void
kv_cluster_when_down(struct kv_cluster_host *h, int64_t now)
{
	uint32_t i, max = h->l->hdr->max_keys;
	int down = now - h->last_ok_ms > OPEN_AFTER_MS;

	if (!down)
		return;
	atomic_store(&h->l->hdr->cluster_up, 0);
	if (!h->warned_down && !h->clash) {
		kv_log_warnx("KV0758", "cluster: no lease sync with Redis for %d s: %s",
		    OPEN_AFTER_MS / 1000, h->c.open_when_down ?
		    "admitting against the last known budget (on_redis_down = open)" :
		    "leases run out at their expiry (on_redis_down = closed)");
		h->warned_down = 1;
	}
	for (i = 0; i < max; i++) {
		struct kv_account *a = &h->l->accounts[i];
		struct acct *s = &h->acct[i];

		if (!kv_slot_ready(&a->state))
			continue;
		if (h->c.open_when_down && !h->clash) {
			if (!s->open) {
				s->open = 1;
				/* rate limits: the local buckets alone */
				kv_lease_open(a, CAP_OPEN);
				s->cap = CAP_OPEN;
				s->rl[0].cap = s->rl[1].cap = CAP_OPEN;
			}
		} else if (now >= s->deadline_ms) {
			kv_cluster_close_acct(a, s);
		}
	}
}

/* Rate limits per key: requests and tokens per minute, by GCRA.
 *
 * State, all in the key's account slot (shm/ledger-t.h):
 *   rpm, tpm          the limits per minute (0 = none);
 *   rpm_tat, tpm_tat  each limit's "theoretical arrival time", unix ns.
 * A limit L allows a burst of L and refills continuously at L per minute:
 * the emission interval is T = 60 s / L per unit, and a cost c is admitted
 * when max(TAT, now) + c*T - now <= 60 s, which then becomes the new TAT
 * (one CAS). The time until the bucket is full again is TAT - now; a refused
 * request can pass after exactly max(TAT, now) + c*T - 60 s - now.
 *
 * Tokens are reserved like dollars: the estimate is taken at admission and
 * written into the request's kv_resv (its `tokens` word), then settled to
 * the real count (TAT moved back for a refund, forward for an overrun).
 * A worker's death releases what its kv_resv records still hold.
 *
 * With [cluster] (docs/cluster.md) the words are a local mirror of the
 * key's cluster-wide buckets in Redis, written by the master at each sync:
 * they give the x-ratelimit-* figures and the retry-after of a refusal.
 * The bound across hosts comes from the lease: a request is admitted only
 * within this host's lease of requests and tokens (rl_req_cap, rl_tok_cap),
 * which Redis grants from the cluster-wide bucket. */
#ifndef KV_RATELIMIT_H
#define KV_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/money.h"
#include "shm/ledger.h"

#define KV_RL_WINDOW_NS	60000000000LL	/* limits are per minute */

/* What a response tells the client about a key's limits. */
struct kv_rl_view {
	uint32_t  rpm, tpm;		/* 0: that limit is off */
	int64_t	  req_remaining, tok_remaining;
	int64_t	  req_reset_ms, tok_reset_ms;	/* until the bucket is full */
	int64_t	  retry_after_s;	/* refusals: whole seconds, -1 = never fits */
	int	  refused_by;		/* 0, or 'r' (requests) / 't' (tokens), or
					   'l' (this host's cluster lease is short) */
	int64_t	  tokens;		/* tokens this request reserved */
};

/* The rate limits' clock, unix time in nanoseconds: CLOCK_MONOTONIC plus
 * the offset to the wall clock taken at the anchor, so that a step of the
 * wall clock (either way) while the daemon runs neither locks nor frees a
 * limit; every process forked after the anchor shares it, and it is
 * meaningful after a restart (as the ledger is) up to the steps between. */
int64_t	kv_rl_now_ns(void);

/* Take the anchor now (the master at start, before it forks; any other
 * process anchors at its first kv_rl_now_ns). */
void	kv_rl_clock_anchor(void);

/* One GCRA step on the word TAT for a limit of LIMIT per minute: take COST
 * units at NOW. Returns 0 (taken) or -1 with *wait_ns, the time after which
 * the same cost would pass (-1 when cost > limit: never). A TAT more than
 * two windows ahead (no overrun leaves one there: the clock went back since
 * it was written) is started again from a full bucket. */
int	kv_gcra_take(_Atomic int64_t *tat, uint32_t limit, int64_t cost, int64_t now,
	    int64_t *wait_ns);

/* Move TAT by COST units: back for a refund (cost < 0), forward (not
 * checked against the limit) for an overrun. */
void	kv_gcra_adjust(_Atomic int64_t *tat, uint32_t limit, int64_t cost);

/* Units left at NOW (0..limit) and ms until the bucket is full. */
void	kv_gcra_state(int64_t tat, uint32_t limit, int64_t now, int64_t *remaining,
	    int64_t *reset_ms);

/* Admit one request costing TOKENS on account A, whose budget reservation
 * RESV in worker slot W is already made: takes one request from rpm and
 * TOKENS (capped at tpm, so a request larger than the whole limit waits for
 * a full bucket instead of failing forever) from tpm, recording the tokens
 * in the reservation. All or nothing. Fills V (with the state after this
 * request). With LEASED (a [cluster] host), the request and its tokens
 * must also fit this host's lease; when only the lease is short the
 * refusal is 'l' with a retry-after of 1 s, and the amount is noted in
 * rl_need for the master. Returns 0 admitted, -1 refused (V says by what
 * and when to retry; nothing was taken). A key with no limit is always
 * admitted. */
int	kv_ratelimit_admit(struct kv_worker_slot *w, int resv, struct kv_account *a,
	    int64_t tokens, int64_t now, int leased, struct kv_rl_view *v);

/* The request behind reservation RESV of W reached the provider, which
 * counts its input against its own limit from now on: INPUT of the tokens
 * held (at most all of them) stay taken should the worker die, as the
 * budget keeps kv_ledger_resv_sent's minimum. The record keeps only the
 * rest, so the master's release gives back exactly that. Returns the tokens
 * committed (pass them to kv_ratelimit_settle). Written only by W's own
 * worker; one store, so a kill on either side of it is exact. */
int64_t	kv_ratelimit_sent(struct kv_worker_slot *w, int resv, int64_t input);

/* With [cluster]: COMMITTED tokens (what kv_ratelimit_sent returned) of
 * a request on account A are final, so they move from the lease's
 * reserved word to its used word (a dead worker's refund then leaves
 * them used). */
void	kv_ratelimit_lease_sent(struct kv_ledger *l, struct kv_account *a, int64_t committed);

/* Settle reservation RESV of worker W to the TOKENS really counted, of
 * which COMMITTED were already made final by kv_ratelimit_sent; call it
 * before kv_ledger_settle(), which frees the reservation. */
void	kv_ratelimit_settle(struct kv_ledger *l, struct kv_worker_slot *w, int resv,
	    int64_t tokens, int64_t committed);

/* Refund every token reservation worker slot W still records; the master
 * calls it after reaping the worker, before kv_ledger_release_worker().
 * Returns the tokens released. */
int64_t	kv_ratelimit_release_worker(struct kv_ledger *l, struct kv_worker_slot *w);

#endif

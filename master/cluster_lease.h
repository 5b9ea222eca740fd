/* Each account's lease on this host (cluster_lease.c): what the sync asks
 * for, the cap words lowered before any of it goes back, and a grant's
 * figures applied. Only the cluster's own files include it. */
#ifndef KV_CLUSTER_LEASE_H
#define KV_CLUSTER_LEASE_H

#include <stdint.h>

#include "master/cluster_host.h"
#include "shm/lease.h"

/* The period an account's spend is in, the same on every host: the UTC
 * calendar start (0 without periods), not the local period_start, which
 * without periods is when the account was made here. */
int64_t	kv_cluster_acct_period(const struct kv_cluster_host *h, struct kv_account *a);

/* Lower the cap to at most V (never raise it here). */
void	kv_cluster_cap_lower(struct kv_account *a, struct acct *s, int64_t v);

/* A new period, or a local reset of spent, seen since the last sync. */
void	kv_cluster_follow_local(struct kv_account *a, struct acct *s, int64_t period,
	    int64_t spent);

/* The free lease to hold: DEMAND_SECS of the spend rate, within
 * [lease_min, lease_max], or nothing for an idle unnamed key; never less
 * than the largest request refused for want of lease. */
int64_t	kv_cluster_free_want(struct kv_cluster_host *h, struct kv_account *a, struct acct *s,
	    int64_t u, int64_t reserved, int64_t need);

/* The free lease of a rate limit (LIM per minute) to hold: a second of
 * the use rate, at least the peak in flight and what a worker was just
 * refused (NEED), at least 1 request while the key is in use; nothing
 * for a key unused for IDLE_SECS. A refusal grows it 4 times, as for
 * budgets. */
int64_t	kv_cluster_rl_free(struct kv_cluster_host *h, struct kv_account *a, struct rlease *r,
	    int64_t used, int64_t reserved, int64_t need, int64_t least, uint32_t lim);

/* Lower a rate cap to at most V (never raise it here). */
void	kv_cluster_rl_cap_lower(struct kv_account *a, enum kv_lease_rate which,
	    struct rlease *r, int64_t v);

/* Lower A's caps, its budget's and its rate limits', to what is in use
 * now: nothing new is admitted until a grant raises them. */
void	kv_cluster_close_acct(struct kv_account *a, struct acct *s);

/* Open mode ends with a sync: U, Redis's count of this host's spend,
 * past the grant is logged and counted as overdraft. */
void	kv_cluster_overdraft(struct kv_cluster_host *h, struct kv_account *a, struct acct *s,
	    int64_t u);

/* A rate limit's reply: the cap from the grant (unless the master
 * lowered it meanwhile, see apply), and the local GCRA word set to mirror
 * the cluster-wide bucket (AHEAD_US: how far Redis's TAT, counting what
 * the other hosts hold as used, is ahead of Redis's clock), so headers and
 * retry-after tell what the whole cluster has left. */
void	kv_cluster_rl_apply(struct kv_account *a, enum kv_lease_rate which, struct rlease *r,
	    uint32_t lim, int64_t grant, int64_t ahead_us);

/* The key's spend was reset in Redis (here or on another host): clear
 * it here too. The cap goes first, so no admission sees the cleared spend
 * under the old cap; what is cleared becomes part of the zero point. */
void	kv_cluster_reset_local(struct kv_account *a, struct acct *s);

/* Redis's zero point ZERO for this host is above what resets cleared here
 * (the host was down, or had not synced yet, when another host reset the
 * key): clear the difference here too, so the ledger and Redis count this
 * host's spend from the same point. The cap goes first, as in a reset. */
void	kv_cluster_zero_follow(struct kv_account *a, struct acct *s, int64_t zero);

/* Stop leasing: nothing new is admitted past what is in use. */
void	kv_cluster_close_all(struct kv_cluster_host *h);

/* Redis unheard from since H's last sync, at NOW (monotonic ms):
 * closed: each lease holds to its deadline, then nothing new is admitted.
 * open: past OPEN_AFTER_MS without a sync, admit against the budget as
 * last known (budget minus the other hosts' commitment) alone. */
void	kv_cluster_when_down(struct kv_cluster_host *h, int64_t now);

#endif

/* The cluster lease words of an account (docs/cluster.md): the one place
 * that writes them. The master (master/cluster_lease.c) is their writer, from
 * what Redis granted; kvctl and the status service only ask for a reset
 * across hosts. Workers admit against them in kv_ledger_reserve and the
 * rate-limit takes (shm/ratelimit.c), which only read the caps and record
 * what they were refused.
 *
 * The rule every cap writer keeps: a cap is lowered here (never raised)
 * before anything is returned to Redis, and raised only by a CAS from the
 * value the master last stored, so an admission that saw an older cap
 * undoes itself (see admit() in shm/ledger.c). */
#ifndef KV_LEASE_H
#define KV_LEASE_H

#include <stdint.h>

#include "shm/ledger-t.h"

/* The rate limits of a key a lease is for. */
enum kv_lease_rate { KV_LEASE_REQUESTS, KV_LEASE_TOKENS };

/* Lower A's budget cap to at most V (never raise it). Returns the cap
 * now: min(the old cap, V). */
int64_t	kv_lease_cap_lower(struct kv_account *a, int64_t v);

/* Raise (or set) A's budget cap to V from *EXPECT, the value the caller
 * last stored. Returns 1 when set; 0 when the cap moved meanwhile (a
 * reset or a period roll closed it): *EXPECT then holds the cap now. */
int	kv_lease_cap_grant(struct kv_account *a, int64_t *expect, int64_t v);

/* The cap of A's rate limit R now. */
int64_t	kv_lease_rate_cap(struct kv_account *a, enum kv_lease_rate r);

/* Lower the cap of A's rate limit R to at most V; returns the cap now. */
int64_t	kv_lease_rate_cap_lower(struct kv_account *a, enum kv_lease_rate r, int64_t v);

/* Set the cap of A's rate limit R to V from *EXPECT, as kv_lease_cap_grant,
 * and that limit's local GCRA word to TAT_NS (mirroring the cluster-wide
 * bucket, whatever the CAS did). */
int	kv_lease_rate_grant(struct kv_account *a, enum kv_lease_rate r, int64_t *expect,
	    int64_t v, int64_t tat_ns);

/* Redis unreachable under on_redis_down = open: every cap of A is lifted,
 * the budget and the local rate buckets alone bound admission. OPEN is the
 * cap value meaning "none". */
void	kv_lease_open(struct kv_account *a, int64_t open);

/* What the workers were refused for want of lease since the last call:
 * the largest amount (nano-dollars), and for the rate limits tokens + 1
 * (0: nothing). Each read clears it. */
int64_t	kv_lease_need_take(struct kv_account *a);
int64_t	kv_lease_rate_need_take(struct kv_account *a);

/* After a sync: what the other hosts have committed, all hosts' settled
 * spend and when this host's lease expires (unix ms), for admission's 402
 * test and for display. */
void	kv_lease_view_set(struct kv_account *a, int64_t others, int64_t cluster_spent,
	    int64_t expires_ms);

/* Adopt Redis's budget V for A, by a CAS from *EXPECT (the local budget
 * the sync sent), so a kvctl budget made meanwhile is not lost: it goes
 * to Redis at the next sync. Returns 1 when adopted. */
int	kv_lease_budget_adopt(struct kv_account *a, int64_t *expect, int64_t v);

/* This host's zero point in Redis: spend cleared here by resets, which
 * Redis still counts. kv_lease_base_add adds X (>= 0); kv_lease_base_clear
 * zeroes it for a new period. */
void	kv_lease_base_add(struct kv_account *a, int64_t x);
void	kv_lease_base_clear(struct kv_account *a);

/* Redis's zero point for this host, ZERO, is above the local one (another
 * host reset the key while this one was away): clear the difference from
 * A's spend too, cap first (closed to 0), so both count from the same
 * point. Returns what was cleared (0 for nothing). */
int64_t	kv_lease_zero_follow(struct kv_account *a, int64_t zero);

/* A reset of A's spend on every host: kvctl and the status service ask
 * (kv_lease_reset_ask), and kvctl may withdraw an unconfirmed one; the
 * master sends it in its next sync and clears the flag once Redis has done
 * it (kv_lease_reset_done). kv_lease_reset_asked: non-zero while pending. */
void	kv_lease_reset_ask(struct kv_account *a);
void	kv_lease_reset_done(struct kv_account *a);
int	kv_lease_reset_asked(const struct kv_account *a);

#endif

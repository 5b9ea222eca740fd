/* The master's repair of the ledger: counters recomputed from the
 * reservations actually recorded, half-claimed slots turned into
 * tombstones, dead workers' slots released. Run at start-up (no other
 * daemon process can exist: the master holds the ledger lock) and after
 * every reaped worker (live workers are quiesced first). */
#ifndef KV_REPAIR_H
#define KV_REPAIR_H

#include <stdint.h>

#include "shm/ledger.h"

struct kv_repair_report {
	int	 released;	/* reservations of dead workers dropped */
	int	 reserved_fixed;	/* accounts whose reserved_nusd was wrong */
	int	 claims_fixed;	/* half-claimed account or model slots */
	int	 skipped;	/* accounts changed under the repair: next time */
	int	 rolls_fixed;	/* period rolls a dead worker left half-way, finished */
	int	 tokens_fixed;	/* accounts whose rl_tok_reserved was wrong (cluster) */
	int	 used_fixed;	/* 1: accounts_used recounted (account and link slots) */
};

/* Ask every live worker (bit i of live_mask = worker slot i) to pause its
 * ledger operations, and wait up to wait_ms for each to be outside one.
 * Returns 0 when quiet, -1 (quiesce lifted again) when one stayed busy. */
int	kv_ledger_quiesce(struct kv_ledger *l, uint64_t live_mask, int wait_ms);

/* Let ledger operations go on. */
void	kv_ledger_unquiesce(struct kv_ledger *l);

/* With the ledger quiesced (or no other writer alive): release every
 * reservation of the worker slots in dead_mask and clear those slots'
 * gauges; tombstone slots whose claimer died before filling them; set each
 * account's reserved_nusd to the sum of the reservations still recorded
 * (by CAS from the value read, so a change made by a worker that gave up
 * waiting is left for the next repair); finish period rolls a dead worker
 * left half-way (kv_ledger_roll_finish); with cluster leases, set each
 * account's rl_tok_reserved to the tokens its records hold; recount the
 * header's accounts_used (slots READY or LINK). Fills *rep. Returns 0, or
 * -1 when out of memory (nothing changed). */
int	kv_ledger_repair(struct kv_ledger *l, uint64_t dead_mask,
	    struct kv_repair_report *rep);

/* With the ledger quiesced: finish every roll a dead worker left half-way
 * (kv_ledger_roll_finish), and start a new budget period on every account
 * whose period_start is before the one containing NOW. Returns the number
 * of accounts rolled or finished. */
int	kv_ledger_roll_all(struct kv_ledger *l, enum kv_period period, int64_t now);

/* Retire account A: zeroed, state DEAD, tag KV_TAG_DEAD (lookups skip
 * it, a new claim may reuse it); an issued account's links (its later
 * secrets) go with it. Only with every writer quiesced, or no daemon
 * running. Returns the number of links retired with it. */
int	kv_account_retire(struct kv_ledger *l, struct kv_account *a);

/* What kv_ledger_reclaim retired. */
struct kv_reclaim_report {
	int	 forgotten;	/* accounts marked by kvctl forget */
	int	 strangers;	/* unknown keys' accounts that never cost anything */
	int	 links;		/* rotated-out secrets, and links of forgotten accounts */
};

/* How many slots kv_ledger_reclaim would retire now (no writes). */
int	kv_ledger_reclaimable(const struct kv_ledger *l, int64_t now, int64_t idle_s,
	    int64_t grace_s);

/* With the ledger quiesced: retire accounts marked KV_AF_FORGET (once
 * nothing is reserved on them) with their links; strangers' accounts that
 * were never charged, never answered 2xx, are not in the config, have no
 * override and were idle idle_s seconds (none when idle_s < 0); and the
 * link slots kv_keys_link_reclaimable finds (rotated out grace_s seconds
 * ago). Counts into *rep. */
void	kv_ledger_reclaim(struct kv_ledger *l, int64_t now, int64_t idle_s,
	    int64_t grace_s, struct kv_reclaim_report *rep);

#endif

/* The master's upkeep of the ledger (master_ledger.c). Only the master's
 * own files include it. */
#ifndef KV_MASTER_LEDGER_H
#define KV_MASTER_LEDGER_H

#include "master/master_state.h"

/* Dead workers' slots, and every account's reserved_nusd, made exact with
 * the live workers paused between ledger operations. A worker that stays
 * inside one (stopped by a debugger?) defers the recount to the next tick;
 * the dead slots are then released without it. */
void	kv_master_repair_now(struct master *m);

/* Start a new budget period on idle accounts too, and exactly: with the
 * workers paused, as the repair does. Checked every tick, cheap when no
 * account is due. */
void	kv_master_roll_periods(struct master *m);

/* Strangers' accounts that never cost anything give their slots back:
 * at once (idle 1 s) when a worker found the table full, after 30 s idle
 * once it is 90 % used; kvctl forget marks accounts for here too, and
 * rotated-out secrets give back their link slots after a grace period
 * (shm/keys.h), at once when the table is full or their key is revoked.
 * A worker's call is honoured for RECLAIM_RETRY_S: the junk that filled
 * the table was touched this second, so the first tick may find none idle
 * enough, and a quiesce may time out under load. */
void	kv_master_reclaim_accounts(struct master *m);

/* The lock is ours, so no process of an earlier daemon is alive (they
 * all shared its descriptor): every worker slot is an orphan, every
 * half-made claim dead, and the recorded reservations the whole truth. */
void	kv_master_startup_repair(struct master *m);

/* max_keys raised in the config, or tombstones to drop: rebuild the file
 * (every account's history kept). A smaller max_keys is refused: the
 * accounts might not fit, and dropping some is not ours to choose.
 * Returns 0, or -1 (logged). */
int	kv_master_resize_ledger(struct master *m);

#endif

/* Upstream targets in the ledger: one slot per "NAME/HOST:PORT", shared by
 * every worker (passive health: consecutive failures, ejection with a
 * cool-down that grows with each ejection in a row, cooling for an
 * upstream's retry-after), and in-flight requests counted per worker so the
 * master's release of a dead worker drops its share. */
#ifndef KV_TARGETS_H
#define KV_TARGETS_H

#include <stddef.h>
#include <stdint.h>

#include "shm/ledger.h"

/* "NAME/HOST:PORT" of a target, the name of its slot, into BUF. */
void	kv_target_label(char *buf, size_t len, const char *name, const char *host,
	    const char *port);

/* The slot named NAME, claimed on first use; -1 when the table is full. */
int	kv_target_slot(struct kv_ledger *l, const char *name);

/* Requests in flight to target T, summed over the workers. */
uint64_t kv_target_inflight(const struct kv_ledger *l, int t);

/* One more (delta 1) or one fewer (-1) request of worker W (its slot in
 * L) in flight to T. Called only by W's own process: the single writer
 * of that counter (a plain store, not a locked add). */
void	kv_target_count(struct kv_ledger *l, const struct kv_worker_slot *w, int t, int delta);

/* Is T ejected, cooling at NOW (kv_now_ms: CLOCK_MONOTONIC, the same in
 * every process of the host), or marked down by its active
 * health check? */
int	kv_target_down(const struct kv_ledger *l, int t, int64_t now_ms);

/* An answer came (the target works): its consecutive failures and
 * ejections in a row start again from 0. */
void	kv_target_ok(struct kv_ledger *l, int t);

/* A failure. After EJECT_AFTER in a row the target is ejected for
 * eject_secs x (ejections in a row) seconds, unless MAY_EJECT is 0 (it is
 * the last usable target of its upstream). Returns 1 when this ejected it. */
int	kv_target_fail(struct kv_ledger *l, int t, int64_t now_ms, int eject_after,
	    int eject_secs, int may_eject);

/* The target asked to be left alone for SECS (a retry-after on 429/503). */
void	kv_target_cool(struct kv_ledger *l, int t, int64_t now_ms, int secs);

/* The master's active check of T ended at NOW_MS with HEALTH (KV_HEALTH_*).
 * Returns the word it replaced. */
uint32_t kv_target_set_health(struct kv_ledger *l, int t, uint32_t health, int64_t now_ms);

/* At the master's start: no ejection or cool-down of an earlier run
 * stands (their times are on a clock a reboot restarts), and no health
 * mark until this run's checks say so. */
void	kv_targets_reset(struct kv_ledger *l);

/* Zero worker W's in-flight counts (it is gone). */
void	kv_targets_release_worker(struct kv_ledger *l, const struct kv_worker_slot *w);

#endif

/* Rebuild the ledger with room for more keys (or just without its
 * tombstones), keeping every account's history, the per-model totals and
 * the global counters. Only at master start-up: the caller holds the
 * ledger lock and no worker runs. */
#ifndef KV_GROW_H
#define KV_GROW_H

#include <stddef.h>
#include <stdint.h>

#include "shm/ledger.h"

/* Number of tombstoned account slots. */
uint32_t kv_ledger_tombstones(const struct kv_ledger *l);

/* Write a new ledger for max_keys (>= the live accounts) next to PATH,
 * copy L into it, lock it and rename it over PATH; then L is the new one
 * (the old mapping is closed). On failure L is unchanged and PATH too.
 * Returns 0, or -1 with a message in err. */
int	kv_ledger_grow(struct kv_ledger *l, const char *path, uint32_t max_keys,
	    char *err, size_t errlen);

#endif

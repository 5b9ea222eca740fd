/* The master's start-up (master_start.c). Only the master's own files
 * include it. */
#ifndef KV_MASTER_START_H
#define KV_MASTER_START_H

#include "master/master_state.h"

/* Make M ready to serve M->cf: its ledger open, locked, repaired and
 * sized; its loop, cluster leasing, listener, status service and health
 * probes; then run as the configured user. Signals and workers are the
 * caller's. Returns 0, or the process exit code: 1 on a failure to
 * start, 2 when the config cannot be served (logged). */
int	kv_master_start(struct master *m);

#endif

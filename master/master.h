/* The master process: ledger, listener, worker supervision, reload,
 * shutdown, ledger sync and the status service. Single-threaded. */
#ifndef KV_MASTER_H
#define KV_MASTER_H

#include "common/config.h"

/* Run the gateway with config cf (heap-allocated; the master takes it).
 * Returns the process exit code: 0 after a clean stop, 1 on a start-up
 * failure, 2 when the config cannot be served (bad user, ledger mismatch). */
int	kv_master_run(struct kv_config *cf);

#endif

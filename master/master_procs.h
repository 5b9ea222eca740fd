/* The master's process table (master_procs.c). Only the master's own
 * files include it. */
#ifndef KV_MASTER_PROCS_H
#define KV_MASTER_PROCS_H

#include <stdint.h>

#include "master/master_state.h"

/* Fork workers of the current generation until it has M->wanted, unless
 * stopping or in a crash back-off; a fork that fails (logged) ends it
 * until the next call. */
void	kv_master_top_up(struct master *m);

/* The ledger slots of the workers alive: bit i for slot i. */
uint64_t kv_master_live_mask(const struct master *m);

/* Send SIG to every worker (OLD_ONLY: every worker not of the current
 * generation), by pid, and mark each exiting: none is respawned. */
void	kv_master_signal_workers(struct master *m, int sig, int old_only);

/* SIGUSR1 (logrotate): each worker reopens the request log itself. */
void	kv_master_forward_reopen(struct master *m);

/* How many workers are alive, of any generation. */
int	kv_master_live_procs(const struct master *m);

#endif

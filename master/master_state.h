/* The master's state, shared by the files that do its jobs: master.c (the
 * loop: signals, reaping, the tick, the stop), master_start.c, the
 * reload's master_reload.c, the process table's master_procs.c, the
 * ledger upkeep's master_ledger.c and master_config.c. Types only; no
 * other file includes it. */
#ifndef KV_MASTER_STATE_H
#define KV_MASTER_STATE_H

#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "master/cpu_pin.h"
#include "master/ledger_watch.h"
#include "master/loop.h"
#include "shm/ledger.h"

struct kv_status;
struct kv_alerts_state;
struct kv_cluster_host;
struct kv_health;

struct proc {
	pid_t		 pid;
	uint32_t	 generation;
	int64_t		 started_ms;
	int		 exiting;	/* told to drain: not respawned */
	int		 cpu;		/* pinned to; -1: not */
};

struct master {
	struct kv_config	*cf;
	struct kv_ledger	 ledger;
	int			 lfd;
	struct kv_status	*status;
	struct kv_alerts_state	*alerts;	/* [alerts]: what each key was told */
	struct kv_cluster_host	*cluster;	/* NULL without [cluster] */
	struct kv_health	*health;	/* NULL without a health_check */
	const struct kv_config	*health_cf;	/* the config its probes were made from */
	struct proc		 procs[KV_WORKER_SLOTS];	/* index = ledger slot */
	uint32_t		 generation;	/* the newest: spawned and topped up */
	uint32_t		 serving;	/* the generation trusted to serve */
	uint32_t		 last_gen;	/* generation numbers are never reused */
	struct kv_config	*prev_cf;	/* serving's config while a reload is pending */
	int			 prev_lfd;	/* serving's listener, when the reload moved it */
	int			 wanted;	/* workers of the current generation */
	int			 crashes;
	int64_t			 respawn_at_ms;
	int			 stopping;
	int64_t			 stop_deadline_ms;
	int			 exit_code;
	uint64_t		 dead_mask;	/* reaped slots awaiting the repair */
	struct kv_ledger_watch	 watch;
	int			 recount;	/* recompute reserved at the next chance */
	int64_t			 reclaim_until;	/* a worker found the table full: retry till then */
	struct kv_mloop		*lp;		/* every fd and deadline the master waits on */
	struct kv_mloop_io	 sig_io;	/* the signal self-pipe */
	struct kv_mloop_timer	 tick_timer;
	int64_t			 last_sync;	/* the ledger's last msync */
	struct kv_cpu_plan	 cpus;		/* worker_cpu_affinity's CPUs */
	int			 sigpipe[2];	/* the signal self-pipe: workers close it */
};

#endif

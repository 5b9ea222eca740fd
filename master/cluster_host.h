/* The state of one host's cluster leasing, shared by the files that do
 * its jobs: cluster.c (start, stop, the loop), cluster_sync.c (one sync
 * with Redis) and cluster_lease.c (each account's lease). Types and the
 * timings they share only; no other file includes it. */
#ifndef KV_CLUSTER_HOST_H
#define KV_CLUSTER_HOST_H

#include <stdint.h>

#include "common/config.h"
#include "master/cluster_keys.h"
#include "master/loop.h"
#include "master/redis.h"
#include "shm/ledger.h"

#define SYNC_MS		500	/* settled spend reaches Redis within a second */
#define BATCH		128	/* accounts per script call */

/* This host's lease of one rate limit of a key (requests or tokens). */
struct rlease {
	int64_t		 granted;	/* cumulative grant, from the last reply */
	int64_t		 cap;		/* what we last stored in the cap word */
	int64_t		 last_used;	/* used at the last sync */
	int64_t		 rate;		/* units per second, decaying */
	int64_t		 rate_ms;
	int64_t		 free;		/* the free lease asked for last time */
	int64_t		 peak;		/* most in flight since the last sync */
	int64_t		 big;		/* the largest request refused for want of it */
};

struct acct {
	int64_t		 period;	/* period_start the figures below are for */
	int64_t		 last_spent;	/* local spent at the last sync */
	int64_t		 granted;	/* g, from the last reply */
	int64_t		 cap;		/* what we last stored in lease_cap_nusd */
	int64_t		 known_budget;	/* budget agreed with Redis; -1 before */
	int64_t		 rate;		/* spend per second, decaying */
	int64_t		 deadline_ms;	/* monotonic: the lease holds until here */
	int64_t		 last_u;
	int64_t		 rate_ms;
	int64_t		 free;		/* the free lease asked for last time */
	int64_t		 peak_reserved;	/* most in flight seen since the last sync */
	struct rlease	 rl[2];		/* requests, tokens */
	int64_t		 resets;	/* the key's reset count in Redis; -1 before */
	int64_t		 hold;		/* free lease grown for a refusal ... */
	int64_t		 hold_until_ms;	/* ... kept until here (HOLD_MS) */
	int		 inflight;
	int		 open;		/* admitting past the lease (open mode) */
	int		 refused;	/* KV0777 logged, until a reply applies */
};

struct batch {
	struct kv_cluster_host	*h;
	size_t			 n;
	int64_t			 sent_ms;
	uint32_t		 idx[BATCH];
	int64_t			 period[BATCH];
	int64_t			 budget[BATCH];	/* local budget read when sent */
	unsigned char		 reset[BATCH];	/* this sync resets the key's spend */
	int			 final;
};

struct kv_cluster_host {
	struct kv_cluster	 c;
	enum kv_period		 period;
	struct kv_ledger	*l;
	struct kv_redis		*redis;
	struct kv_cluster_keys	*keys;		/* issued keys shared: cluster_keys.c */
	struct acct		*acct;
	char			 sha[41];	/* of the loaded script; "" before */
	char			 inc[32];	/* this ledger's incarnation */
	char			 me[128];	/* this instance, as kv:hb:H holds it */
	uint64_t		 prev_instance;	/* the ledger's last run before this one */
	int			 clash;		/* another live instance holds host_id */
	int64_t			 clash_since_ms;
	int			 clash_warned;	/* KV0765 or KV0766 logged */
	int			 held;		/* a sync succeeded: the host id was ours */
	int64_t			 next_sync_ms;
	int64_t			 next_need_ms;	/* next look for refusals */
	int64_t			 last_ok_ms;
	int			 inflight;	/* batches awaiting a reply */
	int			 kick_fd;	/* eventfd: a worker parked a request */
	int			 kicked;	/* ... while a batch was in flight */
	int64_t			 last_sync_ms;
	int			 stopping;
	int			 warned_down;
	int			 persist_warned;	/* KV0760/KV0761 logged */
	int			 acl_warned;	/* KV0775 logged */
	int64_t			 persist_recheck_ms;	/* 0: no recheck due */
	struct kv_mloop		*lp;
	struct kv_mloop_io	 redis_io;
	struct kv_mloop_io	 kick_io;
	struct kv_mloop_timer	 timer;	/* the next sync, look or Redis deadline */
};

#endif

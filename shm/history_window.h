/* A report's window over the ledger's spend history (kvctl report --since
 * --until, issue 36): the whole buckets of the per-account rings
 * (shm/history.h: 60 minutes, 24 hours) that cover it, and an account's
 * spend in them. Every account's rings are filled by the same sampler
 * from its spent_nusd, so a node's window and its children's are read
 * from the same samples (docs/ledger.md "Report windows"). */
#ifndef KV_HISTORY_WINDOW_H
#define KV_HISTORY_WINDOW_H

#include <stdint.h>

#include "shm/ledger.h"

struct kv_hist_window {
	int64_t	  from, to;	/* seconds: [from, to), whole buckets */
	int	  step;		/* 60 (minute buckets) or 3600 (hour buckets) */
};

/* The buckets covering [SINCE, UNTIL) (unix seconds) as of NOW: minutes
 * when SINCE falls in the last 60 minutes (this one included), else hours
 * when it falls in the last 24 hours; SINCE rounded down and UNTIL up to
 * their bucket, UNTIL at most the end of the current one. Returns 0, -1
 * when SINCE is older than the history (24 hours), -2 when UNTIL is not
 * after SINCE or SINCE is in the future. */
int	kv_history_window(int64_t now, int64_t since, int64_t until, struct kv_hist_window *w);

/* What A spent in W's buckets as of NOW (the current bucket holds what
 * the master's sampler, once a second, has seen so far). */
int64_t	kv_history_window_spent(const struct kv_ledger *l, const struct kv_account *a,
	    int64_t now, const struct kv_hist_window *w);

#endif

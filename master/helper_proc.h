/* A short-lived helper process of the master: forked to do something that
 * may block (HTTP to a provider), it writes one fixed-size answer on a pipe
 * and exits; the master's loop watches the pipe and calls back once the
 * answer is whole or the helper is gone. The helper keeps nothing of the
 * master's open (the ledger is unmapped: its mapping holds the daemon's
 * flock; every descriptor past the pipe is closed) and is killed by an
 * alarm after max_s seconds. Used by the JWKS refresh (jwks_refresh.c). */
#ifndef KV_HELPER_PROC_H
#define KV_HELPER_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "master/loop.h"
#include "shm/ledger.h"

/* In the helper: fill ANS (SIZE bytes, zeroed) for the master. */
typedef void kv_helper_run_fn(void *arg, void *ans, size_t size);
/* In the master: the answer is in ANS when WHOLE, else the helper failed
 * (WHY says how). */
typedef void kv_helper_done_fn(void *arg, int whole, const char *why);

struct kv_helper {
	struct kv_mloop		*lp;
	const struct kv_ledger	*ledger;
	struct kv_mloop_io	 io;
	int			 fd;		/* the running helper's pipe; -1 */
	void			*ans;
	size_t			 size, got;
	int			 max_s;
	kv_helper_run_fn	*run;
	kv_helper_done_fn	*done;
	void			*arg;
};

void	kv_helper_init(struct kv_helper *h, struct kv_mloop *lp, const struct kv_ledger *l,
	    void *ans, size_t size, int max_s, kv_helper_run_fn *run, kv_helper_done_fn *done,
	    void *arg);

/* Fork the helper unless one runs. 0 (started, or running), or -1 with
 * DONE already called (no pipe, no fork, no watch). */
int	kv_helper_start(struct kv_helper *h);

int	kv_helper_running(const struct kv_helper *h);

/* In a forked worker: close the master's end of a running helper's pipe. */
void	kv_helper_forget(struct kv_helper *h);

#endif

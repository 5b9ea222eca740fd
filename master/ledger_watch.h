/* The master watches the ledger file every second: truncated, deleted or
 * replaced under the running daemon. Each is logged once, with what to do,
 * and the daemon stops cleanly; no spend still in the mapping is lost
 * where it can be saved. */
#ifndef KV_LEDGER_WATCH_H
#define KV_LEDGER_WATCH_H

#include <stdint.h>
#include <sys/types.h>

#include "shm/ledger.h"

enum kv_ledger_fault {
	KV_LF_NONE = 0,
	KV_LF_TRUNCATED,	/* file shorter than the layout: pages lost */
	KV_LF_DELETED,		/* no file at the path any more */
	KV_LF_REPLACED,		/* another file at the path */
};

struct kv_ledger_watch {
	char			 path[4096];
	dev_t			 dev;
	ino_t			 ino;
	struct kv_ledger_header	 layout;	/* the header as it was at start */
	enum kv_ledger_fault	 fault;
	int			 copy_fd;	/* the copy written back (deleted) */
};

/* Remember which file L maps (after the lock is taken). */
void	kv_ledger_watch_init(struct kv_ledger_watch *w, const struct kv_ledger *l,
	    const char *path);

/* Check the file. Returns the fault seen for the first time (logged, and
 * acted on: a truncated file is extended back and its header restored so
 * no process faults on it; a deleted one is written back at once and
 * locked), else KV_LF_NONE. Once a fault is found, later calls return
 * KV_LF_NONE and do nothing. */
enum kv_ledger_fault kv_ledger_watch_check(struct kv_ledger_watch *w, struct kv_ledger *l);

/* At exit, after the workers are gone: write the final state where the
 * fault needs it (the written-back file, or PATH.replaced.PID). */
void	kv_ledger_watch_finish(struct kv_ledger_watch *w, struct kv_ledger *l);

#endif

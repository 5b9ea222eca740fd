/* One daemon per ledger: the master takes an exclusive flock(2) on the
 * ledger's open file description. Forked workers share that description,
 * so the lock stays held while any process of the daemon is alive, and a
 * reload (no exec, no reopen) keeps it. kvctl never takes it. */
#ifndef KV_LOCK_H
#define KV_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "shm/ledger.h"

/* Take the lock on l->fd without waiting, after checking that PATH still
 * names the same file (else it was replaced: reopen). On success records
 * this master (pid, start time, host, a fresh random instance id) in the
 * header. Returns 0; -1 with a message naming the holder in err when
 * another daemon holds it (errno EWOULDBLOCK) or on error. */
int	kv_ledger_lock(struct kv_ledger *l, const char *path, char *err, size_t errlen);

/* Try the lock on a separate descriptor of PATH and drop it again: 1 when
 * a daemon holds it, 0 when free, -1 on error. For kvctl's offline-only
 * commands. */
int	kv_ledger_locked(const char *path);

/* Start time of process PID in clock ticks since boot (field 22 of
 * /proc/PID/stat), or 0 when unknown. */
uint64_t kv_pid_start(int pid);

#endif

/* Appending to the audit log (common/audit.h's lines), shared by the
 * master's admin API and kvctl's writing commands, which may run at once:
 * each holds an exclusive flock(2) on the file while it reads the last
 * line's hash and appends its own, so lines never interleave and the chain
 * never forks. The file is opened O_APPEND for each write (a log moved
 * aside is followed by a new one) and every line is fsync(2)ed before the
 * lock is let go. */
#ifndef KV_AUDIT_LOG_H
#define KV_AUDIT_LOG_H

#include <stddef.h>

#include "common/audit.h"
#include "common/config.h"

#define KV_AUDIT_PATH_MAX	4200
#define KV_AUDIT_FILE		"audit.jsonl"	/* the default, beside the ledger */
#define KV_AUDIT_LOCK_MS	3000		/* how long a writer waits for the lock */

/* The audit log CF names into OUT: [server] audit_log, else audit.jsonl
 * beside the ledger. Returns 0, 1 when it is off (OUT ""), -1 when the
 * path does not fit. */
int	kv_audit_path(const struct kv_config *cf, char *out, size_t len);

/* audit.jsonl beside the ledger file LEDGER (kvctl -l). 0 or -1. */
int	kv_audit_path_beside(const char *ledger, char *out, size_t len);

/* One write's hold on the log. */
struct kv_audit_log {
	int	 fd;			/* -1 while not held (or off) */
	char	 path[KV_AUDIT_PATH_MAX];	/* "": off */
	char	 prev[KV_AUDIT_HEX];	/* the last line's digest, or the genesis */
	int	 empty;			/* the file had no line */
};

/* Take the log at PATH ("" or NULL: off, nothing to do): open it
 * (O_APPEND, created 0640), lock it (waiting up to KV_AUDIT_LOCK_MS for
 * another writer) and read the last line's digest. Returns 0, or -1 with
 * why in ERR (no lock held): cannot open or lock, the file ends inside a
 * line, or its last line is longer than any kilovolt writes. A caller that
 * gets -1 makes no change. */
int	kv_audit_begin(struct kv_audit_log *lg, const char *path, char *err,
	    size_t errlen);

/* Append R (its time set now when 0) chained on, fsync, and let go of the
 * log. Returns 0 (also when off), or -1 with why in ERR: nothing of the
 * line stays in the file (a short write is cut back). */
int	kv_audit_commit(struct kv_audit_log *lg, struct kv_audit_rec *r, char *err,
	    size_t errlen);

/* Let go of the log without writing (a begin that only checked). */
void	kv_audit_end(struct kv_audit_log *lg);

#endif

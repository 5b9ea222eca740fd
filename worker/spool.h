/* The request-body spool: bodies past a small in-memory window are written
 * to an unlinked file while they are scanned, and sent upstream from it, so
 * a worker's memory does not grow with request size (DESIGN decision 9). */
#ifndef KV_SPOOL_H
#define KV_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"

/* The spool directory: [server] spool_dir, else "spool" beside the ledger.
 * Returns 0, or -1 when the path does not fit. */
int	kv_spool_dir(const struct kv_config *cf, char *out, size_t len);

/* At start, as the user the workers run as: create the directory (0700)
 * when missing, warn when it is on tmpfs (spooled bodies would count as
 * memory) or not writable. Logs; never fails the start. */
void	kv_spool_prepare(const struct kv_config *cf);

/* A new empty spool file nobody else can open: O_TMPFILE, else a mkstemp
 * file unlinked at once. Returns the fd, or -1 with errno set. */
int	kv_spool_open(const struct kv_config *cf);

/* Append all of buf[0..len) at the file's end. 0, or -1 with errno. */
int	kv_spool_append(int fd, const char *buf, size_t len);

/* Read up to len bytes at off (short only at the end). -1 with errno. */
ssize_t	kv_spool_pread(int fd, char *buf, size_t len, int64_t off);

#endif

/* A SIGBUS on the ledger mapping means the file lost the pages behind it
 * (truncated by someone). Die with one clear line and exit status
 * KV_EXIT_LEDGER instead of a bare "killed by signal 7"; the master then
 * checks the file at once (master/ledger_watch.c). */
#ifndef KV_GUARD_H
#define KV_GUARD_H

#include "shm/ledger.h"

#define KV_EXIT_LEDGER	3	/* exit code: the ledger file lost its pages */

/* Install the handler for L's mapping (call once per process, after the
 * mapping exists). A SIGBUS elsewhere keeps its default action. */
int	kv_ledger_guard(const struct kv_ledger *l);

#endif

/* A ledger's cluster incarnation: the id under which Redis counts this
 * ledger's grants and spend (i:H, li:H; docs/cluster.md). Two ledgers must
 * never share one, or two hosts would admit against one grant; one ledger
 * keeps its own across restarts, so a restart is not a new incarnation. */
#ifndef KV_INCARNATION_H
#define KV_INCARNATION_H

#include <stdint.h>

#include "shm/ledger.h"

/* The incarnation of L, the locked ledger, used under HOST_ID. A random
 * 64-bit id (getrandom) is drawn and stored in the header when there is
 * none (a new ledger), or when the ledger is a copy: the file's device and
 * inode, or the host_id, differ from those recorded when the id was drawn.
 * *DRAWN is set to 1 when a new id was drawn, else 0. Call from the
 * master before it starts leasing. Returns the id (never 0), or 0 with
 * errno set when the file cannot be identified (fstat) or getrandom fails. */
uint64_t	kv_ledger_incarnation(struct kv_ledger *l, const char *host_id, int *drawn);

/* L's contents moved to a new file that replaces the old one (a grow):
 * record the new file's device and inode, so it keeps its incarnation.
 * Returns 0, or -1 with errno set (fstat). */
int		kv_ledger_incarnation_moved(struct kv_ledger *l);

#endif

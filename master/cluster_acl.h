/* The ACL check of a new Redis connection: every command kilovolt runs
 * there (the lease script's, the issued-key sync's, the connection
 * checks'), tried once on keys of its own under kv:, so that a user made
 * without one of them is named at connect rather than found out by a
 * lease script that fails for ever (issue 34, row 5). */
#ifndef KV_MASTER_CLUSTER_ACL_H
#define KV_MASTER_CLUSTER_ACL_H

#include "master/redis.h"

/* Queues the probes on R (ready). When Redis refuses any of them for want
 * of permission (NOPERM), one line (KV0775) names every refused command
 * and USER ("default" when empty); *WARNED keeps it to once until a check
 * passes again. Nothing else changes: the sync runs and fails as before. */
void	kv_cluster_acl_check(struct kv_redis *r, const char *user, int *warned);

#endif

/* Is the Redis the cluster leases from durable? A Redis that restarts
 * without AOF or RDB forgets every key's spend and every grant, and the
 * cluster admits the budget again (docs/cluster.md). */
#ifndef KV_CLUSTER_PERSIST_H
#define KV_CLUSTER_PERSIST_H
#include "master/redis.h"

/* Ask R (connected) for INFO persistence and CONFIG GET save; then call
 * DONE(ARG, 1) when Redis keeps an append-only file or RDB snapshots, or
 * when it does not and REQUIRE is 0 (a warning is logged); DONE(ARG, 0)
 * with REQUIRE set and persistence off or unknown (CONFIG refused: an
 * error is logged). *WARNED keeps either log line to one per change: it is
 * set when one is logged and cleared when Redis is found durable. Nothing
 * is called when the connection is lost first. */
void	kv_cluster_persist_check(struct kv_redis *r, int require, int *warned,
	    void (*done)(void *, int), void *arg);
#endif

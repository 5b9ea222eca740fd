/* Budget leases across hosts (docs/cluster.md). The master of each host
 * syncs every account with Redis twice a second through one atomic
 * script: it reports the key's settled spend, asks for a lease sized to
 * the demand seen (or returns what it does not use), learns the budget and
 * what the other hosts have committed, and writes the result into the
 * account's lease fields, which workers admit against. A request never
 * waits on Redis. */
#ifndef KV_CLUSTER_H
#define KV_CLUSTER_H

#include "common/config.h"
#include "shm/ledger.h"

struct kv_cluster_host;

struct kv_mloop;

/* Start leasing for CF's [cluster] on ledger L, driven by LP (the Redis
 * socket, the workers' kick and the sync timer are its watches): sets the
 * header's cluster word, so admission is bounded by the leases from now
 * on. Returns NULL without [cluster] (the header word is cleared then) or
 * on out of memory (logged). */
struct kv_cluster_host *kv_cluster_start(const struct kv_config *cf, struct kv_ledger *l,
	    struct kv_mloop *lp);

/* In a forked worker: drop the master's Redis socket. */
void	kv_cluster_forget(struct kv_cluster_host *h);

/* At shutdown, after the workers are gone: push the last spend and
 * return the unused leases, waiting at most about a second; then free H. */
void	kv_cluster_stop(struct kv_cluster_host *h);

#endif

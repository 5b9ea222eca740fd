/* One lease sync of a host with Redis (cluster_sync.c). Only the
 * cluster's own files include it. */
#ifndef KV_CLUSTER_SYNC_H
#define KV_CLUSTER_SYNC_H

#include "master/cluster_host.h"

/* Load the lease script into H's Redis (connected); its SHA is set from
 * the reply and the next sync is made due at once. On a failure the
 * connection is reset (logged), so the load is tried again on reconnect. */
void	kv_cluster_load_script(struct kv_cluster_host *h);

/* Sync every account of H with Redis, BATCH to a call, unless the
 * connection or the script is not ready yet. FINAL (at stop) has Redis
 * release this host's hold on its host id. While another instance holds
 * the host id, only a call that asks for it is sent. */
void	kv_cluster_sync_all(struct kv_cluster_host *h, int final);

#endif

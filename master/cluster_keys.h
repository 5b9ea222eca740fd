/* Issued keys shared by the hosts of a cluster (docs/cluster.md): a key
 * made by kvctl keys create or POST /keys on one host is valid on every
 * host, and its revocation and rotations follow it there.
 *
 * Redis holds one hash, KV_REDIS_ISSUED: a field per issued account (its
 * first secret's SHA-256 in hex), whose value is the account's state:
 *   "1 FLAGS BUDGET RPM TPM PERIOD EXPIRES LABEL [SECRET:R ...]"
 * FLAGS bit 0 revoked, bit 1 the account's own secret rotated out; each
 * SECRET is a later secret's SHA-256 in hex, R 1 when rotated out too.
 * Every part only grows (revoked and rotated are never undone, secrets are
 * only added), so each host merges what Redis has into its ledger and
 * writes back the union where its own is larger: concurrent writers
 * converge. Budgets and spend after the issuing are the lease sync's
 * (master/cluster_sync.c), as for any key. Every writer (kvctl too:
 * cli/kvctl_issued.c) increments KV_REDIS_ISSUED_VERSION after a write, and
 * kvctl forget records the forget in KV_REDIS_FORGOTTEN (docs/cluster.md,
 * "Issued keys"). */
#ifndef KV_CLUSTER_KEYS_H
#define KV_CLUSTER_KEYS_H

#include <stdint.h>

#include "master/redis.h"
#include "shm/ledger.h"

struct kv_cluster_keys;

/* State for ledger L, or NULL (out of memory, logged). */
struct kv_cluster_keys *kv_cluster_keys_new(struct kv_ledger *l);

/* Once per lease sync, with the cluster's connection R: go on with the
 * current pass over KV_REDIS_ISSUED (one HSCAN page in flight at a time;
 * a pass ends by writing what Redis lacks). NOW_MS monotonic. */
void	kv_cluster_keys_sync(struct kv_cluster_keys *k, struct kv_redis *r, int64_t now_ms);

/* At stop: the passes kv_cluster_keys_sync makes from now on are the last
 * ones, a whole pass over KV_REDIS_ISSUED from its start, at once: what
 * changed here since the last pass (a key revoked a moment ago through the
 * admin API) reaches Redis before the host goes. */
void	kv_cluster_keys_last_pass(struct kv_cluster_keys *k);

/* 1 while that last pass, or a write of it, is not done and R is up. */
int	kv_cluster_keys_busy(const struct kv_cluster_keys *k, const struct kv_redis *r);

/* Free K; call after the connection is freed (its callbacks are done). */
void	kv_cluster_keys_free(struct kv_cluster_keys *k);

#endif

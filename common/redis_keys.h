/* The Redis key schema of the cluster, named once: the master writes
 * these keys (master/cluster_sync.c and cluster_keys.c; the script in
 * master/cluster_script.c documents each hash's fields), kvctl cluster
 * reads them (cli/kvctl_cluster.c). A rename here moves both sides together. */
#ifndef KV_COMMON_REDIS_KEYS_H
#define KV_COMMON_REDIS_KEYS_H

#include <inttypes.h>

/* Every key kilovolt writes starts with this. */
#define KV_REDIS_PREFIX		"kv:"

/* A key's budget period hash: kv:{SHA-256 hex}:{period start}. Format
 * arguments: the key's hash in hex (a string), the period start (int64_t). */
#define KV_REDIS_PERIOD_FMT	KV_REDIS_PREFIX "%s:%" PRId64

/* The suffix of a key's rate-limit hash, kv:{SHA-256 hex}:rl (not per
 * period), and its format, from the key's hash in hex. */
#define KV_REDIS_RATE_SUFFIX	":rl"
#define KV_REDIS_RATE_FMT	KV_REDIS_PREFIX "%s" KV_REDIS_RATE_SUFFIX

/* The hash of every host's last sync time: field host, value Redis ms. */
#define KV_REDIS_HOSTS		KV_REDIS_PREFIX "hosts"

/* The prefix of a host id's heartbeat key, kv:hb:{host}. */
#define KV_REDIS_HB_PREFIX	KV_REDIS_PREFIX "hb:"

/* The issued keys every host accepts (master/cluster_keys.h): one hash,
 * a field per issued account (its first secret's SHA-256 in hex). One
 * colon, so KV_REDIS_KEYS_MATCH does not match it. */
#define KV_REDIS_ISSUED		KV_REDIS_PREFIX "issued"

/* A counter every writer of KV_REDIS_ISSUED (a master's pass, kvctl)
 * increments after its write: hosts read it every KEYS_LOOK_MS and start a
 * pass over KV_REDIS_ISSUED at once when it moved, rather than at their
 * next regular pass. */
#define KV_REDIS_ISSUED_VERSION	KV_REDIS_PREFIX "issued-v"

/* Issued keys kvctl forget deleted from KV_REDIS_ISSUED: a field per
 * account (the same hex), its value the unix time of the forget. A host
 * that still holds such a key revokes it rather than write it back, so a
 * host that was down meanwhile cannot bring it back valid. */
#define KV_REDIS_FORGOTTEN	KV_REDIS_PREFIX "forgotten"

/* A SCAN pattern matching the per-key hashes (periods and rate limits;
 * kv:hosts has one colon and does not match; kv:hb:H does, and is a
 * string, not a hash, so a reader skips it). */
#define KV_REDIS_KEYS_MATCH	KV_REDIS_PREFIX "*:*"

#endif

/* kvctl's own writes of issued keys to the cluster's Redis (kvctl.h).
 * The master shares issued keys through kv:issued once a second, but only
 * while it runs: a key revoked with kvctl on a host whose kilovoltd was
 * down, or stopped within that second, stayed valid on every other host
 * until this one ran again (issue 34, row 4). So kvctl writes what it
 * changed itself, merged with what Redis holds (shm/issued_state.h: the
 * state only grows), or says that it could not. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"
#include "cli/kvctl_redis.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/redis_keys.h"
#include "shm/issued_state.h"

/* After a write of kv:issued: every host looks at once (cluster_keys.c). */
static int
bump_version(struct kvctl_redis *c, const char **why)
{
	const char *incr[2] = { "INCR", KV_REDIS_ISSUED_VERSION };
	const struct kv_resp_value *v;

	if ((v = kvctl_redis_call(c, 2, incr)) == NULL || v->type != KV_RESP_INTEGER) {
		*why = v == NULL ? strerror(errno) : "INCR refused";
		return -1;
	}
	return 0;
}

/* A's state merged with Redis's, written back: 0, or -1 (reason in WHY). */
static int
write_state(struct kvctl_redis *c, const struct kv_ledger *l, const struct kv_account *a,
    const char **why)
{
	struct kv_issued s, remote;
	const struct kv_resp_value *v;
	char field[65], value[KV_ISSUED_TEXT];
	/* HMGET, not HGET: one command fewer for the ACL (docs/cluster.md) */
	const char *hmget[3] = { "HMGET", KV_REDIS_ISSUED, field };
	const char *hset[4] = { "HSET", KV_REDIS_ISSUED, field, value };

	kv_issued_hex(a->hash, field);
	kv_issued_read(l, a, &s);
	if ((v = kvctl_redis_call(c, 3, hmget)) == NULL || v->type != KV_RESP_ARRAY ||
	    v->n != 1) {
		*why = v == NULL ? strerror(errno) : "HMGET refused";
		return -1;
	}
	if (v->elem[0].type == KV_RESP_BULK && !v->elem[0].nil &&
	    kv_issued_parse(v->elem[0].str, v->elem[0].len, &remote) == 0)
		kv_issued_union(&s, &remote);
	kv_issued_format(&s, value, sizeof(value));
	if ((v = kvctl_redis_call(c, 4, hset)) == NULL || v->type != KV_RESP_INTEGER) {
		*why = v == NULL ? strerror(errno) : "HSET refused";
		return -1;
	}
	return bump_version(c, why);
}

/* Connects to CF's Redis and runs F on A; KVCTL_EXIT_OK, or
 * KVCTL_EXIT_USAGE with WHAT and the reason on stderr. */
static int
with_redis(const struct kv_config *cf, const struct kv_ledger *l, const struct kv_account *a,
    const char *what, int (*f)(struct kvctl_redis *, const struct kv_ledger *,
    const struct kv_account *, const char **))
{
	struct kvctl_redis c;
	const char *why = "cannot connect";
	char name[128];
	int rc;

	memset(&c, 0, sizeof(c));
	rc = kvctl_redis_open(&c, &cf->cluster) == 0 ? f(&c, l, a, &why) : -1;
	kvctl_redis_close(&c);
	if (rc == 0)
		return KVCTL_EXIT_OK;
	kvctl_describe_key(a, name, sizeof(name));
	fprintf(stderr, "kvctl: %s: Redis could not be written (%s): %s\n", name, why, what);
	return KVCTL_EXIT_USAGE;
}

int
kvctl_issued_publish(const struct kv_config *cf, const struct kv_ledger *l,
    const struct kv_account *a)
{
	if (cf == NULL || !cf->cluster.enabled || !(atomic_load(&a->aflags) & KV_AF_ISSUED))
		return KVCTL_EXIT_OK;
	return with_redis(cf, l, a, "the change holds on this host; the other hosts of "
	    "the cluster learn of it only when this host's kilovoltd next syncs", write_state);
}

/* Records the forget (KV_REDIS_FORGOTTEN), then deletes the state: a host
 * that still holds the key, or was down meanwhile, then revokes it rather
 * than write it back. */
static int
delete_state(struct kvctl_redis *c, const struct kv_ledger *l, const struct kv_account *a,
    const char **why)
{
	const struct kv_resp_value *v;
	char field[65], when[24];
	const char *hset[4] = { "HSET", KV_REDIS_FORGOTTEN, field, when };
	const char *hdel[3] = { "HDEL", KV_REDIS_ISSUED, field };

	(void)l;
	kv_issued_hex(a->hash, field);
	snprintf(when, sizeof(when), "%lld", (long long)time(NULL));
	if ((v = kvctl_redis_call(c, 4, hset)) == NULL || v->type != KV_RESP_INTEGER) {
		*why = v == NULL ? strerror(errno) : "HSET refused";
		return -1;
	}
	if ((v = kvctl_redis_call(c, 3, hdel)) == NULL || v->type != KV_RESP_INTEGER) {
		*why = v == NULL ? strerror(errno) : "HDEL refused";
		return -1;
	}
	return bump_version(c, why);
}

int
kvctl_issued_unpublish(const struct kv_config *cf, const struct kv_ledger *l,
    const struct kv_account *a)
{
	if (cf == NULL || !cf->cluster.enabled || !(atomic_load(&a->aflags) & KV_AF_ISSUED))
		return KVCTL_EXIT_OK;
	return with_redis(cf, l, a, "nothing was forgotten", delete_state);
}

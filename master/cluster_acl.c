/* The ACL check of a new Redis connection (cluster_acl.h). Each probe is
 * harmless on keys nobody else uses (kv:aclcheck, kv:aclcheck-s, deleted
 * at the end; a name with one colon, so kvctl cluster's SCAN for kv:*:*
 * never lists them); Redis checks permissions before it looks at a
 * command's arguments, so only NOPERM means a missing command. */
#include "master/cluster_acl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define H "kv:aclcheck"
#define S "kv:aclcheck-s"

/* Each command as the lease script (cluster_script.c), the issued-key sync
 * (cluster_keys.c), the connection's checks (cluster_persist.c, cluster.c)
 * and kvctl's writes of issued keys (HDEL: kvctl forget) run it; the name
 * is what the log line shows. */
static const struct probe {
	const char	*name;
	int		 argc;
	const char	*argv[6];
} probes[] = {
	{ "SCRIPT LOAD", 3, { "SCRIPT", "LOAD", "return 1" } },
	{ "EVALSHA", 3, { "EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0" } },
	{ "INFO", 2, { "INFO", "persistence" } },
	{ "CONFIG GET", 3, { "CONFIG", "GET", "save" } },
	{ "TIME", 1, { "TIME" } },
	{ "HSET", 4, { "HSET", H, "f", "0" } },
	{ "HINCRBY", 4, { "HINCRBY", H, "f", "0" } },
	{ "HMGET", 3, { "HMGET", H, "f" } },
	{ "HGETALL", 2, { "HGETALL", H } },
	{ "HKEYS", 2, { "HKEYS", H } },
	{ "HSCAN", 5, { "HSCAN", H, "0", "COUNT", "1" } },
	{ "EXPIRE", 3, { "EXPIRE", H, "60" } },
	{ "SET", 5, { "SET", S, "1", "PX", "60000" } },
	{ "GET", 2, { "GET", S } },
	{ "INCR", 2, { "INCR", S } },
	{ "HDEL", 3, { "HDEL", H, "f" } },
	{ "DEL", 3, { "DEL", H, S } },
};
#define NPROBES (sizeof(probes) / sizeof(probes[0]))

struct check {
	const char	*user;		/* the config's: lives as long as R */
	int		*warned;
	size_t		 sent, answered;
	int		 queued;	/* every probe sent (or given up) */
	int		 lost;
	char		 missing[NPROBES * 12 + 1];
};

/* The last reply is in: say what was refused, once an episode. */
static void
conclude(struct check *c)
{
	if (c->lost) {
		/* the connection went: the next one checks again */
	} else if (c->missing[0] == '\0') {
		*c->warned = 0;
	} else if (!*c->warned) {
		kv_log_warnx("KV0775", "redis: the ACL of user %s refuses%s: leases and issued "
		    "keys need every one of them on ~kv:* (kilovolt.ini(5), [cluster] user)",
		    c->user[0] != '\0' ? c->user : "default", c->missing);
		*c->warned = 1;
	}
	free(c);
}

static void
on_probe(void *arg, const struct kv_resp_value *v)
{
	struct check *c = arg;
	size_t i = c->answered++, n;

	if (v == NULL) {
		c->lost = 1;
	} else if (v->type == KV_RESP_ERROR && v->len >= 6 && memcmp(v->str, "NOPERM", 6) == 0) {
		n = strlen(c->missing);
		snprintf(c->missing + n, sizeof(c->missing) - n, " %s", probes[i].name);
	}
	if (c->queued && c->answered == c->sent)
		conclude(c);
}

void
kv_cluster_acl_check(struct kv_redis *r, const char *user, int *warned)
{
	struct check *c = calloc(1, sizeof(*c));
	size_t lens[6];
	int k;

	if (c == NULL) {
		kv_redis_reset(r, "out of memory");
		return;
	}
	c->user = user;
	c->warned = warned;
	for (; c->sent < NPROBES; c->sent++) {
		const struct probe *p = &probes[c->sent];

		for (k = 0; k < p->argc; k++)
			lens[k] = strlen(p->argv[k]);
		if (kv_redis_call(r, p->argc, p->argv, lens, on_probe, c) == -1)
			break;
	}
	c->queued = 1;
	if (c->sent == NPROBES)
		return;
	/* a full output buffer: the reset fails the probes queued, the last
	 * of which frees c */
	c->lost = 1;
	if (c->sent == 0)
		free(c);
	kv_redis_reset(r, "cannot queue the ACL check");
}

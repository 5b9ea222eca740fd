/* The persistence check of a new Redis connection (cluster_persist.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/redis_info.h"
#include "master/cluster_persist.h"

struct check {
	struct kv_redis	*r;
	int		 require;
	int		*warned;
	void		(*done)(void *, int);
	void		*arg;
	int		 aof;		/* 1 on, 0 off, -1 unknown */
	int		 rdb;
	int		 lost;
	int		 alone;		/* on_save never queued: on_info frees */
};

static void
on_info(void *arg, const struct kv_resp_value *v)
{
	struct check *c = arg;
	int64_t n;

	if (c->alone) {
		free(c);
		return;
	}
	if (v == NULL) {
		c->lost = 1;
		return;
	}
	if (v->type == KV_RESP_BULK && !v->nil &&
	    kv_redis_info_int(v->str, v->len, "aof_enabled", &n) == 0)
		c->aof = n != 0;
}

/* CONFIG GET save: ["save", "3600 1 300 100"], "" when RDB is off. */
static void
on_save(void *arg, const struct kv_resp_value *v)
{
	struct check *c = arg;

	if (v == NULL)
		c->lost = 1;
	else if (v->type == KV_RESP_ARRAY && v->n == 2 &&
	    v->elem[1].type == KV_RESP_BULK && !v->elem[1].nil)
		c->rdb = v->elem[1].len > 0;
	if (!c->lost) {
		if (c->aof == 1 || c->rdb == 1) {
			*c->warned = 0;
			c->done(c->arg, 1);
		} else if (!c->require) {
			if (!*c->warned)
				kv_log_warnx("KV0760", "redis: %s: a restart of Redis forgets "
			    "every key's spend and lease, and the cluster admits the "
			    "budget again (set appendonly yes)", c->aof == 0 && c->rdb == 0 ?
			    "no AOF and no RDB persistence" : "cannot tell whether RDB "
			    "persistence is on (CONFIG GET save refused)");
			*c->warned = 1;
			c->done(c->arg, 1);
		} else {
			if (!*c->warned)
				kv_log_warnx("KV0761", "redis: %s and [cluster] require_persistence "
			    "= yes: not leasing from it", c->aof == 0 && c->rdb == 0 ?
			    "no AOF and no RDB persistence" : "persistence unknown "
			    "(CONFIG GET save refused)");
			*c->warned = 1;
			c->done(c->arg, 0);
		}
	}
	free(c);
}

void
kv_cluster_persist_check(struct kv_redis *r, int require, int *warned,
    void (*done)(void *, int), void *arg)
{
	static const char *info[2] = { "INFO", "persistence" };
	static const size_t info_len[2] = { 4, 11 };
	static const char *save[3] = { "CONFIG", "GET", "save" };
	static const size_t save_len[3] = { 6, 3, 4 };
	struct check *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		kv_redis_reset(r, "out of memory");
		return;
	}
	*c = (struct check){ r, require, warned, done, arg, -1, -1, 0, 0 };
	if (kv_redis_call(r, 2, info, info_len, on_info, c) == -1) {
		free(c);
		kv_redis_reset(r, "cannot queue INFO");
		return;
	}
	if (kv_redis_call(r, 3, save, save_len, on_save, c) == -1) {
		c->alone = 1;
		kv_redis_reset(r, "cannot queue CONFIG GET");
	}
}

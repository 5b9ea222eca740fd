/* kvctl cluster: the cluster's view of every key, read from Redis (the
 * ledger of record across hosts; docs/cluster.md): budget, settled spend of
 * all hosts, what is committed, and each host's lease, read through
 * kvctl's blocking Redis client (kvctl_redis.c). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"
#include "cli/kvctl_redis.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "common/clock.h"
#include "common/config.h"
#include "common/jsonline.h"
#include "common/redis_keys.h"
#include "common/resp.h"
#include "shm/lease.h"
#include "shm/report.h"

#define MAX_KEYS	100000
static int
field_is(const struct kv_resp_value *v, const char *s)
{
	return v->type == KV_RESP_BULK && !v->nil && v->len == strlen(s) &&
	    memcmp(v->str, s, v->len) == 0;
}

static int64_t
num(const struct kv_resp_value *v)
{
	int64_t x = 0;

	return kv_resp_int(v, &x) == 0 ? x : 0;
}

/* The label of the account with id ID in this host's ledger, or "". */
static void
local_label(const struct kv_ledger *l, const char *id, char *label, size_t len)
{
	char kid[13];
	uint32_t k;

	label[0] = '\0';
	if (l == NULL || l->base == NULL)
		return;
	KV_FOR_EACH_SLOT(l, k) {
		if (!kv_slot_ready(&l->accounts[k].state))
			continue;
		kv_key_id(l->accounts[k].hash, kid);
		if (strcmp(kid, id) == 0) {
			snprintf(label, len, "%.*s", (int)sizeof(l->accounts[k].label) - 1,
			    l->accounts[k].label);
			return;
		}
	}
}

/* Field NAME of the key hash H: NAME's integer, or 0. */
static int64_t
key_field(const struct kv_resp_value *h, const char *name)
{
	size_t i;

	for (i = 0; i + 1 < h->n; i += 2)
		if (field_is(&h->elem[i], name))
			return num(&h->elem[i + 1]);
	return 0;
}

/* The u:/e:/z: fields of host HOST (N is its g: field) in the key hash H:
 * its spend, lease expiry and the zero of its last reset. */
static void
host_fields(const struct kv_resp_value *h, const struct kv_resp_value *n, const char *host,
    int64_t *u, int64_t *e, int64_t *z)
{
	size_t j;

	*u = *e = *z = 0;
	for (j = 0; j + 1 < h->n; j += 2) {
		const struct kv_resp_value *m = &h->elem[j];

		if (m->len != n->len || memcmp(m->str + 2, host, n->len - 2) != 0 ||
		    m->str[1] != ':')
			continue;
		if (m->str[0] == 'u')
			*u = num(&h->elem[j + 1]);
		else if (m->str[0] == 'e')
			*e = num(&h->elem[j + 1]);
		else if (m->str[0] == 'z')	/* its zero: the last reset */
			*z = num(&h->elem[j + 1]);
	}
}

static void
print_host(FILE *f, char *host, int64_t g, int64_t u, int64_t e, int64_t z,
    int64_t now, int json, int first)
{
	char lease[32], spent[32];

	if (json) {
		fprintf(f, "%s{\"host\":", first ? "" : ",");
		kv_json_write_string(f, host);
		fprintf(f, ",\"granted_nusd\":%" PRId64 ",\"spent_nusd\":%" PRId64
		    ",\"lease_nusd\":%" PRId64 ",\"expires_ms\":%" PRId64
		    ",\"expired\":%s}", g - z, u - z, g > u ? g - u : 0, e,
		    e <= now ? "true" : "false");
		return;
	}
	kvctl_format_money(g > u ? g - u : 0, lease, sizeof(lease));
	kvctl_format_money(u - z, spent, sizeof(spent));
	kvctl_printable(host);
	fprintf(f, "    host %-20s lease %s  spent %s  %s %.1f s\n", host, lease, spent,
	    e <= now ? "expired" : "expires in", (double)(e > now ? e - now : now - e) / 1000);
}

static void
print_key_head(FILE *f, const char *key, const char *id, const char *label,
    const struct kv_resp_value *h, int json, int first)
{
	int64_t budget = key_field(h, "budget"), spent = key_field(h, "S"),
	    committed = key_field(h, "C"), retired = key_field(h, "R");
	char money[3][32];

	if (json) {
		fprintf(f, "%s{\"id\":\"%s\",\"label\":", first ? "" : ",", id);
		if (label[0] != '\0')
			kv_json_write_string(f, label);
		else
			fputs("null", f);
		fprintf(f, ",\"period\":%s,\"budget_nusd\":%" PRId64 ",\"spent_nusd\":%"
		    PRId64 ",\"committed_nusd\":%" PRId64 ",\"retired_nusd\":%" PRId64
		    ",\"hosts\":[", strrchr(key, ':') + 1, budget, spent, committed, retired);
		return;
	}
	kvctl_format_money(budget, money[0], sizeof(money[0]));
	kvctl_format_money(spent, money[1], sizeof(money[1]));
	kvctl_format_money(committed, money[2], sizeof(money[2]));
	fprintf(f, "%s %-16s budget %s  spent %s  committed %s\n", id,
	    label[0] ? label : "-", money[0], money[1], money[2]);
}

/* One key's hash (HGETALL reply) as a JSON object or a table block. */
static void
print_key(FILE *f, const char *key, const struct kv_resp_value *h,
    const struct kv_ledger *l, int64_t now, int json, int first)
{
	char id[13], label[KV_LABEL_MAX], host[80];
	int64_t u, e, z;
	size_t i, nh = 0;

	memcpy(id, key + 3, 12);
	id[12] = '\0';
	local_label(l, id, label, sizeof(label));
	print_key_head(f, key, id, label, h, json, first);
	for (i = 0; i + 1 < h->n; i += 2) {
		const struct kv_resp_value *n = &h->elem[i];

		if (n->type != KV_RESP_BULK || n->len < 3 || memcmp(n->str, "g:", 2) != 0 ||
		    n->len - 2 >= sizeof(host))
			continue;
		memcpy(host, n->str + 2, n->len - 2);
		host[n->len - 2] = '\0';
		host_fields(h, n, host, &u, &e, &z);
		print_host(f, host, num(&h->elem[i + 1]), u, e, z, now, json, nh++ == 0);
	}
	if (json)
		fputc(']', f);
}

/* The value of field PREFIX HOST in HGETALL reply H (0 when absent). */
static int64_t
hval(const struct kv_resp_value *h, const char *prefix, const char *host)
{
	size_t i, pl = strlen(prefix), hl = strlen(host);

	for (i = 0; i + 1 < h->n; i += 2) {
		const struct kv_resp_value *n = &h->elem[i];

		if (n->type == KV_RESP_BULK && n->len == pl + hl &&
		    memcmp(n->str, prefix, pl) == 0 && memcmp(n->str + pl, host, hl) == 0)
			return num(&h->elem[i + 1]);
	}
	return 0;
}

/* Each host's rate leases of a key, from its kv:HASH:rl reply H: unused
 * grant and cumulative use, for requests and tokens. */
static void
print_rates(FILE *f, const struct kv_resp_value *h, int64_t now, int json)
{
	size_t i, nh = 0;
	char host[80];

	for (i = 0; i + 1 < h->n; i += 2) {
		const struct kv_resp_value *n = &h->elem[i];
		int64_t rg, ru, tg, tu, e;

		if (n->type != KV_RESP_BULK || n->len < 4 || memcmp(n->str, "le:", 3) != 0 ||
		    n->len - 3 >= sizeof(host))
			continue;
		memcpy(host, n->str + 3, n->len - 3);
		host[n->len - 3] = '\0';
		e = num(&h->elem[i + 1]);
		rg = hval(h, "rg:", host), ru = hval(h, "ru:", host);
		tg = hval(h, "tg:", host), tu = hval(h, "tu:", host);
		if (json) {
			fprintf(f, "%s{\"host\":", nh ? "," : ",\"rate_hosts\":[");
			kv_json_write_string(f, host);
			fprintf(f, ",\"requests_lease\":%" PRId64 ",\"requests_used\":%" PRId64
			    ",\"tokens_lease\":%" PRId64 ",\"tokens_used\":%" PRId64
			    ",\"expired\":%s}", rg > ru ? rg - ru : 0, ru, tg > tu ? tg - tu : 0,
			    tu, e <= now ? "true" : "false");
		} else {
			kvctl_printable(host);
			fprintf(f, "    rate %-20s requests leased %" PRId64 " (used %" PRId64
			    ")  tokens leased %" PRId64 " (used %" PRId64 ")%s\n", host,
			    rg > ru ? rg - ru : 0, ru, tg > tu ? tg - tu : 0, tu,
			    e <= now ? "  expired" : "");
		}
		nh++;
	}
	if (json && nh > 0)
		fputc(']', f);
}

static int
print_hosts(FILE *f, struct kvctl_redis *c, int64_t now, int json)
{
	const char *hg[] = { "HGETALL", KV_REDIS_HOSTS };
	const struct kv_resp_value *v = kvctl_redis_call(c, 2, hg);
	size_t i;
	char host[80];

	if (v == NULL || v->type != KV_RESP_ARRAY)
		return -1;
	fputs(json ? "\"hosts\":[" : "hosts:", f);
	for (i = 0; i + 1 < v->n; i += 2) {
		size_t n = v->elem[i].len < sizeof(host) ? v->elem[i].len : sizeof(host) - 1;
		int64_t seen = num(&v->elem[i + 1]);

		memcpy(host, v->elem[i].str, n);
		host[n] = '\0';
		if (json) {
			fputs(i ? ",{\"host\":" : "{\"host\":", f);
			kv_json_write_string(f, host);
			fprintf(f, ",\"last_sync_ms\":%" PRId64 "}", seen);
		} else {
			kvctl_printable(host);
			fprintf(f, " %s (synced %.1f s ago)", host, (double)(now - seen) / 1000);
		}
	}
	fputs(json ? "]" : "\n", f);
	return 0;
}

/* Every kv:* key: SCAN, then HGETALL each (each one atomic). */
static int
print_keys(FILE *f, struct kvctl_redis *c, const struct kv_ledger *l, int64_t now, int json)
{
	char cursor[32] = "0", **keys = NULL;
	size_t nkeys = 0, i;
	const struct kv_resp_value *v;
	int rc = 0, first = 1;

	do {
		const char *scan[] = { "SCAN", cursor, "MATCH", KV_REDIS_KEYS_MATCH, "COUNT", "1000" };

		if ((v = kvctl_redis_call(c, 6, scan)) == NULL || v->type != KV_RESP_ARRAY || v->n != 2 ||
		    v->elem[0].len >= sizeof(cursor))
			goto fail;
		memcpy(cursor, v->elem[0].str, v->elem[0].len);
		cursor[v->elem[0].len] = '\0';
		for (i = 0; i < v->elem[1].n && nkeys < MAX_KEYS; i++) {
			const struct kv_resp_value *k = &v->elem[1].elem[i];
			char **p = realloc(keys, (nkeys + 1) * sizeof(*keys));

			if (p == NULL)
				goto fail;
			keys = p;
			if ((keys[nkeys] = strndup(k->str, k->len)) == NULL)
				goto fail;
			nkeys++;
		}
	} while (strcmp(cursor, "0") != 0);
	fputs(json ? ",\"keys\":[" : "", f);
	for (i = 0; i < nkeys; i++) {
		const char *hg[] = { "HGETALL", keys[i] };
		char rk[128];
		const char *rh[] = { "HGETALL", rk };
		size_t kl = strlen(keys[i]);

		/* kv:HASH:rl holds the rate-limit buckets, not a budget period */
		if (kl < 16 ||
		    strcmp(keys[i] + kl - strlen(KV_REDIS_RATE_SUFFIX), KV_REDIS_RATE_SUFFIX) == 0 ||
		    (v = kvctl_redis_call(c, 2, hg)) == NULL || v->type != KV_RESP_ARRAY)
			continue;
		print_key(f, keys[i], v, l, now, json, first);
		first = 0;
		/* the rate leases live in kv:HASH:rl, beside the period hash */
		snprintf(rk, sizeof(rk), "%.*s" KV_REDIS_RATE_SUFFIX,
		    (int)(strchr(keys[i] + strlen(KV_REDIS_PREFIX), ':') -
		    keys[i]), keys[i]);
		if ((v = kvctl_redis_call(c, 2, rh)) != NULL && v->type == KV_RESP_ARRAY)
			print_rates(f, v, now, json);
		if (json)
			fputc('}', f);
	}
	fputs(json ? "]" : "", f);
	goto out;
fail:
	rc = -1;
out:
	for (i = 0; i < nkeys; i++)
		free(keys[i]);
	free(keys);
	return rc;
}

int
kvctl_cluster(const char *config, const struct kv_ledger *l, int json)
{
	static struct kvctl_redis c;
	struct kv_config *cf = calloc(1, sizeof(*cf));
	const struct kv_resp_value *v;
	const char *tm[] = { "TIME" };
	char err[1024];
	int64_t now;
	int rc = KVCTL_EXIT_USAGE;

	if (cf == NULL || kv_config_load(cf, config, err, sizeof(err)) == -1) {
		fprintf(stderr, "kvctl: %s\n", cf ? err : "out of memory");
		free(cf);
		return KVCTL_EXIT_USAGE;
	}
	if (!cf->cluster.enabled) {
		fprintf(stderr, "kvctl: %s has no [cluster] section\n", config);
		goto out;
	}
	if (kvctl_redis_open(&c, &cf->cluster) == -1)
		goto out;
	if ((v = kvctl_redis_call(&c, 1, tm)) == NULL || v->type != KV_RESP_ARRAY || v->n != 2) {
		fprintf(stderr, "kvctl: Redis: no TIME: %s\n", strerror(errno));
		goto out;
	}
	now = num(&v->elem[0]) * 1000 + num(&v->elem[1]) / 1000;
	if (json)
		fprintf(stdout, "{\"now_ms\":%" PRId64 ",", now);
	if (print_hosts(stdout, &c, now, json) == -1 || print_keys(stdout, &c, l, now, json) == -1) {
		fprintf(stderr, "kvctl: Redis: read failed: %s\n", strerror(errno));
		goto out;
	}
	if (json)
		fputs("}\n", stdout);
	rc = KVCTL_EXIT_OK;
out:
	kvctl_redis_close(&c);
	kv_config_free(cf);
	free(cf);
	return rc;
}

int
kvctl_cluster_reset(struct kv_ledger *l, struct kv_account **as, size_t n)
{
	struct timespec ts = { 0, 50 * 1000000L };
	int64_t before = 0;
	size_t i, pending = n;
	int tries;
	char money[32];

	for (i = 0; i < n; i++) {
		before += kv_account_spent(as[i]);
		kv_lease_reset_ask(as[i]);
	}
	/* The master clears the flag once Redis has done the reset (its next
	 * sync, within half a second); a Redis reply can take 3 s. */
	for (tries = 0; tries < 100 && pending > 0; tries++) {
		(void)nanosleep(&ts, NULL);
		for (i = pending = 0; i < n; i++)
			if (kv_lease_reset_asked(as[i]))
				pending++;
	}
	if (pending > 0) {
		for (i = 0; i < n; i++)
			kv_lease_reset_done(as[i]);
		fprintf(stderr, "kvctl: KV0850: reset not done: this host leases budgets from "
		    "Redis ([cluster]), so a key's spend is reset on every host at once, by "
		    "this host's master; it did not confirm within 5 s. Is kilovoltd running "
		    "and is Redis reachable (kvctl -c CONFIG cluster)? Nothing was reset; "
		    "retry once it is, or raise the budget with kvctl budget.\n");
		return KVCTL_EXIT_USAGE;
	}
	kvctl_format_money(before, money, sizeof(money));
	printf("reset %zu key%s on every host of the cluster (spent here was %s); each "
	    "host clears its spend at its next sync with Redis, within a second\n", n,
	    n == 1 ? "" : "s", money);
	return KVCTL_EXIT_OK;
}

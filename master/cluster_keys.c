/* Issued keys across the hosts of a cluster: see cluster_keys.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/cluster_keys.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/hex.h"
#include "common/log.h"
#include "common/redis_keys.h"
#include "shm/issued_state.h"
#include "shm/keys.h"

#define KEYS_PASS_MS	1000	/* a new pass at most this often */
#define KEYS_LOOK_MS	200	/* KV_REDIS_ISSUED_VERSION read this often between passes */
#define KEYS_PAGE	"128"	/* HSCAN COUNT: a page stays far below resp's bounds */
#define KEYS_MISSING_MAX 128	/* asked after in kv:forgotten per pass; the rest next pass */

struct kv_cluster_keys {
	struct kv_ledger	*l;
	struct kv_redis		*r;
	unsigned char		*seen;		/* per slot: Redis has its state, this pass */
	char			 cursor[24];	/* of the HSCAN pass; "0" starts one */
	int			 inflight;	/* an HSCAN page awaits its reply */
	int64_t			 next_ms;
	int			 clash_warned;
	int			 page_warned;	/* KV0776 logged, until a page comes */
	int			 last_passes;	/* at stop: whole passes still to make */
	int64_t			 next_look_ms;	/* the next read of the version */
	long long		 version;	/* KV_REDIS_ISSUED_VERSION last read */
	uint64_t		 local_mark;	/* local_mark() at the last look */
	int			 looking;	/* a GET of it awaits its reply */
	unsigned		 writes;	/* HSETs and HMGETs awaiting their reply */
	/* the issued accounts this pass did not find in Redis, asked after
	 * in KV_REDIS_FORGOTTEN before any is written back */
	uint32_t		 missing[KEYS_MISSING_MAX];
	uint64_t		 missing_tag[KEYS_MISSING_MAX];
	size_t			 nmissing;
};

/* Issue the account HASH that another host made, as it was made there. */
static struct kv_account *
import(struct kv_cluster_keys *k, const uint8_t hash[32], const struct kv_issued *s)
{
	struct kv_key_spec spec;
	struct kv_account *a;
	char err[256], id[13];

	spec.label = s->label;
	spec.budget_nusd = s->budget;
	spec.rpm = s->rpm;
	spec.tpm = s->tpm;
	spec.period = (int)s->period;
	spec.expires = s->expires;
	if ((a = kv_keys_issue(k->l, hash, &spec, err, sizeof(err))) == NULL) {
		kv_key_id(hash, id);
		if (!k->clash_warned)
			kv_log_warnx("KV0772", "cluster: issued key %s of another host is "
			    "not valid here: %s", id, err);
		k->clash_warned = 1;
		return NULL;
	}
	kv_key_id(hash, id);
	kv_log_info("cluster: key %s (%s) issued on another host is valid here", id,
	    s->label);
	return a;
}

/* Merge remote state S into account A: new secrets first (each gets its
 * link), then the rotations and the revocation, so that at no instant is
 * neither the old nor the new secret accepted. */
static void
merge(struct kv_cluster_keys *k, struct kv_account *a, const struct kv_issued *s)
{
	struct kv_account *ln[KV_ISSUED_LINKS];
	size_t i;
	int tries;

	for (i = 0; i < s->nlinks; i++) {
		ln[i] = kv_ledger_account(k->l, s->link[i], 0, NULL, 0);
		/* A secret rotated out gets no slot here: one it had may have been
		 * reclaimed (shm/keys.h), and must stay so. */
		for (tries = 0; ln[i] == NULL && errno == ENOENT && !s->link_rotated[i] &&
		    tries < 4; tries++)
			if ((ln[i] = kv_ledger_link(k->l, s->link[i], a)) == NULL &&
			    errno == EEXIST)
				ln[i] = kv_ledger_account(k->l, s->link[i], 0, NULL, 0);
	}
	for (i = 0; i < s->nlinks; i++)
		if (ln[i] != NULL && s->link_rotated[i] &&
		    atomic_load(&ln[i]->state) == KV_SLOT_LINK &&
		    atomic_load(&ln[i]->link) == kv_ledger_account_index(k->l, a) + 1)
			kv_keys_rotated_out(ln[i], (int64_t)time(NULL));
	if (s->flags & KV_ISSUED_ROTATED)
		kv_keys_rotated_out(a, (int64_t)time(NULL));
	if (s->flags & KV_ISSUED_REVOKED)
		(void)kv_keys_revoke(a);
}

/* ---- Redis's side ------------------------------------------------------------ */

static void
on_written(void *arg, const struct kv_resp_value *v)
{
	struct kv_cluster_keys *k = arg;

	k->writes--;
	if (v != NULL && v->type == KV_RESP_ERROR)
		kv_log_warnx("KV0773", "cluster: writing an issued key to Redis: %.*s",
		    (int)(v->len > 200 ? 200 : v->len), v->str);
}

/* After a write of KV_REDIS_ISSUED: the other hosts look at once. */
static void
bump_version(struct kv_cluster_keys *k)
{
	static const char *argv[2] = { "INCR", KV_REDIS_ISSUED_VERSION };
	size_t lens[2] = { 4, strlen(KV_REDIS_ISSUED_VERSION) };

	if (kv_redis_call(k->r, 2, argv, lens, on_written, k) == 0)
		k->writes++;
}

/* L's state holds everything R's does and no more: the same flags and the
 * same secrets. Budget and limits are not compared: they are the lease
 * sync's after the issuing, and hosts may briefly (or, for limits set on one
 * host, lastingly) disagree, which must not make them overwrite each other
 * every pass. */
static int
same_growth(const struct kv_issued *l, const struct kv_issued *r)
{
	size_t i, j;

	if (l->flags != r->flags || l->nlinks != r->nlinks)
		return 0;
	for (i = 0; i < l->nlinks; i++) {
		for (j = 0; j < r->nlinks; j++)
			if (memcmp(l->link[i], r->link[j], 32) == 0 &&
			    l->link_rotated[i] == r->link_rotated[j])
				break;
		if (j == r->nlinks)
			return 0;
	}
	return 1;
}

/* HSET the field of account A to its state in the ledger, unless Redis's
 * (REMOTE; NULL: none) has grown as far. */
static void
publish(struct kv_cluster_keys *k, const struct kv_account *a, const struct kv_issued *remote)
{
	struct kv_issued s;
	char value[KV_ISSUED_TEXT], field[65];
	const char *argv[4];
	size_t lens[4];

	kv_issued_read(k->l, a, &s);
	/* the secrets Redis has rotated out and this ledger no longer holds
	 * (their links reclaimed here) stay in what is written back */
	if (remote != NULL)
		kv_issued_union(&s, remote);
	if (remote != NULL && same_growth(&s, remote))
		return;
	kv_issued_format(&s, value, sizeof(value));
	kv_issued_hex(a->hash, field);
	argv[0] = "HSET";
	argv[1] = KV_REDIS_ISSUED;
	argv[2] = field;
	argv[3] = value;
	lens[0] = 4;
	lens[1] = strlen(KV_REDIS_ISSUED);
	lens[2] = 64;
	lens[3] = strlen(value);
	/* A full output buffer: the next pass finds it missing again. */
	if (kv_redis_call(k->r, 4, argv, lens, on_written, k) == 0)
		k->writes++;
	bump_version(k);
}

/* One FIELD, VALUE pair of kv:issued. */
static void
take(struct kv_cluster_keys *k, const struct kv_resp_value *f, const struct kv_resp_value *v)
{
	struct kv_account *a;
	struct kv_issued s;
	uint8_t hash[32];

	if (f->type != KV_RESP_BULK || v->type != KV_RESP_BULK ||
	    kv_issued_unhex(f->str, f->len, hash) == -1 || kv_issued_parse(v->str, v->len, &s) == -1)
		return;
	a = kv_ledger_account(k->l, hash, 0, NULL, 0);
	if (a == NULL && errno == ENOENT && !(s.flags & KV_ISSUED_REVOKED))
		a = import(k, hash, &s);
	if (a == NULL || !kv_slot_ready(&a->state) ||
	    !(atomic_load(&a->aflags) & KV_AF_ISSUED))
		return;
	merge(k, a, &s);
	k->seen[kv_ledger_account_index(k->l, a)] = 1;
	publish(k, a, &s);
}

/* The missing account I of the reply to HMGET kv:forgotten: written back
 * when no forget is recorded (a new key, or a Redis that lost it), revoked
 * when one is (kvctl forget on another host). */
static void
settle_missing(struct kv_cluster_keys *k, size_t i, const struct kv_resp_value *f)
{
	struct kv_account *a = &k->l->accounts[k->missing[i]];
	char id[13];

	if (!kv_slot_ready(&a->state) || atomic_load(&a->tag) != k->missing_tag[i])
		return;		/* retired or reused meanwhile */
	if (f->type == KV_RESP_BULK && f->nil) {
		publish(k, a, NULL);
	} else if (kv_keys_revoke(a) == 0) {
		kv_key_id(a->hash, id);
		kv_log_info("cluster: key %s was forgotten on another host (kvctl forget): "
		    "revoked here", id);
	}
}

static void
on_forgotten(void *arg, const struct kv_resp_value *v)
{
	struct kv_cluster_keys *k = arg;
	size_t i;

	k->writes--;
	if (v != NULL && v->type == KV_RESP_ARRAY && v->n == k->nmissing)
		for (i = 0; i < k->nmissing; i++)
			settle_missing(k, i, &v->elem[i]);
	k->nmissing = 0;
	if (k->last_passes > 0)
		k->last_passes--;
}

/* HMGET kv:forgotten for the missing accounts. */
static void
ask_forgotten(struct kv_cluster_keys *k)
{
	const char *argv[2 + KEYS_MISSING_MAX];
	size_t lens[2 + KEYS_MISSING_MAX], i;
	char fields[KEYS_MISSING_MAX][65];

	argv[0] = "HMGET";
	argv[1] = KV_REDIS_FORGOTTEN;
	lens[0] = 5;
	lens[1] = strlen(KV_REDIS_FORGOTTEN);
	for (i = 0; i < k->nmissing; i++) {
		kv_issued_hex(k->l->accounts[k->missing[i]].hash, fields[i]);
		argv[2 + i] = fields[i];
		lens[2 + i] = 64;
	}
	if (kv_redis_call(k->r, (int)(2 + k->nmissing), argv, lens, on_forgotten, k) == 0) {
		k->writes++;
		return;
	}
	k->nmissing = 0;	/* a full buffer: the next pass asks again */
	if (k->last_passes > 0)
		k->last_passes--;
}

/* The pass is over: the issued accounts Redis did not show are written,
 * unless a forget of theirs is recorded (ask_forgotten). */
static void
pass_done(struct kv_cluster_keys *k)
{
	uint32_t i;

	k->nmissing = 0;
	KV_FOR_EACH_SLOT(k->l, i) {
		struct kv_account *a = &k->l->accounts[i];

		if (k->nmissing == KEYS_MISSING_MAX)
			break;
		if (!k->seen[i] && kv_slot_ready(&a->state) &&
		    (atomic_load(&a->aflags) & KV_AF_ISSUED)) {
			k->missing_tag[k->nmissing] = atomic_load(&a->tag);
			k->missing[k->nmissing++] = i;
		}
	}
	memset(k->seen, 0, k->l->hdr->max_keys);
	if (k->nmissing > 0)
		ask_forgotten(k);
	else if (k->last_passes > 0)
		k->last_passes--;
}

/* An error reply to HSCAN (a user without it, a kv:issued of another
 * type) stops every issued key's sharing: said once an episode, and its
 * end too. A lost connection is the connection's to report. */
static void
page_error(struct kv_cluster_keys *k, const struct kv_resp_value *v)
{
	if (v != NULL && v->type == KV_RESP_ERROR && !k->page_warned) {
		kv_log_warnx("KV0776", "cluster: reading the issued keys (HSCAN %s): %.*s; "
		    "issued keys are not shared with the other hosts meanwhile",
		    KV_REDIS_ISSUED, (int)(v->len > 200 ? 200 : v->len), v->str);
		k->page_warned = 1;
	} else if (v != NULL && v->type == KV_RESP_ARRAY && k->page_warned) {
		kv_log_info("cluster: the issued keys are read from Redis again");
		k->page_warned = 0;
	}
}

static void
on_page(void *arg, const struct kv_resp_value *v)
{
	struct kv_cluster_keys *k = arg;
	const struct kv_resp_value *items;
	size_t i;

	k->inflight = 0;
	page_error(k, v);
	if (v == NULL || v->type != KV_RESP_ARRAY || v->n != 2 ||
	    v->elem[0].type != KV_RESP_BULK || v->elem[0].len >= sizeof(k->cursor) ||
	    v->elem[1].type != KV_RESP_ARRAY) {
		/* a lost connection or an error reply: start over next time */
		strcpy(k->cursor, "0");
		memset(k->seen, 0, k->l->hdr->max_keys);
		return;
	}
	items = v->elem[1].elem;
	for (i = 0; i + 1 < v->elem[1].n; i += 2)
		take(k, &items[i], &items[i + 1]);
	memcpy(k->cursor, v->elem[0].str, v->elem[0].len);
	k->cursor[v->elem[0].len] = '\0';
	if (strcmp(k->cursor, "0") == 0)
		pass_done(k);
}

static void
on_version(void *arg, const struct kv_resp_value *v)
{
	struct kv_cluster_keys *k = arg;
	long long n = 0;
	char buf[24];

	k->looking = 0;
	if (v == NULL || v->type != KV_RESP_BULK || (!v->nil && v->len >= sizeof(buf)))
		return;
	if (!v->nil) {
		memcpy(buf, v->str, v->len);
		buf[v->len] = '\0';
		if (sscanf(buf, "%lld", &n) != 1)
			return;
	}
	if (n != k->version)
		k->next_ms = 0;		/* a pass at once */
	k->version = n;
}

/* A digest of what this host's issued keys are (slot, flags, links): it
 * moves when the admin API or kvctl issues, revokes or rotates one here.
 * One pass over the slots' words, as the alerts' tick makes each second. */
static uint64_t
local_mark(const struct kv_ledger *l)
{
	uint64_t h = 1469598103934665603ULL;
	uint32_t i;

	KV_FOR_EACH_SLOT(l, i) {
		const struct kv_account *a = &l->accounts[i];
		uint32_t st = atomic_load(&a->state), f = atomic_load(&a->aflags);

		if (st != KV_SLOT_LINK && !(f & KV_AF_ISSUED))
			continue;
		h = (h ^ ((uint64_t)i << 32 | f)) * 1099511628211ULL;
		h = (h ^ ((uint64_t)st << 32 | atomic_load(&a->link))) * 1099511628211ULL;
	}
	return h;
}

/* Between passes: has anyone written KV_REDIS_ISSUED since, or has a key
 * changed here? Either starts a pass at once. */
static void
look(struct kv_cluster_keys *k, struct kv_redis *r, int64_t now_ms)
{
	static const char *argv[2] = { "GET", KV_REDIS_ISSUED_VERSION };
	size_t lens[2] = { 3, strlen(KV_REDIS_ISSUED_VERSION) };
	uint64_t mark;

	if (k->looking || now_ms < k->next_look_ms)
		return;
	k->next_look_ms = now_ms + KEYS_LOOK_MS;
	if ((mark = local_mark(k->l)) != k->local_mark) {
		k->local_mark = mark;
		k->next_ms = 0;
	}
	if (kv_redis_call(r, 2, argv, lens, on_version, k) == 0)
		k->looking = 1;
}

void
kv_cluster_keys_sync(struct kv_cluster_keys *k, struct kv_redis *r, int64_t now_ms)
{
	const char *argv[6];
	size_t lens[6];

	int i;

	if (k == NULL || k->inflight || !kv_redis_ready(r))
		return;
	/* A pass starts at most every KEYS_PASS_MS; its pages follow at once. */
	if (strcmp(k->cursor, "0") == 0) {
		if (now_ms < k->next_ms && k->last_passes == 0) {
			look(k, r, now_ms);
			return;
		}
		k->next_ms = now_ms + KEYS_PASS_MS;
	}
	k->r = r;
	argv[0] = "HSCAN";
	argv[1] = KV_REDIS_ISSUED;
	argv[2] = k->cursor;
	argv[3] = "COUNT";
	argv[4] = KEYS_PAGE;
	for (i = 0; i < 5; i++)
		lens[i] = strlen(argv[i]);
	if (kv_redis_call(r, 5, argv, lens, on_page, k) == 0)
		k->inflight = 1;
}

void
kv_cluster_keys_last_pass(struct kv_cluster_keys *k)
{
	if (k == NULL)
		return;
	/* a pass under way may have read some keys before their change */
	k->last_passes = strcmp(k->cursor, "0") == 0 && !k->inflight ? 1 : 2;
	k->next_ms = 0;
}

int
kv_cluster_keys_busy(const struct kv_cluster_keys *k, const struct kv_redis *r)
{
	return k != NULL && kv_redis_ready(r) && (k->last_passes > 0 || k->writes > 0);
}

struct kv_cluster_keys *
kv_cluster_keys_new(struct kv_ledger *l)
{
	struct kv_cluster_keys *k;

	if ((k = calloc(1, sizeof(*k))) == NULL ||
	    (k->seen = calloc(l->hdr->max_keys, 1)) == NULL) {
		free(k);
		kv_log_warnx("KV0759", "cluster: out of memory");
		return NULL;
	}
	k->l = l;
	strcpy(k->cursor, "0");
	return k;
}

void
kv_cluster_keys_free(struct kv_cluster_keys *k)
{
	if (k == NULL)
		return;
	free(k->seen);
	free(k);
}

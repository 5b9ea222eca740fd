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
#include "shm/keys.h"

#define KEYS_PASS_MS	1000	/* a new pass at most this often */
#define KEYS_PAGE	"128"	/* HSCAN COUNT: a page stays far below resp's bounds */
#define KEYS_LINKS_MAX	16	/* secrets of one account carried (rotations) */
#define KEYS_STATE_MAX	(128 + KV_LABEL_MAX + KEYS_LINKS_MAX * 67)

#define ST_REVOKED	0x1u
#define ST_ROTATED	0x2u

struct kv_cluster_keys {
	struct kv_ledger	*l;
	struct kv_redis		*r;
	unsigned char		*seen;		/* per slot: Redis has its state, this pass */
	char			 cursor[24];	/* of the HSCAN pass; "0" starts one */
	int			 inflight;	/* an HSCAN page awaits its reply */
	int64_t			 next_ms;
	int			 clash_warned;
	int			 page_warned;	/* KV0776 logged, until a page comes */
};

/* One account's state, parsed or read from the ledger. */
struct kstate {
	unsigned	 flags;
	int64_t		 budget, rpm, tpm, period, expires;
	char		 label[KV_LABEL_MAX];
	size_t		 nlinks;
	uint8_t		 link[KEYS_LINKS_MAX][32];
	unsigned char	 link_rotated[KEYS_LINKS_MAX];
};

static void
hex32(const uint8_t h[32], char out[65])
{
	static const char d[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 32; i++) {
		out[2 * i] = d[h[i] >> 4];
		out[2 * i + 1] = d[h[i] & 0xf];
	}
	out[64] = '\0';
}

static int
unhex32(const char *s, size_t len, uint8_t h[32])
{
	int i, hi, lo;

	if (len != 64)
		return -1;
	for (i = 0; i < 32; i++) {
		if ((hi = kv_hexval((unsigned char)s[2 * i])) < 0 ||
		    (lo = kv_hexval((unsigned char)s[2 * i + 1])) < 0)
			return -1;
		h[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* ---- the ledger's side --------------------------------------------------- */

/* A's state from the ledger: its flags, limits, and the link slots that
 * name it (its later secrets), in slot order. */
static void
state_read(const struct kv_ledger *l, const struct kv_account *a, struct kstate *s)
{
	uint32_t ai = kv_ledger_account_index(l, a) + 1, i, p;

	memset(s, 0, sizeof(*s));
	if (atomic_load(&a->aflags) & KV_AF_REVOKED)
		s->flags |= ST_REVOKED;
	if (atomic_load(&a->aflags) & KV_AF_ROTATED)
		s->flags |= ST_ROTATED;
	s->budget = atomic_load(&a->budget_nusd);
	s->rpm = atomic_load(&a->rpm);
	s->tpm = atomic_load(&a->tpm);
	p = atomic_load(&a->period);
	s->period = p == 0 ? -1 : (int64_t)p - 1;
	s->expires = atomic_load(&a->expires);
	memcpy(s->label, a->label, sizeof(s->label));
	s->label[sizeof(s->label) - 1] = '\0';
	KV_FOR_EACH_SLOT(l, i) {
		const struct kv_account *k = &l->accounts[i];

		if (s->nlinks == KEYS_LINKS_MAX)
			break;
		if (atomic_load(&k->state) != KV_SLOT_LINK || atomic_load(&k->link) != ai ||
		    atomic_load(&k->link_tag) != atomic_load(&a->tag))
			continue;
		memcpy(s->link[s->nlinks], k->hash, 32);
		s->link_rotated[s->nlinks++] = (atomic_load(&k->aflags) & KV_AF_ROTATED) != 0;
	}
}

static void
state_format(const struct kstate *s, char *out, size_t cap)
{
	size_t n, i;
	char hx[65];

	n = (size_t)snprintf(out, cap, "1 %u %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
	    " %" PRId64 " %s", s->flags, s->budget, s->rpm, s->tpm, s->period, s->expires,
	    s->label);
	for (i = 0; i < s->nlinks && n < cap; i++) {
		hex32(s->link[i], hx);
		n += (size_t)snprintf(out + n, cap - n, " %s:%u", hx, s->link_rotated[i]);
	}
}

/* VALUE (LEN bytes) into S; 0, or -1 when it is not this format. */
static int
state_parse(const char *value, size_t len, struct kstate *s)
{
	char buf[KEYS_STATE_MAX], *tok, *save;
	int used = 0;

	memset(s, 0, sizeof(*s));
	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, value, len);
	buf[len] = '\0';
	if (sscanf(buf, "1 %u %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64
	    " %47s%n", &s->flags, &s->budget, &s->rpm, &s->tpm, &s->period, &s->expires,
	    s->label, &used) != 7 || used == 0)
		return -1;
	for (tok = strtok_r(buf + used, " ", &save); tok != NULL;
	    tok = strtok_r(NULL, " ", &save)) {
		if (s->nlinks == KEYS_LINKS_MAX || strlen(tok) != 66 || tok[64] != ':' ||
		    unhex32(tok, 64, s->link[s->nlinks]) == -1)
			return -1;
		s->link_rotated[s->nlinks++] = tok[65] == '1';
	}
	return 0;
}

/* Issue the account HASH that another host made, as it was made there. */
static struct kv_account *
import(struct kv_cluster_keys *k, const uint8_t hash[32], const struct kstate *s)
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
merge(struct kv_cluster_keys *k, struct kv_account *a, const struct kstate *s)
{
	struct kv_account *ln[KEYS_LINKS_MAX];
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
	if (s->flags & ST_ROTATED)
		kv_keys_rotated_out(a, (int64_t)time(NULL));
	if (s->flags & ST_REVOKED)
		(void)kv_keys_revoke(a);
}

/* ---- Redis's side ------------------------------------------------------------ */

static void
on_written(void *arg, const struct kv_resp_value *v)
{
	(void)arg;
	if (v != NULL && v->type == KV_RESP_ERROR)
		kv_log_warnx("KV0773", "cluster: writing an issued key to Redis: %.*s",
		    (int)(v->len > 200 ? 200 : v->len), v->str);
}

/* L's state holds everything R's does and no more: the same flags and the
 * same secrets. Budget and limits are not compared: they are the lease
 * sync's after the issuing, and hosts may briefly (or, for limits set on one
 * host, lastingly) disagree, which must not make them overwrite each other
 * every pass. */
static int
same_growth(const struct kstate *l, const struct kstate *r)
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

/* Into local state S, the secrets REMOTE has rotated out that S lacks
 * (their links reclaimed here): a host that has not merged the rotation
 * yet must still learn of it, and Redis's state only grows. */
static void
keep_rotated(struct kstate *s, const struct kstate *r)
{
	size_t i, j;

	for (i = 0; i < r->nlinks && s->nlinks < KEYS_LINKS_MAX; i++) {
		if (!r->link_rotated[i])
			continue;
		for (j = 0; j < s->nlinks; j++)
			if (memcmp(s->link[j], r->link[i], 32) == 0)
				break;
		if (j < s->nlinks)
			continue;
		memcpy(s->link[s->nlinks], r->link[i], 32);
		s->link_rotated[s->nlinks++] = 1;
	}
}

/* HSET the field of account A to its state in the ledger, unless Redis's
 * (REMOTE; NULL: none) has grown as far. */
static void
publish(struct kv_cluster_keys *k, const struct kv_account *a, const struct kstate *remote)
{
	struct kstate s;
	char value[KEYS_STATE_MAX], field[65];
	const char *argv[4];
	size_t lens[4];

	state_read(k->l, a, &s);
	if (remote != NULL)
		keep_rotated(&s, remote);
	if (remote != NULL && same_growth(&s, remote))
		return;
	state_format(&s, value, sizeof(value));
	hex32(a->hash, field);
	argv[0] = "HSET";
	argv[1] = KV_REDIS_ISSUED;
	argv[2] = field;
	argv[3] = value;
	lens[0] = 4;
	lens[1] = strlen(KV_REDIS_ISSUED);
	lens[2] = 64;
	lens[3] = strlen(value);
	/* A full output buffer: the next pass finds it missing again. */
	(void)kv_redis_call(k->r, 4, argv, lens, on_written, k);
}

/* One FIELD, VALUE pair of kv:issued. */
static void
take(struct kv_cluster_keys *k, const struct kv_resp_value *f, const struct kv_resp_value *v)
{
	struct kv_account *a;
	struct kstate s;
	uint8_t hash[32];

	if (f->type != KV_RESP_BULK || v->type != KV_RESP_BULK ||
	    unhex32(f->str, f->len, hash) == -1 || state_parse(v->str, v->len, &s) == -1)
		return;
	a = kv_ledger_account(k->l, hash, 0, NULL, 0);
	if (a == NULL && errno == ENOENT && !(s.flags & ST_REVOKED))
		a = import(k, hash, &s);
	if (a == NULL || !kv_slot_ready(&a->state) ||
	    !(atomic_load(&a->aflags) & KV_AF_ISSUED))
		return;
	merge(k, a, &s);
	k->seen[kv_ledger_account_index(k->l, a)] = 1;
	publish(k, a, &s);
}

/* The pass is over: every issued account Redis did not show gets written. */
static void
pass_done(struct kv_cluster_keys *k)
{
	uint32_t i;

	KV_FOR_EACH_SLOT(k->l, i) {
		struct kv_account *a = &k->l->accounts[i];

		if (!k->seen[i] && kv_slot_ready(&a->state) &&
		    (atomic_load(&a->aflags) & KV_AF_ISSUED))
			publish(k, a, NULL);
	}
	memset(k->seen, 0, k->l->hdr->max_keys);
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
		if (now_ms < k->next_ms)
			return;
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

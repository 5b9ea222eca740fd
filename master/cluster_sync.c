/* One lease sync of a host with Redis (see cluster.h, docs/cluster.md):
 * the script loaded, each account's figures put in a call of BATCH keys,
 * the call sent, and its reply applied to the accounts' leases.
 *
 * Units: Redis counts host H's spend as u = base + the account's local
 * spent_nusd, where base is spend a local reset cleared (it stays spent in
 * Redis). The grant g is in the same units, so the local cap is g - base.
 * The cap is only ever raised from a reply (what Redis granted) and is
 * lowered here before anything is returned, so this host never admits
 * past what Redis counts as its commitment. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/cluster_sync.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/redis_keys.h"
#include "master/cluster_lease.h"
#include "master/redis.h"
#include "shm/keys.h"
#include "shm/lease.h"

/* The heartbeat of this instance's hold on its host id (kv:hb:H), renewed
 * at every sync: a host that dies without stopping holds it this long, so
 * its restart waits at most this for it. */
#define HB_MS		(4 * SYNC_MS)

extern const char kv_cluster_sync_lua[];

/* ---- script loading ------------------------------------------------------ */

static void
on_loaded(void *arg, const struct kv_resp_value *v)
{
	struct kv_cluster_host *h = arg;

	if (v == NULL)
		return;
	if (v->type != KV_RESP_BULK || v->nil || v->len != 40) {
		kv_log_warnx("KV0754", "redis: SCRIPT LOAD failed: %.*s", (int)v->len,
		    v->str ? v->str : "");
		atomic_fetch_add(&h->l->hdr->counters.cluster_redis_errors_total, 1);
		kv_redis_reset(h->redis, "no lease script");
		return;
	}
	memcpy(h->sha, v->str, 40);
	h->sha[40] = '\0';
	h->next_sync_ms = 0;	/* sync now */
}

void
kv_cluster_load_script(struct kv_cluster_host *h)
{
	const char *argv[3] = { "SCRIPT", "LOAD", kv_cluster_sync_lua };
	size_t lens[3] = { 6, 4, strlen(kv_cluster_sync_lua) };

	h->sha[0] = '\0';
	if (kv_redis_call(h->redis, 3, argv, lens, on_loaded, h) == -1)
		kv_redis_reset(h->redis, "cannot queue SCRIPT LOAD");
}

/* ---- building a sync ----------------------------------------------------- */

static int64_t
key_ttl(enum kv_period p)
{
	switch (p) {
	case KV_PERIOD_DAILY:	return 2 * 86400;
	case KV_PERIOD_WEEKLY:	return 14 * 86400;
	case KV_PERIOD_MONTHLY:	return 62 * 86400;
	default:		return 0;
	}
}


#define ARGS_PER	19
#define HEAD_ARGS	8	/* host, incarnation, ttl, share, instance, heartbeat,
				   final, departed: ARGV[1..8] */
#define FIELDS		11	/* per key in the script's reply */
#define NUMBUF		24

struct callbuf {
	const char	*argv[3 + 2 * BATCH + HEAD_ARGS + BATCH * ARGS_PER];
	size_t		 lens[3 + 2 * BATCH + HEAD_ARGS + BATCH * ARGS_PER];
	char		 keys[2 * BATCH][112];
	char		 nums[HEAD_ARGS + BATCH * ARGS_PER][NUMBUF];
	int		 argc, nn;
};

static void
arg_str(struct callbuf *cb, const char *s, size_t len)
{
	cb->argv[cb->argc] = s;
	cb->lens[cb->argc++] = len;
}

static void
arg_num(struct callbuf *cb, int64_t v)
{
	int n = snprintf(cb->nums[cb->nn], NUMBUF, "%" PRId64, v);

	arg_str(cb, cb->nums[cb->nn++], (size_t)n);
}

/* One rate limit's figures for a sync: used, want, floor, need; the cap
 * is lowered first when part of the lease goes back (see admit()). */
static void
rl_args(struct kv_cluster_host *h, struct kv_account *a, enum kv_lease_rate which,
    struct rlease *r, _Atomic int64_t *usedw, _Atomic int64_t *resw, uint32_t lim,
    int64_t need, int64_t least, struct callbuf *ab)
{
	int64_t used = atomic_load(usedw), res = resw ? atomic_load(resw) : 0, want;

	r->cap = kv_lease_rate_cap(a, which);
	if (lim == 0) {
		want = used;
		need = 0;
	} else
		want = used + res + kv_cluster_rl_free(h, a, r, used, res, need, least, lim);
	if (want < r->granted && r->granted - (want - used) / 2 <= want && lim != 0)
		want = r->granted;	/* hold up to half again the demand */
	if (want < r->granted) {
		kv_cluster_rl_cap_lower(a, which, r, want);
		res = resw ? atomic_load(resw) : 0;
		used = atomic_load(usedw);
	}
	if (want < used + res)
		want = used + res;
	arg_num(ab, used);
	arg_num(ab, want);
	arg_num(ab, used + res);
	arg_num(ab, need);
}

/* The two keys of account A in Redis, its period's and its rate limits',
 * into KB for the batch's next entry. */
static void
key_names(struct batch *b, struct callbuf *kb, const struct kv_account *a, int64_t period)
{
	char hex[65];
	int k;

	for (k = 0; k < 32; k++)
		snprintf(hex + 2 * k, 3, "%02x", a->hash[k]);
	k = snprintf(kb->keys[b->n], sizeof(kb->keys[0]), KV_REDIS_PERIOD_FMT, hex, period);
	arg_str(kb, kb->keys[b->n], (size_t)k);
	snprintf(kb->keys[BATCH + b->n], sizeof(kb->keys[0]), KV_REDIS_RATE_FMT, hex);
}

/* The budget lease's figures for a sync: used, want, floor, need, the
 * budget to set and the budget, the keys' ttl. Returns the budget. */
static int64_t
budget_args(struct kv_cluster_host *h, struct kv_account *a, struct acct *s, int64_t base,
    struct callbuf *ab)
{
	int64_t spent, reserved, u, floor, want, need, budget, bs;

	reserved = atomic_load(&a->reserved_nusd);
	u = base + s->last_spent;
	need = kv_lease_need_take(a);
	want = u + reserved + kv_cluster_free_want(h, a, s, u, reserved, need);
	/* Hold a lease up to half again the demand: returning and
	 * re-leasing on every wobble of the rate would refuse requests. */
	if (want < s->granted && s->granted - want <= (want - u) / 2 && !s->open)
		want = s->granted;
	if (want < s->granted && !s->open) {
		/* Returning: stop admitting past WANT first, then see what the
		 * workers hold (an admission racing the lowering is either
		 * refused by the new cap or seen in reserved below). */
		kv_cluster_cap_lower(a, s, want - base);
		reserved = atomic_load(&a->reserved_nusd);
		spent = kv_account_spent(a);
		if (spent > s->last_spent) {
			s->last_spent = spent;
			u = base + spent;
		}
	}
	floor = u + reserved;
	if (want < floor)
		want = floor;
	budget = atomic_load(&a->budget_nusd);
	/* A budget changed here since the last agreement with Redis (kvctl,
	 * the admin API, a reload) goes to Redis; at the first sync after a
	 * start the host adopts Redis's, so a restart does not undo a change
	 * made elsewhere. */
	bs = s->known_budget != -1 && budget != s->known_budget ? budget : -1;
	arg_num(ab, u);
	arg_num(ab, want);
	arg_num(ab, floor);
	arg_num(ab, need);
	arg_num(ab, bs);
	arg_num(ab, budget);
	arg_num(ab, key_ttl(kv_keys_period(a, h->period)));
	return budget;
}

/* The rate limits' figures for a sync: rpm, tpm, then each limit's. */
static void
rate_args(struct kv_cluster_host *h, struct kv_account *a, struct acct *s, struct callbuf *ab)
{
	uint32_t rpm = atomic_load(&a->rpm), tpm = atomic_load(&a->tpm);
	int64_t rneed = kv_lease_rate_need_take(a);

	arg_num(ab, rpm);
	arg_num(ab, tpm);
	rl_args(h, a, KV_LEASE_REQUESTS, &s->rl[0], &a->rl_req_used, NULL, rpm,
	    rneed > 0, 1, ab);
	if (rneed - 1 > s->rl[1].big)
		s->rl[1].big = rneed - 1;
	rl_args(h, a, KV_LEASE_TOKENS, &s->rl[1], &a->rl_tok_used, &a->rl_tok_reserved, tpm,
	    rneed > 1 ? rneed - 1 : 0, s->rl[1].big, ab);
}

/* The account's figures for one sync: returns 0, or -1 to leave it out. */
static int
add_account(struct kv_cluster_host *h, struct batch *b, struct callbuf *kb,
    struct callbuf *ab, uint32_t i)
{
	struct kv_account *a = &h->l->accounts[i];
	struct acct *s = &h->acct[i];
	int64_t base;

	if (!kv_slot_ready(&a->state) || s->inflight)
		return -1;
	kv_cluster_follow_local(a, s, kv_cluster_acct_period(h, a), kv_account_spent(a));
	s->cap = atomic_load(&a->lease_cap_nusd);
	base = atomic_load(&a->cluster_base_nusd);
	key_names(b, kb, a, s->period);
	b->budget[b->n] = budget_args(h, a, s, base, ab);
	rate_args(h, a, s, ab);
	/* A reset asked for here (kvctl reset, the admin API) is done in
	 * Redis for every host; the flag is cleared once Redis has it. The
	 * zero point is what resets here cleared: Redis counts this host's
	 * spend above it, as the ledger does. */
	b->reset[b->n] = kv_lease_reset_asked(a);
	arg_num(ab, b->reset[b->n]);
	arg_num(ab, base);
	b->idx[b->n] = i;
	b->period[b->n] = s->period;
	b->n++;
	s->inflight = 1;
	return 0;
}

/* ---- a sync's reply ------------------------------------------------------ */

static int
reply_fields(const struct kv_resp_value *v, int64_t f[FIELDS])
{
	size_t j;

	if (v->type != KV_RESP_ARRAY || v->nil || v->n != FIELDS)
		return -1;
	for (j = 0; j < FIELDS; j++)
		if (kv_resp_int(&v->elem[j], &f[j]) == -1)
			return -1;
	return 0;
}


static void
apply(struct kv_cluster_host *h, struct batch *b, size_t j, const int64_t f[FIELDS])
{
	uint32_t i = b->idx[j];
	struct kv_account *a = &h->l->accounts[i];
	struct acct *s = &h->acct[i];
	int64_t base, cur, exp;

	s->refused = 0;
	if (b->reset[j])
		kv_lease_reset_done(a);
	if (s->period != b->period[j])
		return;		/* the period rolled meanwhile: figures are stale */
	if (s->resets >= 0 && f[9] > s->resets)
		kv_cluster_reset_local(a, s);
	else
		kv_cluster_zero_follow(a, s, f[10]);
	s->resets = f[9];
	base = atomic_load(&a->cluster_base_nusd);
	if (s->open)
		kv_cluster_overdraft(h, a, s, f[1]);
	kv_cluster_rl_apply(a, KV_LEASE_REQUESTS, &s->rl[0], atomic_load(&a->rpm), f[5], f[6]);
	kv_cluster_rl_apply(a, KV_LEASE_TOKENS, &s->rl[1], atomic_load(&a->tpm), f[7], f[8]);
	s->granted = f[0];
	s->deadline_ms = b->sent_ms + (int64_t)h->c.lease_ttl * 1000 - SYNC_MS;
	kv_lease_view_set(a, f[3], f[4], (int64_t)time(NULL) * 1000 +
	    (int64_t)h->c.lease_ttl * 1000);
	exp = b->budget[j];
	if (kv_lease_budget_adopt(a, &exp, f[2]))
		s->known_budget = f[2];
	/* A reset or period roll since the send zeroed the cap: leave it to
	 * the next sync, which sees the new base or period. */
	cur = s->cap;
	if (kv_lease_cap_grant(a, &cur, f[0] - base))
		s->cap = f[0] - base;
}


/* The script refused key j of the batch (KVOVERFLOW: one of its figures
 * would pass int64 nano-dollars) and wrote nothing for it: its lease is
 * not renewed, so the key closes at its deadline. Logged once until a
 * reply for the key applies again. */
static void
refused(struct kv_cluster_host *h, struct batch *b, size_t j, const struct kv_resp_value *e)
{
	struct acct *s = &h->acct[b->idx[j]];
	const char *label = h->l->accounts[b->idx[j]].label;

	if (s->refused)
		return;
	s->refused = 1;
	kv_log_warnx("KV0777", "cluster: Redis refused the lease of key %s (slot %u): "
	    "%.*s; it admits nothing past its lease until its figures fit",
	    label[0] ? label : "(unnamed)", b->idx[j],
	    e->type == KV_RESP_ERROR ? (int)e->len : 16,
	    e->type == KV_RESP_ERROR ? e->str : "unexpected reply");
}

/* Another instance holds this host id in Redis (HOLDER, as kv:hb:H has
 * it): Redis did nothing for this call. Two live instances under one
 * host_id would admit against one grant, so this one leases nothing
 * until the holder's heartbeat lapses. This ledger's own last run (a
 * restart after a crash) is waited for quietly, for at most two
 * heartbeats; anything else is a clash, logged once naming both. */
static void
clashed(struct kv_cluster_host *h, const char *holder, size_t len)
{
	int64_t now = kv_now_ms();
	char prev[24];
	int own, first = !h->clash;

	if (first) {
		h->clash = 1;
		h->clash_since_ms = now;
		atomic_store(&h->l->hdr->cluster_up, 0);
		kv_cluster_close_all(h);
	}
	if (h->clash_warned)
		return;
	snprintf(prev, sizeof(prev), "%016" PRIx64 " ", h->prev_instance);
	own = h->prev_instance != 0 && !h->held && len > strlen(prev) &&
	    memcmp(holder, prev, strlen(prev)) == 0;
	if (own && now - h->clash_since_ms < 2 * HB_MS) {
		if (first)
			kv_log_info("cluster: host_id %s is still held by this ledger's last "
			    "run (%.*s); leasing once its heartbeat lapses", h->c.host_id,
			    (int)len, holder);
		return;
	}
	h->clash_warned = 1;
	if (h->held)
		kv_log_warnx("KV0766", "cluster: host_id %s was taken by another live "
		    "instance (%.*s) from this one (%s): this one stops leasing; give "
		    "each host its own host_id", h->c.host_id, (int)len, holder, h->me);
	else
		kv_log_warnx("KV0765", "cluster: host_id %s is held by another live "
		    "instance (%.*s): this one (%s) does not lease while it is; give "
		    "each host its own host_id", h->c.host_id, (int)len, holder, h->me);
}

static void
on_synced(void *arg, const struct kv_resp_value *v)
{
	struct batch *b = arg;
	struct kv_cluster_host *h = b->h;
	const struct kv_resp_value *list;
	int64_t f[FIELDS];
	size_t j;

	h->inflight--;
	for (j = 0; j < b->n; j++)
		h->acct[b->idx[j]].inflight = 0;
	if (h->kicked && h->inflight == 0) {
		h->kicked = 0;
		h->next_sync_ms = 0;	/* the parked request's account was in flight */
	}
	if (v == NULL)
		goto out;
	if (v->type == KV_RESP_ERROR) {
		atomic_fetch_add(&h->l->hdr->counters.cluster_redis_errors_total, 1);
		if (v->len >= 8 && memcmp(v->str, "NOSCRIPT", 8) == 0) {
			kv_cluster_load_script(h);
			goto out;
		}
		if (v->len >= 8 && memcmp(v->str, "KVCLASH ", 8) == 0) {
			clashed(h, v->str + 8, v->len - 8);
			goto out;
		}
		kv_log_warnx("KV0755", "redis: lease script failed: %.*s", (int)v->len, v->str);
		goto out;
	}
	if (v->type != KV_RESP_ARRAY || v->nil || v->n != 2 ||
	    v->elem[1].type != KV_RESP_ARRAY || v->elem[1].n != b->n) {
		kv_log_warnx("KV0756", "redis: lease script: unexpected reply");
		goto out;
	}
	list = &v->elem[1];
	for (j = 0; j < b->n; j++)
		if (reply_fields(&list->elem[j], f) == 0)
			apply(h, b, j, f);
		else
			refused(h, b, j, &list->elem[j]);
	if (h->clash) {
		kv_log_info("cluster: host_id %s is this instance's now (%s)", h->c.host_id,
		    h->me);
		h->next_sync_ms = 0;	/* the accounts, at once */
	}
	h->clash = h->clash_warned = 0;
	h->held = 1;
	h->last_ok_ms = kv_now_ms();
	atomic_store(&h->l->hdr->cluster_up, 1);
	atomic_store(&h->l->hdr->cluster_synced_ms, (int64_t)time(NULL) * 1000);
	atomic_fetch_add(&h->l->hdr->counters.cluster_syncs_total, 1);
	if (h->warned_down) {
		kv_log_info("cluster: leases synced with Redis again");
		h->warned_down = 0;
	}
out:
	free(b);
}

static void
send_batch(struct kv_cluster_host *h, struct batch *b, struct callbuf *kb,
    struct callbuf *ab)
{
	static struct callbuf cb;
	char nk[NUMBUF];
	int i;

	cb.argc = cb.nn = 0;
	arg_str(&cb, "EVALSHA", 7);
	arg_str(&cb, h->sha, 40);
	snprintf(nk, sizeof(nk), "%zu", 2 * b->n);
	arg_str(&cb, nk, strlen(nk));
	for (i = 0; i < kb->argc; i++)
		arg_str(&cb, kb->argv[i], kb->lens[i]);
	for (i = 0; i < (int)b->n; i++)	/* then each key's rate-limit hash */
		arg_str(&cb, kb->keys[BATCH + i], strlen(kb->keys[BATCH + i]));
	for (i = 0; i < ab->argc; i++)
		arg_str(&cb, ab->argv[i], ab->lens[i]);
	b->sent_ms = kv_now_ms();
	if (kv_redis_call(h->redis, cb.argc, cb.argv, cb.lens, on_synced, b) == -1) {
		for (i = 0; i < (int)b->n; i++)
			h->acct[b->idx[i]].inflight = 0;
		free(b);
		return;
	}
	h->inflight++;
}

void
kv_cluster_sync_all(struct kv_cluster_host *h, int final)
{
	static struct callbuf kb, ab;
	uint32_t i, max = h->l->hdr->max_keys;
	struct batch *b = NULL;
	int sent = 0;

	if (!kv_redis_ready(h->redis) || h->sha[0] == '\0')
		return;
	for (i = 0; i < max; i++) {
		if (b == NULL) {
			if ((b = calloc(1, sizeof(*b))) == NULL)
				return;
			b->h = h;
			b->final = final;
			kb.argc = kb.nn = ab.argc = ab.nn = 0;
			arg_str(&ab, h->c.host_id, strlen(h->c.host_id));
			arg_str(&ab, h->inc, strlen(h->inc));
			arg_num(&ab, (int64_t)h->c.lease_ttl * 1000);
			arg_num(&ab, h->c.lease_share);
			arg_str(&ab, h->me, strlen(h->me));
			arg_num(&ab, HB_MS);
			arg_num(&ab, final);
			arg_num(&ab, (int64_t)h->c.departed_after * 1000);
		}
		/* while another instance holds the host id, only ask for it */
		if (h->clash || add_account(h, b, &kb, &ab, i) == -1 || b->n < BATCH)
			continue;
		send_batch(h, b, &kb, &ab);
		sent = 1;
		b = NULL;
	}
	/* A call with no account still renews (or, final, releases) the
	 * hold on the host id. */
	if (b != NULL && (b->n > 0 || !sent))
		send_batch(h, b, &kb, &ab);
	else
		free(b);
}

/* The peer picker: several targets per upstream, health and failover;
 * see peer.h. No buffers: the engine resets the attempt. */
#include "worker/peer.h"
#include "worker/admission_tree.h"

#include <netinet/in.h>
#include <linux/tcp.h>	/* tcpi_bytes_acked: glibc's tcp_info lacks it */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "shm/targets.h"

#define KV_COOL_DEFAULT_S	5	/* a 429/503 without retry-after */
#define KV_COOL_MAX_S		300

/* U's slot in the ledger's target table, claimed at its first use (the
 * runtime keeps it: a worker keeps its config for life). */
static int
slot_of(struct kv_conn *c, const struct kv_upstream *u)
{
	struct kv_upstream_rt *rt = kv_upstreams_find(c->w->ups, c->w->cf->nupstreams, u);

	if (rt == NULL)
		return -1;
	if (rt->tslot == KV_TSLOT_UNKNOWN) {
		rt->tslot = kv_target_slot(c->w->ledger, rt->label);
		if (rt->tslot < 0)
			kv_log_warnx("KV0700", "upstream target table full (%d): %s is not "
			    "balanced or health-checked", KV_TARGET_SLOTS, rt->label);
	}
	return rt->tslot;
}

/* Position K of an upstream's targets: 0 is the upstream's own URL. */
static const struct kv_upstream *
target_at(const struct kv_config *cf, const struct kv_upstream *g, int k)
{
	return k == 0 ? g : &cf->upstreams[g->first_extra + (size_t)k - 1];
}

static int
ntargets(const struct kv_upstream *g)
{
	size_t n = 1 + g->nextra;

	return n > 64 ? 64 : (int)n;
}

/* Power of two choices among the targets not tried yet and not ejected;
 * when every one left is ejected, the one back soonest (an upstream never
 * has all its targets out). Returns the position, or -1. */
static int
choose(struct kv_conn *c, int allow_down)
{
	const struct kv_upstream *g = c->ugroup;
	struct kv_ledger *l = c->w->ledger;
	int n = ntargets(g), cand[64], nc = 0, k, a, b, best = -1;
	int64_t soonest = INT64_MAX, until;

	for (k = 0; k < n; k++) {
		int s = slot_of(c, target_at(c->w->cf, g, k));

		if (c->tried & (1ULL << k))
			continue;
		if (!kv_target_down(l, s, c->w->now_ms)) {
			cand[nc++] = k;
			continue;
		}
		until = s >= 0 ? atomic_load(&l->targets[s].down_until_ms) : 0;
		if (until < soonest) {
			soonest = until;
			best = k;
		}
	}
	if (nc == 0)
		return allow_down ? best : -1;
	if (nc == 1)
		return cand[0];
	a = rand() % nc;
	b = rand() % (nc - 1);
	if (b >= a)
		b++;
	a = cand[a];
	b = cand[b];
	return kv_target_inflight(l, slot_of(c, target_at(c->w->cf, g, b))) <
	    kv_target_inflight(l, slot_of(c, target_at(c->w->cf, g, a))) ? b : a;
}

static void
use_target(struct kv_conn *c, int k)
{
	const struct kv_config *cf = c->w->cf;
	const struct kv_upstream *t = target_at(cf, c->ugroup, k);
	int s = slot_of(c, t);

	c->tpos = k;
	c->tried |= 1ULL << k;
	c->rt = kv_upstreams_find(c->w->ups, cf->nupstreams, t);
	c->tslot1 = s + 1;
	c->tlabel = c->rt != NULL ? c->rt->label : "-";
	if (c->ugroup->nextra > 0 || c->fell_back)
		c->upstream_name = c->tlabel;
	kv_target_count(c->w->ledger, c->w->slot, s, 1);
	if (s >= 0)
		atomic_fetch_add(&c->w->ledger->targets[s].requests, 1);
}

void
peer_pick(struct kv_conn *c, const struct kv_upstream *up)
{
	int k;

	c->ugroup = up;
	c->tried = 0;
	c->t_first_try_ms = c->w->now_ms;
	k = choose(c, 1);
	use_target(c, k < 0 ? 0 : k);
}

void
peer_finish(struct kv_conn *c)
{
	if (c->tslot1 > 0)
		kv_target_count(c->w->ledger, c->w->slot, c->tslot1 - 1, -1);
	c->tslot1 = 0;
}

int
peer_unacked(const struct kv_conn *c)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (c->att.uc == NULL || kv_stream_tls(&c->att.uc->s))
		return 0;	/* TLS: the handshake itself was acknowledged */
	memset(&ti, 0, sizeof(ti));
	if (getsockopt(c->att.uc->s.fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == -1 ||
	    len < offsetof(struct tcp_info, tcpi_bytes_acked) + sizeof(ti.tcpi_bytes_acked))
		return 0;
	return ti.tcpi_bytes_acked == 0;
}

/* Another target of this upstream, else the fallback upstream's first.
 * Returns 0 with c->rt set, or -1. */
static int
next_target(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	int k = choose(c, 0);

	if (k < 0 && !c->fell_back && c->ugroup->fallback_idx > 0) {
		c->ugroup = &cf->upstreams[c->ugroup->fallback_idx - 1];
		c->fell_back = 1;
		c->tried = 0;
		k = choose(c, 1);
	}
	if (k < 0)
		return -1;
	use_target(c, k);
	return 0;
}

/* May a usable target remain after the current one (not tried, not ejected)? */
static int
others_usable(struct kv_conn *c)
{
	return choose(c, 0) >= 0;
}

/* The target provably got no request it could bill (it refused before
 * reading, or answered 429/503: nothing processed): what marked the request
 * as sent is undone, so that an answer of our own after it charges 0, and
 * the worker's death releases the whole reservation. */
static void
unsend(struct kv_conn *c)
{
	if (!c->req_sent)
		return;
	c->req_sent = 0;
	if (c->adm.resv >= 0)
		kv_ledger_resv_sent(c->w->slot, c->adm.resv, 0);
	tree_sent(c, 0);
}

enum kv_rc
peer_fail(struct kv_conn *c, int status, const char *msg, int safe)
{
	c->att.fail = (struct kv_attempt_fail){ status, msg, safe, 0 };
	return KV_RETRY;
}

enum kv_rc
peer_closed(struct kv_conn *c, int safe)
{
	c->att.fail = (struct kv_attempt_fail){ 502, "upstream closed the connection", safe, 1 };
	return KV_RETRY;
}

int
peer_next(struct kv_conn *c)
{
	const struct kv_upstream *g = c->ugroup;
	const struct kv_attempt_fail *f = &c->att.fail;
	struct kv_ledger *l = c->w->ledger;
	int s = c->tslot1 - 1;
	char was[KV_TARGET_NAME];

	if (f->safe)
		unsend(c);
	if (g == NULL)
		return -1;
	/* A 429 is the target working as told: cooled already, not a failure. */
	if (!c->att.cooled &&
	    kv_target_fail(l, s, c->w->now_ms, g->eject_after, g->eject_secs, others_usable(c)))
		kv_log_warnx("KV0701", "upstream target %s ejected after %d failures in a row",
		    c->tlabel, g->eject_after);
	if (!f->safe || !c->keep_obuf || c->sent_any ||
	    c->w->now_ms - c->t_first_try_ms > (int64_t)g->retry_budget * 1000)
		return -1;
	snprintf(was, sizeof(was), "%s", c->tlabel);
	c->rebuild_from = target_at(c->w->cf, g, c->tpos);
	peer_finish(c);
	if (next_target(c) == -1) {
		c->rebuild_from = NULL;
		c->retry_after = 1;
		return -1;
	}
	if (s >= 0)
		atomic_fetch_add(&l->targets[s].retries, 1);
	kv_log_info("key %s: %s failed (%s): %s to %s", c->req.keyid, was, f->msg,
	    c->fell_back && g != c->ugroup ? "falling back" : "retrying", c->tlabel);
	return 0;
}

static int
retry_after_secs(const struct kv_http_response *res)
{
	const struct kv_http_header *h = kv_http_find(res->headers, res->nheaders, "retry-after");
	long v;
	char buf[16];

	if (h == NULL || h->value_len == 0 || h->value_len >= sizeof(buf))
		return KV_COOL_DEFAULT_S;
	memcpy(buf, h->value, h->value_len);
	buf[h->value_len] = '\0';
	v = strtol(buf, NULL, 10);
	if (v <= 0)
		return KV_COOL_DEFAULT_S;
	return v > KV_COOL_MAX_S ? KV_COOL_MAX_S : (int)v;
}

int
peer_answer(struct kv_conn *c, const struct kv_http_response *res)
{
	struct kv_ledger *l = c->w->ledger;
	int s = c->tslot1 - 1, st = res->status;

	if (c->ugroup == NULL)
		return 0;
	if (st != 429 && st != 502 && st != 503 && st != 504) {
		kv_target_ok(l, s);
		return 0;
	}
	if (st == 502 || st == 504) {
		/* At most once (issue 20): the whole request reached the target,
		 * and a gateway of the provider's that gives up (504) or loses
		 * its backend (502) may do so after the backend read it all and
		 * billed it. Its answer is relayed, never retried elsewhere; it
		 * still counts as a failure of the target. */
		if (kv_target_fail(l, s, c->w->now_ms, c->ugroup->eject_after,
		    c->ugroup->eject_secs, others_usable(c)))
			kv_log_warnx("KV0701", "upstream target %s ejected after %d failures "
			    "in a row", c->tlabel, c->ugroup->eject_after);
		return 0;
	}
	if (st == 429 || (st == 503 && kv_http_find(res->headers, res->nheaders, "retry-after")))
		kv_target_cool(l, s, c->w->now_ms, retry_after_secs(res));
	c->att.cooled = st == 429;
	if (!c->keep_obuf || c->sent_any ||
	    c->w->now_ms - c->t_first_try_ms > (int64_t)c->ugroup->retry_budget * 1000)
		return 0;
	/* Someone else to ask: this target's own answer is not relayed. */
	return others_usable(c) || (!c->fell_back && c->ugroup->fallback_idx > 0);
}

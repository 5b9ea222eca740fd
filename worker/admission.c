/* The admission phase, once the body is whole: what the scan said, the
 * route, the endpoint policy, the memory guard, the account, the price,
 * the worst-case reservation, the rate limits and the wait for this
 * host's cluster lease; then the first target is picked (peer.c). */
#include "worker/admission.h"
#include "worker/admission_tree.h"
#include "worker/azure_admit.h"
#include "worker/tree_rate.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/bedrock_path.h"
#include "common/log.h"
#include "common/money.h"
#include "common/pricetab.h"
#include "worker/charge_rules.h"
#include "worker/endpoints.h"
#include "worker/price_dims.h"
#include "worker/leasewait.h"
#include "worker/credential.h"
#include "worker/peer.h"
#include "worker/ratelimit_headers.h"
#include "worker/reply.h"
#include "worker/route_hint.h"
#include "worker/vertex_req.h"
#include "shm/keys.h"

/* A bedrock (or vertex, or Entra ID's azure) upstream spends the
 * operator's AWS (Google Cloud, Azure) account: virtual keys, as with
 * api_key set. */
static int
virtual_keys(const struct kv_upstream *up)
{
	return up->api_key != NULL || up->provider == KV_PROVIDER_BEDROCK ||
	    up->provider == KV_PROVIDER_VERTEX || up->tenant[0] != '\0';
}

/* Inline images bill by their size, not their bytes (media_bound.h): the
 * rule of the model's family, or the dearest rule for a model it does not
 * know (an upstream's model_map can send any name). */
static int64_t
image_tokens(const struct kv_conn *c, const struct kv_price *p)
{
	int rule, i;
	int64_t t = 0;

	if (c->req.ri.images == 0)
		return 0;
	rule = kv_media_rule_for(c->req.ri.model[0] ? c->req.ri.model : p->model,
	    c->req.api == KV_API_ANTHROPIC_MESSAGES);
	if (rule >= 0)
		return c->req.ri.img_tok[rule];
	for (i = 0; i < KV_IMG_NRULES; i++)
		if (c->req.ri.img_tok[i] > t)
			t = c->req.ri.img_tok[i];
	return t;
}

/* Sampling turns a server-tool loop may take: the first, and one after
 * each call its tools allow (max_uses, else [budget] max_tool_turns; a
 * Responses max_tool_calls caps them all). */
static int64_t
tool_turns(const struct kv_conn *c)
{
	const struct kv_request_info *ri = &c->req.ri;
	int64_t calls = ri->tool_uses + ri->tools_unbounded * c->w->cf->max_tool_turns;

	if (ri->max_tool_calls >= 0 && calls > ri->max_tool_calls)
		calls = ri->max_tool_calls;
	return 1 + calls;
}

/* The worst case the provider can bill for this request (DESIGN 9):
 * input: every body byte (a token is at least one byte), or the model's
 * context window when the provider fetches or recalls content the body
 * does not show; output: max(n, best_of, 1) x the largest output limit the
 * request names, else the model's max_output, else reserve_output_tokens. */
static int64_t
estimate_nusd(struct kv_conn *c, const struct kv_price *p)
{
	const struct kv_config *cf = c->w->cf;
	struct kv_usage est = { 0 };
	int64_t cost, lim, turns;

	if (p == NULL || c->req.api == KV_API_OTHER)
		return 0;
	est.input = c->req.body_bytes + image_tokens(c, p) + c->req.ri.hidden;
	if (c->req.ri.fetches[0] != '\0' && p->context_window > est.input)
		est.input = p->context_window;
	/* A server-tool loop bills each internal turn's input, up to a
	 * context window each, and each call's fee (issue 20). */
	turns = tool_turns(c);
	if (turns > 1 && p->context_window > 0)
		est.input = p->context_window * turns;
	est.web_search = c->req.ri.ws_uses + c->req.ri.ws_unbounded * cf->max_tool_turns;
	est.web_fetch = c->req.ri.wf_uses + c->req.ri.wf_unbounded * cf->max_tool_turns;
	lim = c->req.ri.max_output >= 0 ? c->req.ri.max_output :
	    p->max_output > 0 ? p->max_output : cf->reserve_output_tokens;
	/* the thinking is output too, within the limit named (Anthropic's
	 * rule); without one, and without the model's, at least its budget */
	if (c->req.ri.max_output < 0 && p->max_output <= 0 && c->req.ri.thinking > lim)
		lim = c->req.ri.thinking;
	/* Gemini's thoughts are billed as output beside the answer: its
	 * budget, or the model's whole output when the model decides */
	if (c->req.api == KV_API_GEMINI)
		lim += c->req.ri.thinking >= 0 ? c->req.ri.thinking :
		    c->req.ri.thinking == KV_REQ_THINK_DYNAMIC ? (p->max_output > 0 ?
		    p->max_output : cf->reserve_output_tokens) : 0;
	est.output = c->req.api == KV_API_OPENAI_EMBEDDINGS ||
	    c->req.api == KV_API_GEMINI_EMBED ? 0 : c->req.ri.mult * lim;
	c->adm.out_bound = est.output;
	/* the response may say it ran on any tier the section prices (the
	 * client asks for one in the body): reserve for the dearest */
	if (p->priority_input >= 0 || p->flex_input >= 0)
		est.tier = KV_TIER_OTHER;
	kv_dims_reserve(p, &c->req.ri, c->req.api == KV_API_ANTHROPIC_MESSAGES ||
	    c->req.api == KV_API_BEDROCK_CONVERSE,
	    kv_dims_region(c->rt != NULL ? c->rt->cf : NULL), &est);
	if (kv_cost(p, &est, &cost) == -1)
		return INT64_MAX / 4;
	return cost;
}

/* A request whose input the body does not bound needs the model's context
 * window to be reserved; without one it cannot be admitted safely. */
static enum kv_rc
refuse_unbounded(struct kv_conn *c, const struct kv_price *p)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "this request makes the provider fetch or recall "
	    "content (%s) that its body does not bound; set context_window in [price %s] "
	    "so that kilovolt can reserve for it", c->req.ri.fetches,
	    p != NULL ? p->model : c->req.ri.model[0] ? c->req.ri.model : "MODEL");
	return reply_error(c, 400, msg);
}

/* Prices fail closed: a metered request for a model no [price] section
 * matches is refused, never relayed at $0 (unknown_models = deny, or no
 * [price default]). */
static enum kv_rc
refuse_unpriced(struct kv_conn *c)
{
	char msg[384];

	if (c->req.ri.model[0] == '\0')
		return reply_error(c, 400, "the request names no model, and kilovolt "
		    "cannot price it");
	snprintf(msg, sizeof(msg), "model '%s' has no price in kilovolt: add a "
	    "[price %s] section, or set [budget] unknown_models = default to charge "
	    "it at [price default]", c->req.ri.model, c->req.ri.model);
	return reply_error(c, 400, msg);
}

/* A model newer than the only glob that matches it (pricetab.h): logged
 * once per name in this worker (a bounded set: strangers cannot make it
 * grow), then priced by unknown_models. */
static void
note_older_family(const char *model, const struct kv_price *glob)
{
	static uint64_t seen[64];
	static size_t nseen;
	uint64_t h = 1469598103934665603ULL;
	const char *s;
	char esc[512];
	size_t i;

	for (s = model; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	for (i = 0; i < nseen; i++)
		if (seen[i] == h)
			return;
	if (nseen < sizeof(seen) / sizeof(seen[0]))
		seen[nseen++] = h;
	kv_log_warnx("KV0447", "model '%s' is newer than the family [price %s] was written "
	    "for: priced by unknown_models, not as the older family",
	    kv_log_escape(model, (size_t)-1, esc, sizeof(esc)), glob->model);
}

/* A model only an older family's glob matches, under unknown_models = deny. */
static enum kv_rc
refuse_older(struct kv_conn *c, const struct kv_price *glob)
{
	char msg[1536];

	snprintf(msg, sizeof(msg), "model '%s' is newer than the family [price %s] was "
	    "written for, and kilovolt will not charge it as the older one: add a "
	    "[price %s] section (or a catalogue that lists it), or set [budget] "
	    "unknown_models = default", c->req.ri.model, glob->model, c->req.ri.model);
	return reply_error(c, 400, msg);
}

/* A step of admission said no: its answer is *ST = S. */
static int
refused(enum kv_rc *st, enum kv_rc s)
{
	*st = s;
	return -1;
}

/* No account made for a new WHAT ("key" or "user") named WHO: another
 * worker is making it this instant (errno EAGAIN: the request waits for
 * it, leasewait.h), or the table is full. */
static int
not_made(struct kv_conn *c, enum kv_rc *st, const char *what, const char *who)
{
	struct kv_ledger *l = c->w->ledger;

	if (errno == EAGAIN)
		return refused(st, conn_account_park(c, what));
	kv_log_warnx("KV0410", "account table full (max_keys %u): refusing new %s %s",
	    l->hdr->max_keys, what, who);
	/* The master gives back strangers' never-charged slots. */
	atomic_store(&l->hdr->reclaim_wanted, 1);
	c->adm.no_retry = 1;
	return refused(st, reply_error(c, 503, "gateway key table is full"));
}

/* A JWT's user node (jwt_auth.c): its account, made on first sight with
 * [auth jwt] user_budget, as a stranger's key gets one, whatever
 * unknown_keys says (the identity provider vouched for it). */
static int
user_account(struct kv_conn *c, enum kv_rc *st)
{
	const struct kv_config *cf = c->w->cf;
	struct kv_ledger *l = c->w->ledger;
	int64_t budget = cf->auth_jwt.user_budget_nusd >= 0 ? cf->auth_jwt.user_budget_nusd :
	    cf->default_budget_nusd;

	c->adm.acct = kv_ledger_account(l, c->req.keyhash, 1, c->req.user_node, budget);
	if (c->adm.acct == NULL)
		return not_made(c, st, "user", c->req.user_node);
	if (atomic_load(&c->adm.acct->state) != KV_SLOT_READY) {
		c->adm.acct = NULL;
		return refused(st, reply_error(c, 401, "this user's account is not usable"));
	}
	atomic_fetch_or(&c->adm.acct->aflags, KV_AF_NODE);
	/* [auth jwt] user_rpm, user_tpm (unset: the [budget] rpm and tpm a
	 * new account gets): each user's, as a [key]'s, the running buckets
	 * kept; written only when the config's changed */
	if (cf->auth_jwt.user_rpm >= 0 &&
	    atomic_load(&c->adm.acct->rpm) != (uint32_t)cf->auth_jwt.user_rpm)
		atomic_store(&c->adm.acct->rpm, (uint32_t)cf->auth_jwt.user_rpm);
	if (cf->auth_jwt.user_tpm >= 0 &&
	    atomic_load(&c->adm.acct->tpm) != (uint32_t)cf->auth_jwt.user_tpm)
		atomic_store(&c->adm.acct->tpm, (uint32_t)cf->auth_jwt.user_tpm);
	kv_ledger_period_roll(l, c->adm.acct, cf->period, (int64_t)time(NULL));
	return 0;
}

/* The request's account: found, or made for a new key the policy lets
 * in. Returns 0, or -1 with the refusal's step in *st. */
static int
account_of(struct kv_conn *c, enum kv_rc *st)
{
	const struct kv_config *cf = c->w->cf;
	struct kv_ledger *l = c->w->ledger;
	enum kv_key_verdict kv;
	int deny;

	if (c->req.jwt)
		return user_account(c, st);
	/* The master's policy, not this worker's config: an old generation
	 * still draining applies a reload's unknown_keys at once. */
	deny = (atomic_load(&l->hdr->policy) & KV_POLICY_DENY) != 0;
	/* Virtual keys fail closed: an upstream that spends the operator's
	 * provider key (api_key) admits only the configured keys, whatever
	 * unknown_keys says, or any invented bearer string would spend it. */
	if (c->rt != NULL && virtual_keys(c->rt->cf))
		deny = 1;
	c->adm.acct = kv_ledger_account(l, c->req.keyhash, !deny, NULL,
	    cf->default_budget_nusd);
	if (c->adm.acct == NULL) {
		if (errno != EAGAIN && deny)
			return refused(st, reply_error(c, 401, "unknown API key"));
		return not_made(c, st, "key", c->req.keyid);
	}
	/* Issued keys (shm/keys.h): a rotated secret's link names its
	 * account; revoked, rotated-out and expired secrets get 401. */
	if ((kv = kv_keys_admit(l, &c->adm.acct, (int64_t)time(NULL))) != KV_KEY_OK) {
		c->adm.acct = NULL;
		return refused(st, reply_error(c, 401, kv_keys_refusal(kv)));
	}
	kv_key_id(c->adm.acct->hash, c->req.keyid);	/* the account's id, also for a link */
	/* Under deny only the running config's keys and issued ones: a key
	 * removed or rotated out by a reload loses KV_AF_CONFIG at once
	 * (master/key_sync.c). */
	if (deny && !(atomic_load(&c->adm.acct->aflags) & (KV_AF_CONFIG | KV_AF_ISSUED))) {
		c->adm.acct = NULL;
		return refused(st, reply_error(c, 401, "unknown API key"));
	}
	kv_ledger_period_roll(l, c->adm.acct, cf->period, (int64_t)time(NULL));
	return 0;
}

/* The request's price, resolved once and kept on the connection, or the
 * refusal of a request kilovolt cannot bound. Returns 0, or -1 with the
 * refusal's step in *st. */
static int
price_of(struct kv_conn *c, enum kv_rc *st)
{
	const struct kv_config *cf = c->w->cf;
	const struct kv_upstream *up = c->rt != NULL ? c->rt->cf : NULL;
	const struct kv_price *p, *older;
	char msg[512];

	/* by the provider it goes to: a Bedrock id at Bedrock's price */
	p = c->adm.price = kv_charge_price_for(cf, up != NULL ? up->provider : KV_PROVIDER_AUTO,
	    up != NULL ? up->aws_region : NULL, c->req.ri.model, &older);
	if (older != NULL)
		note_older_family(c->req.ri.model, older);
	if (older != NULL && p != NULL)
		c->unpriced_model = 1;	/* at [price default]: marked in the log */
	if (c->req.api == KV_API_OTHER)
		return 0;
	if (p == NULL && older != NULL)
		return refused(st, refuse_older(c, older));
	if (p == NULL)
		return refused(st, refuse_unpriced(c));
	if (c->req.ri.fetches[0] != '\0' && p->context_window <= 0)
		return refused(st, refuse_unbounded(c, p));
	if (kv_dims_refusal(p, &c->req.ri, kv_dims_region(c->rt != NULL ? c->rt->cf : NULL), msg,
	    sizeof(msg)) != NULL)
		return refused(st, reply_error(c, 400, msg));
	if (c->req.ri.tools_unbounded > 0 && cf->max_tool_turns == 0 && c->req.ri.max_tool_calls < 0)
		return refused(st, reply_error(c, 400, "a server tool without max_uses makes the "
		    "provider loop without a bound kilovolt can reserve: set max_uses on "
		    "the tool (or max_tool_calls), or [budget] max_tool_turns"));
	return 0;
}

/* What kv_ledger_reserve's refusal RESV means to the client. */
static enum kv_rc
budget_refusal(struct kv_conn *c, int resv, int64_t amount)
{
	char msg[512], rem[32], need[32];

	c->adm.resv = -1;
	if (resv == -1) {
		atomic_fetch_add(&c->w->ledger->hdr->counters.budget_refusals_total, 1);
		c->adm.refused_key = 1;
		kv_format_dollars(c->adm.remaining, rem, sizeof(rem));
		kv_format_dollars(amount, need, sizeof(need));
		if (c->req.jwt) {	/* the user node: named as the tree's nodes are */
			c->adm.refused_key = 0;
			c->adm.refused_node = c->req.user_node;
		}
		snprintf(msg, sizeof(msg), "budget exceeded for %s%s: %s remaining, "
		    "this request may cost up to %s", c->req.jwt ? "" : "key ",
		    c->req.jwt ? c->req.user_node : c->req.keyid, rem, need);
		return reply_error(c, 402, msg);
	}
	/* The key has budget, but not in this host's lease yet: wait while
	 * the master asks Redis (docs/cluster.md). */
	if (resv == -3)
		return conn_lease_park(c);
	if (resv == -4) {
		/* Retired by the master (never charged, idle) a moment ago. */
		c->retry_after = 1;
		return reply_error(c, 503, "key account was being recycled; retry");
	}
	return reply_error(c, 503, "too many requests in flight");
}

/* The tokens a request can cost at most, as the budget bound counts them:
 * every body byte an input token, plus the output limit it names (else
 * reserve_output_tokens). Endpoints with no usage cost none. */
static int64_t
estimate_tokens(const struct kv_conn *c)
{
	int64_t in, out;

	if (c->req.api == KV_API_OTHER)
		return 0;
	in = c->req.body_done || c->req.chunked ? c->req.body_bytes : c->req.body_bytes + c->req.body_left;
	out = c->req.ri.max_output >= 0 ? c->req.ri.max_output : c->w->cf->reserve_output_tokens;
	if (c->req.api == KV_API_OPENAI_EMBEDDINGS || c->req.api == KV_API_GEMINI_EMBED)
		out = 0;
	return in + out;
}

static void
refusal_message(const struct kv_conn *c, int64_t asked, char *msg, size_t len)
{
	const struct kv_rl_view *v = &c->adm.rl;
	/* a JWT's user, named as the tree's nodes are */
	const char *kind = c->req.jwt ? "" : "key ", *who = c->req.jwt ? c->req.user_node :
	    c->req.keyid;

	if (v->refused_by == 'l')
		snprintf(msg, len, "Rate limit of %s%s: this host's share of the key's "
		    "limits (RPM %u, TPM %u) is being renewed. Please try again in 1s.",
		    kind, who, v->rpm, v->tpm);
	else if (v->refused_by == 'r')
		snprintf(msg, len, "Rate limit reached for %s%s on requests per minute "
		    "(RPM): Limit %u, Remaining %lld. Please try again in %llds.", kind, who,
		    v->rpm, (long long)v->req_remaining, (long long)v->retry_after_s);
	else
		snprintf(msg, len, "Rate limit reached for %s%s on tokens per minute "
		    "(TPM): Limit %u, Remaining %lld, Requested %lld. Please try again in %llds.",
		    kind, who, v->tpm, (long long)v->tok_remaining, (long long)asked,
		    (long long)v->retry_after_s);
}

/* Take the request's rpm and tpm share of its key (shm/ratelimit.h), after
 * the budget reservation. Returns 0 admitted; else the budget reservation
 * is released and the 429 is in *ST. */
static int
rate_admit(struct kv_conn *c, enum kv_rc *st)
{
	struct kv_ledger *l = c->w->ledger;
	struct kv_account *a = c->adm.acct;
	int64_t tokens;
	char msg[640];
	int rc;

	if (atomic_load(&a->rpm) == 0 && atomic_load(&a->tpm) == 0)
		return 0;
	c->adm.rl_on = 1;
	tokens = estimate_tokens(c);
	/* Bracketed, so the master's repair (which recounts the cluster's
	 * reserved tokens from the records) never sees it half-way. */
	kv_ledger_op_begin(l);
	rc = kv_ratelimit_admit(c->w->slot, c->adm.resv, a, tokens, kv_rl_now_ns(),
	    atomic_load(&l->hdr->cluster) != 0, &c->adm.rl);
	kv_ledger_op_end(l);
	if (rc == 0)
		return 0;
	/* Refused: nothing goes upstream, so the budget holds nothing either. */
	tree_rate_undo(c);
	tree_settle(c, 0, 0);
	kv_ledger_settle(l, c->w->slot, c->adm.resv, 0, NULL, NULL);
	c->adm.resv = -1;
	atomic_fetch_add(&a->rate_refusals, 1);
	atomic_fetch_add(&l->hdr->counters.rate_limited_total, 1);
	refusal_message(c, tokens, msg, sizeof(msg));
	if (c->req.jwt)
		c->adm.refused_node = c->req.user_node;
	*st = reply_error(c, 429, msg);
	return -1;
}

static enum kv_rc
reserve(struct kv_conn *c)
{
	int64_t amount;
	enum kv_rc st;

	if (account_of(c, &st) == -1 || price_of(c, &st) == -1)
		return st;
	amount = estimate_nusd(c, c->adm.price);
	c->adm.resv = kv_ledger_reserve(c->w->ledger, c->w->slot, c->adm.acct, amount, &c->adm.remaining);
	if (c->adm.resv < 0)
		return budget_refusal(c, c->adm.resv, amount);
	/* then every node above the key, all or nothing */
	if (tree_admit(c, amount, &st) == -1 ||
	    tree_rate_admit(c, estimate_tokens(c), &st) == -1) {
		tree_settle(c, 0, 0);	/* nothing when tree_admit refused */
		kv_ledger_settle(c->w->ledger, c->w->slot, c->adm.resv, 0, NULL, NULL);
		c->adm.resv = -1;
		return st;
	}
	if (rate_admit(c, &st) == -1)
		return st;
	atomic_fetch_add(&c->w->slot->active_streams, 1);
	c->adm.counted_stream = 1;
	return KV_NEXT;
}

/* The body was read whole: what it says, or a refusal. */
static int
scan_done(struct kv_conn *c, const char **msg)
{
	if (c->req.rs == NULL || kv_reqscan_finish(c->req.rs) == -1) {
		/* nothing said: no limits, one choice */
		memset(&c->req.ri, 0, sizeof(c->req.ri));
		c->req.ri.max_output = -1;
		c->req.ri.mult = 1;
		if (c->req.rs == NULL)
			return 0;
		*msg = c->req.rs->err;
		return 400;
	}
	c->req.ri = c->req.rs->ri;	/* whole: nothing of the default survives it */
	free(c->req.rs);
	c->req.rs = NULL;
	return 0;
}

/* A Bedrock runtime path names its model in the path, not the body (a
 * "model" member there is not what Bedrock runs), and whether it streams
 * (the body's "stream" means nothing to Bedrock). */
static void
bedrock_facts(struct kv_conn *c)
{
	if (c->req.path_model[0] == '\0')
		return;
	memcpy(c->req.ri.model, c->req.path_model, sizeof(c->req.ri.model));
	if (c->req.bedrock)	/* Vertex's Claude says "stream" in its body */
		c->req.ri.stream = c->req.aws_stream;
	if (c->req.gm_stream)	/* Gemini: the method says it */
		c->req.ri.stream = 1;
}

/* The upstream entry a routed request goes to: the control plane's own
 * (config.h control_idx) for a read of Bedrock's control plane. */
static const struct kv_upstream *
entry_of(const struct kv_config *cf, const struct kv_conn *c, const struct kv_upstream *up)
{
	if (up->control_idx == 0 ||
	    kv_br_path(c->req.target, strlen(c->req.target), NULL, NULL) != KV_BR_CONTROL)
		return up;
	return &cf->upstreams[up->control_idx - 1];
}

/* The endpoint policy: metered, free, or refused before anything is
 * reserved or sent. */
static enum kv_rc
admit_endpoint(struct kv_conn *c, const struct kv_upstream *up)
{
	struct kv_endpoint ep;

	kv_endpoint_classify(c->req.method, c->req.target, strlen(c->req.target), up, &ep);
	if (ep.kind == KV_EP_REFUSED)
		return reply_error(c, ep.status, ep.msg);
	c->adm.free_ep = ep.kind == KV_EP_FREE;
	/* A background response is billed later, on a GET kilovolt would
	 * have to meter per response id; refused rather than left unpaid. */
	if (c->req.api == KV_API_OPENAI_RESPONSES && c->req.ri.background)
		return reply_error(c, 400, "background responses are not supported by "
		    "kilovolt: their usage is only reported on a later GET, which it "
		    "cannot charge to this request; send the request without "
		    "\"background\": true");
	return KV_NEXT;
}

/* A WebSocket session (ws_session.c) to an OpenAI upstream: its key's
 * account resolved now, nothing reserved (each turn is, ws_turn.c). */
static enum kv_rc
admit_ws(struct kv_conn *c, const struct kv_upstream *up)
{
	enum kv_rc st;

	if (up->provider != KV_PROVIDER_OPENAI && up->provider != KV_PROVIDER_AUTO)
		return reply_error(c, 404, "kilovolt relays WebSocket sessions (the Responses "
		    "API's WebSocket mode, the Realtime API) to OpenAI upstreams only");
	if (kv_memguard_full(&c->w->mem, c->w->now_ms) && (c->retry_after = KV_MEMGUARD_RETRY_S))
		return reply_error(c, 503, "the gateway is at its memory limit; retry shortly");
	if (account_of(c, &st) == -1)
		return st;
	peer_pick(c, up);
	return KV_NEXT;
}

/* Parked for lease (leasewait.h): the reservation again; parked on,
 * admitted, or refused. */
static enum kv_rc
lease_retry(struct kv_conn *c)
{
	enum kv_rc st = reserve(c);

	if (st == KV_AGAIN && c->adm.lease_parked)
		return st;
	conn_lease_unpark(c);
	if (st == KV_NEXT)
		peer_pick(c, c->rt->cf);
	return st;
}

/* How the client sent its credential, against what UP does with one:
 * KV_NEXT, or the refusal. */
static enum kv_rc
credential_fits(struct kv_conn *c, const struct kv_upstream *up)
{
	size_t qlen;

	if (c->req.auth_goog_key && up->provider != KV_PROVIDER_GEMINI &&
	    up->provider != KV_PROVIDER_VERTEX)
		return reply_error(c, 400, "x-goog-api-key is Google's header, taken on the paths "
		    "of a provider = gemini or vertex upstream only: send the kilovolt key as "
		    "Authorization: Bearer KEY (or x-api-key)");
	/* A JWT is never forwarded: only an upstream with its own provider
	 * key serves its user. */
	if (c->req.jwt && !virtual_keys(up))
		return reply_error(c, 401, "this upstream forwards the client's credential, and "
		    "a JWT is never forwarded: the upstream needs its own api_key to serve "
		    "JWT users");
	/* Virtual keys strip every credential; one in the query cannot be. */
	if (virtual_keys(up) && kv_cred_query_key(c->req.target, &qlen) != NULL)
		return reply_error(c, 400, "this upstream uses its own provider key: send the "
		    "kilovolt key in a header (Authorization: Bearer KEY), not as ?key=");
	/* A Gemini path's ?key= is out of the target (request_head.c): only
	 * an upstream with its own key can do without it. */
	if (c->req.query_key && !virtual_keys(up))
		return reply_error(c, 400, "this upstream forwards the client's own key: send "
		    "it in x-goog-api-key, not as ?key=");
	return KV_NEXT;
}

enum kv_rc
request_admit(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	const struct kv_upstream *up;
	const char *msg;
	char msg404[512];
	enum kv_rc st;
	int s;

	if (c->adm.lease_parked)
		return lease_retry(c);
	if ((s = scan_done(c, &msg)) != 0)
		return reply_error(c, s, msg);
	bedrock_facts(c);
	up = kv_config_route_client(cf, c->req.target, c->req.ri.model[0] ? c->req.ri.model : NULL,
	    c->req.anthropic_client);
	if (up == NULL) {
		kv_route_hint(cf, c->req.target, c->req.ri.model[0] ? c->req.ri.model : NULL,
		    c->req.anthropic_client, msg404, sizeof(msg404));
		return reply_error(c, 404, msg404);
	}
	up = entry_of(cf, c, up);
	if (kv_vertex_retarget(c, up) == -1)
		return reply_error(c, 503, "out of memory");
	c->rt = kv_upstreams_find(c->w->ups, cf->nupstreams, up);
	c->upstream_name = up->name;
	if ((st = kv_azure_admit(c, up)) != KV_NEXT)
		return st;
	if ((st = credential_fits(c, up)) != KV_NEXT)
		return st;
	if (c->req.ws)
		return admit_ws(c, up);
	if ((st = admit_endpoint(c, up)) != KV_NEXT)
		return st;
	/* A client that asked for usage itself is sent as it is; for any
	 * other, usage is added, and its event dropped on the way back. */
	c->req.force_usage = (c->req.api == KV_API_OPENAI_CHAT || c->req.api == KV_API_OPENAI_COMPLETIONS) &&
	    c->req.ri.stream && !c->req.ri.include_usage && c->req.body_bytes > 0;
	c->req.inject = c->req.force_usage;
	/* Past the memory budget: refuse before anything is reserved or sent. */
	if (kv_memguard_full(&c->w->mem, c->w->now_ms) && (c->retry_after = KV_MEMGUARD_RETRY_S))
		return reply_error(c, 503, "the gateway is at its memory limit; retry shortly");
	if ((st = reserve(c)) != KV_NEXT)
		return st;
	peer_pick(c, up);
	return KV_NEXT;
}

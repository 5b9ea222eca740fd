/* A WebSocket turn as a request (ws_turn.h): its worst case reserved at
 * the key, the budget tree and the rate limits, marked sent, settled by
 * settle.c as any request, and the connection made ready for the next. */
#include "worker/ws_turn.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "common/money.h"
#include "shm/ledger.h"
#include "worker/admission_tree.h"
#include "worker/charge_rules.h"
#include "worker/settle.h"
#include "worker/ws_event.h"

/* The output a turn may make: its limit (the model's max caps it, as the
 * provider does), else the model's max, else reserve_output_tokens. */
static int64_t
out_bound(const struct kv_conn *c, const struct kv_price *p, int64_t max_out)
{
	int64_t lim = max_out >= 0 && max_out != KV_WS_INF ? max_out : -1;

	if (p->max_output > 0 && (lim < 0 || lim > p->max_output))
		lim = p->max_output;
	return lim >= 0 ? lim : c->w->cf->reserve_output_tokens;
}

/* The worst case: the context window of input for each of TURNS
 * sampling turns, OUT tokens of output, each at its dearest price (all
 * text, or all audio), and SEARCHES web search calls. */
static int64_t
worst_nusd(const struct kv_price *p, int64_t out, int64_t turns, int64_t searches)
{
	struct kv_usage text = { .input = p->context_window * turns, .output = out,
	    .web_search = searches };
	struct kv_usage audio = text;
	int64_t a, b;

	audio.audio_input = audio.input;
	audio.audio_output = audio.output;
	if (p->priority_input >= 0 || p->flex_input >= 0)
		text.tier = audio.tier = KV_TIER_OTHER;
	if (kv_cost(p, &text, &a) == -1 || kv_cost(p, &audio, &b) == -1)
		return INT64_MAX / 4;
	return a > b ? a : b;
}

/* The key's rpm and tpm share for TOKENS: 0 admitted, else -1 and the
 * turn's holds released. */
static int
turn_rate(struct kv_conn *c, int64_t tokens)
{
	struct kv_ledger *l = c->w->ledger;
	struct kv_account *a = c->adm.acct;
	int rc;

	if (atomic_load(&a->rpm) == 0 && atomic_load(&a->tpm) == 0)
		return 0;
	c->adm.rl_on = 1;
	kv_ledger_op_begin(l);
	rc = kv_ratelimit_admit(c->w->slot, c->adm.resv, a, tokens, kv_rl_now_ns(),
	    atomic_load(&l->hdr->cluster) != 0, &c->adm.rl);
	kv_ledger_op_end(l);
	if (rc == 0)
		return 0;
	tree_settle(c, 0, 0);
	kv_ledger_settle(l, c->w->slot, c->adm.resv, 0, NULL, NULL);
	c->adm.resv = -1;
	atomic_fetch_add(&a->rate_refusals, 1);
	atomic_fetch_add(&l->hdr->counters.rate_limited_total, 1);
	return -1;
}

/* The price of MODEL at this upstream, or the refusal's words. */
static const struct kv_price *
turn_price(struct kv_conn *c, const char *model, char *msg, size_t mlen)
{
	const struct kv_upstream *up = c->rt != NULL ? c->rt->cf : NULL;
	const struct kv_price *p, *older;

	p = kv_charge_price_for(c->w->cf, up != NULL ? up->provider : KV_PROVIDER_AUTO, NULL,
	    model, &older);
	if (model[0] == '\0')
		snprintf(msg, mlen, "kilovolt meters each turn by its model: name \"model\" "
		    "in response.create (or in the session)");
	else if (p == NULL)
		snprintf(msg, mlen, "model '%.96s' has no price in kilovolt's [price] "
		    "sections: a turn of it cannot be metered", model);
	else if (p->context_window <= 0)
		snprintf(msg, mlen, "model '%.96s' has no context window in kilovolt's "
		    "prices: a turn's input (the whole conversation) cannot be bounded", model);
	else
		return p;
	return NULL;
}

/* The calls a turn's server tools may loop for (0 without one), or -1
 * when nothing bounds them. */
static int64_t
tool_calls(const struct kv_conn *c, const struct kv_ws_cev *tools)
{
	if (tools == NULL || tools->server_tools == 0)
		return 0;
	if (tools->max_tool_calls >= 0 && tools->max_tool_calls != KV_WS_INF)
		return tools->max_tool_calls;
	return c->w->cf->max_tool_turns > 0 ? c->w->cf->max_tool_turns : -1;
}

int
ws_turn_reserve(struct kv_conn *c, const char *model, int64_t max_out,
    const struct kv_ws_cev *tools, const char **code, char *msg, size_t mlen)
{
	const struct kv_price *p;
	char rem[32], need[32];
	int64_t out, amount, calls;
	enum kv_rc st;

	*code = "invalid_request_error";
	if ((p = turn_price(c, model, msg, mlen)) == NULL)
		return -1;
	if ((calls = tool_calls(c, tools)) < 0) {
		snprintf(msg, mlen, "a server tool makes the provider loop without a bound "
		    "kilovolt can reserve: set max_tool_calls, or [budget] max_tool_turns");
		return -1;
	}
	out = out_bound(c, p, max_out);
	amount = worst_nusd(p, out, 1 + calls, tools != NULL && tools->web_search > 0 ? calls : 0);
	*code = "insufficient_quota";
	c->adm.resv = kv_ledger_reserve(c->w->ledger, c->w->slot, c->adm.acct, amount,
	    &c->adm.remaining);
	if (c->adm.resv < 0) {
		if (c->adm.resv == -1)
			atomic_fetch_add(&c->w->ledger->hdr->counters.budget_refusals_total, 1);
		kv_format_dollars(c->adm.remaining, rem, sizeof(rem));
		kv_format_dollars(amount, need, sizeof(need));
		snprintf(msg, mlen, c->adm.resv == -1 ? "budget exceeded for key %s: %s "
		    "remaining, this turn may cost up to %s" : "key %s: no room for this "
		    "turn now (%s remaining, it may cost up to %s); retry shortly",
		    c->req.keyid, rem, need);
		c->adm.resv = -1;
		return -1;
	}
	if (tree_admit(c, amount, &st) == -1) {
		kv_ledger_settle(c->w->ledger, c->w->slot, c->adm.resv, 0, NULL, NULL);
		c->adm.resv = -1;
		snprintf(msg, mlen, "budget exceeded at %s above key %s",
		    c->adm.refused_node != NULL ? c->adm.refused_node : "a budget node",
		    c->req.keyid);
		return -1;
	}
	if (turn_rate(c, p->context_window * (1 + calls) + out) == -1) {
		*code = "rate_limit_exceeded";
		snprintf(msg, mlen, "rate limit reached for key %s (RPM %u, TPM %u): "
		    "please try again in %llds", c->req.keyid, c->adm.rl.rpm, c->adm.rl.tpm,
		    (long long)c->adm.rl.retry_after_s);
		return -1;
	}
	c->adm.price = p;
	c->adm.out_bound = out;
	snprintf(c->req.ri.model, sizeof(c->req.ri.model), "%s", model);
	c->req.ri.max_output = out;
	c->req.ri.mult = 1;
	atomic_fetch_add(&c->w->slot->active_streams, 1);
	c->adm.counted_stream = 1;
	return 0;
}

int
ws_turn_hold(struct kv_conn *c, const char *model)
{
	const struct kv_upstream *up = c->rt != NULL ? c->rt->cf : NULL;
	const struct kv_price *older;

	c->adm.resv = kv_ledger_hold(c->w->ledger, c->w->slot, c->adm.acct);
	if (c->adm.resv >= 0 && tree_hold(c) == -1) {
		kv_ledger_settle(c->w->ledger, c->w->slot, c->adm.resv, 0, NULL, NULL);
		c->adm.resv = -2;
	}
	if (c->adm.resv < 0) {
		c->adm.resv = -1;
		kv_log_warnx("KV0563", "key %s: no ledger record for a cancelled automatic "
		    "response: what the provider bills for it is not charged", c->req.keyid);
		return -1;
	}
	c->adm.price = kv_charge_price_for(c->w->cf, up != NULL ? up->provider : KV_PROVIDER_AUTO,
	    NULL, model, &older);
	c->adm.out_bound = 0;
	snprintf(c->req.ri.model, sizeof(c->req.ri.model), "%s", model);
	c->req.ri.max_output = 0;
	c->req.ri.mult = 1;
	atomic_fetch_add(&c->w->slot->active_streams, 1);
	c->adm.counted_stream = 1;
	return 0;
}

void
ws_turn_sent(struct kv_conn *c, size_t bytes)
{
	c->req.api = KV_API_OPENAI_RESPONSES;
	c->req.body_bytes = (int64_t)bytes;
	c->t_start_ms = c->w->now_ms;
	c->t_first_ms = 0;
	c->status = 200;
	kv_usage_init(&c->resp.scan, KV_API_OPENAI_RESPONSES, 1);
	c->resp.scan_on = 1;
	settle_mark_sent(c);
}

void
ws_turn_settle(struct kv_conn *c)
{
	if (c->req.api == KV_API_OTHER && c->adm.resv < 0)
		return;
	settle_request(c);
	/* ready for the next turn: a new request id, nothing held */
	c->logged = 0;
	c->req.id[0] = '\0';
	c->req.api = KV_API_OTHER;
	c->req.body_bytes = 0;
	memset(&c->req.ri, 0, sizeof(c->req.ri));
	c->req.ri.max_output = -1;
	c->req_sent = 0;
	c->status = 101;
	c->resp.scan_on = 0;
	c->adm.price = NULL;
	c->adm.out_bound = 0;
	c->adm.rl_on = 0;
	c->adm.rl_sent = 0;
	c->adm.refused_node = NULL;
	c->adm.refused_key = 0;
	memset(&c->adm.tree, 0, sizeof(c->adm.tree));
}

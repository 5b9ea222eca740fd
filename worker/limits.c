/* One request against its key's rate limits (shm/ratelimit.h): admission
 * next to the budget reservation, the token settle next to the budget
 * settle, the x-ratelimit-* headers, and the retry hints (retry-after,
 * x-should-retry) of the errors the gateway makes itself. */
#include "worker/conn-t.h"

#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "worker/ratelimit_headers.h"
#include "worker/upstream_set.h"

/* The tokens a request can cost at most, as the budget bound counts them:
 * every body byte an input token, plus the output limit it names (else
 * reserve_output_tokens). Endpoints with no usage cost none. */
static int64_t
estimate_tokens(const struct kv_conn *c)
{
	int64_t in, out;

	if (c->api == KV_API_OTHER)
		return 0;
	in = c->body_done || c->chunked_req ? c->body_bytes : c->body_bytes + c->body_left;
	out = c->ri.max_output >= 0 ? c->ri.max_output : c->w->cf->reserve_output_tokens;
	if (c->api == KV_API_OPENAI_EMBEDDINGS)
		out = 0;
	return in + out;
}

static void
refusal_message(const struct kv_conn *c, int64_t asked, char *msg, size_t len)
{
	const struct kv_rl_view *v = &c->rl;

	if (v->refused_by == 'l')
		snprintf(msg, len, "Rate limit of key %s: this host's share of the key's "
		    "limits (RPM %u, TPM %u) is being renewed. Please try again in 1s.",
		    c->keyid, v->rpm, v->tpm);
	else if (v->refused_by == 'r')
		snprintf(msg, len, "Rate limit reached for key %s on requests per minute "
		    "(RPM): Limit %u, Remaining %lld. Please try again in %llds.", c->keyid,
		    v->rpm, (long long)v->req_remaining, (long long)v->retry_after_s);
	else
		snprintf(msg, len, "Rate limit reached for key %s on tokens per minute "
		    "(TPM): Limit %u, Remaining %lld, Requested %lld. Please try again in %llds.",
		    c->keyid, v->tpm, (long long)v->tok_remaining, (long long)asked,
		    (long long)v->retry_after_s);
}

int
conn_rate_admit(struct kv_conn *c, enum step *st)
{
	struct kv_ledger *l = c->w->ledger;
	struct kv_account *a = c->acct;
	int64_t tokens;
	char msg[320];
	int rc;

	if (atomic_load(&a->rpm) == 0 && atomic_load(&a->tpm) == 0)
		return 0;
	c->rl_on = 1;
	tokens = estimate_tokens(c);
	/* Bracketed, so the master's repair (which recounts the cluster's
	 * reserved tokens from the records) never sees it half-way. */
	kv_ledger_op_begin(l);
	rc = kv_ratelimit_admit(c->w->slot, c->resv, a, tokens, kv_rl_now_ns(),
	    atomic_load(&l->hdr->cluster) != 0, &c->rl);
	kv_ledger_op_end(l);
	if (rc == 0)
		return 0;
	/* Refused: nothing goes upstream, so the budget holds nothing either. */
	kv_ledger_settle(l, c->w->slot, c->resv, 0, NULL, NULL);
	c->resv = -1;
	atomic_fetch_add(&a->rate_refusals, 1);
	atomic_fetch_add(&l->hdr->counters.rate_limited_total, 1);
	refusal_message(c, tokens, msg, sizeof(msg));
	*st = conn_fail(c, 429, msg);
	return -1;
}

void
conn_traffic_settle(struct kv_conn *c, const struct kv_usage *u)
{
	conn_upset_finish(c);
	if (c->resv < 0)
		return;
	kv_ledger_op_begin(c->w->ledger);
	kv_ratelimit_settle(c->w->ledger, c->w->slot, c->resv,
	    kv_ratelimit_tokens(u, c->anthropic), c->rl_sent);
	kv_ledger_op_end(c->w->ledger);
}

void
conn_traffic_sent(struct kv_conn *c)
{
	if (c->resv >= 0 && c->rl_on && c->rl_sent == 0) {
		kv_ledger_op_begin(c->w->ledger);
		c->rl_sent = kv_ratelimit_sent(c->w->slot, c->resv, c->body_bytes / 4);
		kv_ratelimit_lease_sent(c->w->ledger, c->acct, c->rl_sent);
		kv_ledger_op_end(c->w->ledger);
	}
}

int
conn_traffic_headers(struct kv_conn *c)
{
	int n, up = c->ugroup != NULL && c->tlabel != NULL;
	size_t tl = up ? strlen(c->tlabel) : 0;

	/* the label's line, and 640 bytes for the rate-limit headers after it */
	if (conn_obuf_reserve(c, 640 + tl + 23) == -1)
		return -1;
	if (up) {
		CONN_OBUF_LIT(c, "x-kilovolt-upstream: ");
		conn_obuf_add(c, c->tlabel, tl);
		CONN_OBUF_LIT(c, "\r\n");
	}
	if (!c->rl_on)
		return 0;
	if ((n = kv_ratelimit_headers(&c->rl, c->obuf + c->olen, c->ocap - c->olen)) == -1)
		return -1;
	c->olen += (size_t)n;
	return 0;
}

int
conn_error_headers(struct kv_conn *c, int status, char *buf, size_t len)
{
	int n = 0, k = 0;

	if (c->rl_on && (n = kv_ratelimit_headers(&c->rl, buf, len)) == -1)
		return -1;
	if (status == 429 && c->rl.retry_after_s > 0)
		k = snprintf(buf + n, len - (size_t)n,
		    "retry-after: %lld\r\nx-should-retry: true\r\n", (long long)c->rl.retry_after_s);
	else if (status == 402 || c->no_retry || status == 429)
		k = snprintf(buf + n, len - (size_t)n, "x-should-retry: false\r\n");
	else if (status == 502 || status == 503 || status == 504)
		/* Worth another try: an upstream or a resource of ours may be
		 * back in a moment. */
		k = snprintf(buf + n, len - (size_t)n, "retry-after: %d\r\n",
		    c->retry_after > 0 ? c->retry_after : 1);
	if (k < 0 || (size_t)k >= len - (size_t)n)
		return -1;
	return n + k;
}

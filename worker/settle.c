/* Settlement, once a request is over: what it is charged (the provider's
 * usage, or an estimate when it was cut or never answered), the ledger
 * settled, the counters, the access log line and the request log; and,
 * as the whole request reaches the provider, the input estimate the
 * reservation keeps should this worker die. */
#include "worker/settle.h"
#include "worker/admission_tree.h"
#include "worker/tree_rate.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/fmt.h"
#include "common/log.h"
#include "common/money.h"
#include "worker/aws_stream_filter.h"
#include "worker/charge_rules.h"
#include "worker/peer.h"
#include "worker/price_dims.h"
#include "worker/ratelimit_headers.h"

/* What a request the provider got whole costs when nothing more is ever
 * known (charge_usage): body bytes / 4 input tokens and the reservation's
 * output, at the price of the model asked for. */
static int64_t
sent_estimate_nusd(struct kv_conn *c)
{
	const struct kv_price *p = c->adm.price;
	struct kv_usage u = { .input = c->req.body_bytes / 4,
	    .output = kv_charge_cut_output(c->adm.out_bound, 0) };
	int64_t cost;

	/* the multipliers it asked for: no usage will say otherwise */
	kv_dims_charge(&c->req.ri, kv_dims_region(c->rt != NULL ? c->rt->cf : NULL), 0, 0, &u);
	if (p == NULL || c->req.api == KV_API_OTHER || kv_cost(p, &u, &cost) == -1)
		return 0;
	return cost;
}

/* The whole request reached the provider, which may bill it from now on:
 * a timeout or a cancel is charged at least its input, and so is a worker
 * death (the master charges what the reservation records). */
/* Settle the request's tokens (before the budget settle) and end its
 * target's in-flight count. */
static void
traffic_settle(struct kv_conn *c, const struct kv_usage *u)
{
	peer_finish(c);
	if (c->adm.resv < 0)
		return;
	kv_ledger_op_begin(c->w->ledger);
	kv_ratelimit_settle(c->w->ledger, c->w->slot, c->adm.resv,
	    kv_ratelimit_tokens(u, c->req.anthropic), c->adm.rl_sent);
	tree_rate_settle(c, kv_ratelimit_tokens(u, c->req.anthropic));
	kv_ledger_op_end(c->w->ledger);
}

/* The request reached the provider: its input stays counted against tpm
 * should this worker die (kv_ratelimit_sent). */
static void
traffic_sent(struct kv_conn *c)
{
	if (c->adm.resv >= 0 && c->adm.rl_on && c->adm.rl_sent == 0) {
		kv_ledger_op_begin(c->w->ledger);
		c->adm.rl_sent = kv_ratelimit_sent(c->w->slot, c->adm.resv, c->req.body_bytes / 4);
		kv_ratelimit_lease_sent(c->w->ledger, c->adm.acct, c->adm.rl_sent);
		kv_ledger_op_end(c->w->ledger);
	}
}

void
settle_mark_sent(struct kv_conn *c)
{
	c->req_sent = 1;
	if (c->adm.resv >= 0 && c->req.api != KV_API_OTHER) {
		int64_t min = sent_estimate_nusd(c);

		kv_ledger_resv_sent(c->w->slot, c->adm.resv, min);
		tree_sent(c, min);
	}
	if (c->req.api != KV_API_OTHER) {
		traffic_sent(c);
		tree_rate_sent(c);
	}
}

/* The counts a request is charged for (SPEC "Money", README "How cuts are
 * charged"): the provider's usage when it is final, even when the client
 * left after it; for a cut stream the exact opening figures it gave (input
 * and cache fields) plus the output relayed so far (the stream's own
 * cumulative count when larger); for a request the provider got whole but
 * never answered (timeout, cancel, broken connection) the input estimate.
 * Anything but usage read whole is marked estimated. Returns 0 when
 * nothing is charged. */
static int
charge_usage(struct kv_conn *c, struct kv_usage *u)
{
	const struct kv_usage *found = c->resp.scan_on ? kv_usage_result(&c->resp.scan) : NULL;
	int64_t out;

	memset(u, 0, sizeof(*u));
	if (c->req.api == KV_API_OTHER)
		return 0;
	if (c->t_first_ms == 0) {
		/* no response head: ours (504, 502, 499) or nothing; the
		 * provider got it whole and may have generated it all */
		if (!c->req_sent)
			return 0;
		u->input = c->req.body_bytes / 4;
		u->output = kv_charge_cut_output(c->adm.out_bound, 0);
		u->estimated = 1;
		return 1;
	}
	if (c->req_sent && (c->status == 502 || c->status == 504)) {
		/* The provider's own gateway gave up after the whole request
		 * reached it: the backend may have read it all and generated to
		 * the limit (and billed it) before that. Charged as reserved:
		 * the input estimate and all the output it may have made. */
		u->input = c->req.body_bytes / 4;
		u->output = c->adm.out_bound;
		u->estimated = 1;
		return 1;
	}
	if (c->status < 200 || c->status >= 300)
		return 0;
	if (found != NULL && found->found && c->resp.scan.final) {
		*u = *found;
		return 1;
	}
	if (found != NULL && found->found)
		*u = *found;	/* exact input and cache fields, output so far */
	else
		u->input = c->req.body_bytes / 4;
	/* cut before the final usage (client gone, upstream broken off, an
	 * Anthropic error event): hidden tokens may have been billed */
	out = c->resp.scan_on ? kv_usage_output_estimate(&c->resp.scan) : 0;
	if (u->output < out)
		u->output = out;
	u->output = kv_charge_cut_output(c->adm.out_bound, u->output);
	u->found = 0;
	u->estimated = 1;
	return 1;
}

/* What kv_charge_cost marked, in the log (README "What a request is
 * charged"). */
static void
charge_notes(struct kv_conn *c, const char *model, int flags, const struct kv_price *p)
{
	char esc[512], asked[512];

	kv_log_escape(model, (size_t)-1, esc, sizeof(esc));
	if (flags & KV_CHARGE_NO_PRICE)
		kv_log_warnx("KV0440", "no price for model '%s' and no [price default]: charged 0",
		    esc);
	if (flags & KV_CHARGE_OVERFLOW)
		kv_log_warnx("KV0441", "cost overflow for key %s model %s", c->req.keyid, esc);
	if (flags & KV_CHARGE_RESP_UNPRICED) {
		c->unpriced_model = 1;
		kv_log_warnx("KV0445", "key %s: the response's model '%s' (asked for '%s') has "
		    "no [price] section: charged the dearer of [price default] and the asked "
		    "model's price", c->req.keyid, esc,
		    kv_log_escape(c->req.ri.model, (size_t)-1, asked, sizeof(asked)));
	}
	if ((flags & KV_CHARGE_FEES_UNPRICED) && p != NULL)
		kv_log_warnx("KV0446", "key %s model %s: the response reports server-tool calls "
		    "(web search or fetch, code execution) that [price %s] sets no fee for: "
		    "charged 0 for them", c->req.keyid, esc, p->model);
}

/* The charge of the request, the model it counts under (*model: the
 * response's, else the body's) and that model's price (*mprice): the one
 * admission resolved, unless the response names a model of its own, whose
 * price is then looked up, once. On Bedrock (and Vertex AI, which bills
 * the same way) the model is the path's: AWS
 * bills the model id (or inference profile) the request named, and the
 * Anthropic events an InvokeModel answer carries name Anthropic's model,
 * priced as Anthropic's own API. */
static int64_t
charge(struct kv_conn *c, struct kv_usage *u, const char **model,
    const struct kv_price **mprice)
{
	const struct kv_price *p;
	int64_t cost;
	int flags, named;

	*model = c->resp.scan_on && c->resp.scan.model[0] && c->req.path_model[0] == '\0' ?
	    c->resp.scan.model : c->req.ri.model;
	named = kv_charge_resp_named(*model, c->req.ri.model);
	*mprice = !named ? c->adm.price : c->rt == NULL ? kv_charge_price(c->w->cf, *model, NULL) :
	    kv_charge_price_for(c->w->cf, c->rt->cf->provider, c->rt->cf->aws_region, *model, NULL);
	if (!charge_usage(c, u))
		return 0;
	kv_charge_implied_calls(c->req.api, *model, u);
	kv_dims_charge(&c->req.ri, kv_dims_region(c->rt != NULL ? c->rt->cf : NULL),
	    c->resp.scan_on && c->resp.scan.speed_seen, c->resp.scan_on && c->resp.scan.geo_seen, u);
	cost = kv_charge_cost(c->w->cf, c->req.ri.model[0] != '\0' ? c->adm.price : NULL, named,
	    *mprice, u, &flags, &p);
	if (flags != 0)
		charge_notes(c, *model, flags, p);
	return cost;
}

static void
count(struct kv_conn *c, const struct kv_usage *u, int64_t cost)
{
	struct kv_ledger_header *h = c->w->ledger->hdr;
	struct kv_counters *k = &h->counters;

	atomic_fetch_add(&k->requests_total, 1);
	if (c->status >= 200 && c->status < 300)
		atomic_fetch_add(&k->responses_2xx_total, 1);
	else if (c->status >= 400 && c->status < 500)
		atomic_fetch_add(&k->responses_4xx_total, 1);
	else if (c->status >= 500)
		atomic_fetch_add(&k->responses_5xx_total, 1);
	/* a cut the client did not cause: an error on the status page */
	if (c->cut && !c->client_cut && !c->client_gone && c->t_first_ms > 0)
		atomic_fetch_add(&k->responses_cut_total, 1);
	atomic_fetch_add(&k->received_bytes_total, c->bytes_in);
	atomic_fetch_add(&k->sent_bytes_total, c->bytes_out);
	atomic_fetch_add(&k->input_tokens_total, (uint64_t)u->input);
	atomic_fetch_add(&k->output_tokens_total, (uint64_t)u->output);
	atomic_fetch_add(&k->cached_input_tokens_total, (uint64_t)u->cached_input);
	atomic_fetch_add(&k->cost_nusd_total, (uint64_t)cost);
	atomic_fetch_add(&k->estimated_requests_total, (uint64_t)u->estimated);
	if (c->adm.free_ep && c->t_first_ms > 0)
		atomic_fetch_add(&k->free_requests_total, 1);
	atomic_fetch_add(&c->w->slot->requests, 1);
	if (c->t_first_ms > 0)
		kv_histogram_observe(&h->ttfb, (uint64_t)(c->t_first_ms - c->t_start_ms) * 1000);
	kv_histogram_observe(&h->duration, (uint64_t)(c->w->now_ms - c->t_start_ms) * 1000);
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) == -1)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One line in the request log ([server] request_log). */
static void
log_request(struct kv_conn *c, const struct kv_usage *u, const char *model,
    int64_t cost)
{
	char label[KV_LABEL_MAX] = "", path[600];
	int64_t dur = c->w->now_ms - c->t_start_ms;
	struct kv_reqlog_rec r;

	if (!kv_reqlog_enabled())
		return;
	if (c->adm.acct != NULL) {
		memcpy(label, c->adm.acct->label, sizeof(label));
		label[sizeof(label) - 1] = '\0';
	}
	/* The query string may carry secrets (?key=): the path only. */
	snprintf(path, sizeof(path), "%.*s", c->req.target ? (int)strcspn(c->req.target, "?") : 0,
	    c->req.target ? c->req.target : "");
	memset(&r, 0, sizeof(r));
	r.time_ms = wall_ms() - dur;
	r.request_id = conn_request_id(c);
	r.key_id = c->req.keyid;
	r.label = label;
	r.method = strcmp(c->req.method, "-") == 0 ? "" : c->req.method;
	r.path = path;
	r.model = model;
	r.upstream = c->upstream_name;
	r.status = c->status;
	r.input_tokens = u->input;
	r.output_tokens = u->output;
	r.cached_input_tokens = u->cached_input;
	r.cost_nusd = cost;
	r.estimated = u->estimated;
	r.cut = c->cut;
	r.price_default = c->unpriced_model;
	r.ttfb_ms = c->t_first_ms ? c->t_first_ms - c->t_start_ms : -1;
	r.duration_ms = dur;
	r.bytes_in = c->bytes_in;
	r.bytes_out = c->bytes_out;
	kv_reqlog_write(&r);
}

/* The per-model row a request counts in: only models with a [price]
 * section of their own get one; every other name (made-up ones included)
 * adds to the single "other" row, so strangers cannot fill the table. */
static const char *
model_row(const struct kv_conn *c, const char *model, const struct kv_price *mprice)
{
	const struct kv_price *p;

	if (model == NULL || model[0] == '\0')
		return model;
	p = mprice;
	if (p == NULL || p == &c->w->cf->default_price)	/* priced as asked? (charge) */
		p = c->req.ri.model[0] != '\0' ? c->adm.price : NULL;
	return p != NULL && p != &c->w->cf->default_price ? model : "other";
}

/* An escaped field (kv_log_escape into OUTLEN bytes) appended: escaped in
 * place when the line has OUTLEN bytes of room, else through a copy that
 * the line cuts, as the copy a field was always escaped into was cut. */
static void
sb_escaped(struct kv_sb *b, const char *s, size_t n, size_t outlen)
{
	char tmp[1024];

	if (b->cap - b->len >= outlen) {
		b->len += kv_log_escape_len(s, n, b->p + b->len, outlen);
		return;
	}
	if (outlen > sizeof(tmp))
		outlen = sizeof(tmp);
	kv_sb_put(b, tmp, kv_log_escape_len(s, n, tmp, outlen));
}

/* "key=K METHOD PATH model=M upstream=U status=N in=N out=N ttfb_ms=N ms=N
 * tokens=N/N cost=$USD[ estimated][ cut]", built without vsnprintf (the
 * printf form cost 8 k instructions a request, callgrind) and in the log
 * line itself: method, path and model come from the client, escaped so
 * that no request can forge a field, a line or a terminal escape. */
static void
access_line(const struct kv_conn *c, const struct kv_usage *u, const char *model,
    int64_t cost)
{
	char buf[KV_LOG_LINE], usd[KV_USD_MAX];
	struct kv_sb b = { NULL, 0, KV_LOG_LINE - 1 };

	b.p = kv_log_access_begin(buf, &b.len);
	kv_sb_str(&b, "key=");
	kv_sb_str(&b, c->req.keyid[0] ? c->req.keyid : "-");
	kv_sb_put(&b, " ", 1);
	sb_escaped(&b, c->req.method[0] ? c->req.method : "-", (size_t)-1, 4 * KV_HTTP_MAX_METHOD + 4);
	kv_sb_put(&b, " ", 1);
	sb_escaped(&b, c->req.target ? c->req.target : "-", c->req.target ? strcspn(c->req.target, "?") : 1,
	    1024);
	kv_sb_str(&b, " model=");
	sb_escaped(&b, model[0] ? model : "-", (size_t)-1, 512);
	kv_sb_str(&b, " upstream=");
	kv_sb_str(&b, c->upstream_name ? c->upstream_name : "-");
	kv_sb_str(&b, " status=");
	kv_sb_i64(&b, c->status);
	kv_sb_str(&b, " in=");
	kv_sb_u64(&b, c->bytes_in);
	kv_sb_str(&b, " out=");
	kv_sb_u64(&b, c->bytes_out);
	kv_sb_str(&b, " ttfb_ms=");
	kv_sb_i64(&b, c->t_first_ms ? c->t_first_ms - c->t_start_ms : -1);
	kv_sb_str(&b, " ms=");
	kv_sb_i64(&b, c->w->now_ms - c->t_start_ms);
	kv_sb_str(&b, " tokens=");
	kv_sb_i64(&b, u->input);
	kv_sb_put(&b, "/", 1);
	kv_sb_i64(&b, u->output);
	kv_sb_str(&b, " cost=$");
	if (b.cap - b.len >= KV_USD_MAX)
		b.len += kv_fmt_usd(b.p + b.len, cost);
	else
		kv_sb_put(&b, usd, kv_fmt_usd(usd, cost));
	if (u->estimated)
		kv_sb_str(&b, " estimated");
	if (c->cut)
		kv_sb_str(&b, " cut");
	kv_log_access_end(b.p, b.len);
}

void
settle_request(struct kv_conn *c)
{
	struct kv_usage u;
	const struct kv_price *mprice;
	const char *model;
	int64_t cost;

	if (c->logged)
		return;
	c->logged = 1;
	if (c->resp.aws != NULL)
		kv_aws_stream_end(c->resp.aws);	/* a message left open is void */
	cost = charge(c, &u, &model, &mprice);
	traffic_settle(c, &u);
	if (c->adm.resv >= 0) {
		/* the key's death charge too, before the first node settles:
		 * a worker killed in between leaves COST at every level */
		kv_ledger_resv_final(c->w->slot, c->adm.resv, cost);
		tree_settle(c, cost, cost != 0 || u.input || u.output);
		kv_ledger_settle(c->w->ledger, c->w->slot, c->adm.resv, cost,
		    u.input || u.output ? &u : NULL, model_row(c, model, mprice));
		c->adm.resv = -1;
	}
	/* A key the provider accepted is kept even when it cost nothing; one
	 * never charged nor answered 2xx may be reclaimed (shm/repair.h). */
	if (c->adm.acct != NULL && c->status >= 200 && c->status < 300)
		atomic_fetch_or(&c->adm.acct->aflags, KV_AF_KEPT);
	/* Per key: how many charges were estimates, how many relayed free. */
	if (c->adm.acct != NULL && u.estimated)
		atomic_fetch_add(&c->adm.acct->estimated_requests, 1);
	if (c->adm.acct != NULL && c->adm.free_ep && c->t_first_ms > 0)
		atomic_fetch_add(&c->adm.acct->free_requests, 1);
	if (c->adm.counted_stream) {
		atomic_fetch_sub(&c->w->slot->active_streams, 1);
		c->adm.counted_stream = 0;
	}
	count(c, &u, cost);
	access_line(c, &u, model, cost);
	log_request(c, &u, model, cost);
}

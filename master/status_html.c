/* The status page, rendered on the server: see status_html.h. Every string
 * from the ledger (labels, model names) is HTML-escaped. This file writes
 * the page and its sections but the key table (status_html_keys.c); the
 * pieces they share are status_html_parts.c's. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status_html.h"
#include "master/status_html_parts.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/clock.h"
#include "common/money.h"
#include "master/status_page.h"
#include "shm/history.h"
#include "shm/ratelimit.h"
#include "shm/report.h"
#include "shm/targets.h"

#define MODEL_ROWS	20	/* the biggest by cost; the rest as one row */

static void
card(FILE *f, const char *id, const char *k, const char *v, const char *s)
{
	fprintf(f, "<div class=\"card\"%s%s%s><div class=\"k\">%s</div><div class=\"v\">%s</div>"
	    "<div class=\"s\">%s</div></div>\n", id ? " id=\"" : "", id ? id : "",
	    id ? "\"" : "", k, v, s);
}

/* With [cluster]: whether Redis answers, and when this host last synced
 * its leases (docs/cluster.md). */
static void
cluster_card(FILE *f, const struct kv_ledger *l)
{
	const struct kv_counters *c = &l->hdr->counters;
	int64_t synced = atomic_load(&l->hdr->cluster_synced_ms);
	int64_t ms = kv_rl_now_ns() / 1000000;
	char s[160], ago[48];

	if (!atomic_load(&l->hdr->cluster))
		return;
	if (synced > 0)
		snprintf(ago, sizeof(ago), "last sync %.1f s ago",
		    (double)(ms > synced ? ms - synced : 0) / 1000);
	else
		snprintf(ago, sizeof(ago), "never synced");
	snprintf(s, sizeof(s), "%s &middot; %" PRIu64 " lease refusals (503) &middot; %"
	    PRIu64 " Redis errors", ago, atomic_load(&c->cluster_lease_refusals_total),
	    atomic_load(&c->cluster_redis_errors_total));
	fprintf(f, "<div class=\"card\" id=\"cluster-state\"><div class=\"k\">Cluster</div>"
	    "<div class=\"v %s\">%s</div><div class=\"s\">%s</div></div>\n",
	    atomic_load(&l->hdr->cluster_up) ? "ok" : "bad",
	    atomic_load(&l->hdr->cluster_up) ? "Redis up" : "Redis down", s);
}

/* Errors as an operator counts them, each kind named (kv_history_errors):
 * the provider's 5xx passed on, the upstream failures the gateway answered
 * 502/504 for, and responses cut short other than by their client. */
static void
errors_card(FILE *f, const struct kv_ledger *l)
{
	const struct kv_counters *c = &l->hdr->counters;
	uint64_t relayed = atomic_load(&c->responses_5xx_relayed_total);
	uint64_t failed = atomic_load(&c->upstream_errors_total);
	uint64_t cuts = atomic_load(&c->responses_cut_total);
	char v[64], s[256];

	snprintf(v, sizeof(v), "<span class=\"%s\">%" PRIu64 "</span>",
	    relayed + failed + cuts ? "bad" : "", relayed + failed + cuts);
	snprintf(s, sizeof(s), "<span id=\"err-5xx\">%" PRIu64 " 5xx relayed</span> &middot; "
	    "<span id=\"err-upstream\">%" PRIu64 " upstream failure%s</span> &middot; "
	    "<span id=\"err-cuts\">%" PRIu64 " cut%s</span>", relayed, failed,
	    failed == 1 ? "" : "s", cuts, cuts == 1 ? "" : "s");
	card(f, "errors", "Errors", v, s);
}

static void
cards(FILE *f, const struct kv_ledger *l, int64_t now)
{
	const struct kv_counters *c = &l->hdr->counters;
	char v[64], s[160], m[32];
	int64_t up = now - atomic_load(&l->hdr->master_start);

	fputs("<section class=\"cards\">\n", f);
	snprintf(v, sizeof(v), "%" PRIu64, atomic_load(&c->requests_total));
	snprintf(s, sizeof(s), "%" PRIu64 " refused (402), %" PRIu64 " limited (429), %" PRIu64
	    " client aborts", atomic_load(&c->budget_refusals_total),
	    atomic_load(&c->rate_limited_total), atomic_load(&c->client_aborts_total));
	card(f, NULL, "Requests", v, s);
	errors_card(f, l);
	snprintf(v, sizeof(v), "%" PRIu64, kv_ledger_sum_active_streams(l));
	snprintf(s, sizeof(s), "%" PRIu64 " connections", kv_ledger_sum_connections(l));
	card(f, NULL, "Active streams", v, s);
	snprintf(s, sizeof(s), "%" PRIu64 " estimated", atomic_load(&c->estimated_requests_total));
	card(f, NULL, "Spend", kv_html_usd((int64_t)atomic_load(&c->cost_nusd_total), m), s);
	snprintf(v, sizeof(v), "%" PRIu64, atomic_load(&c->input_tokens_total) +
	    atomic_load(&c->output_tokens_total));
	snprintf(s, sizeof(s), "%" PRIu64 " in / %" PRIu64 " out",
	    atomic_load(&c->input_tokens_total), atomic_load(&c->output_tokens_total));
	card(f, NULL, "Tokens", v, s);
	if (up < 0 || atomic_load(&l->hdr->master_start) == 0)
		up = 0;
	snprintf(v, sizeof(v), "%" PRId64 "h %02" PRId64 "m", up / 3600, up / 60 % 60);
	snprintf(s, sizeof(s), "master pid %" PRId32, atomic_load(&l->hdr->master_pid));
	card(f, NULL, "Uptime", v, s);
	cluster_card(f, l);
	fputs("</section>\n", f);
}

/* The gateway's spend (the keys' history rings added up) and its requests
 * and errors (the header's rings) over the last hour and the last day. */
static void
overview(FILE *f, const struct kv_ledger *l, const struct kv_account **acc, size_t n,
    int64_t now)
{
	int64_t sm[KV_HIST_MINUTES] = { 0 }, sh[KV_HIST_HOURS] = { 0 };
	int64_t mins[KV_HIST_MINUTES], hours[KV_HIST_HOURS];
	int64_t rm[KV_HIST_MINUTES], em[KV_HIST_MINUTES], rh[KV_HIST_HOURS], eh[KV_HIST_HOURS];
	size_t i;
	int j;

	for (i = 0; i < n; i++) {
		kv_history_read(l, acc[i], now, mins, hours);
		for (j = 0; j < KV_HIST_MINUTES; j++)
			sm[j] += mins[j];
		for (j = 0; j < KV_HIST_HOURS; j++)
			sh[j] += hours[j];
	}
	kv_history_totals_read(l, now, rm, em, rh, eh);
	fputs("<section class=\"overview\"><div class=\"panel\" id=\"spend\"><h2>Spend</h2>"
	    "<div class=\"pair\">\n", f);
	kv_html_top_chart(f, "spend-hour", "last hour", sm, NULL, KV_HIST_MINUTES, 1);
	kv_html_top_chart(f, "spend-day", "last day", sh, NULL, KV_HIST_HOURS, 1);
	fputs("</div></div><div class=\"panel\" id=\"traffic\"><h2>Requests "
	    "<span class=\"legend\"><i class=\"rq\"></i>requests <i class=\"er\"></i>errors"
	    "</span></h2><div class=\"pair\">\n", f);
	kv_html_top_chart(f, "traffic-hour", "last hour", rm, em, KV_HIST_MINUTES, 0);
	kv_html_top_chart(f, "traffic-day", "last day", rh, eh, KV_HIST_HOURS, 0);
	fputs("</div></div></section>\n", f);
}

static void
bar(FILE *f, int64_t budget, int64_t spent, int64_t reserved)
{
	double sp = budget > 0 ? 100.0 * (double)spent / (double)budget : (spent > 0 ? 100 : 0);
	double rs = budget > 0 ? 100.0 * (double)reserved / (double)budget : 0;
	char m[32];

	if (sp > 100)
		sp = 100;
	if (sp < 0)
		sp = 0;
	if (rs > 100 - sp)
		rs = 100 - sp;
	if (rs < 0)
		rs = 0;
	fprintf(f, "<td><div class=\"barcell\"><div class=\"bar\" title=\"%s reserved\"><i class=\"sp%s\" "
	    "style=\"width:%.0f%%\"></i>", kv_html_usd(reserved, m), sp >= 90 ? " bad" : sp >= 70 ? " warn" : "", sp);
	if (rs > 0)
		fprintf(f, "<i class=\"rs\" style=\"left:%.0f%%;width:%.0f%%\"></i>", sp, rs);
	fputs("</div><span class=\"pct\">", f);
	if (budget > 0)
		fprintf(f, "%.1f%%", 100.0 * (double)spent / (double)budget);
	else
		fputs("no budget", f);
	fputs("</span></div></td>", f);
}

/* The key's rate limits and what is left of each now, and its 429s. */
static void
limits(FILE *f, const struct kv_account *a)
{
	uint32_t rpm = atomic_load(&a->rpm), tpm = atomic_load(&a->tpm);
	int64_t t = kv_rl_now_ns(), rem, reset;

	fputs("<td class=\"n\">", f);
	if (rpm != 0) {
		kv_gcra_state(atomic_load(&a->rpm_tat), rpm, t, &rem, &reset);
		fprintf(f, "%" PRIu32 " rpm (%" PRId64 ")%s", rpm, rem, tpm ? " / " : "");
	}
	if (tpm != 0) {
		kv_gcra_state(atomic_load(&a->tpm_tat), tpm, t, &rem, &reset);
		fprintf(f, "%" PRIu32 " tpm (%" PRId64 ")", tpm, rem);
	}
	if (rpm == 0 && tpm == 0)
		fputs("&mdash;", f);
	fprintf(f, "</td><td class=\"n\">%" PRIu64 " / %" PRIu64 "</td>",
	    atomic_load(&a->refusals), atomic_load(&a->rate_refusals));
}

/* A key's row opens with its id and its label (a dash when unnamed). */
static void
key_cells(FILE *f, const struct kv_account *a)
{
	char id[13], label[KV_LABEL_MAX];

	kv_key_id(a->hash, id);
	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	fprintf(f, "<td><code>%s</code></td><td class=\"lb%s\">", id,
	    label[0] ? "" : " muted");
	if (label[0])
		kv_html_esc(f, label);
	else
		fputs("&mdash;", f);
	fputs("</td>", f);
}

/* One page of keys, with their history read once for the shared scales. */
struct key_page {
	const struct kv_account	**acc;		/* the matching keys, by spend */
	size_t			  n;		/* how many match */
	size_t			  first, count;	/* this page's slice of them */
	long			  page, pages;
	int64_t			(*mins)[KV_HIST_MINUTES];
	int64_t			(*hours)[KV_HIST_HOURS];
	int64_t			  max_min, max_hour;
};

static void
key_row(FILE *f, const struct key_page *kp, size_t i)
{
	const struct kv_account *a = kp->acc[kp->first + i];
	char m[2][32];
	int64_t b = atomic_load(&a->budget_nusd), s = kv_account_spent(a);
	int64_t r = atomic_load(&a->reserved_nusd);

	fprintf(f, "<tr><td class=\"n muted\">%zu</td>", kp->first + i + 1);
	key_cells(f, a);
	bar(f, b, s, r);
	fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td>"
	    "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 " / %" PRIu64 "</td>",
	    kv_html_usd(s, m[0]), kv_html_usd(b, m[1]), atomic_load(&a->requests),
	    atomic_load(&a->input_tokens), atomic_load(&a->output_tokens));
	limits(f, a);
	fputs("<td class=\"chart\">", f);
	kv_html_key_chart(f, kp->mins[i], KV_HIST_MINUTES, kp->max_min, "hour");
	fputs("</td><td class=\"chart\">", f);
	kv_html_key_chart(f, kp->hours[i], KV_HIST_HOURS, kp->max_hour, "day");
	fputs("</td></tr>\n", f);
}

/* Does A match the search Q: its id starts with Q, or its label holds Q
 * (any case)? */
static int
key_matches(const struct kv_account *a, const char *q)
{
	char id[13], label[KV_LABEL_MAX];
	size_t ql = strlen(q), i;

	if (ql == 0)
		return 1;
	kv_key_id(a->hash, id);
	if (ql <= 12 && strncasecmp(id, q, ql) == 0)
		return 1;
	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	for (i = 0; label[i] != '\0'; i++)
		if (strncasecmp(label + i, q, ql) == 0)
			return 1;
	return 0;
}

/* Fill KP from the sorted accounts ACC (N of them) for the view's search
 * and page: the matching keys in order, this page's slice, its history
 * and the slice's largest bucket per chart column. Returns 0 or -1. */
static int
key_page(struct key_page *kp, const struct kv_ledger *l, const struct kv_account **acc,
    size_t n, const char *q, long page, int64_t now)
{
	size_t i;

	memset(kp, 0, sizeof(*kp));
	if ((kp->acc = calloc(n ? n : 1, sizeof(*kp->acc))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (key_matches(acc[i], q))
			kp->acc[kp->n++] = acc[i];
	kp->pages = kp->n ? (long)((kp->n + KV_STATUS_PAGE_KEYS - 1) / KV_STATUS_PAGE_KEYS) : 1;
	kp->page = page < 1 ? 1 : page > kp->pages ? kp->pages : page;
	kp->first = (size_t)(kp->page - 1) * KV_STATUS_PAGE_KEYS;
	kp->count = kp->n - kp->first < KV_STATUS_PAGE_KEYS ? kp->n - kp->first :
	    KV_STATUS_PAGE_KEYS;
	kp->mins = calloc(KV_STATUS_PAGE_KEYS, sizeof(*kp->mins));
	kp->hours = calloc(KV_STATUS_PAGE_KEYS, sizeof(*kp->hours));
	if (kp->mins == NULL || kp->hours == NULL)
		return -1;
	for (i = 0; i < kp->count; i++) {
		kv_history_read(l, kp->acc[kp->first + i], now, kp->mins[i], kp->hours[i]);
		if (kv_html_max_of(kp->mins[i], KV_HIST_MINUTES) > kp->max_min)
			kp->max_min = kv_html_max_of(kp->mins[i], KV_HIST_MINUTES);
		if (kv_html_max_of(kp->hours[i], KV_HIST_HOURS) > kp->max_hour)
			kp->max_hour = kv_html_max_of(kp->hours[i], KV_HIST_HOURS);
	}
	return 0;
}

static void
key_page_free(struct key_page *kp)
{
	free(kp->acc);
	free(kp->mins);
	free(kp->hours);
}

/* A link to page P of the search Q, or its text alone where it leads
 * nowhere. */
static void
page_link(FILE *f, const char *q, long p, long pages, const char *text, int here)
{
	if (p < 1 || p > pages || here) {
		fprintf(f, "<span class=\"pg%s\">%s</span>", here ? " here" : "", text);
		return;
	}
	fprintf(f, "<a class=\"pg\" href=\"?");
	if (q[0] != '\0') {
		fputs("q=", f);
		kv_html_urlenc(f, q);
		fputs("&amp;", f);
	}
	fprintf(f, "page=%ld#keyhead\">%s</a>", p, text);
}

/* The search form and the page links, a window of them around this one. */
static void
key_nav(FILE *f, const struct key_page *kp, const char *q)
{
	char num[24];
	long p;

	fputs("<form class=\"nav\" method=\"get\" action=\"/#keyhead\"><input type=\"search\" "
	    "name=\"q\" placeholder=\"key id or label\" value=\"", f);
	kv_html_esc(f, q);
	fputs("\"><button type=\"submit\">Search</button>", f);
	if (q[0] != '\0')
		fputs(" <a href=\"/#keyhead\">all keys</a>", f);
	fputs("<span class=\"pages\" id=\"pages\">", f);
	page_link(f, q, kp->page - 1, kp->pages, "&laquo; prev", 0);
	for (p = 1; p <= kp->pages; p++) {
		if (p != 1 && p != kp->pages && (p < kp->page - 3 || p > kp->page + 3)) {
			if (p == kp->page - 4 || p == kp->page + 4)
				fputs("<span class=\"pg\">&hellip;</span>", f);
			continue;
		}
		snprintf(num, sizeof(num), "%ld", p);
		page_link(f, q, p, kp->pages, num, p == kp->page);
	}
	page_link(f, q, kp->page + 1, kp->pages, "next &raquo;", 0);
	fputs("</span></form>\n", f);
}

static void
keys(FILE *f, const struct key_page *kp, const char *q, size_t all)
{
	char m[2][32];
	size_t i;

	fprintf(f, "<h2 id=\"keyhead\">Keys by spend <span class=\"muted\">%zu&ndash;%zu of %zu",
	    kp->count ? kp->first + 1 : 0, kp->first + kp->count, kp->n);
	if (q[0] != '\0') {
		fputs(" matching &ldquo;", f);
		kv_html_esc(f, q);
		fprintf(f, "&rdquo; (%zu keys in all)", all);
	}
	fputs("</span></h2>\n", f);
	key_nav(f, kp, q);
	fprintf(f, "<div class=\"wide\"><table id=\"keys\"><thead><tr><th class=\"n\">#</th>"
	    "<th>Key</th><th>Label</th><th>Spend vs budget</th>"
	    "<th class=\"n\">Spent</th><th class=\"n\">Budget</th><th class=\"n\">Requests"
	    "</th><th class=\"n\">Tokens in / out</th><th class=\"n\">Limits (left)</th>"
	    "<th class=\"n\">402 / 429</th><th>Last hour<br><span class=\"muted\">%s/min</span></th>"
	    "<th>Last day<br><span class=\"muted\">%s/h</span></th></tr></thead><tbody>\n",
	    kv_html_usd(kp->max_min, m[0]), kv_html_usd(kp->max_hour, m[1]));
	for (i = 0; i < kp->count; i++)
		key_row(f, kp, i);
	if (kp->count == 0)
		fprintf(f, "<tr><td class=\"empty\" colspan=\"12\">%s</td></tr>\n",
		    q[0] ? "no key matches" : "no keys yet");
	fputs("</tbody></table></div>\n", f);
}

/* A rate lease as "used / cap" (cumulative), or a dash without the limit. */
static void
rate_lease(FILE *f, uint32_t lim, int64_t used, int64_t cap)
{
	if (lim == 0)
		fputs("<td class=\"n muted\">&mdash;</td>", f);
	else if (cap >= INT64_MAX / 8)
		fprintf(f, "<td class=\"n\">%" PRId64 " / open</td>", used);
	else
		fprintf(f, "<td class=\"n\">%" PRId64 " / %" PRId64 "</td>", used, cap);
}

/* With [cluster], per key synced with Redis: the figures of the JSON's
 * "cluster" object (shm/report.c), as this host last synced them. */
static void
cluster_leases(FILE *f, const struct kv_ledger *l, const struct key_page *kp)
{
	const struct kv_account **v = kp->acc + kp->first;
	size_t i, n = kp->count, rows = 0;
	char m[5][32];
	int64_t ms = kv_rl_now_ns() / 1000000;

	if (!atomic_load(&l->hdr->cluster))
		return;
	fputs("<h2>Cluster leases <span class=\"muted\">of the keys above</span></h2>\n<table id=\"cluster\"><thead><tr><th>Key</th>"
	    "<th>Label</th><th class=\"n\">Spent, all hosts</th><th class=\"n\">Lease here"
	    " (unused)</th><th class=\"n\">Lease cap</th><th class=\"n\">Other hosts "
	    "committed</th><th class=\"n\">Reset here</th><th class=\"n\">Lease expires</th>"
	    "<th class=\"n\">Requests leased (used / cap)</th><th class=\"n\">Tokens "
	    "leased (used / cap)</th></tr></thead><tbody>\n", f);
	for (i = 0; i < n; i++) {
		const struct kv_account *a = v[i];
		int64_t exp = atomic_load(&a->lease_expires_ms), cap, unused;

		if (exp == 0)
			continue;
		cap = atomic_load(&a->lease_cap_nusd);
		unused = cap - kv_account_spent(a) - atomic_load(&a->reserved_nusd);
		fputs("<tr>", f);
		key_cells(f, a);
		fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td>"
		    "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
		    "<td class=\"n\">%s%.1f s</td>",
		    kv_html_usd(atomic_load(&a->cluster_spent_nusd), m[0]), kv_html_usd(unused > 0 ? unused : 0, m[1]),
		    cap >= INT64_MAX / 8 ? "open" : kv_html_usd(cap, m[2]),
		    kv_html_usd(atomic_load(&a->cluster_other_nusd), m[3]),
		    kv_html_usd(atomic_load(&a->cluster_base_nusd), m[4]), exp < ms ? "expired " : "in ",
		    (double)(exp >= ms ? exp - ms : ms - exp) / 1000);
		rate_lease(f, atomic_load(&a->rpm), atomic_load(&a->rl_req_used),
		    atomic_load(&a->rl_req_cap));
		rate_lease(f, atomic_load(&a->tpm), atomic_load(&a->rl_tok_used) +
		    atomic_load(&a->rl_tok_reserved), atomic_load(&a->rl_tok_cap));
		fputs("</tr>\n", f);
		rows++;
	}
	if (rows == 0)
		fputs("<tr><td class=\"empty\" colspan=\"10\">no lease synced with Redis yet"
		    "</td></tr>\n", f);
	fputs("</tbody></table>\n", f);
}

/* A model slot's figures, copied once (the name re-terminated). */
struct model_row {
	char		name[KV_MODEL_NAME];
	uint64_t	req, in, cached, out, cost;
};

static int
cmp_model_cost(const void *x, const void *y)
{
	const struct model_row *a = x, *b = y;

	if (a->cost != b->cost)
		return a->cost < b->cost ? 1 : -1;
	return a->req < b->req ? 1 : a->req > b->req ? -1 : strcmp(a->name, b->name);
}

static void
model_tr(FILE *f, const struct model_row *r, uint64_t total, int other)
{
	char m[32];
	double share = total ? 100.0 * (double)r->cost / (double)total : 0;

	fputs("<tr><td class=\"lb\">", f);
	if (other)
		fputs("<span class=\"muted\">", f);
	kv_html_esc(f, r->name);
	fprintf(f, "%s</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td>"
	    "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%s"
	    "</td><td><div class=\"barcell\"><div class=\"bar sm\"><i class=\"sp\" style=\"width:"
	    "%.0f%%\"></i></div><span class=\"pct\">%.1f%%</span></div></td></tr>\n",
	    other ? "</span>" : "", r->req, r->in, r->cached, r->out,
	    kv_html_usd(r->cost > INT64_MAX ? INT64_MAX : (int64_t)r->cost, m), share, share);
}

/* The models by cost: the MODEL_ROWS biggest, the rest added up in one row. */
static void
models(FILE *f, const struct kv_ledger *l)
{
	struct model_row rows[KV_MODEL_SLOTS], rest;
	uint64_t total = 0;
	int i, n = 0;

	for (i = 0; i < KV_MODEL_SLOTS; i++) {
		const struct kv_model_slot *s = &l->models[i];

		if (atomic_load_explicit(&s->state, memory_order_acquire) != KV_SLOT_READY)
			continue;
		memcpy(rows[n].name, s->name, sizeof(rows[n].name));
		rows[n].name[sizeof(rows[n].name) - 1] = '\0';
		rows[n].req = atomic_load(&s->requests);
		rows[n].in = atomic_load(&s->input_tokens);
		rows[n].cached = atomic_load(&s->cached_input_tokens);
		rows[n].out = atomic_load(&s->output_tokens);
		rows[n].cost = atomic_load(&s->cost_nusd);
		total += rows[n++].cost;
	}
	qsort(rows, (size_t)n, sizeof(rows[0]), cmp_model_cost);
	fputs("<div class=\"panel\"><h2>Models <span class=\"muted\">by cost</span></h2>\n"
	    "<table id=\"models\"><thead><tr><th>Model</th><th class=\"n\">Requests</th>"
	    "<th class=\"n\">Tokens in</th><th class=\"n\">Cached in</th><th class=\"n\">Tokens out"
	    "</th><th class=\"n\">Cost</th><th>Share</th></tr></thead><tbody>\n", f);
	for (i = 0; i < n && i < MODEL_ROWS; i++)
		model_tr(f, &rows[i], total, 0);
	if (n > MODEL_ROWS) {
		memset(&rest, 0, sizeof(rest));
		snprintf(rest.name, sizeof(rest.name), "%d more models", n - MODEL_ROWS);
		for (i = MODEL_ROWS; i < n; i++) {
			rest.req += rows[i].req;
			rest.in += rows[i].in;
			rest.cached += rows[i].cached;
			rest.out += rows[i].out;
			rest.cost += rows[i].cost;
		}
		model_tr(f, &rest, total, 1);
	}
	if (n == 0)
		fputs("<tr><td class=\"empty\" colspan=\"7\">no traffic yet</td></tr>\n", f);
	fputs("</tbody></table></div>\n", f);
}

/* A target's state now: ejected (after failures in a row) or cooling (it
 * asked for a pause) until when, down by its health check, or up. */
static void
target_state(FILE *f, const struct kv_target_slot *s, int64_t mono_ms)
{
	int64_t until = atomic_load(&s->down_until_ms);
	uint32_t health = atomic_load(&s->health);

	if (until > mono_ms)
		fprintf(f, "<td class=\"bad\">%s %.0f s</td>", atomic_load(&s->ejections) ?
		    "ejected" : "cooling", (double)(until - mono_ms) / 1000 + 0.5);
	else if (health == KV_HEALTH_DOWN)
		fputs("<td class=\"bad\">down (health check)</td>", f);
	else
		fputs("<td class=\"ok\">up</td>", f);
	if (health == KV_HEALTH_UNCHECKED)
		fputs("<td class=\"muted\">&mdash;</td>", f);
	else
		fprintf(f, "<td>%s, %.0f s ago</td>", health == KV_HEALTH_UP ? "passed" : "failed",
		    (double)(mono_ms - atomic_load(&s->health_checked_ms)) / 1000);
}

/* The upstream targets (shm/targets.h), "NAME/HOST:PORT" split in two, in
 * the order the workers first used them. Bounded by the config. */
static void
upstreams(FILE *f, const struct kv_ledger *l)
{
	char name[KV_TARGET_NAME], *slash;
	int64_t mono_ms = kv_now_ms();	/* down_until_ms is on the workers' clock */
	int t, n = 0;

	fputs("<div class=\"panel\"><h2>Upstreams</h2>\n<table id=\"upstreams\"><thead><tr>"
	    "<th>Upstream</th><th>Target</th><th>State</th><th>Health check</th>"
	    "<th class=\"n\">In flight</th><th class=\"n\">Requests</th><th class=\"n\">Failures"
	    "</th><th class=\"n\">Retries</th><th class=\"n\">Ejections</th></tr></thead><tbody>\n", f);
	for (t = 0; t < KV_TARGET_SLOTS; t++) {
		const struct kv_target_slot *s = &l->targets[t];

		if (!kv_slot_ready(&s->state))
			continue;
		memcpy(name, s->name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		slash = strchr(name, '/');
		if (slash != NULL)
			*slash = '\0';
		fputs("<tr><td>", f);
		kv_html_esc(f, name);
		fputs("</td><td><code>", f);
		kv_html_esc(f, slash != NULL ? slash + 1 : "");
		fputs("</code></td>", f);
		target_state(f, s, mono_ms);
		fprintf(f, "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td>"
		    "<td class=\"n%s\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td>"
		    "<td class=\"n\">%" PRIu64 "</td></tr>\n", kv_target_inflight(l, t),
		    atomic_load(&s->requests), atomic_load(&s->failures) ? " bad" : "",
		    atomic_load(&s->failures), atomic_load(&s->retries),
		    atomic_load(&s->ejections_total));
		n++;
	}
	if (n == 0)
		fputs("<tr><td class=\"empty\" colspan=\"9\">no request sent upstream yet</td></tr>\n", f);
	fputs("</tbody></table></div>\n", f);
}

static void
workers(FILE *f, const struct kv_ledger *l, int64_t now)
{
	int i, n = 0;

	fputs("<h2>Workers</h2>\n<table id=\"workers\"><thead><tr><th>Slot</th>"
	    "<th class=\"n\">PID</th><th>State</th><th class=\"n\">Generation</th>"
	    "<th class=\"n\">Connections</th><th class=\"n\">Active streams</th>"
	    "<th class=\"n\">Requests</th><th class=\"n\">Heartbeat</th></tr></thead><tbody>\n", f);
	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		const struct kv_worker_slot *w = &l->workers[i];
		int32_t pid = atomic_load(&w->pid);
		int64_t hb = atomic_load(&w->heartbeat);
		const char *st = kv_report_worker_state(atomic_load(&w->state));

		if (pid == 0)
			continue;
		fprintf(f, "<tr><td>%d</td><td class=\"n\">%" PRId32 "</td><td%s>%s</td>"
		    "<td class=\"n\">%" PRIu32 "</td><td class=\"n\">%" PRIu64 "</td>"
		    "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td>"
		    "<td class=\"n\">%" PRId64 " s ago</td></tr>\n", i, pid,
		    strcmp(st, "running") ? " class=\"muted\"" : "", st,
		    atomic_load(&w->generation), atomic_load(&w->connections),
		    atomic_load(&w->active_streams), atomic_load(&w->requests),
		    hb > 0 && now >= hb ? now - hb : 0);
		n++;
	}
	if (n == 0)
		fputs("<tr><td class=\"empty\" colspan=\"8\">no workers</td></tr>\n", f);
	fputs("</tbody></table>\n", f);
}

/* "live" while the master that last held the ledger runs. */
static void
state(FILE *f, const struct kv_ledger *l, int64_t now)
{
	int32_t pid = atomic_load(&l->hdr->master_pid);
	int live = pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
	char when[32];
	time_t t = (time_t)now;
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL || strftime(when, sizeof(when), "%H:%M:%SZ", &tm) == 0)
		snprintf(when, sizeof(when), "?");
	fprintf(f, "<div id=\"state\" class=\"%s\"><span class=\"dot\"></span>"
	    "<span id=\"statetext\">%s &middot; %s</span></div>\n", live ? "ok" : "bad",
	    live ? "live" : "master not running", when);
}

void
kv_status_html(FILE *f, const struct kv_ledger *l, int64_t now, const struct kv_status_view *v)
{
	const struct kv_account **acc = NULL;
	struct key_page kp;
	char q[KV_STATUS_QUERY_MAX + 1];
	size_t n;

	snprintf(q, sizeof(q), "%s", v != NULL && v->q != NULL ? v->q : "");
	n = kv_report_sorted_accounts(l, &acc);
	fputs(kv_status_head, f);
	fputs("<header>\n<h1><span>&#9889;</span> kilovolt</h1>\n", f);
	state(f, l, now);
	fputs("</header>\n<main>\n", f);
	cards(f, l, now);
	overview(f, l, acc, acc != NULL ? n : 0, now);
	if (key_page(&kp, l, acc, acc != NULL ? n : 0, q, v != NULL ? v->page : 1, now) == 0) {
		keys(f, &kp, q, n);
		cluster_leases(f, l, &kp);
	} else
		fputs("<p class=\"empty\">out of memory: the keys are not shown</p>\n", f);
	key_page_free(&kp);
	free(acc);
	fputs("<section class=\"two\">\n", f);
	models(f, l);
	upstreams(f, l);
	fputs("</section>\n", f);
	workers(f, l, now);
	fputs("<footer>Rendered by the gateway; with JavaScript it refreshes every 2 s. "
	    "The same figures: <a href=\"/status.json\">/status.json</a> &middot; "
	    "<a href=\"/metrics\">/metrics</a> &middot; <a href=\"/healthz\">/healthz</a>"
	    "</footer>\n</main>\n", f);
	fputs(kv_status_script, f);
}

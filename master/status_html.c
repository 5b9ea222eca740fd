/* The status page, rendered on the server: see status_html.h. Every string
 * from the ledger (labels, model names) is HTML-escaped. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status_html.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/money.h"
#include "master/status_page.h"
#include "shm/history.h"
#include "shm/ratelimit.h"
#include "shm/report.h"

#define CHART_W	180
#define CHART_H	34

static void
esc(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
		}
	}
}

static const char *
usd(int64_t nusd, char buf[32])
{
	kv_format_dollars(nusd, buf, 32);
	return buf;
}

static void
card(FILE *f, const char *k, const char *v, const char *s)
{
	fprintf(f, "<div class=\"card\"><div class=\"k\">%s</div><div class=\"v\">%s</div>"
	    "<div class=\"s\">%s</div></div>\n", k, v, s);
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

static void
cards(FILE *f, const struct kv_ledger *l, int64_t now)
{
	const struct kv_counters *c = &l->hdr->counters;
	char v[64], s[128], m[32];
	int64_t up = now - atomic_load(&l->hdr->master_start);

	fputs("<section class=\"cards\">\n", f);
	snprintf(v, sizeof(v), "%" PRIu64, atomic_load(&c->requests_total));
	snprintf(s, sizeof(s), "%" PRIu64 " refused (402), %" PRIu64 " limited (429)",
	    atomic_load(&c->budget_refusals_total), atomic_load(&c->rate_limited_total));
	card(f, "Requests", v, s);
	snprintf(v, sizeof(v), "%" PRIu64, kv_ledger_sum_active_streams(l));
	snprintf(s, sizeof(s), "%" PRIu64 " connections", kv_ledger_sum_connections(l));
	card(f, "Active streams", v, s);
	snprintf(s, sizeof(s), "%" PRIu64 " estimated", atomic_load(&c->estimated_requests_total));
	card(f, "Spend", usd((int64_t)atomic_load(&c->cost_nusd_total), m), s);
	snprintf(v, sizeof(v), "%" PRIu64, atomic_load(&c->input_tokens_total) +
	    atomic_load(&c->output_tokens_total));
	snprintf(s, sizeof(s), "%" PRIu64 " in / %" PRIu64 " out",
	    atomic_load(&c->input_tokens_total), atomic_load(&c->output_tokens_total));
	card(f, "Tokens", v, s);
	snprintf(v, sizeof(v), "%" PRIu64, atomic_load(&c->upstream_errors_total));
	snprintf(s, sizeof(s), "%" PRIu64 " client aborts", atomic_load(&c->client_aborts_total));
	card(f, "Errors", v, s);
	if (up < 0 || atomic_load(&l->hdr->master_start) == 0)
		up = 0;
	snprintf(v, sizeof(v), "%" PRId64 "h %02" PRId64 "m", up / 3600, up / 60 % 60);
	snprintf(s, sizeof(s), "master pid %" PRId32, atomic_load(&l->hdr->master_pid));
	card(f, "Uptime", v, s);
	cluster_card(f, l);
	fputs("</section>\n", f);
}

/* A bar chart of N buckets, newest on the right, scaled to its largest. */
static void
chart(FILE *f, const int64_t *v, int n, const char *what)
{
	int64_t max = 0, total = 0;
	char m[32];
	int i, h;
	double w = (double)CHART_W / n;

	for (i = 0; i < n; i++) {
		if (v[i] > max)
			max = v[i];
		total += v[i];
	}
	fprintf(f, "<svg class=\"chart\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	    "role=\"img\"><title>%s spent in the last %s</title>"
	    "<line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", CHART_W, CHART_H, CHART_W,
	    CHART_H, usd(total, m), what, CHART_H - 1, CHART_W, CHART_H - 1);
	for (i = 0; i < n && max > 0; i++) {
		if (v[i] <= 0)
			continue;
		h = (int)((double)v[i] * (CHART_H - 2) / (double)max);
		if (h < 1)
			h = 1;
		fprintf(f, "<rect%s x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>",
		    i == n - 1 ? " class=\"now\"" : "", i * w, CHART_H - 1 - h, w > 2 ? w - 1 : w, h);
	}
	fputs("</svg>", f);
}

static void
bar(FILE *f, int64_t budget, int64_t spent, int64_t reserved)
{
	double sp = budget > 0 ? 100.0 * (double)spent / (double)budget : (spent > 0 ? 100 : 0);
	double rs = budget > 0 ? 100.0 * (double)reserved / (double)budget : 0;

	if (sp > 100)
		sp = 100;
	if (sp < 0)
		sp = 0;
	if (rs > 100 - sp)
		rs = 100 - sp;
	if (rs < 0)
		rs = 0;
	fprintf(f, "<td><div class=\"barcell\"><div class=\"bar\"><i class=\"sp%s\" "
	    "style=\"width:%.1f%%\"></i><i class=\"rs\" style=\"left:%.1f%%;width:%.1f%%\">"
	    "</i></div><span class=\"pct\">", sp >= 90 ? " bad" : sp >= 70 ? " warn" : "",
	    sp, sp, rs);
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
	fprintf(f, "</td><td class=\"n\">%" PRIu64 "</td>", atomic_load(&a->rate_refusals));
}

/* A key's row opens with its id and its label (a dash when unnamed). */
static void
key_cells(FILE *f, const struct kv_account *a)
{
	char id[13], label[KV_LABEL_MAX];

	kv_key_id(a->hash, id);
	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	fprintf(f, "<tr><td class=\"mono\"><code>%s</code></td><td%s>", id,
	    label[0] ? "" : " class=\"muted\"");
	if (label[0])
		esc(f, label);
	else
		fputs("&mdash;", f);
	fputs("</td>", f);
}

static void
key_row(FILE *f, const struct kv_ledger *l, const struct kv_account *a, int64_t now)
{
	char m[3][32];
	int64_t mins[KV_HIST_MINUTES], hours[KV_HIST_HOURS];
	int64_t b = atomic_load(&a->budget_nusd), s = kv_account_spent(a);
	int64_t r = atomic_load(&a->reserved_nusd);

	key_cells(f, a);
	bar(f, b, s, r);
	fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
	    "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 "</td>"
	    "<td class=\"n\">%" PRIu64 "</td>", usd(s, m[0]), usd(b, m[1]), usd(r, m[2]),
	    atomic_load(&a->requests), atomic_load(&a->input_tokens),
	    atomic_load(&a->output_tokens));
	fprintf(f, "<td class=\"n\">%" PRIu64 "</td>", atomic_load(&a->refusals));
	limits(f, a);
	kv_history_read(l, a, now, mins, hours);
	fputs("<td class=\"chart\">", f);
	chart(f, mins, KV_HIST_MINUTES, "hour");
	fputs("</td><td class=\"chart\">", f);
	chart(f, hours, KV_HIST_HOURS, "day");
	fputs("</td></tr>\n", f);
}

static void
keys(FILE *f, const struct kv_ledger *l, int64_t now)
{
	const struct kv_account **v;
	size_t i, n = kv_report_sorted_accounts(l, &v);

	fputs("<h2>Keys</h2>\n<table id=\"keys\"><thead><tr><th>Key</th><th>Label</th>"
	    "<th>Spend vs budget</th><th class=\"n\">Spent</th><th class=\"n\">Budget</th>"
	    "<th class=\"n\">Reserved</th><th class=\"n\">Requests</th><th class=\"n\">Tokens in"
	    "</th><th class=\"n\">Tokens out</th><th class=\"n\">Refused</th>"
	    "<th class=\"n\">Rate limits (left)</th><th class=\"n\">Limited</th>"
	    "<th>Last hour, per minute</th>"
	    "<th>Last day, per hour</th></tr></thead><tbody>\n", f);
	for (i = 0; i < n; i++)
		key_row(f, l, v[i], now);
	if (n == 0)
		fputs("<tr><td class=\"empty\" colspan=\"14\">no keys yet</td></tr>\n", f);
	fputs("</tbody></table>\n", f);
	free(v);
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
cluster_leases(FILE *f, const struct kv_ledger *l)
{
	const struct kv_account **v;
	size_t i, n, rows = 0;
	char m[5][32];
	int64_t ms = kv_rl_now_ns() / 1000000;

	if (!atomic_load(&l->hdr->cluster))
		return;
	n = kv_report_sorted_accounts(l, &v);
	fputs("<h2>Cluster leases</h2>\n<table id=\"cluster\"><thead><tr><th>Key</th>"
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
		key_cells(f, a);
		fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td>"
		    "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
		    "<td class=\"n\">%s%.1f s</td>",
		    usd(atomic_load(&a->cluster_spent_nusd), m[0]), usd(unused > 0 ? unused : 0, m[1]),
		    cap >= INT64_MAX / 8 ? "open" : usd(cap, m[2]),
		    usd(atomic_load(&a->cluster_other_nusd), m[3]),
		    usd(atomic_load(&a->cluster_base_nusd), m[4]), exp < ms ? "expired " : "in ",
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
	free(v);
}

static void
models(FILE *f, const struct kv_ledger *l)
{
	char name[KV_MODEL_NAME], m[32];
	int i, n = 0;

	fputs("<h2>Models</h2>\n<table id=\"models\"><thead><tr><th>Model</th>"
	    "<th class=\"n\">Requests</th><th class=\"n\">Tokens in</th><th class=\"n\">Cached in"
	    "</th><th class=\"n\">Tokens out</th><th class=\"n\">Cost</th></tr></thead><tbody>\n", f);
	for (i = 0; i < KV_MODEL_SLOTS; i++) {
		const struct kv_model_slot *s = &l->models[i];

		if (atomic_load_explicit(&s->state, memory_order_acquire) != KV_SLOT_READY)
			continue;
		memcpy(name, s->name, sizeof(name));
		name[sizeof(name) - 1] = '\0';
		fputs("<tr><td>", f);
		esc(f, name);
		fprintf(f, "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
		    "</td><td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64
		    "</td><td class=\"n\">%s</td></tr>\n", atomic_load(&s->requests),
		    atomic_load(&s->input_tokens), atomic_load(&s->cached_input_tokens),
		    atomic_load(&s->output_tokens), usd((int64_t)atomic_load(&s->cost_nusd), m));
		n++;
	}
	if (n == 0)
		fputs("<tr><td class=\"empty\" colspan=\"6\">no traffic yet</td></tr>\n", f);
	fputs("</tbody></table>\n", f);
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
kv_status_html(FILE *f, const struct kv_ledger *l, int64_t now)
{
	fputs(kv_status_head, f);
	fputs("<header>\n<h1><span>&#9889;</span> kilovolt</h1>\n", f);
	state(f, l, now);
	fputs("</header>\n<main>\n", f);
	cards(f, l, now);
	keys(f, l, now);
	cluster_leases(f, l);
	models(f, l);
	workers(f, l, now);
	fputs("<footer>Rendered by the gateway; with JavaScript it refreshes every 2 s. "
	    "The same figures: <a href=\"/status.json\">/status.json</a> &middot; "
	    "<a href=\"/metrics\">/metrics</a> &middot; <a href=\"/healthz\">/healthz</a>"
	    "</footer>\n</main>\n", f);
	fputs(kv_status_script, f);
}

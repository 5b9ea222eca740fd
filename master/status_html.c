/* The status page, rendered on the server: see status_html.h. Every string
 * from the ledger (labels, model names) is HTML-escaped. This file writes
 * the page and its sections but the key table (status_html_keys.c); the
 * pieces they share are status_html_parts.c's. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status_html.h"
#include "master/status_html_keys.h"
#include "master/status_html_tree.h"
#include "master/status_html_parts.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
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
	kv_html_table_end(f, n, 7, "no traffic yet", "</tbody></table></div>\n");
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

/* Target T's row: its "NAME/HOST:PORT" split in two, its state as of
 * MONO_MS and its counts. */
static void
upstream_row(FILE *f, const struct kv_ledger *l, int t, int64_t mono_ms)
{
	const struct kv_target_slot *s = &l->targets[t];
	char name[KV_TARGET_NAME], *slash;

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
}

/* The upstream targets (shm/targets.h), "NAME/HOST:PORT" split in two, in
 * the order the workers first used them. Bounded by the config. */
static void
upstreams(FILE *f, const struct kv_ledger *l)
{
	int64_t mono_ms = kv_now_ms();	/* down_until_ms is on the workers' clock */
	int t, n = 0;

	fputs("<div class=\"panel\"><h2>Upstreams</h2>\n<table id=\"upstreams\"><thead><tr>"
	    "<th>Upstream</th><th>Target</th><th>State</th><th>Health check</th>"
	    "<th class=\"n\">In flight</th><th class=\"n\">Requests</th><th class=\"n\">Failures"
	    "</th><th class=\"n\">Retries</th><th class=\"n\">Ejections</th></tr></thead><tbody>\n", f);
	for (t = 0; t < KV_TARGET_SLOTS; t++) {
		if (!kv_slot_ready(&l->targets[t].state))
			continue;
		upstream_row(f, l, t, mono_ms);
		n++;
	}
	kv_html_table_end(f, n, 9, "no request sent upstream yet", "</tbody></table></div>\n");
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
	kv_html_table_end(f, n, 8, "no workers", "</tbody></table>\n");
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
	if (kv_html_key_page(&kp, l, acc, acc != NULL ? n : 0, q, v != NULL ? v->page : 1, now) == 0) {
		kv_html_keys(f, &kp, q, n);
		kv_html_cluster_leases(f, l, &kp);
	} else
		fputs("<p class=\"empty\">out of memory: the keys are not shown</p>\n", f);
	kv_html_key_page_free(&kp);
	free(acc);
	kv_html_tree(f, l, v != NULL ? v->cf : NULL);
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

/* The status page's key table: the keys by spend a page at a time (a
 * search, page links), each with a budget bar, its limits and its charts
 * on one scale per column; and, with [cluster], the page's keys' leases. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status_html_keys.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "master/status_html.h"
#include "master/status_html_parts.h"
#include "shm/history.h"
#include "shm/ratelimit.h"

void
kv_html_bar(FILE *f, int64_t budget, int64_t spent, int64_t reserved)
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

void
kv_html_limits(FILE *f, const struct kv_account *a)
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

static void
key_row(FILE *f, const struct key_page *kp, size_t i)
{
	const struct kv_account *a = kp->acc[kp->first + i];
	char m[2][32];
	int64_t b = atomic_load(&a->budget_nusd), s = kv_account_spent(a);
	int64_t r = atomic_load(&a->reserved_nusd);

	fprintf(f, "<tr><td class=\"n muted\">%zu</td>", kp->first + i + 1);
	key_cells(f, a);
	kv_html_bar(f, b, s, r);
	fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td>"
	    "<td class=\"n\">%" PRIu64 "</td><td class=\"n\">%" PRIu64 " / %" PRIu64 "</td>",
	    kv_html_usd(s, m[0]), kv_html_usd(b, m[1]), atomic_load(&a->requests),
	    atomic_load(&a->input_tokens), atomic_load(&a->output_tokens));
	kv_html_limits(f, a);
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

int
kv_html_key_page(struct key_page *kp, const struct kv_ledger *l,
    const struct kv_account **acc, size_t n, const char *q, long page, int64_t now)
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

void
kv_html_key_page_free(struct key_page *kp)
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

void
kv_html_keys(FILE *f, const struct key_page *kp, const char *q, size_t all)
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
	kv_html_table_end(f, kp->count, 12, q[0] ? "no key matches" : "no keys yet",
	    "</tbody></table></div>\n");
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

void
kv_html_cluster_leases(FILE *f, const struct kv_ledger *l, const struct key_page *kp)
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
	kv_html_table_end(f, rows, 10, "no lease synced with Redis yet", "</tbody></table>\n");
}

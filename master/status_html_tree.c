/* The status page's budget tree: the config's teams each under its
 * parent, then the users by spend, each row with its spend against its
 * budget, its limits and its top models (status_html_tree.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status_html_tree.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "master/status_html_keys.h"
#include "master/status_html_parts.h"
#include "shm/report_sort.h"
#include "shm/tree.h"

/* The ledger's nodes by hash, to find a node of the config without
 * touching the ledger's process-local memo from the status thread. */
struct nodes {
	const struct kv_account **by_hash;
	size_t	  n;
};

static int
cmp_hash(const void *x, const void *y)
{
	return memcmp((*(const struct kv_account *const *)x)->hash,
	    (*(const struct kv_account *const *)y)->hash, 32);
}

static const struct kv_account *
node_find(const struct nodes *ns, const uint8_t hash[32])
{
	size_t lo = 0, hi = ns->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = memcmp(ns->by_hash[mid]->hash, hash, 32);
		if (c == 0)
			return ns->by_hash[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The top models of a node: its caps' spend, the largest first. */
struct top {
	const struct kv_modelcap *cap[KV_MODEL_CAPS];
	int64_t	  spent[KV_MODEL_CAPS];
	int	  n;
};

/* CAPS of the node whose name is OWNER (their node names are OWNER's when
 * they have none: a user's) into T, by spend. */
static void
top_of(const struct nodes *ns, const struct kv_modelcaps *caps, const char *owner,
    struct top *t)
{
	char buf[KV_NODE_NAME + 300];
	const struct kv_account *a;
	uint8_t hash[32];
	int i, j, len;

	t->n = 0;
	for (i = 0; caps != NULL && i < caps->n; i++) {
		if (caps->cap[i].node[0] != '\0')
			len = snprintf(buf, sizeof(buf), "\001node:%s", caps->cap[i].node);
		else
			len = snprintf(buf, sizeof(buf), "\001node:model/%s/%s", owner,
			    caps->cap[i].glob);
		kv_key_hash(buf, (size_t)len, hash);
		if ((a = node_find(ns, hash)) == NULL)
			continue;
		for (j = t->n++; j > 0 && t->spent[j - 1] < kv_account_spent(a); j--) {
			t->cap[j] = t->cap[j - 1];
			t->spent[j] = t->spent[j - 1];
		}
		t->cap[j] = &caps->cap[i];
		t->spent[j] = kv_account_spent(a);
	}
}

static void
top_cell(FILE *f, const struct top *t)
{
	char m[2][32];
	int i;

	fputs("<td class=\"models\">", f);
	for (i = 0; i < t->n && i < KV_HTML_TREE_MODELS; i++) {
		fputs(i ? "<br>" : "", f);
		kv_html_esc(f, t->cap[i]->glob);
		fprintf(f, " %s of %s", kv_html_usd(t->spent[i], m[0]),
		    kv_html_usd(t->cap[i]->budget_nusd, m[1]));
	}
	if (t->n == 0)
		fputs("<span class=\"muted\">&mdash;</span>", f);
	fputs("</td>", f);
}

/* A node's row: NAME shown DEPTH levels in, node NODE. */
static void
node_row(FILE *f, const struct kv_account *a, const char *node, const char *name, int depth,
    const struct top *t)
{
	int64_t b = atomic_load(&a->budget_nusd), s = kv_account_spent(a);
	int64_t r = atomic_load(&a->reserved_nusd);
	uint64_t n = atomic_load(&a->requests);
	char m[3][32];

	if (b >= KV_NODE_UNBOUNDED)
		b = 0;	/* none: it admits what its parents admit */
	fputs("<tr data-node=\"", f);
	kv_html_esc(f, node);
	fprintf(f, "\" data-spent-nusd=\"%" PRId64 "\" data-budget-nusd=\"%" PRId64 "\" "
	    "data-requests=\"%" PRIu64 "\"><td style=\"padding-left:%dem\">", s, b, n,
	    1 + 2 * depth);
	kv_html_esc(f, name);
	fputs("</td>", f);
	kv_html_bar(f, b, s, r);
	fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
	    "<td class=\"n\">%" PRIu64 "</td>", kv_html_usd(s, m[0]),
	    b > 0 ? kv_html_usd(b, m[1]) : "&mdash;", kv_html_usd(r, m[2]), n);
	kv_html_limits(f, a);
	top_cell(f, t);
	fputs("</tr>\n", f);
}

/* Team I and, under it, its children, depth first. */
static void
team_rows(FILE *f, const struct nodes *ns, const struct kv_config *cf, int i, int depth,
    size_t *rows)
{
	const struct kv_teamdef *t = &cf->teams[i];
	const struct kv_account *a = node_find(ns, t->hash);
	struct top top;
	size_t j;

	if (a != NULL && depth <= KV_TREE_DEPTH) {
		top_of(ns, t->caps, t->node, &top);
		node_row(f, a, t->node, t->name, depth, &top);
		++*rows;
	}
	for (j = 0; j < cf->nteams; j++)
		if (cf->teams[j].up == i)
			team_rows(f, ns, cf, (int)j, depth + 1, rows);
}

static const char tree_head[] = "<thead><tr><th>%s</th><th>Spend vs budget</th>"
    "<th class=\"n\">Spent</th><th class=\"n\">Budget</th><th class=\"n\">Reserved</th>"
    "<th class=\"n\">Requests</th><th class=\"n\">Limits (left)</th>"
    "<th class=\"n\">402 / 429</th><th>Top models <span class=\"muted\">(caps)</span></th>"
    "</tr></thead><tbody>\n";

static void
users(FILE *f, const struct kv_ledger *l, const struct nodes *ns, const struct kv_config *cf)
{
	const struct kv_account **u = NULL;
	char label[KV_LABEL_MAX + 1];
	struct top top;
	size_t n, i;

	n = kv_report_sorted_nodes(l, "user/", &u);
	if (n == 0 || u == NULL) {
		free(u);
		return;
	}
	fprintf(f, "<h2>Users by spend <span class=\"muted\">%zu of %zu</span></h2>\n"
	    "<div class=\"wide\"><table id=\"users\">", n < KV_HTML_TREE_USERS ? n :
	    KV_HTML_TREE_USERS, n);
	fprintf(f, tree_head, "User");
	for (i = 0; i < n && i < KV_HTML_TREE_USERS; i++) {
		memcpy(label, u[i]->label, KV_LABEL_MAX);
		label[KV_LABEL_MAX] = '\0';
		top_of(ns, cf != NULL ? cf->auth_jwt.user_caps : NULL, label, &top);
		node_row(f, u[i], label, label + 5, 0, &top);
	}
	fputs("</tbody></table></div>\n", f);
	free(u);
}

void
kv_html_tree(FILE *f, const struct kv_ledger *l, const struct kv_config *cf)
{
	const struct kv_account **all = NULL;
	struct nodes ns;
	size_t rows = 0, i;

	ns.n = kv_report_sorted_nodes(l, "", &all);
	ns.by_hash = all;
	if (ns.n == 0 || all == NULL) {
		free(all);
		return;
	}
	qsort(all, ns.n, sizeof(*all), cmp_hash);
	fputs("<section id=\"tree\">\n", f);
	if (cf != NULL && cf->nteams > 0) {
		fputs("<h2>Teams <span class=\"muted\">each under its parent</span></h2>\n"
		    "<div class=\"wide\"><table id=\"teams\">", f);
		fprintf(f, tree_head, "Team");
		for (i = 0; i < cf->nteams; i++)
			if (cf->teams[i].up == -1)
				team_rows(f, &ns, cf, (int)i, 0, &rows);
		kv_html_table_end(f, rows, 9, "no team in the ledger yet",
		    "</tbody></table></div>\n");
	}
	users(f, l, &ns, cf);
	fputs("</section>\n", f);
	free(all);
}

/* kvctl report --by team|user|key|model|tag [--since T --until T] and
 * kvctl team NAME: the budget tree's spend from the live ledger
 * (docs/ledger.md "Budget tree"), or over a window of its spend history
 * (shm/history_window.h). A node's spent is charged by the same settle as
 * its keys', so the keys of a team sum exactly to it, and its child teams
 * to their parent. */
#include "cli/kvctl.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jsonline.h"
#include "shm/history_window.h"
#include "shm/report_sort.h"
#include "shm/tree.h"

struct row {
	char	  node[KV_LABEL_MAX + 16];
	int64_t	  spent, budget, reserved;	/* budget < 0: none */
	uint64_t  requests, refusals;
	int	  windowed;	/* spent over a window: no reserved, requests, refusals */
};

static void
account_row(const struct kv_account *a, int key, struct row *r)
{
	char id[13];

	if (key && !(a->flags & KV_ACCOUNT_NAMED)) {
		kv_key_id(a->hash, id);
		snprintf(r->node, sizeof(r->node), "key/%s", id);
	} else {
		snprintf(r->node, sizeof(r->node), "%s%.*s", key ? "key/" : "",
		    KV_LABEL_MAX - 1, a->label);
	}
	r->spent = kv_account_spent(a);
	r->budget = atomic_load(&a->budget_nusd);
	if ((atomic_load(&a->aflags) & KV_AF_NODE) && r->budget >= KV_NODE_UNBOUNDED)
		r->budget = -1;	/* a node without a budget of its own */
	r->reserved = atomic_load(&a->reserved_nusd);
	r->requests = atomic_load(&a->requests);
	r->refusals = atomic_load(&a->refusals);
}

static void
print_row(FILE *f, const struct row *r, int json, int first)
{
	char spent[32], budget[32], reserved[32];

	if (json) {
		fputs(first ? "{\"node\":" : ",{\"node\":", f);
		kv_json_write_string(f, r->node);
		fprintf(f, ",\"spent_nusd\":%" PRId64 ",\"budget_nusd\":", r->spent);
		if (r->budget >= 0)
			fprintf(f, "%" PRId64, r->budget);
		else
			fputs("null", f);
		if (r->windowed)	/* the history keeps spend, not counts */
			fputs(",\"reserved_nusd\":null,\"requests\":null,\"refusals\":null}", f);
		else
			fprintf(f, ",\"reserved_nusd\":%" PRId64 ",\"requests\":%" PRIu64
			    ",\"refusals\":%" PRIu64 "}", r->reserved, r->requests, r->refusals);
		return;
	}
	kvctl_format_money(r->spent, spent, sizeof(spent));
	if (r->budget >= 0)
		kvctl_format_money(r->budget, budget, sizeof(budget));
	else
		snprintf(budget, sizeof(budget), "-");
	if (r->windowed) {
		fprintf(f, "%-40s %14s %14s\n", r->node, spent, budget);
		return;
	}
	kvctl_format_money(r->reserved, reserved, sizeof(reserved));
	fprintf(f, "%-40s %14s %14s %14s %9" PRIu64 "\n", r->node, spent, budget, reserved,
	    r->requests);
}

/* The per-model totals of the ledger, as rows "model/NAME" (no budget). */
static int
model_rows(FILE *f, const struct kv_ledger *l, int json, int first)
{
	struct row r;
	uint32_t i;

	for (i = 0; i < KV_MODEL_SLOTS; i++) {
		const struct kv_model_slot *m = &l->models[i];

		if (atomic_load(&m->state) != KV_SLOT_READY)
			continue;
		memset(&r, 0, sizeof(r));
		snprintf(r.node, sizeof(r.node), "model/%.*s", KV_LABEL_MAX, m->name);
		r.spent = (int64_t)atomic_load(&m->cost_nusd);
		r.budget = -1;
		r.requests = atomic_load(&m->requests);
		print_row(f, &r, json, first);
		first = 0;
	}
	return first;
}

/* --since/--until into W as of NOW (both NULL: no window, 0). A time is
 * what kvctl requests --since takes, or a relative one written -7d. */
static int
window_of(const char *since, const char *until, int64_t now, struct kv_hist_window *w,
    int *on)
{
	int64_t s = now - 3600, u = now + 1, ms;
	const char *t[2] = { since, until };
	int i;

	*on = since != NULL || until != NULL;
	for (i = 0; i < 2 && *on; i++) {
		if (t[i] == NULL)
			continue;
		if (kvctl_parse_since(t[i] + (t[i][0] == '-'), now, &ms) == -1)
			return kvctl_usage_error("report", "'%s': give 10m, -7d, unix seconds or an "
			    "RFC 3339 UTC time like 2026-12-01T21:00:00Z", t[i]);
		*(i ? &u : &s) = ms / 1000;
	}
	switch (*on ? kv_history_window(now, s, u, w) : 0) {
	case -1:
		return kvctl_usage_error("report", "--since %s: the ledger's history holds the "
		    "last 24 hours (by the hour; the last 60 minutes by the minute)", since);
	case -2:
		return kvctl_usage_error("report", "%s: the window must start before now and "
		    "end after it starts", since != NULL ? since : until);
	}
	return 0;
}

static void
window_json(FILE *f, const struct kv_hist_window *w)
{
	fprintf(f, "{\"since\":%" PRId64 ",\"until\":%" PRId64 ",\"bucket_seconds\":%d,"
	    "\"rows\":[", w->from, w->to, w->step);
}

int
kvctl_report(FILE *f, const struct kv_ledger *l, const char *by, const char *since,
    const char *until, int json)
{
	const struct kv_account **v;
	int key = strcmp(by, "key") == 0, first = 1, win, rc;
	int64_t now = (int64_t)time(NULL);
	struct kv_hist_window w;
	struct row r;
	size_t n, i;

	if (!key && strcmp(by, "team") != 0 && strcmp(by, "model") != 0 &&
	    strcmp(by, "user") != 0 && strcmp(by, "tag") != 0)
		return kvctl_usage_error("report", "--by '%s': give team, user, key, model or tag",
		    by);
	if (key)
		n = kv_report_sorted_accounts(l, &v);
	else
		n = kv_report_sorted_nodes(l, strcmp(by, "team") == 0 ? "team/" :
		    strcmp(by, "user") == 0 ? "user/" : strcmp(by, "tag") == 0 ? "tag/" : "model/",
		    &v);
	if ((rc = window_of(since, until, now, &w, &win)) != 0) {
		free(v);
		return rc;
	}
	if (json && win)
		window_json(f, &w);
	else if (json)
		fputs("{\"rows\":[", f);
	else if (win)
		fprintf(f, "%-40s %14s %14s\n", "NODE", "SPENT", "BUDGET");
	else
		fprintf(f, "%-40s %14s %14s %14s %9s\n", "NODE", "SPENT", "BUDGET", "RESERVED",
		    "REQUESTS");
	if (strcmp(by, "model") == 0 && !win)	/* the model totals keep no history */
		first = model_rows(f, l, json, first);
	for (i = 0; i < n; i++) {
		account_row(v[i], key, &r);
		if ((r.windowed = win))
			r.spent = kv_history_window_spent(l, v[i], now, &w);
		print_row(f, &r, json, first);
		first = 0;
	}
	if (json)
		fputs("]}\n", f);
	free(v);
	return KVCTL_EXIT_OK;
}

int
kvctl_team(FILE *f, const struct kv_ledger *l, const char *name, int json)
{
	char node[128];
	uint8_t hash[32];
	struct kv_account *a;
	struct row r;
	int n = snprintf(node, sizeof(node), "\001node:team/%s", name);

	kv_key_hash(node, (size_t)n, hash);
	a = kv_ledger_account((struct kv_ledger *)l, hash, 0, NULL, 0);
	if (a == NULL || !(atomic_load(&a->aflags) & KV_AF_NODE)) {
		fprintf(stderr, "kvctl: team: no team '%s' in the ledger\n", name);
		return KVCTL_EXIT_NOTFOUND;
	}
	account_row(a, 0, &r);
	snprintf(r.node, sizeof(r.node), "team/%.*s", KV_LABEL_MAX, name);
	if (!json)
		fprintf(f, "%-40s %14s %14s %14s %9s\n", "NODE", "SPENT", "BUDGET", "RESERVED",
		    "REQUESTS");
	print_row(f, &r, json, 1);
	if (json)
		fputc('\n', f);
	return KVCTL_EXIT_OK;
}

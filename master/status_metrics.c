/* The Prometheus exposition of the ledger, for /metrics. Money leaves the
 * ledger as integer nano-dollars and is printed as exact decimal dollars;
 * no floating point is involved even for display. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status_metrics.h"
#include "common/clock.h"
#include "shm/targets.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "shm/report.h"
#include "shm/report_sort.h"
#include "shm/tree.h"

/* Nano-dollars as exact decimal dollars ("-0.000000001"); display only,
 * so no floating point is involved even here. */
static void
put_dollars(FILE *f, int64_t nusd)
{
	uint64_t mag = nusd < 0 ? (uint64_t)0 - (uint64_t)nusd : (uint64_t)nusd;

	fprintf(f, "%s%" PRIu64 ".%09" PRIu64, nusd < 0 ? "-" : "",
	    mag / 1000000000u, mag % 1000000000u);
}

/* A label value: escaped per the text format. Bytes outside printable
 * ASCII become '?', since model names come from clients and the format
 * requires valid UTF-8. */
static void
put_label(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '\\' || ch == '"')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch < 0x20 || ch > 0x7e)
			fputc('?', f);
		else
			fputc(ch, f);
	}
}

static void
put_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One global counter. Counters named *_nusd_total are money: Prometheus
 * wants base units, so they become *_dollars_total (and their help text
 * loses its ", nano-dollars"). */
static void
put_counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	static const char suffix[] = "_nusd_total", unit[] = ", nano-dollars";
	size_t n = strlen(name), sl = sizeof(suffix) - 1;
	size_t hl = strlen(help), ul = sizeof(unit) - 1;
	char metric[128], dhelp[256];

	if (n > sl && strcmp(name + n - sl, suffix) == 0) {
		snprintf(metric, sizeof(metric), "kilovolt_%.*s_dollars_total",
		    (int)(n - sl), name);
		if (hl > ul && strcmp(help + hl - ul, unit) == 0)
			hl -= ul;
		snprintf(dhelp, sizeof(dhelp), "%.*s, USD", (int)hl, help);
		put_family(f, metric, "counter", dhelp);
		fprintf(f, "%s ", metric);
		put_dollars(f, v > INT64_MAX ? INT64_MAX : (int64_t)v);
		fputc('\n', f);
		return;
	}
	snprintf(metric, sizeof(metric), "kilovolt_%s", name);
	put_family(f, metric, "counter", help);
	fprintf(f, "%s %" PRIu64 "\n", metric, v);
}

static void
put_gauge(FILE *f, const char *name, const char *help, int64_t v)
{
	put_family(f, name, "gauge", help);
	fprintf(f, "%s %" PRId64 "\n", name, v);
}

/* Milliseconds as a seconds label value: 5 -> "0.005", 2500 -> "2.5". */
static void
put_le_seconds(FILE *f, unsigned ms)
{
	char frac[8];
	int n;

	fprintf(f, "%u", ms / 1000);
	if (ms % 1000 == 0)
		return;
	n = snprintf(frac, sizeof(frac), "%03u", ms % 1000);
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = '\0';
	fprintf(f, ".%s", frac);
}

/* The ledger's buckets are non-cumulative; the exposition is cumulative,
 * and _count is the +Inf bucket so the two always agree even while
 * workers add observations under us. */
static void
put_histogram(FILE *f, const char *name, const char *help,
    const struct kv_histogram *h)
{
	static const unsigned bounds[KV_HIST_BUCKETS] = KV_HIST_BOUNDS_MS;
	uint64_t cum = 0, sum_us;
	size_t i;

	put_family(f, name, "histogram", help);
	for (i = 0; i < KV_HIST_BUCKETS; i++) {
		cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
		fprintf(f, "%s_bucket{le=\"", name);
		put_le_seconds(f, bounds[i]);
		fprintf(f, "\"} %" PRIu64 "\n", cum);
	}
	cum += atomic_load_explicit(&h->bucket[KV_HIST_BUCKETS], memory_order_relaxed);
	fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
	sum_us = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
	fprintf(f, "%s_sum %" PRIu64 ".%06" PRIu64 "\n", name, sum_us / 1000000u,
	    sum_us % 1000000u);
	fprintf(f, "%s_count %" PRIu64 "\n", name, cum);
}

/* A snapshot of one key or model, so each family prints consistent rows
 * and the torn-read-prone strings are copied and re-terminated once. */
struct series {
	char	 name[KV_MODEL_NAME + 1];	/* key id or model name */
	char	 label[KV_LABEL_MAX + 1];
	int64_t	 v[15];
};

enum { K_REQ, K_SPENT, K_BUDGET, K_RESERVED, K_IN, K_OUT, K_CACHED, K_REFUSED,
	K_ESTIMATED, K_FREE, K_LEASE, K_CSPENT, K_RPM, K_TPM, K_RATE_REFUSED };
enum { M_REQ, M_IN, M_OUT, M_CACHED, M_COST };

struct family {
	const char	*name;
	const char	*type;
	const char	*help;
	int		 idx;
	int		 dollars;
};

static const struct family key_families[] = {
	{ "kilovolt_key_requests_total", "counter", "requests by key", K_REQ, 0 },
	{ "kilovolt_key_spent_dollars", "gauge",
	    "spend in the current period by key, USD", K_SPENT, 1 },
	{ "kilovolt_key_budget_dollars", "gauge", "budget by key, USD", K_BUDGET, 1 },
	{ "kilovolt_key_reserved_dollars", "gauge",
	    "reserved for requests in flight by key, USD", K_RESERVED, 1 },
	{ "kilovolt_key_input_tokens_total", "counter", "input tokens by key", K_IN, 0 },
	{ "kilovolt_key_output_tokens_total", "counter", "output tokens by key", K_OUT, 0 },
	{ "kilovolt_key_cached_input_tokens_total", "counter",
	    "cached input tokens by key", K_CACHED, 0 },
	{ "kilovolt_key_budget_refusals_total", "counter",
	    "requests refused with 402 by key", K_REFUSED, 0 },
	{ "kilovolt_key_estimated_requests_total", "counter",
	    "requests charged by an estimate by key", K_ESTIMATED, 0 },
	{ "kilovolt_key_free_requests_total", "counter",
	    "requests relayed unmetered by key", K_FREE, 0 },
	{ "kilovolt_key_rate_limit_requests_per_minute", "gauge",
	    "rpm limit by key, 0 = none", K_RPM, 0 },
	{ "kilovolt_key_rate_limit_tokens_per_minute", "gauge",
	    "tpm limit by key, 0 = none", K_TPM, 0 },
	{ "kilovolt_key_rate_limited_total", "counter",
	    "requests refused with 429 for rpm or tpm by key", K_RATE_REFUSED, 0 },
};

/* With [cluster] only (docs/cluster.md). */
static const struct family cluster_families[] = {
	{ "kilovolt_key_lease_dollars", "gauge",
	    "this host's unused cluster lease by key, USD", K_LEASE, 1 },
	{ "kilovolt_key_cluster_spent_dollars", "gauge",
	    "spend of all cluster hosts by key as last synced, USD", K_CSPENT, 1 },
};

static const struct family model_families[] = {
	{ "kilovolt_model_requests_total", "counter", "requests by model", M_REQ, 0 },
	{ "kilovolt_model_input_tokens_total", "counter", "input tokens by model", M_IN, 0 },
	{ "kilovolt_model_output_tokens_total", "counter", "output tokens by model", M_OUT, 0 },
	{ "kilovolt_model_cached_input_tokens_total", "counter",
	    "cached input tokens by model", M_CACHED, 0 },
	{ "kilovolt_model_cost_dollars_total", "counter", "cost by model, USD", M_COST, 1 },
};

/* The budget tree's teams (docs/ledger.md "Budget tree"), label team. */
static const struct family team_families[] = {
	{ "kilovolt_team_requests_total", "counter", "requests by team", K_REQ, 0 },
	{ "kilovolt_team_spent_dollars", "gauge",
	    "spend in the current period by team, USD", K_SPENT, 1 },
	{ "kilovolt_team_budget_dollars", "gauge", "budget by team, USD, 0 = none", K_BUDGET, 1 },
	{ "kilovolt_team_reserved_dollars", "gauge",
	    "reserved for requests in flight by team, USD", K_RESERVED, 1 },
	{ "kilovolt_team_budget_refusals_total", "counter",
	    "requests refused with 402 by team", K_REFUSED, 0 },
	{ "kilovolt_team_rate_limit_requests_per_minute", "gauge",
	    "rpm limit by team, 0 = none", K_RPM, 0 },
	{ "kilovolt_team_rate_limit_tokens_per_minute", "gauge",
	    "tpm limit by team, 0 = none", K_TPM, 0 },
	{ "kilovolt_team_rate_limited_total", "counter",
	    "requests refused with 429 for rpm or tpm by team", K_RATE_REFUSED, 0 },
};

static void
put_value(FILE *f, int64_t v, int dollars)
{
	if (dollars)
		put_dollars(f, v);
	else
		fprintf(f, "%" PRId64, v);
}

/* Print each family over N series; LABELNAME is "key" or "model". */
static void
put_series(FILE *f, const struct family *fam, size_t nfam,
    const struct series *s, size_t n, const char *labelname)
{
	size_t i, j;

	for (i = 0; i < nfam; i++) {
		put_family(f, fam[i].name, fam[i].type, fam[i].help);
		for (j = 0; j < n; j++) {
			fprintf(f, "%s{%s=\"", fam[i].name, labelname);
			put_label(f, s[j].name);
			if (strcmp(labelname, "key") == 0) {
				fputs("\",label=\"", f);
				put_label(f, s[j].label);
			}
			fputs("\"} ", f);
			put_value(f, s[j].v[fam[i].idx], fam[i].dollars);
			fputc('\n', f);
		}
	}
}

static int64_t
ld64(const _Atomic int64_t *p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

/* Unsigned counters shown as int64: saturate rather than wrap. */
static int64_t
ldu64(const _Atomic uint64_t *p)
{
	uint64_t v = atomic_load_explicit(p, memory_order_relaxed);

	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The unused lease: what this host may still admit, which the budget left
 * by the other hosts also bounds (an open host's cap is unbounded). */
static void
key_lease_snapshot(struct series *s, const struct kv_account *a)
{
	int64_t cap = ld64(&a->lease_cap_nusd), room;

	room = ld64(&a->budget_nusd) - ld64(&a->cluster_other_nusd);
	if (cap > room)
		cap = room;
	cap -= kv_account_spent(a) + ld64(&a->reserved_nusd);
	s->v[K_LEASE] = ld64(&a->lease_expires_ms) != 0 && cap > 0 ? cap : 0;
	s->v[K_CSPENT] = ld64(&a->cluster_spent_nusd);
}

static void
key_snapshot(struct series *s, const struct kv_account *a)
{
	kv_key_id(a->hash, s->name);
	memcpy(s->label, a->label, KV_LABEL_MAX);
	s->label[KV_LABEL_MAX] = '\0';
	s->v[K_REQ] = ldu64(&a->requests);
	s->v[K_SPENT] = kv_account_spent(a);
	s->v[K_BUDGET] = ld64(&a->budget_nusd);
	s->v[K_RESERVED] = ld64(&a->reserved_nusd);
	s->v[K_IN] = ldu64(&a->input_tokens);
	s->v[K_OUT] = ldu64(&a->output_tokens);
	s->v[K_CACHED] = ldu64(&a->cached_input_tokens);
	s->v[K_REFUSED] = ldu64(&a->refusals);
	s->v[K_ESTIMATED] = ldu64(&a->estimated_requests);
	s->v[K_FREE] = ldu64(&a->free_requests);
	key_lease_snapshot(s, a);
	s->v[K_RPM] = atomic_load_explicit(&a->rpm, memory_order_relaxed);
	s->v[K_TPM] = atomic_load_explicit(&a->tpm, memory_order_relaxed);
	s->v[K_RATE_REFUSED] = ldu64(&a->rate_refusals);
}

/* Add S into the catch-all series: overflow saturates (display only). */
static void
series_add(struct series *other, const struct series *s, size_t nv)
{
	size_t i;

	for (i = 0; i < nv; i++)
		if (__builtin_add_overflow(other->v[i], s->v[i], &other->v[i]))
			other->v[i] = s->v[i] < 0 ? INT64_MIN : INT64_MAX;
}

/* Keys: the KV_STATUS_MAX_SERIES biggest spenders each get a series, the rest
 * are summed into key="other" so cardinality stays bounded. */
static void
put_key_metrics(FILE *f, const struct kv_ledger *l)
{
	const struct kv_account **acc = NULL;
	struct series *s;
	size_t n, i, ns;

	n = kv_report_sorted_accounts(l, &acc);
	s = calloc(KV_STATUS_MAX_SERIES + 1, sizeof(*s));
	if (s == NULL) {
		free(acc);
		return;
	}
	ns = n < KV_STATUS_MAX_SERIES ? n : KV_STATUS_MAX_SERIES;
	for (i = 0; i < ns; i++)
		key_snapshot(&s[i], acc[i]);
	if (n > ns) {
		snprintf(s[ns].name, sizeof(s[ns].name), "other");
		for (i = ns; i < n; i++) {
			struct series one;

			key_snapshot(&one, acc[i]);
			series_add(&s[ns], &one, sizeof(one.v) / sizeof(one.v[0]));
		}
		ns++;
	}
	put_series(f, key_families, sizeof(key_families) / sizeof(key_families[0]),
	    s, ns, "key");
	if (atomic_load(&l->hdr->cluster))
		put_series(f, cluster_families,
		    sizeof(cluster_families) / sizeof(cluster_families[0]), s, ns, "key");
	free(s);
	free(acc);
}

/* Teams: each its series (an operator's list, not clients'), named
 * without "team/" (the ledger's label: a name past 42 bytes is cut). */
static void
put_team_metrics(FILE *f, const struct kv_ledger *l)
{
	const struct kv_account **acc = NULL;
	struct series *s;
	size_t n, i;

	n = kv_report_sorted_nodes(l, "team/", &acc);
	if (n == 0 || (s = calloc(n, sizeof(*s))) == NULL) {
		free(acc);
		return;
	}
	for (i = 0; i < n; i++) {
		key_snapshot(&s[i], acc[i]);
		snprintf(s[i].name, sizeof(s[i].name), "%s", s[i].label + 5);
		if (s[i].v[K_BUDGET] >= KV_NODE_UNBOUNDED)
			s[i].v[K_BUDGET] = 0;
	}
	put_series(f, team_families, sizeof(team_families) / sizeof(team_families[0]),
	    s, n, "team");
	free(s);
	free(acc);
}

static int
cmp_model_cost(const void *a, const void *b)
{
	const struct series *x = a, *y = b;

	if (x->v[M_COST] != y->v[M_COST])
		return x->v[M_COST] < y->v[M_COST] ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* Snapshot the ready model slots into a malloc'd array; returns the count. */
static size_t
model_snapshots(const struct kv_ledger *l, struct series **out)
{
	uint32_t i, nslots = l->hdr->model_slots;
	struct series *s;
	size_t n = 0;

	*out = s = calloc(nslots ? nslots : 1, sizeof(*s));
	if (s == NULL)
		return 0;
	for (i = 0; i < nslots; i++) {
		const struct kv_model_slot *m = &l->models[i];

		if (!kv_slot_ready(&m->state))
			continue;
		memcpy(s[n].name, m->name, KV_MODEL_NAME);
		s[n].name[KV_MODEL_NAME] = '\0';
		s[n].v[M_REQ] = ldu64(&m->requests);
		s[n].v[M_IN] = ldu64(&m->input_tokens);
		s[n].v[M_OUT] = ldu64(&m->output_tokens);
		s[n].v[M_CACHED] = ldu64(&m->cached_input_tokens);
		s[n].v[M_COST] = ldu64(&m->cost_nusd);
		n++;
	}
	qsort(s, n, sizeof(*s), cmp_model_cost);
	return n;
}

static void
put_model_metrics(FILE *f, const struct kv_ledger *l)
{
	struct series *s;
	size_t n, i;

	n = model_snapshots(l, &s);
	if (n > KV_STATUS_MAX_SERIES) {
		struct series other;

		memset(&other, 0, sizeof(other));
		snprintf(other.name, sizeof(other.name), "other");
		for (i = KV_STATUS_MAX_SERIES; i < n; i++)
			series_add(&other, &s[i], 5);
		s[KV_STATUS_MAX_SERIES] = other;
		n = KV_STATUS_MAX_SERIES + 1;
	}
	put_series(f, model_families,
	    sizeof(model_families) / sizeof(model_families[0]), s, n, "model");
	free(s);
}

static size_t
count_workers(const struct kv_ledger *l, uint32_t state)
{
	uint32_t i;
	size_t n = 0;

	for (i = 0; i < l->hdr->worker_slots; i++)
		if (atomic_load_explicit(&l->workers[i].state,
		    memory_order_relaxed) == state)
			n++;
	return n;
}

static void
put_gauges(FILE *f, const struct kv_ledger *l, int64_t now)
{
	int64_t start = ld64(&l->hdr->master_start);

	put_gauge(f, "kilovolt_up", "1 while the gateway serves", 1);
	put_gauge(f, "kilovolt_start_time_seconds",
	    "start time of the master, unix seconds", start);
	put_gauge(f, "kilovolt_uptime_seconds", "seconds since the master started",
	    start > 0 && now > start ? now - start : 0);
	put_gauge(f, "kilovolt_workers", "worker processes running",
	    (int64_t)count_workers(l, KV_WORKER_RUNNING));
	put_gauge(f, "kilovolt_workers_draining",
	    "old worker processes finishing their streams",
	    (int64_t)count_workers(l, KV_WORKER_DRAINING));
	put_gauge(f, "kilovolt_active_streams", "requests in flight",
	    (int64_t)kv_ledger_sum_active_streams(l));
	put_gauge(f, "kilovolt_connections", "open client connections",
	    (int64_t)kv_ledger_sum_connections(l));
	put_gauge(f, "kilovolt_keys", "account slots in use",
	    atomic_load_explicit(&l->hdr->accounts_used, memory_order_relaxed));
	put_gauge(f, "kilovolt_key_slots", "account slots in the ledger",
	    l->hdr->max_keys);
}

/* Upstream targets (shm/targets.h), label target="NAME/HOST:PORT". At
 * most KV_TARGET_SLOTS series per family: bounded by the config. */
static void
put_target_metrics(FILE *f, const struct kv_ledger *l)
{
	static const struct { const char *name, *type, *help; } fam[] = {
		{ "kilovolt_upstream_target_requests_total", "counter", "attempts sent to the target" },
		{ "kilovolt_upstream_target_failures_total", "counter",
		    "connect, TLS, reset or 502/503/504/429 failures of the target" },
		{ "kilovolt_upstream_target_retries_total", "counter",
		    "requests moved from the target to another one" },
		{ "kilovolt_upstream_target_ejections_total", "counter", "times the target was ejected" },
		{ "kilovolt_upstream_target_in_flight", "gauge", "requests in flight to the target" },
		{ "kilovolt_upstream_target_up", "gauge", "0 while the target is ejected, cooling or failing its health check" },
	};
	char name[KV_TARGET_NAME];
	int64_t mono_ms = kv_now_ms();	/* down_until_ms is on the workers' clock */
	size_t i;
	int t;

	for (i = 0; i < sizeof(fam) / sizeof(fam[0]); i++) {
		put_family(f, fam[i].name, fam[i].type, fam[i].help);
		for (t = 0; t < KV_TARGET_SLOTS; t++) {
			const struct kv_target_slot *s = &l->targets[t];
			uint64_t v;

			if (!kv_slot_ready(&s->state))
				continue;
			memcpy(name, s->name, sizeof(name));
			name[sizeof(name) - 1] = '\0';
			switch (i) {
			case 0: v = atomic_load(&s->requests); break;
			case 1: v = atomic_load(&s->failures); break;
			case 2: v = atomic_load(&s->retries); break;
			case 3: v = atomic_load(&s->ejections_total); break;
			case 4: v = kv_target_inflight(l, t); break;
			default: v = !kv_target_down(l, t, mono_ms); break;
			}
			fprintf(f, "%s{target=\"", fam[i].name);
			put_label(f, name);
			fprintf(f, "\"} %" PRIu64 "\n", v);
		}
	}
}

void
kv_status_metrics(FILE *f, const struct kv_ledger *l, int64_t now)
{
	const struct kv_counters *c = &l->hdr->counters;

#define KV_X_METRIC(name, help) \
	put_counter(f, #name, help, atomic_load_explicit(&c->name, memory_order_relaxed));
	KV_COUNTERS(KV_X_METRIC)
#undef KV_X_METRIC
	put_gauges(f, l, now);
	put_histogram(f, "kilovolt_time_to_first_byte_seconds",
	    "time from request to the first response byte", &l->hdr->ttfb);
	put_histogram(f, "kilovolt_request_duration_seconds",
	    "time from request to the end of the response", &l->hdr->duration);
	put_key_metrics(f, l);
	put_team_metrics(f, l);
	put_model_metrics(f, l);
	put_target_metrics(f, l);
}

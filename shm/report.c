/* The JSON documents about the ledger that `kvctl --json` and
 * /status.json share, so the two always agree; see report.h. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/report.h"
#include "common/jsonline.h"
#include "shm/history.h"
#include "shm/ratelimit.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A consistent-enough copy of one model slot: the name is copied and
 * re-terminated so a torn read can never run past the slot. */
struct model_copy {
	char	  name[KV_MODEL_NAME];
	uint64_t  requests, input, output, cached, cost;
};

/* A cluster lease (docs/cluster.md), once the master has synced the key:
 * this host's unused lease, and the figures of all hosts as last synced. */
static void
report_lease_json(FILE *f, const struct kv_account *a, int64_t spent, int64_t reserved)
{
	int64_t exp = atomic_load(&a->lease_expires_ms), cap, free;

	if (exp == 0)
		return;
	cap = atomic_load(&a->lease_cap_nusd);
	free = cap - spent - reserved;
	fprintf(f, ",\"cluster\":{\"lease_nusd\":%" PRId64 ",\"lease_cap_nusd\":%" PRId64
	    ",\"others_nusd\":%" PRId64 ",\"cluster_spent_nusd\":%" PRId64
	    ",\"lease_expires_ms\":%" PRId64 ",\"reset_nusd\":%" PRId64,
	    free > 0 ? free : 0, cap, atomic_load(&a->cluster_other_nusd),
	    atomic_load(&a->cluster_spent_nusd), exp, atomic_load(&a->cluster_base_nusd));
	/* The rate-limit leases: cumulative use here and the cap it runs to. */
	if (atomic_load(&a->rpm) != 0)
		fprintf(f, ",\"rpm_used\":%" PRId64 ",\"rpm_cap\":%" PRId64,
		    atomic_load(&a->rl_req_used), atomic_load(&a->rl_req_cap));
	if (atomic_load(&a->tpm) != 0)
		fprintf(f, ",\"tpm_used\":%" PRId64 ",\"tpm_reserved\":%" PRId64
		    ",\"tpm_cap\":%" PRId64, atomic_load(&a->rl_tok_used),
		    atomic_load(&a->rl_tok_reserved), atomic_load(&a->rl_tok_cap));
	fputc('}', f);
}

/* "rpm"/"tpm" (0 = none), what is left of each now (null when off), and
 * "rate_refusals" (429s). */
static void
report_limits_json(FILE *f, const struct kv_account *a)
{
	uint32_t rpm = atomic_load(&a->rpm), tpm = atomic_load(&a->tpm);
	int64_t now = kv_rl_now_ns(), rem, reset;

	fprintf(f, ",\"rpm\":%u,\"tpm\":%u,\"requests_remaining\":", rpm, tpm);
	if (rpm != 0) {
		kv_gcra_state(atomic_load(&a->rpm_tat), rpm, now, &rem, &reset);
		fprintf(f, "%" PRId64, rem);
	} else
		fputs("null", f);
	fputs(",\"tokens_remaining\":", f);
	if (tpm != 0) {
		kv_gcra_state(atomic_load(&a->tpm_tat), tpm, now, &rem, &reset);
		fprintf(f, "%" PRId64, rem);
	} else
		fputs("null", f);
	fprintf(f, ",\"rate_refusals\":%" PRIu64, atomic_load(&a->rate_refusals));
}

void
kv_report_account_json(FILE *f, const struct kv_account *a)
{
	char label[KV_LABEL_MAX], id[13];
	uint8_t hash[32];
	int64_t budget, spent, reserved;

	memcpy(hash, a->hash, sizeof(hash));
	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	kv_key_id(hash, id);
	reserved = atomic_load(&a->reserved_nusd);
	spent = kv_account_spent(a);
	budget = atomic_load(&a->budget_nusd);
	fprintf(f, "{\"id\":\"%s\",\"label\":", id);
	if (label[0] != '\0')
		kv_json_write_string(f, label);
	else
		fputs("null", f);
	/* Only for a named key the config no longer has (rotated or
	 * removed): the label is the one it had there. */
	if (kv_account_label_retired(a))
		fputs(",\"not_in_config\":true", f);
	/* Issued by kvctl keys create (shm/keys.h), and revoked: only when set. */
	if (atomic_load(&a->aflags) & KV_AF_ISSUED)
		fputs(",\"issued\":true", f);
	if (atomic_load(&a->aflags) & KV_AF_REVOKED)
		fputs(",\"revoked\":true", f);
	fprintf(f, ",\"budget_nusd\":%" PRId64 ",\"spent_nusd\":%" PRId64
	    ",\"reserved_nusd\":%" PRId64 ",\"remaining_nusd\":%" PRId64,
	    budget, spent, reserved, budget - spent - reserved);
	fprintf(f, ",\"requests\":%" PRIu64 ",\"input_tokens\":%" PRIu64
	    ",\"output_tokens\":%" PRIu64 ",\"cached_input_tokens\":%" PRIu64
	    ",\"refusals\":%" PRIu64 ",\"estimated_requests\":%" PRIu64
	    ",\"free_requests\":%" PRIu64 ",\"last_used\":%" PRId64,
	    atomic_load(&a->requests), atomic_load(&a->input_tokens),
	    atomic_load(&a->output_tokens), atomic_load(&a->cached_input_tokens),
	    atomic_load(&a->refusals), atomic_load(&a->estimated_requests),
	    atomic_load(&a->free_requests), atomic_load(&a->last_used));
	report_lease_json(f, a, spent, reserved);
	/* Only when set, as "cluster": a budget from kvctl or the admin API
	 * that stands until the config's own value changes. */
	if (atomic_load(&a->aflags) & KV_AF_OVERRIDE)
		fprintf(f, ",\"budget_override\":{\"config_budget_nusd\":%" PRId64 "}",
		    atomic_load(&a->config_budget_nusd));
	report_limits_json(f, a);
	fputc('}', f);
}

/* [ONE(f, V[0]),ONE(f, V[1]),...]: the N elements of SIZE bytes at V. */
static void
json_array(FILE *f, const void *v, size_t n, size_t size,
    void (*one)(FILE *, const void *))
{
	size_t i;

	fputc('[', f);
	for (i = 0; i < n; i++) {
		if (i > 0)
			fputc(',', f);
		one(f, (const char *)v + i * size);
	}
	fputc(']', f);
}

static void
account_elem(FILE *f, const void *e)
{
	kv_report_account_json(f, *(const struct kv_account *const *)e);
}

static void
keys_array(FILE *f, const struct kv_ledger *l)
{
	const struct kv_account **v;
	size_t n;

	n = kv_report_sorted_accounts(l, &v);
	json_array(f, v, n, sizeof(*v), account_elem);
	free(v);
}

static void
model_copy(const struct kv_model_slot *m, struct model_copy *c)
{
	memcpy(c->name, m->name, sizeof(c->name));
	c->name[sizeof(c->name) - 1] = '\0';
	c->requests = atomic_load(&m->requests);
	c->input = atomic_load(&m->input_tokens);
	c->output = atomic_load(&m->output_tokens);
	c->cached = atomic_load(&m->cached_input_tokens);
	c->cost = atomic_load(&m->cost_nusd);
}

static int
cmp_cost_desc(const void *x, const void *y)
{
	const struct model_copy *a = x, *b = y;

	if (a->cost != b->cost)
		return a->cost < b->cost ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* Snapshot the ready model slots, sorted by cost. Returns the count; *out
 * is malloc'd (NULL when nothing could be allocated). */
static size_t
models_sorted(const struct kv_ledger *l, struct model_copy **out)
{
	struct model_copy *v;
	size_t n = 0;
	int i;

	*out = v = calloc(KV_MODEL_SLOTS, sizeof(*v));
	if (v == NULL)
		return 0;
	for (i = 0; i < KV_MODEL_SLOTS; i++)
		if (atomic_load_explicit(&l->models[i].state,
		    memory_order_acquire) == 2)
			model_copy(&l->models[i], &v[n++]);
	qsort(v, n, sizeof(*v), cmp_cost_desc);
	return n;
}

static void
model_json(FILE *f, const void *e)
{
	const struct model_copy *c = e;

	fputs("{\"model\":", f);
	kv_json_write_string(f, c->name);
	fprintf(f, ",\"requests\":%" PRIu64 ",\"input_tokens\":%" PRIu64
	    ",\"output_tokens\":%" PRIu64 ",\"cached_input_tokens\":%" PRIu64
	    ",\"cost_nusd\":%" PRIu64 "}", c->requests, c->input, c->output,
	    c->cached, c->cost);
}

static void
models_array(FILE *f, const struct kv_ledger *l)
{
	struct model_copy *v;
	size_t n;

	n = models_sorted(l, &v);
	json_array(f, v, n, sizeof(*v), model_json);
	free(v);
}

const char *
kv_report_worker_state(uint32_t state)
{
	switch (state) {
	case KV_WORKER_FREE:		return "free";
	case KV_WORKER_STARTING:	return "starting";
	case KV_WORKER_RUNNING:		return "running";
	case KV_WORKER_DRAINING:	return "draining";
	default:			return "unknown";
	}
}

static void
worker_json(FILE *f, int slot, const struct kv_worker_slot *w, int32_t pid,
    int64_t now)
{
	int64_t hb = atomic_load(&w->heartbeat);

	fprintf(f, "{\"slot\":%d,\"pid\":%" PRId32 ",\"state\":\"%s\""
	    ",\"generation\":%" PRIu32 ",\"connections\":%" PRIu64
	    ",\"active_streams\":%" PRIu64 ",\"requests\":%" PRIu64
	    ",\"heartbeat_age_seconds\":%" PRId64 "}", slot, pid,
	    kv_report_worker_state(atomic_load(&w->state)), atomic_load(&w->generation),
	    atomic_load(&w->connections), atomic_load(&w->active_streams),
	    atomic_load(&w->requests), hb > 0 && now >= hb ? now - hb : 0);
}

static void
workers_array(FILE *f, const struct kv_ledger *l, int64_t now)
{
	int i, first = 1;
	int32_t pid;

	fputc('[', f);
	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		pid = atomic_load(&l->workers[i].pid);
		if (pid == 0)
			continue;
		if (!first)
			fputc(',', f);
		first = 0;
		worker_json(f, i, &l->workers[i], pid, now);
	}
	fputc(']', f);
}

static void
totals_json(FILE *f, const struct kv_ledger *l, int64_t now)
{
	const struct kv_ledger_header *h = l->hdr;
	int64_t start = atomic_load(&h->master_start);

	fprintf(f, "\"uptime_seconds\":%" PRId64 ",\"master_pid\":%" PRId32
	    ",\"active_streams\":%" PRIu64 ",\"connections\":%" PRIu64
	    ",\"accounts_used\":%" PRIu32 ",\"max_keys\":%" PRIu32,
	    start > 0 && now >= start ? now - start : 0,
	    atomic_load(&h->master_pid), kv_ledger_sum_active_streams(l),
	    kv_ledger_sum_connections(l), atomic_load(&h->accounts_used),
	    h->max_keys);
#define KV_X_JSON(name, help) \
	fprintf(f, ",\"" #name "\":%" PRIu64, atomic_load(&h->counters.name));
	KV_COUNTERS(KV_X_JSON)
#undef KV_X_JSON
}

/* {"NAME":ARRAY} and a newline: a document of one array. */
static void
json_doc(FILE *f, const char *name, const struct kv_ledger *l,
    void (*array)(FILE *, const struct kv_ledger *))
{
	fprintf(f, "{\"%s\":", name);
	array(f, l);
	fputs("}\n", f);
}

void
kv_report_keys_json(FILE *f, const struct kv_ledger *l)
{
	json_doc(f, "keys", l, keys_array);
}

void
kv_report_models_json(FILE *f, const struct kv_ledger *l)
{
	json_doc(f, "models", l, models_array);
}

void
kv_report_status_json(FILE *f, const struct kv_ledger *l, int64_t now)
{
	fputc('{', f);
	totals_json(f, l, now);
	/* With [cluster]: whether Redis answers, and this host's last sync. */
	if (atomic_load(&l->hdr->cluster))
		fprintf(f, ",\"cluster\":{\"redis_up\":%s,\"synced_ms\":%" PRId64 "}",
		    atomic_load(&l->hdr->cluster_up) ? "true" : "false",
		    atomic_load(&l->hdr->cluster_synced_ms));
	fputs(",\"workers\":", f);
	workers_array(f, l, now);
	fputs(",\"keys\":", f);
	keys_array(f, l);
	fputs(",\"models\":", f);
	models_array(f, l);
	kv_history_json(f, l, now);
	fputs("}\n", f);
}

void
kv_report_issued_json(FILE *f, const struct kv_account *a, const char *key)
{
	char id[13];

	kv_key_id(a->hash, id);
	fputs("{\"key\":", f);
	kv_json_write_string(f, key);
	fprintf(f, ",\"id\":\"%s\",\"account\":", id);
	kv_report_account_json(f, a);
	fputs("}\n", f);
}

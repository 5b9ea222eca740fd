/* kv_status_metrics on a real ledger: exact sample lines for counters,
 * money in dollars, cumulative histograms, label escaping, and the bound
 * on per-key and per-model series with the rest summed into "other". */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "master/status_metrics.h"
#include "shm/ledger.h"
#include "shm/targets.h"
#include "tests/unit.h"
#include "worker/worker.h"

#define NKEYS	105	/* five more than get their own series */
#define NMODELS	103

static char *
render(const struct kv_ledger *l, int64_t now)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	kv_status_metrics(f, l, now);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* LINE appears as a whole line of TEXT. */
static int
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while (text != NULL && (p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return 1;
		p++;
	}
	return 0;
}

static int
count_prefix(const char *text, const char *prefix)
{
	const char *p = text;
	int n = 0;

	while (text != NULL && (p = strstr(p, prefix)) != NULL) {
		if (p == text || p[-1] == '\n')
			n++;
		p++;
	}
	return n;
}

static void
test_empty(const struct kv_ledger *l)
{
	char *m = render(l, 1000);

	CHECK(m != NULL);
	CHECK(has_line(m, "# TYPE kilovolt_requests_total counter"));
	CHECK(has_line(m, "kilovolt_requests_total 0"));
	CHECK(has_line(m, "# TYPE kilovolt_cost_dollars_total counter"));
	CHECK(has_line(m, "# HELP kilovolt_cost_dollars_total cost charged, USD"));
	CHECK(has_line(m, "kilovolt_cost_dollars_total 0.000000000"));
	CHECK(has_line(m, "# TYPE kilovolt_request_duration_seconds histogram"));
	CHECK(has_line(m, "kilovolt_request_duration_seconds_bucket{le=\"+Inf\"} 0"));
	CHECK(has_line(m, "kilovolt_request_duration_seconds_count 0"));
	CHECK(has_line(m, "kilovolt_up 1"));
	CHECK(has_line(m, "# TYPE kilovolt_key_spent_dollars gauge"));
	CHECK_INT(count_prefix(m, "kilovolt_key_spent_dollars{"), 0);
	CHECK(strstr(m, "nusd") == NULL);
	free(m);
}

static void
fill_keys(struct kv_ledger *l)
{
	char raw[32];
	uint8_t h[32];
	int i;

	for (i = 0; i < NKEYS; i++) {
		struct kv_account *a;

		snprintf(raw, sizeof(raw), "sk-metrics-%d", i);
		kv_key_hash(raw, strlen(raw), h);
		a = kv_ledger_account(l, h, 1, i == NKEYS - 1 ? "q\"b\\n\nx" : "",
		    2000000000);
		CHECK(a != NULL);
		if (a == NULL)
			continue;
		atomic_store(&a->spent_nusd, (int64_t)(i + 1) * 1000);
		atomic_store(&a->requests, 1);
		atomic_store(&a->input_tokens, (uint64_t)i);
	}
}

static void
fill_models(struct kv_ledger *l)
{
	char name[KV_MODEL_NAME];
	int i;

	for (i = 0; i < NMODELS; i++) {
		struct kv_model_slot *m;

		if (i == NMODELS - 1)
			snprintf(name, sizeof(name), "top\"model\\\xc3\xa9");
		else
			snprintf(name, sizeof(name), "model-%03d", i);
		m = kv_ledger_model(l, name);
		CHECK(m != NULL);
		if (m == NULL)
			continue;
		atomic_store(&m->requests, 2);
		atomic_store(&m->cost_nusd, (uint64_t)(i + 1) * 10);
	}
}

static void
test_series(struct kv_ledger *l)
{
	char line[256], id[13], raw[32];
	uint8_t h[32];
	char *m;

	fill_keys(l);
	fill_models(l);
	m = render(l, 1000);
	CHECK(m != NULL);
	CHECK_INT(count_prefix(m, "kilovolt_key_spent_dollars{"), KV_STATUS_MAX_SERIES + 1);
	CHECK_INT(count_prefix(m, "kilovolt_model_requests_total{"), KV_STATUS_MAX_SERIES + 1);
	/* keys 0..4 spend 1..5 microdollars: the five smallest, summed */
	CHECK(has_line(m, "kilovolt_key_spent_dollars{key=\"other\",label=\"\"} 0.000015000"));
	CHECK(has_line(m, "kilovolt_key_requests_total{key=\"other\",label=\"\"} 5"));
	CHECK(has_line(m, "kilovolt_key_input_tokens_total{key=\"other\",label=\"\"} 10"));
	CHECK(has_line(m, "kilovolt_key_budget_dollars{key=\"other\",label=\"\"} 10.000000000"));
	/* the biggest spender, with its label escaped */
	snprintf(raw, sizeof(raw), "sk-metrics-%d", NKEYS - 1);
	kv_key_hash(raw, strlen(raw), h);
	kv_key_id(h, id);
	snprintf(line, sizeof(line),
	    "kilovolt_key_spent_dollars{key=\"%s\",label=\"q\\\"b\\\\n\\nx\"} 0.000105000", id);
	CHECK(has_line(m, line));
	/* models: 3 smallest (10+20+30 nano) in other; non-ASCII shown as '?' */
	CHECK(has_line(m, "kilovolt_model_cost_dollars_total{model=\"other\"} 0.000000060"));
	CHECK(has_line(m, "kilovolt_model_requests_total{model=\"other\"} 6"));
	CHECK(has_line(m, "kilovolt_model_requests_total{model=\"top\\\"model\\\\??\"} 2"));
	CHECK(has_line(m, "kilovolt_keys 105"));
	free(m);
}

static void
test_counters_and_histograms(struct kv_ledger *l)
{
	struct kv_account *a;
	uint8_t h[32];
	char *m;

	atomic_store(&l->hdr->counters.cost_nusd_total, 1234567890123ULL);
	atomic_store(&l->hdr->counters.received_bytes_total, 4096);
	atomic_store(&l->hdr->master_start, 400);
	kv_histogram_observe(&l->hdr->ttfb, 3000);		/* 3 ms */
	kv_histogram_observe(&l->hdr->ttfb, 7000);		/* 7 ms */
	kv_histogram_observe(&l->hdr->ttfb, 40000000);	/* 40 s: +Inf only */
	kv_key_hash("sk-metrics-104", 14, h);
	a = kv_ledger_account(l, h, 0, NULL, 0);
	CHECK(a != NULL);
	if (a != NULL)
		atomic_store(&a->reserved_nusd, -1);
	m = render(l, 1000);
	CHECK(m != NULL);
	CHECK(has_line(m, "kilovolt_cost_dollars_total 1234.567890123"));
	CHECK(has_line(m, "kilovolt_received_bytes_total 4096"));
	CHECK(has_line(m, "kilovolt_uptime_seconds 600"));
	CHECK(has_line(m, "kilovolt_start_time_seconds 400"));
	CHECK(has_line(m, "kilovolt_time_to_first_byte_seconds_bucket{le=\"0.005\"} 1"));
	CHECK(has_line(m, "kilovolt_time_to_first_byte_seconds_bucket{le=\"0.01\"} 2"));
	CHECK(has_line(m, "kilovolt_time_to_first_byte_seconds_bucket{le=\"2.5\"} 2"));
	CHECK(has_line(m, "kilovolt_time_to_first_byte_seconds_bucket{le=\"30\"} 2"));
	CHECK(has_line(m, "kilovolt_time_to_first_byte_seconds_bucket{le=\"+Inf\"} 3"));
	CHECK(has_line(m, "kilovolt_time_to_first_byte_seconds_sum 40.010000"));
	CHECK(has_line(m, "kilovolt_time_to_first_byte_seconds_count 3"));
	CHECK(strstr(m, "-0.000000001\n") != NULL);	/* negative money keeps its sign */
	free(m);
}

/* The up gauge reads the targets' times on the workers' monotonic clock
 * (a comparison with unix time showed every ejected target up), and a
 * failed health check. More targets than the 16 of layout 10. */
static void
test_targets(struct kv_ledger *l)
{
	char name[KV_TARGET_NAME], line[128];
	int t[20], i;
	char *m;

	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "pool/10.0.0.%d:8000", i);
		t[i] = kv_target_slot(l, name);
		CHECK(t[i] >= 0);
	}
	if (unit_fail)
		return;
	kv_target_cool(l, t[1], kv_now_ms(), 30);	/* cooling for 30 s */
	kv_target_set_health(l, t[2], KV_HEALTH_DOWN, kv_now_ms());
	kv_target_set_health(l, t[3], KV_HEALTH_UP, kv_now_ms());
	kv_target_count(l, &l->workers[5], t[19], 1);
	kv_target_count(l, &l->workers[5], t[19], 1);
	m = render(l, (int64_t)time(NULL));	/* unix seconds, as the service passes */
	CHECK(m != NULL);
	CHECK(has_line(m, "kilovolt_upstream_target_up{target=\"pool/10.0.0.0:8000\"} 1"));
	CHECK(has_line(m, "kilovolt_upstream_target_up{target=\"pool/10.0.0.1:8000\"} 0"));
	CHECK(has_line(m, "kilovolt_upstream_target_up{target=\"pool/10.0.0.2:8000\"} 0"));
	CHECK(has_line(m, "kilovolt_upstream_target_up{target=\"pool/10.0.0.3:8000\"} 1"));
	CHECK_INT(count_prefix(m, "kilovolt_upstream_target_up{"), 20);
	/* in flight is summed over live workers only: worker 5 has no pid */
	CHECK(has_line(m, "kilovolt_upstream_target_in_flight{target=\"pool/10.0.0.19:8000\"} 0"));
	free(m);
	atomic_store(&l->workers[5].pid, 12345);
	m = render(l, (int64_t)time(NULL));	/* unix seconds, as the service passes */
	snprintf(line, sizeof(line), "kilovolt_upstream_target_in_flight{target=\"%s\"} 2",
	    "pool/10.0.0.19:8000");
	CHECK(has_line(m, line));
	free(m);
	kv_targets_release_worker(l, &l->workers[5]);
	CHECK_INT((int)kv_target_inflight(l, t[19]), 0);
	atomic_store(&l->workers[5].pid, 0);
	kv_targets_reset(l);
	CHECK(!kv_target_down(l, t[1], kv_now_ms()));
	CHECK(!kv_target_down(l, t[2], kv_now_ms()));
}

int
main(void)
{
	char dir[] = "/tmp/kv-test-status.XXXXXX", path[64], err[256];
	struct kv_ledger l;

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", dir);
	if (kv_ledger_open(&l, path, 256, KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	test_empty(&l);
	test_series(&l);
	test_counters_and_histograms(&l);
	test_targets(&l);
	kv_ledger_close(&l);
	unlink(path);
	rmdir(dir);
	return unit_done();
}

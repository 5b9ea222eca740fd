/* Unit tests of the price catalogue reader (common/catalog.c over
 * common/jsonread.c): the mapping of the shipped copy of LiteLLM's file
 * into nano-USD per 1M tokens, and the errors of malformed input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/catalog.h"
#include "tests/unit.h"

static const char *const provs[] = { "openai", "anthropic", NULL };

static const struct kv_price *
find(const struct kv_price *v, size_t n, const char *model)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i].model, model) == 0)
			return &v[i];
	return NULL;
}

static void
test_shipped(void)
{
	const char *top = getenv("top_srcdir");
	char path[4096], err[512];
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	const struct kv_price *p;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/data/prices-2026-07-24.json", top ? top : "..");
	CHECK_INT(kv_catalog_load(path, provs, &v, &n, &st, err, sizeof(err)), 0);
	printf("shipped copy: %zu kept, %zu unpriced\n", n, st.unpriced);
	CHECK(n > 150);
	CHECK(find(v, n, "sample_spec") == NULL);
	p = find(v, n, "claude-opus-4-6");
	CHECK(p != NULL);
	if (p != NULL) {
		CHECK_INT(p->input, 5000000000LL);	/* $5 per 1M */
		CHECK_INT(p->output, 25000000000LL);	/* $25 per 1M */
		CHECK_INT(p->cached_input, 500000000LL);
		CHECK_INT(p->max_input, 1000000);
		CHECK_INT(p->max_output, 128000);
		CHECK_INT(p->src, KV_PRICE_FILE);
	}
	p = find(v, n, "gpt-5.1");	/* the copy has no gpt-5.2 */
	CHECK(p != NULL);
	if (p != NULL) {
		CHECK_INT(p->input, 1250000000LL);
		CHECK_INT(p->output, 10000000000LL);
		CHECK_INT(p->cached_input, 125000000LL);
		CHECK_INT(p->max_input, 272000);
		CHECK_INT(p->max_output, 128000);
	}
	free(v);
}

static void
test_bad(const char *json, const char *want)
{
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	size_t n = 0;
	char err[512] = "";

	CHECK_INT(kv_catalog_parse(json, strlen(json), provs, &v, &n, &st, err, sizeof(err)), -1);
	if (strstr(err, want) == NULL) {
		fprintf(stderr, "error '%s' lacks '%s'\n", err, want);
		CHECK(0);
	}
	free(v);
}

static void
test_small(void)
{
	const char *ok = "{\"sample_spec\": {\"input_cost_per_token\": 0},\n"
	    " \"m\": {\"litellm_provider\": \"openai\", \"input_cost_per_token\": 3e-06,"
	    " \"output_cost_per_token\": 0.000015, \"cache_creation_input_token_cost\": 3.75e-06},\n"
	    " \"x\": {\"litellm_provider\": \"bedrock\", \"input_cost_per_token\": 1,"
	    " \"output_cost_per_token\": 1}}";
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	size_t n = 0;
	char err[512];

	CHECK_INT(kv_catalog_parse(ok, strlen(ok), provs, &v, &n, &st, err, sizeof(err)), 0);
	CHECK_INT(n, 1);
	if (n == 1) {
		CHECK_STR(v[0].model, "m");
		CHECK_INT(v[0].input, 3000000000LL);
		CHECK_INT(v[0].output, 15000000000LL);
		CHECK_INT(v[0].cache_write, 3750000000LL);
	}
	free(v);
	test_bad("{\"m\": {\"litellm_provider\": \"openai\",", "1:");
	test_bad("{\"m\": {\"litellm_provider\": \"openai\"\n \"x\": 1}}", "2:");
	test_bad("{\"m\": [1, 2,]}", "1:");
	test_bad("", "1:");
}

/* Issue 33: multipliers are read (x 10^9), a provider_specific_entry name
 * kilovolt does not apply is not understood, and a field not understood
 * on a served model's entry is named, unless ignored; on a realtime
 * model's it is not. */
static void
test_multipliers(void)
{
	const char *json = "{\"m\": {\"litellm_provider\": \"anthropic\", \"mode\": \"chat\","
	    " \"input_cost_per_token\": 5e-06, \"output_cost_per_token\": 2.5e-05,"
	    " \"provider_specific_entry\": {\"fast\": 6, \"us\": 1.1, \"eu\": 1.2},"
	    " \"regional_processing_uplift_multiplier_eu\": 1.1},"
	    " \"rt\": {\"litellm_provider\": \"openai\", \"mode\": \"realtime\","
	    " \"input_cost_per_token\": 1e-06, \"output_cost_per_token\": 1e-06,"
	    " \"input_cost_per_image\": 0.01}}";
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	const struct kv_price *m;
	size_t n = 0;
	char err[512], why[256];

	CHECK_INT(kv_catalog_parse(json, strlen(json), provs, &v, &n, &st, err, sizeof(err)), 0);
	CHECK_INT(n, 2);
	if ((m = find(v, n, "m")) != NULL) {
		CHECK_INT(m->fast_mult, 6000000000LL);
		CHECK_INT(m->geo_us_mult, 1100000000LL);
		CHECK_INT(m->region_eu_mult, 1100000000LL);
		CHECK_INT(m->region_us_mult, -1);
	} else
		CHECK(0);
	CHECK_INT(kv_catalog_unserved(&st, "", why, sizeof(why)), -1);
	CHECK_STR(why, "provider_specific_entry.eu on m");
	CHECK_INT(kv_catalog_unserved(&st, "x provider_specific_entry.eu", why, sizeof(why)), 0);
	free(v);
}

int
main(void)
{
	test_multipliers();
	test_shipped();
	test_small();
	return unit_done();
}

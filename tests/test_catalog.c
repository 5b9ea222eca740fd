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

/* The shipped copy, as the daemon reads it without upstreams of its own. */
static void
load_shipped(struct kv_price **v, size_t *n, struct kv_catalog_stats *st)
{
	const char *top = getenv("top_srcdir");
	char path[4096], err[512];

	snprintf(path, sizeof(path), "%s/data/prices-2026-07-24.json", top ? top : "..");
	CHECK_INT(kv_catalog_load(path, provs, "", v, n, st, err, sizeof(err)), 0);
}

static void
test_shipped(void)
{
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	const struct kv_price *p;
	size_t n = 0;

	load_shipped(&v, &n, &st);
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

	CHECK_INT(kv_catalog_parse(json, strlen(json), provs, "", &v, &n, &st, err, sizeof(err)), -1);
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

	CHECK_INT(kv_catalog_parse(ok, strlen(ok), provs, "", &v, &n, &st, err, sizeof(err)), 0);
	/* every provider is kept; only openai's is priced by its bare name */
	CHECK_INT(n, 2);
	if (n == 2) {
		CHECK_STR(v[0].model, "m");
		CHECK_INT(v[0].input, 3000000000LL);
		CHECK_INT(v[0].output, 15000000000LL);
		CHECK_INT(v[0].cache_write, 3750000000LL);
		CHECK_INT(v[0].kind, KV_PROVIDER_OPENAI);
		CHECK_INT(v[0].bare, 1);
		CHECK_STR(v[1].model, "x");
		CHECK_INT(v[1].kind, KV_PROVIDER_BEDROCK);
		CHECK_INT(v[1].bare, 0);
		CHECK_STR(st.prov[v[1].prov - 1].name, "bedrock");
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

	CHECK_INT(kv_catalog_parse(json, strlen(json), provs, "", &v, &n, &st, err, sizeof(err)), 0);
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

static size_t
kept_of(const struct kv_catalog_stats *st, const char *provider)
{
	size_t i;

	for (i = 0; i < st->nprov; i++)
		if (strcmp(st->prov[i].name, provider) == 0)
			return st->prov[i].n;
	return 0;
}

/* Issue 35: the shipped copy is every provider's; the counts kept by
 * provider, and the figures of entries of the same model at different
 * providers' prices, exactly as the JSON has them. */
static void
test_providers(void)
{
	char line[1024];
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	const struct kv_price *p;
	size_t n = 0;

	load_shipped(&v, &n, &st);
	CHECK_INT(n, 2355);
	CHECK_INT(st.nprov, 89);
	CHECK_INT(kept_of(&st, "openai"), 147);
	CHECK_INT(kept_of(&st, "anthropic"), 24);
	CHECK_INT(kept_of(&st, "bedrock"), 199);
	CHECK_INT(kept_of(&st, "bedrock_converse"), 140);
	CHECK_INT(kept_of(&st, "bedrock_mantle"), 13);
	CHECK_INT(kept_of(&st, "vertex_ai-anthropic_models"), 37);
	CHECK_INT(kept_of(&st, "vertex_ai-language-models"), 21);
	CHECK_INT(kept_of(&st, "gemini"), 40);
	CHECK_INT(kept_of(&st, "azure"), 161);
	CHECK_INT(kept_of(&st, "mistral"), 51);
	CHECK_INT(kept_of(&st, "groq"), 11);
	CHECK_INT(kept_of(&st, "deepseek"), 12);
	CHECK_INT(kept_of(&st, "xai"), 36);
	CHECK_INT(kept_of(&st, "openrouter"), 82);
	/* the entries pricing per image, second or character, and the like */
	CHECK_INT(st.refused, 62);
	kv_catalog_refused(&st, line, sizeof(line));
	CHECK(strstr(line, "62 entries (") == line);
	CHECK(strstr(line, "input_cost_per_image (33)") != NULL);
	/* Claude Sonnet 4.5: the Anthropic API's, a US inference profile's
	 * (10% more), a Bedrock id's and Vertex's */
	if ((p = find(v, n, "claude-sonnet-4-5")) != NULL) {
		CHECK_INT(p->input, 3000000000LL);
		CHECK_INT(p->kind, KV_PROVIDER_ANTHROPIC);
		CHECK_INT(p->bare, 1);
	} else
		CHECK(0);
	if ((p = find(v, n, "us.anthropic.claude-sonnet-4-5-20250929-v1:0")) != NULL) {
		CHECK_INT(p->input, 3300000000LL);		/* 3.3e-06 */
		CHECK_INT(p->output, 16500000000LL);		/* 1.65e-05 */
		CHECK_INT(p->cached_input, 330000000LL);	/* 3.3e-07 */
		CHECK_INT(p->cache_write, 4125000000LL);	/* 4.125e-06 */
		CHECK_INT(p->kind, KV_PROVIDER_BEDROCK);
		CHECK_INT(p->bare, 0);
	} else
		CHECK(0);
	if ((p = find(v, n, "vertex_ai/claude-sonnet-4-5@20250929")) != NULL)
		CHECK_INT(p->kind, KV_PROVIDER_VERTEX);
	else
		CHECK(0);
	/* DeepSeek's cache-hit price is its cache-read price */
	if ((p = find(v, n, "deepseek/deepseek-coder")) != NULL)
		CHECK_INT(p->cached_input, 14000000LL);		/* 1.4e-08 */
	else
		CHECK(0);
	/* Azure's long-context priority prices are the priority tier over
	 * the long-context prices: understood, kept */
	if ((p = find(v, n, "azure/gpt-5.4")) != NULL)
		CHECK_INT(p->kind, KV_PROVIDER_AZURE);
	else
		CHECK(0);
	free(v);
}

/* A field another provider's entry carries that kilovolt would not
 * charge refuses that entry alone, unless ignored; the derived figures
 * are understood when they are what kilovolt charges. */
static void
test_refused(void)
{
	const char *json = "{"
	    "\"a\": {\"litellm_provider\": \"gemini\", \"mode\": \"chat\","
	    " \"input_cost_per_token\": 1e-06, \"output_cost_per_token\": 2e-06,"
	    " \"input_cost_per_image\": 0.001},"
	    " \"b\": {\"litellm_provider\": \"deepseek\", \"input_cost_per_token\": 1e-06,"
	    " \"output_cost_per_token\": 2e-06, \"input_cost_per_token_cache_hit\": 1e-07,"
	    " \"cache_read_input_token_cost\": 2e-07},"
	    " \"c\": {\"litellm_provider\": \"azure\", \"input_cost_per_token\": 2.5e-06,"
	    " \"output_cost_per_token\": 1.5e-05, \"input_cost_per_token_priority\": 5e-06,"
	    " \"output_cost_per_token_priority\": 3e-05,"
	    " \"input_cost_per_token_above_272k_tokens\": 5e-06,"
	    " \"output_cost_per_token_above_272k_tokens\": 2.25e-05,"
	    " \"input_cost_per_token_above_272k_tokens_priority\": 1e-05,"
	    " \"output_cost_per_token_above_272k_tokens_priority\": 4.5e-05},"
	    " \"d\": {\"litellm_provider\": \"azure\", \"input_cost_per_token\": 2.5e-06,"
	    " \"output_cost_per_token\": 1.5e-05, \"input_cost_per_token_priority\": 5e-06,"
	    " \"input_cost_per_token_above_272k_tokens\": 5e-06,"
	    " \"input_cost_per_token_above_272k_tokens_priority\": 1.2e-05},"
	    " \"e\": {\"litellm_provider\": \"xai\", \"input_cost_per_token\": \"1\","
	    " \"output_cost_per_token\": 1e-06},"
	    " \"f\": {\"litellm_provider\": \"gemini\", \"mode\": \"image_generation\","
	    " \"input_cost_per_token\": 1e-06, \"output_cost_per_token\": 2e-06,"
	    " \"input_cost_per_image\": 0.001},"
	    " \"g\": {\"litellm_provider\": \"deepseek\", \"input_cost_per_token\": 1e-06,"
	    " \"output_cost_per_token\": 2e-06, \"input_cost_per_token_cache_hit\": 1e-07}}";
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	const struct kv_price *p;
	size_t n = 0;
	char err[512], line[512];

	CHECK_INT(kv_catalog_parse(json, strlen(json), provs, "", &v, &n, &st, err, sizeof(err)),
	    0);
	/* a: per image; b: two cache-read prices; d: a long-context priority
	 * price that is not the tier over the long-context one; e: malformed */
	CHECK_INT(n, 3);
	CHECK(find(v, n, "c") != NULL);
	CHECK(find(v, n, "f") != NULL);		/* not served: listed, kept */
	if ((p = find(v, n, "g")) != NULL)
		CHECK_INT(p->cached_input, 100000000LL);
	else
		CHECK(0);
	CHECK_INT(st.refused, 4);
	kv_catalog_refused(&st, line, sizeof(line));
	CHECK_STR(line, "4 entries (a and others) not kept, pricing what kilovolt would not "
	    "charge: input_cost_per_image (1), input_cost_per_token_cache_hit (1), "
	    "input_cost_per_token_above_272k_tokens_priority (1), (a malformed value) (1)");
	CHECK_INT(kv_catalog_unserved(&st, "", line, sizeof(line)), 0);
	free(v);
	v = NULL;
	n = 0;
	/* the operator's prices_ignore keeps them */
	CHECK_INT(kv_catalog_parse(json, strlen(json), provs, "input_cost_per_image", &v, &n,
	    &st, err, sizeof(err)), 0);
	CHECK(find(v, n, "a") != NULL);
	CHECK_INT(st.refused, 3);
	free(v);
}

int
main(void)
{
	test_refused();
	test_providers();
	test_multipliers();
	test_shipped();
	test_small();
	return unit_done();
}

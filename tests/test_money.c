/* Money: exact decimal parsing, cost vectors with exact nano-dollar results
 * (many-decimal prices, huge counts, overflow), and USD formatting. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/catalog.h"
#include "common/money.h"
#include "common/pricetab.h"
#include "worker/charge_rules.h"
#include "tests/unit.h"

static void
test_parse_good(void)
{
	static const struct { const char *s; int64_t want; } v[] = {
		{ "0", 0 },
		{ "0.15", 150000000 },
		{ "3", 3000000000LL },
		{ "3.00", 3000000000LL },
		{ "0.000000001", 1 },
		{ "0.075", 75000000 },
		{ "2.00", 2000000000LL },
		{ "007.5", 7500000000LL },
		{ "123456.123456789", 123456123456789LL },
		{ "9223372036.854775807", INT64_MAX },
		{ "9223372036", 9223372036000000000LL },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int64_t got = -7;

		CHECK_INT(kv_parse_nano(v[i].s, &got), 0);
		CHECK_INT(got, v[i].want);
	}
}

static void
test_parse_bad(void)
{
	static const char *bad[] = {
		"", ".", "1.", ".5", "1e3", "-1", "+1", " 1", "1 ", "1.0000000001",
		"0.0000000001", "1,5", "1.2.3", "abc", "1x", "0x10", "inf", "nan",
		"9223372036.854775808", "9223372037", "99999999999999999999",
		"184467440737095516160", "1..2", "1.-2",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t got = 42;
		int rc = kv_parse_nano(bad[i], &got);

		if (rc != -1)
			fprintf(stderr, "accepted \"%s\"\n", bad[i]);
		CHECK_INT(rc, -1);
		CHECK_INT(got, 42);	/* untouched on failure */
	}
	CHECK_INT(kv_parse_nano(NULL, NULL), -1);
}

static int64_t
nano(const char *s)
{
	int64_t v = -1;

	if (kv_parse_nano(s, &v) == -1)
		fprintf(stderr, "bad price in test: %s\n", s);
	return v;
}

static struct kv_price
price(const char *in, const char *out, const char *cached, const char *write)
{
	struct kv_price p;

	kv_price_unset(&p, "");
	p.input = nano(in);
	p.output = nano(out);
	p.cached_input = cached ? nano(cached) : -1;
	p.cache_write = write ? nano(write) : -1;
	p.cache_write_1h = p.long_context_input = p.long_context_output = -1;
	p.priority_input = p.priority_output = p.flex_input = p.flex_output = -1;
	p.web_search_call = p.web_fetch_call = p.code_exec_hour = -1;
	return p;
}

static void
test_cost_vectors(void)
{
	static const struct {
		const char *in, *out, *cached, *write;
		int64_t input, output, cached_in, cache_write;
		int64_t want;
	} v[] = {
		/* gpt-4o-mini: 1000 in × 0.15 + 500 out × 0.60 per 1M */
		{ "0.15", "0.60", "0.075", NULL, 1000, 500, 0, 0, 450000 },
		/* 1000 in of which 400 cached: 600×0.15 + 400×0.075 + 500×0.6 */
		{ "0.15", "0.60", "0.075", NULL, 1000, 500, 400, 0, 420000 },
		/* cached unset: cached tokens cost the input price */
		{ "0.15", "0.60", NULL, NULL, 1000, 500, 400, 0, 450000 },
		/* claude sonnet: 100 in + 2000 read + 300 write, 50 out:
		 * 100×3 + 2000×0.3 + 300×3.75 + 50×15 = 300+600+1125+750 = 2775 µ$ */
		{ "3.00", "15.00", "0.30", "3.75", 2400, 50, 2000, 300, 2775000 },
		/* cache_write unset: writes cost the input price */
		{ "3.00", "15.00", "0.30", NULL, 2400, 50, 2000, 300, 2550000 },
		/* one token at $0.15/1M is 150 nUSD */
		{ "0.15", "0.60", NULL, NULL, 1, 0, 0, 0, 150 },
		/* rounding up: a price of 1 nUSD per 1M tokens */
		{ "0.000000001", "0", NULL, NULL, 1, 0, 0, 0, 1 },
		{ "0.000000001", "0", NULL, NULL, 1000000, 0, 0, 0, 1 },
		{ "0.000000001", "0", NULL, NULL, 1000001, 0, 0, 0, 2 },
		/* exact multiple: no rounding */
		{ "1", "3", NULL, NULL, 1000000, 1000000, 0, 0, 4000000000LL },
		{ "0", "0", NULL, NULL, 123456, 654321, 0, 0, 0 },
		{ "0.123456789", "9.876543211", NULL, NULL, 7, 13, 0, 0,
		  /* (7×123456789 + 13×9876543211)/1e6 = 129259259266/1e6 -> 129260 */
		  129260 },
		{ "1", "1", NULL, NULL, 0, 0, 0, 0, 0 },
		/* huge but representable: 1e12 tokens at $1000/1M = $1e9 */
		{ "1000", "0", NULL, NULL, 1000000000000LL, 0, 0, 0, 1000000000000000000LL },
		/* INT64_MAX tokens at 1e-9/1M: ceil(INT64_MAX / 1e6) */
		{ "0.000000001", "0", NULL, NULL, INT64_MAX, 0, 0, 0, 9223372036855LL },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct kv_price p = price(v[i].in, v[i].out, v[i].cached, v[i].write);
		struct kv_usage u = { .input = v[i].input, .output = v[i].output,
		    .cached_input = v[i].cached_in, .cache_write = v[i].cache_write, .found = 1 };
		int64_t c = -5;

		CHECK_INT(kv_cost(&p, &u, &c), 0);
		if (c != v[i].want)
			fprintf(stderr, "cost vector %zu\n", i);
		CHECK_INT(c, v[i].want);
	}
}

static void
expect_cost_fail(const struct kv_price *p, int64_t in, int64_t out,
    int64_t cached, int64_t write)
{
	struct kv_usage u = { .input = in, .output = out, .cached_input = cached,
	    .cache_write = write, .found = 1 };
	int64_t c = 0;

	CHECK_INT(kv_cost(p, &u, &c), -1);
	CHECK_INT(c, INT64_MAX);
}

static void
test_cost_overflow(void)
{
	struct kv_price big = price("9223372036.854775807", "9223372036.854775807",
	    NULL, NULL);
	struct kv_price small = price("0.15", "0.60", NULL, NULL);
	struct kv_price p1000 = price("1000", "1000", NULL, NULL);

	/* result exceeds int64 nano-dollars */
	expect_cost_fail(&big, 1000000000, 0, 0, 0);
	expect_cost_fail(&p1000, INT64_MAX, 0, 0, 0);
	/* the 128-bit sum itself overflows */
	expect_cost_fail(&big, INT64_MAX, INT64_MAX, 0, 0);
	/* negative counts */
	expect_cost_fail(&small, -1, 0, 0, 0);
	expect_cost_fail(&small, 10, -1, 0, 0);
	expect_cost_fail(&small, 10, 0, -1, 0);
	expect_cost_fail(&small, 10, 0, 0, -1);
	/* more cached than input */
	expect_cost_fail(&small, 10, 0, 11, 0);
	expect_cost_fail(&small, 10, 0, 6, 5);
	expect_cost_fail(&small, 10, 0, INT64_MAX, INT64_MAX);
	/* just below the limit is fine: 9223372036854 tokens at $1/1M */
	{
		struct kv_price one = price("1", "0", NULL, NULL);
		struct kv_usage u = { .input = 9223372036854LL, .found = 1 };
		int64_t c;

		CHECK_INT(kv_cost(&one, &u, &c), 0);
		CHECK_INT(c, 9223372036854000LL);
	}
}

/* cost of U under P, or -1 */
static int64_t
cost_of(const struct kv_price *p, struct kv_usage u)
{
	int64_t c;

	return kv_cost(p, &u, &c) == -1 ? -1 : c;
}

/* What else changes the bill: 1-hour cache writes, the long-context tier,
 * service tiers, and the dearest price for a tier the section cannot
 * price. Hand-computed in nano-dollars (prices per 1M tokens). */
static void
test_cost_tiers(void)
{
	struct kv_price s = price("3", "15", "0.30", "3.75");
	struct kv_price g = price("1.25", "10", "0.125", NULL);
	struct kv_price plain = price("2", "8", "0.5", NULL);

	/* Anthropic: 1000 input, 1000 cache reads, 2000 writes of which 500
	 * are 1-hour; unset cache_write_1h costs twice input ($6) */
	CHECK_INT(cost_of(&s, (struct kv_usage){ .input = 4000, .cached_input = 1000,
	    .cache_write = 2000, .cache_write_1h = 500 }),
	    1000 * 3000 + 1000 * 300 + 1500 * 3750 + 500 * 6000);
	s.cache_write_1h = nano("6.5");
	CHECK_INT(cost_of(&s, (struct kv_usage){ .input = 500, .cache_write = 500,
	    .cache_write_1h = 500 }), 500 * 6500);
	/* more 1-hour writes than writes is inconsistent */
	CHECK_INT(cost_of(&s, (struct kv_usage){ .input = 500, .cache_write = 100,
	    .cache_write_1h = 101 }), -1);
	/* long context: past 200000 input every token at 6 / 22.5, cache
	 * prices scaled by 6/3 */
	s.cache_write_1h = -1;
	s.long_context_threshold = 200000;
	s.long_context_input = nano("6");
	s.long_context_output = nano("22.5");
	CHECK_INT(cost_of(&s, (struct kv_usage){ .input = 200000, .output = 1000 }),
	    (200000LL * 3000000000LL + 1000LL * 15000000000LL) / 1000000);	/* not past it */
	CHECK_INT(cost_of(&s, (struct kv_usage){ .input = 300000, .output = 1000,
	    .cached_input = 100000, .cache_write = 10000 }),
	    (190000LL * 6000000000LL + 100000LL * 600000000LL + 10000LL * 7500000000LL +
	    1000LL * 22500000000LL) / 1000000);
	/* OpenAI tiers: priority and flex at their prices, cache scaled */
	g.priority_input = nano("2.5");
	g.priority_output = nano("20");
	g.flex_input = nano("0.625");
	g.flex_output = nano("5");
	CHECK_INT(cost_of(&g, (struct kv_usage){ .input = 1000, .cached_input = 200,
	    .output = 100, .tier = KV_TIER_STANDARD }), 800 * 1250 + 200 * 125 + 100 * 10000);
	CHECK_INT(cost_of(&g, (struct kv_usage){ .input = 1000, .cached_input = 200,
	    .output = 100, .tier = KV_TIER_PRIORITY }), 800 * 2500 + 200 * 250 + 100 * 20000);
	CHECK_INT(cost_of(&g, (struct kv_usage){ .input = 1000, .cached_input = 200,
	    .output = 100, .tier = KV_TIER_FLEX }), 800 * 625 + 200 * 625 / 10 + 100 * 5000);
	/* a tier it cannot price ("scale"): the dearest input and output it has */
	CHECK_INT(cost_of(&g, (struct kv_usage){ .input = 1000, .cached_input = 200,
	    .output = 100, .tier = KV_TIER_OTHER }), 1000 * 2500 + 100 * 20000);
	/* a section without flex prices: flex at its dearest, never below */
	CHECK_INT(cost_of(&plain, (struct kv_usage){ .input = 1000, .output = 100,
	    .tier = KV_TIER_FLEX }), 1000 * 2000 + 100 * 8000);
	plain.priority_input = nano("3.5");
	plain.priority_output = nano("14");
	CHECK_INT(cost_of(&plain, (struct kv_usage){ .input = 1000, .output = 100,
	    .tier = KV_TIER_FLEX }), 1000 * 3500 + 100 * 14000);
}

static void
test_format(void)
{
	static const struct { int64_t n; const char *want; } v[] = {
		{ 0, "0.000000" },
		{ 1997500000LL, "1.997500" },
		{ 2000000000LL, "2.000000" },
		{ -1000, "-0.000001" },
		{ -1, "0.000000" },
		{ 999, "0.000000" },
		{ 1999, "0.000001" },
		{ -1999, "-0.000001" },
		{ -2500000000LL, "-2.500000" },
		{ INT64_MAX, "9223372036.854775" },
		{ INT64_MIN, "-9223372036.854775" },
	};
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		kv_format_usd(v[i].n, buf, sizeof(buf));
		CHECK_STR(buf, v[i].want);
	}
	kv_format_usd(1997500000LL, buf, 5);	/* truncated, terminated */
	CHECK_STR(buf, "1.99");
}

/* Issue 20's bill: Anthropic web_search with 25 searches at $10 per 1,000
 * is $0.25 on top of the tokens; fees never round down. */
static void
test_cost_fees(void)
{
	struct kv_price p = price("3", "15", NULL, NULL);
	struct kv_usage u = { .input = 1000, .output = 1000, .web_search = 25, .found = 1 };
	int64_t c = -1, f = -1;

	/* unset fees cost nothing, and say so */
	CHECK_INT(kv_cost(&p, &u, &c), 0);
	CHECK_INT(c, 18000000);
	CHECK_INT(kv_cost_fees_unpriced(&p, &u), 1);
	p.web_search_call = 10000000;	/* $10 per 1,000 */
	CHECK_INT(kv_cost_fees_unpriced(&p, &u), 0);
	CHECK_INT(kv_cost_fees(&p, &u, &f), 0);
	CHECK_INT(f, 250000000);
	CHECK_INT(kv_cost(&p, &u, &c), 0);
	CHECK_INT(c, 268000000);	/* $0.018 tokens + $0.25 searches */
	/* fetches: unset costs 0 (Anthropic bills fetches as tokens only) */
	u.web_fetch = 3;
	CHECK_INT(kv_cost_fees_unpriced(&p, &u), 1);
	p.web_fetch_call = 7;
	CHECK_INT(kv_cost_fees(&p, &u, &f), 0);
	CHECK_INT(f, 250000021);
	/* container time: $0.05 an hour, 5 minutes = $0.0041666.. -> up */
	u.web_search = u.web_fetch = 0;
	u.code_exec_ms = 300000;
	p.code_exec_hour = 50000000;
	CHECK_INT(kv_cost_fees(&p, &u, &f), 0);
	CHECK_INT(f, 4166667);
	u.code_exec_ms = 1;
	CHECK_INT(kv_cost_fees(&p, &u, &f), 0);
	CHECK_INT(f, 14);	/* 50,000,000 / 3,600,000 = 13.9 -> 14 */
	/* overflow and bad counts fail closed */
	u.code_exec_ms = 0;
	u.web_search = INT64_MAX;
	CHECK_INT(kv_cost(&p, &u, &c), -1);
	CHECK_INT(c, INT64_MAX);
	u.web_search = -1;
	CHECK_INT(kv_cost_fees(&p, &u, &f), -1);
	CHECK_INT(f, INT64_MAX);
}

/* kv_charge_cost of a body's and a response's model, each resolved as the
 * worker does: the body's once at admission, the response's when it names
 * a model of its own. */
static int64_t
charge_cost(const struct kv_config *cf, const char *body_model, const char *resp_model,
    const struct kv_usage *u, int *flags, const struct kv_price **priced)
{
	const struct kv_price *pb = body_model[0] != '\0' ? kv_config_price(cf, body_model) : NULL;
	int named = kv_charge_resp_named(resp_model, body_model);

	return kv_charge_cost(cf, pb, named, named ? kv_config_price(cf, resp_model) : NULL,
	    u, flags, priced);
}

/* kv_charge_price remembers names: the same section and older family as
 * kv_price_lookup, name after name, over more names than it keeps, for a
 * name the memo cannot keep, and for another config's lookups. */
static void
test_price_memo(const struct kv_config *cf)
{
	static const char *names[] = {
		"gpt-4o-mini", "gpt-4", "gpt-4o-mini-2024-07-18", "my-deployment", "",
		"gpt-4o-mini", "gpt-4", "x", "y", "gpt-4o-mini-2024-07-18", "gpt-4-turbo",
	};
	struct kv_config other;
	const struct kv_price *o1, *o2, *p1;
	char longname[300];
	size_t i, r;

	memset(longname, 'g', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memcpy(longname, "gpt-4o-mini", 11);
	for (r = 0; r < 3; r++)
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			o1 = o2 = (const struct kv_price *)1;
			p1 = kv_charge_price(cf, names[i], &o1);
			CHECK(p1 == kv_price_lookup(cf, names[i], NULL, &o2) && o1 == o2);
			CHECK(kv_charge_price(cf, names[i], NULL) == p1);
			CHECK(kv_charge_price(cf, longname, NULL) ==
			    kv_price_lookup(cf, longname, NULL, NULL));
		}
	/* another config with the same names: its own sections */
	other = *cf;
	other.unknown_models_deny = 0;
	other.has_default_price = 1;
	CHECK(kv_charge_price(&other, "my-deployment", NULL) == &other.default_price);
	CHECK(kv_charge_price(cf, "my-deployment", NULL) == NULL);
}

/* The price a charge uses: the dearer of the body's and the response's
 * model (issue 20: an Azure deployment answers gpt-4 for gpt-4o-mini). */
static void
test_charge_price(void)
{
	struct kv_price prices[2];
	struct kv_config cf;
	struct kv_usage u = { .input = 1000, .output = 1000, .found = 1 };
	const struct kv_price *p;
	int flags;

	memset(&cf, 0, sizeof(cf));
	prices[0] = price("0.15", "0.60", NULL, NULL);
	strcpy(prices[0].model, "gpt-4o-mini*");
	prices[1] = price("30", "60", NULL, NULL);
	strcpy(prices[1].model, "gpt-4");
	cf.prices = prices;
	cf.nprices = 2;
	cf.default_price = price("50", "90", NULL, NULL);
	strcpy(cf.default_price.model, "default");
	cf.unknown_models_deny = 1;
	/* indexed as kv_config_load does: the daemon's lookup path */
	CHECK_INT(kv_pricetab_index(&cf), 0);
	/* the same model, or a dated answer to an alias: its price */
	CHECK_INT(charge_cost(&cf, "gpt-4o-mini", "gpt-4o-mini-2024-07-18", &u, &flags, &p),
	    750000);
	CHECK_INT(flags, 0);
	/* a dearer response model: its price */
	CHECK_INT(charge_cost(&cf, "gpt-4o-mini", "gpt-4", &u, &flags, &p), 90000000);
	CHECK_STR(p->model, "gpt-4");
	CHECK_INT(flags, 0);
	/* a cheaper one: the body's, which is what was admitted */
	CHECK_INT(charge_cost(&cf, "gpt-4", "gpt-4o-mini-2024-07-18", &u, &flags, &p), 90000000);
	/* an unpriced response model under deny: the body's price, marked */
	CHECK_INT(charge_cost(&cf, "gpt-4o-mini", "my-deployment", &u, &flags, &p), 750000);
	CHECK_INT(flags, KV_CHARGE_RESP_UNPRICED);
	test_price_memo(&cf);
	/* no model at all: nothing to charge with */
	CHECK_INT(charge_cost(&cf, "", NULL, &u, &flags, &p), 0);
	CHECK_INT(flags, KV_CHARGE_NO_PRICE);
	CHECK(p == NULL);
	/* under unknown_models = default: [price default], marked */
	cf.has_default_price = 1;
	cf.unknown_models_deny = 0;
	CHECK_INT(charge_cost(&cf, "gpt-4o-mini", "my-deployment", &u, &flags, &p), 140000000);
	CHECK_INT(flags, KV_CHARGE_RESP_UNPRICED);
	CHECK_STR(p->model, "default");
	/* searches the chosen price sets no fee for: marked */
	u.web_search = 2;
	CHECK_INT(charge_cost(&cf, "gpt-4", NULL, &u, &flags, &p), 90000000);
	CHECK_INT(flags, KV_CHARGE_FEES_UNPRICED);
	prices[1].web_search_call = 25000000;
	CHECK_INT(charge_cost(&cf, "gpt-4", NULL, &u, &flags, &p), 140000000);
	CHECK_INT(flags, 0);
	/* chat completions of a search model bill a search each */
	u.web_search = 0;
	kv_charge_implied_calls(KV_API_OPENAI_CHAT, "gpt-4o-search-preview", &u);
	CHECK_INT(u.web_search, 1);
	u.web_search = 0;
	kv_charge_implied_calls(KV_API_OPENAI_RESPONSES, "gpt-4o-search-preview", &u);
	kv_charge_implied_calls(KV_API_OPENAI_CHAT, "gpt-4o", &u);
	CHECK_INT(u.web_search, 0);
	/* a cut: never less than the reservation's output, nor than seen */
	CHECK_INT(kv_charge_cut_output(30000, 2), 30000);
	CHECK_INT(kv_charge_cut_output(100, 500), 500);
	kv_pricetab_free(&cf);
}

/* The catalogue's own entries (data/prices-2026-07-24.json, copied), read
 * by kv_catalog_parse and charged by kv_cost: audio tokens at their
 * prices, the long-context tier's own cache prices past 200k input, a
 * priority tier's own cache-read price, a separately priced reasoning
 * token. Expected amounts are the file's USD/token x tokens, by hand. */
static const char catalogue[] =
"{\"gpt-4o-audio-preview\":{\"input_cost_per_audio_token\":4e-05,\"input_cost_per_token\":2.5e-06,"
"\"litellm_provider\":\"openai\",\"output_cost_per_audio_token\":8e-05,\"output_cost_per_token\":1e-05},"
"\"claude-sonnet-4-5\":{\"cache_creation_input_token_cost\":3.75e-06,"
"\"cache_creation_input_token_cost_above_1hr\":6e-06,"
"\"cache_creation_input_token_cost_above_1hr_above_200k_tokens\":1.2e-05,"
"\"cache_creation_input_token_cost_above_200k_tokens\":7.5e-06,\"cache_read_input_token_cost\":3e-07,"
"\"cache_read_input_token_cost_above_200k_tokens\":6e-07,\"input_cost_per_token\":3e-06,"
"\"input_cost_per_token_above_200k_tokens\":6e-06,\"litellm_provider\":\"anthropic\","
"\"output_cost_per_token\":1.5e-05,\"output_cost_per_token_above_200k_tokens\":2.25e-05},"
"\"gpt-5\":{\"cache_read_input_token_cost\":1.25e-07,\"cache_read_input_token_cost_flex\":6.25e-08,"
"\"cache_read_input_token_cost_priority\":2.5e-07,\"input_cost_per_token\":1.25e-06,"
"\"input_cost_per_token_flex\":6.25e-07,\"input_cost_per_token_priority\":2.5e-06,"
"\"litellm_provider\":\"openai\",\"output_cost_per_token\":1e-05,\"output_cost_per_token_flex\":5e-06,"
"\"output_cost_per_token_priority\":2e-05},"
"\"reasoner\":{\"input_cost_per_token\":1e-06,\"output_cost_per_token\":4e-06,"
"\"output_cost_per_reasoning_token\":6e-06,\"litellm_provider\":\"openai\"}}";

static const struct kv_price *
entry(const struct kv_price *all, size_t n, const char *model)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(all[i].model, model) == 0)
			return &all[i];
	return NULL;
}

static void
test_cost_catalogue(void)
{
	struct kv_catalog_stats st;
	struct kv_price *all = NULL;
	const struct kv_price *a, *s, *g, *r;
	size_t n = 0;
	char err[256];

	CHECK_INT(kv_catalog_parse(catalogue, sizeof(catalogue) - 1, NULL, "", &all, &n, &st, err,
	    sizeof(err)), 0);
	CHECK_INT(st.nunknown, 0);	/* the 1-hour long-context write is understood */
	a = entry(all, n, "gpt-4o-audio-preview");
	s = entry(all, n, "claude-sonnet-4-5");
	g = entry(all, n, "gpt-5");
	r = entry(all, n, "reasoner");
	CHECK(a != NULL && s != NULL && g != NULL && r != NULL);
	if (a == NULL || s == NULL || g == NULL || r == NULL)
		return;
	/* 1,000 text + 500 audio in, 200 text + 300 audio out:
	 * 1000 x 2.5e-6 + 500 x 4e-5 + 200 x 1e-5 + 300 x 8e-5
	 * = 0.0025 + 0.02 + 0.002 + 0.024 = $0.0485 */
	CHECK_INT(cost_of(a, (struct kv_usage){ .input = 1500, .audio_input = 500,
	    .output = 500, .audio_output = 300, .found = 1 }), 48500000);
	/* text only: 1500 x 2.5e-6 + 500 x 1e-5 = $0.00875, never audio rates */
	CHECK_INT(cost_of(a, (struct kv_usage){ .input = 1500, .output = 500, .found = 1 }),
	    8750000);
	/* past 200k: 250,000 input of which 100,000 cache reads, 20,000 5-minute
	 * and 10,000 1-hour writes; 1,000 output:
	 * 120000 x 6e-6 + 100000 x 6e-7 + 20000 x 7.5e-6 + 10000 x 1.2e-5
	 * + 1000 x 2.25e-5 = 0.72 + 0.06 + 0.15 + 0.12 + 0.0225 = $1.0725 */
	CHECK_INT(cost_of(s, (struct kv_usage){ .input = 250000, .cached_input = 100000,
	    .cache_write = 30000, .cache_write_1h = 10000, .output = 1000, .found = 1 }),
	    1072500000);
	/* under 200k (190,000 input: 60,000 uncached) at the standard prices:
	 * 60000 x 3e-6 = 0.18, 100000 x 3e-7 = 0.03, 20000 x 3.75e-6 = 0.075,
	 * 10000 x 6e-6 = 0.06, 1000 x 1.5e-5 = 0.015: $0.36 */
	CHECK_INT(cost_of(s, (struct kv_usage){ .input = 190000, .cached_input = 100000,
	    .cache_write = 30000, .cache_write_1h = 10000, .output = 1000, .found = 1 }),
	    60000 * 3000LL + 30000000 + 75000000 + 60000000 + 15000000);
	/* priority: 10,000 in (4,000 cached), 1,000 out:
	 * 6000 x 2.5e-6 + 4000 x 2.5e-7 + 1000 x 2e-5 = 0.015 + 0.001 + 0.02 */
	CHECK_INT(cost_of(g, (struct kv_usage){ .input = 10000, .cached_input = 4000,
	    .output = 1000, .tier = KV_TIER_PRIORITY, .found = 1 }), 36000000);
	/* flex: 6000 x 6.25e-7 + 4000 x 6.25e-8 + 1000 x 5e-6 = 0.00375 +
	 * 0.00025 + 0.005 */
	CHECK_INT(cost_of(g, (struct kv_usage){ .input = 10000, .cached_input = 4000,
	    .output = 1000, .tier = KV_TIER_FLEX, .found = 1 }), 9000000);
	/* reasoning priced apart: 1000 x 1e-6 + 600 x 4e-6 + 400 x 6e-6 */
	CHECK_INT(cost_of(r, (struct kv_usage){ .input = 1000, .output = 1000,
	    .reasoning = 400, .found = 1 }), 1000000 + 2400000 + 2400000);
	/* more audio or reasoning than the total is refused */
	CHECK_INT(cost_of(a, (struct kv_usage){ .input = 10, .audio_input = 11, .found = 1 }), -1);
	CHECK_INT(cost_of(r, (struct kv_usage){ .output = 10, .reasoning = 6,
	    .audio_output = 5, .found = 1 }), -1);
	free(all);
}

/* Multipliers of every token price (issue 33): Anthropic fast mode and
 * US-only inference, OpenAI regional processing; each applies only where
 * the usage asks and the price sets it, and they compose. */
static void
test_cost_multipliers(void)
{
	struct kv_price p = price("5.00", "25.00", "0.50", "6.25");

	p.fast_mult = nano("6");
	p.geo_us_mult = nano("1.1");
	p.region_eu_mult = nano("1.1");
	struct kv_price tiny = price("0.000000003", "0.000000003", NULL, NULL);

	/* 1000 in, 100 out: $0.005 + $0.0025 = 7,500,000 nUSD at 1x */
	CHECK_INT(cost_of(&p, (struct kv_usage){ .input = 1000, .output = 100 }), 7500000);
	CHECK_INT(cost_of(&p, (struct kv_usage){ .input = 1000, .output = 100, .fast = 1 }),
	    45000000);
	CHECK_INT(cost_of(&p, (struct kv_usage){ .input = 1000, .output = 100, .geo_us = 1 }),
	    8250000);
	CHECK_INT(cost_of(&p, (struct kv_usage){ .input = 1000, .output = 100, .fast = 1,
	    .geo_us = 1 }), 49500000);
	CHECK_INT(cost_of(&p, (struct kv_usage){ .input = 1000, .output = 100,
	    .region = KV_REGION_EU }), 8250000);
	/* a multiplier the price lacks is 1 (admission refuses asking for it) */
	CHECK_INT(cost_of(&p, (struct kv_usage){ .input = 1000, .output = 100,
	    .region = KV_REGION_US }), 7500000);
	/* rounded up once, after the multiplier: 3 nUSD per 1M x 1.1 -> 1 */
	tiny.geo_us_mult = nano("1.1");
	CHECK_INT(cost_of(&tiny, (struct kv_usage){ .input = 1, .geo_us = 1 }), 1);
	/* fees are not multiplied: 2 searches at $0.01 */
	p.web_search_call = nano("0.01");
	CHECK_INT(cost_of(&p, (struct kv_usage){ .input = 1000, .output = 100, .fast = 1,
	    .web_search = 2 }), 45000000 + 20000000);
}

int
main(void)
{
	test_cost_multipliers();
	test_cost_fees();
	test_charge_price();
	test_parse_good();
	test_parse_bad();
	test_cost_vectors();
	test_cost_overflow();
	test_cost_tiers();
	test_cost_catalogue();
	test_format();
	return unit_done();
}

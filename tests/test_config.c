/* Unit tests of the config loader: the bundled file, every error message
 * with its line, environment overrides, env: values, routing and prices. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/config_units.h"
#include "common/glob.h"
#include "common/pricetab.h"
#include "tests/unit.h"

static char tmpdir[] = "/tmp/kv-test-config.XXXXXX";
static char tmpfile_path[512];
static char err[1024];

/* Write TEXT to the temp file; its path is tmpfile_path. */
static const char *
write_cfg(const char *text)
{
	FILE *f;

	snprintf(tmpfile_path, sizeof(tmpfile_path), "%s/kv.ini", tmpdir);
	f = fopen(tmpfile_path, "w");
	if (f == NULL || fputs(text, f) == EOF || fclose(f) == EOF) {
		perror(tmpfile_path);
		exit(1);
	}
	return tmpfile_path;
}

/* Load TEXT; returns the loader's result, message in err. */
static int
load_text(struct kv_config *cf, const char *text)
{
	err[0] = '\0';
	return kv_config_load(cf, write_cfg(text), err, sizeof(err));
}

/* Load TEXT, expect failure with "FILE:" + WANT (WANT starts with the line). */
static void
expect_err(const char *text, const char *want, int line)
{
	struct kv_config cf;
	char full[1024];
	int r = load_text(&cf, text);

	if (want[0] == ':')
		snprintf(full, sizeof(full), "%s%s", tmpfile_path, want);
	else
		snprintf(full, sizeof(full), "%s", want);
	CHECK_INT(r, -1);
	if (strcmp(err, full) != 0)
		fprintf(stderr, "  (from test at line %d)\n", line);
	CHECK_STR(err, full);
	if (r == 0)
		kv_config_free(&cf);
}
#define EXPECT_ERR(text, want) expect_err(text, want, __LINE__)

#define UP "[upstream o]\nurl = https://api.openai.com\npaths = /v1/chat/completions\n"

static void
unset_env(void)
{
	unsetenv("KILOVOLT_PORT");
	unsetenv("KILOVOLT_WORKERS");
	unsetenv("KILOVOLT_LEDGER");
	unsetenv("KILOVOLT_DEFAULT_BUDGET");
	unsetenv("KILOVOLT_ADMIN_TOKEN");
	unsetenv("KV_TEST_SECRET");
}

static void check_bundled_prices(const struct kv_config *cf);
static void check_bundled_providers(const struct kv_config *cf);

static void
test_bundled(void)
{
	struct kv_config cf;
	const char *top = getenv("top_srcdir");
	char path[4096];
	const struct kv_upstream *u;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char want_ledger[4200];

	snprintf(path, sizeof(path), "%s/kilovolt.ini", top ? top : ".");
	CHECK_INT(kv_config_load(&cf, path, err, sizeof(err)), 0);
	if (err[0] != '\0' && cf.nupstreams == 0) {
		fprintf(stderr, "bundled: %s\n", err);
		return;
	}
	CHECK_STR(cf.listen_host, "0.0.0.0");
	CHECK_STR(cf.listen_port, "8080");
	CHECK_STR(cf.status_host, "127.0.0.1");
	CHECK_STR(cf.status_port, "9090");
	/* Relative to the config file's directory (issue 24). */
	snprintf(want_ledger, sizeof(want_ledger), "%s/var/ledger", top ? top : ".");
	CHECK_STR(cf.ledger, want_ledger);
	CHECK_INT(cf.workers, cpus > 32 ? 32 : cpus);
	CHECK_INT(cf.max_keys, 4096);
	CHECK_INT(cf.client_timeout, 60);
	CHECK_INT(cf.upstream_timeout, 600);
	CHECK_INT(cf.shutdown_timeout, 30);
	CHECK_INT(cf.max_connections, 4096);
	CHECK_INT(cf.max_body, 64 << 20);
	CHECK_INT(cf.spool_max, 1 << 30);
	CHECK_INT(cf.memory_limit, -1);
	CHECK_INT(cf.memory_refuse_pct, 95);
	CHECK_STR(cf.spool_dir, "");
	CHECK(cf.admin_token == NULL);
	CHECK_INT(cf.default_budget_nusd, 2000000000);
	CHECK_INT(cf.period, KV_PERIOD_NONE);
	CHECK_INT(cf.unknown_keys_deny, 0);
	CHECK_INT(cf.reserve_output_tokens, 1024);
	CHECK_INT(cf.nupstreams, 3);
	/* the 60 sections (overrides: globs, models the catalogue lacks or
	 * prices otherwise), and the shipped catalogue's 2,355 entries (every
	 * provider's) less those a section of the same name replaces */
	CHECK_INT(cf.nprices_ini, 60);
	CHECK_INT(cf.nprices_file, 2355);
	CHECK_INT(cf.nprices_overridden, 22);
	CHECK_INT(cf.nprices, cf.nprices_ini + cf.nprices_file - cf.nprices_overridden);
	CHECK(kv_price_lookup(&cf, "claude-opus-4-6", NULL, NULL) != NULL &&
	    kv_price_lookup(&cf, "claude-opus-4-6", NULL, NULL)->input == 5000000000);
	/* the sections the catalogue agreed with are gone: it prices them, the same */
	{
		static const struct { const char *m; int64_t in, out; } byfile[] = {
			{ "gpt-5-chat-latest", 1250000000, 10000000000 },
			{ "gpt-5.1-chat-latest", 1250000000, 10000000000 },
			{ "o1", 15000000000, 60000000000 },
			{ "o1-pro", 150000000000, 600000000000 },
			{ "o3-mini", 1100000000, 4400000000 },
			{ "codex-mini-latest", 1500000000, 6000000000 },
			{ "gpt-4", 30000000000, 60000000000 },
			{ "gpt-4-0613", 30000000000, 60000000000 },
			{ "text-embedding-3-small", 20000000, 0 },
			{ "text-embedding-3-large", 130000000, 0 },
			{ "text-embedding-ada-002", 100000000, 0 },
		};
		const struct kv_price *bp;
		enum kv_price_rule br;
		size_t bi;

		for (bi = 0; bi < sizeof(byfile) / sizeof(byfile[0]); bi++) {
			bp = kv_price_lookup(&cf, byfile[bi].m, &br, NULL);
			CHECK(bp != NULL && br == KV_RULE_FILE);
			CHECK(bp != NULL && bp->input == byfile[bi].in && bp->output == byfile[bi].out);
		}
	}
	CHECK_INT(cf.has_default_price, 1);
	CHECK_INT(cf.unknown_models_deny, 1);
	CHECK_INT(cf.default_price.input, 150000000000);
	CHECK_INT(cf.default_price.output, 600000000000);
	check_bundled_prices(&cf);
	CHECK_INT(cf.nkeys, 0);

	u = kv_config_route(&cf, "/v1/chat/completions", "gpt-4o");
	CHECK(u != NULL && strcmp(u->name, "openai") == 0);
	CHECK(u != NULL && u->tls == 1 && strcmp(u->port, "443") == 0);
	CHECK(u != NULL && strcmp(u->host_header, "api.openai.com") == 0);
	CHECK(u != NULL && u->npaths == 5 && u->api_key == NULL);
	u = kv_config_route(&cf, "/v1/messages", "claude-sonnet-4-5");
	CHECK(u != NULL && strcmp(u->name, "anthropic") == 0);
	u = kv_config_route(&cf, "/v1/chat/completions", "qwen2.5-7b");
	CHECK(u != NULL && strcmp(u->name, "local") == 0);
	CHECK(u != NULL && u->tls == 0 && strcmp(u->host_header, "127.0.0.1:8000") == 0);
	CHECK(u != NULL && u->nmodels == 3);

	CHECK_INT(kv_config_price(&cf, "gpt-4o-mini")->cached_input, 75000000);
	/* the dated names the provider echoes price like the model asked for */
	CHECK_INT(kv_config_price(&cf, "gpt-4o-mini-2024-07-18")->input, 150000000);
	CHECK_INT(kv_config_price(&cf, "gpt-4o-2024-08-06")->input, 2500000000);
	CHECK_INT(kv_config_price(&cf, "o3-mini-2025-01-31")->output, 4400000000);
	CHECK_INT(kv_config_price(&cf, "o3-2025-04-16")->output, 8000000000);
	CHECK_INT(kv_config_price(&cf, "claude-sonnet-4-20250514")->cache_write, 3750000000);
	CHECK_INT(kv_config_price(&cf, "claude-opus-4-1")->output, 75000000000);
	CHECK_INT(kv_config_price(&cf, "text-embedding-3-small")->input, 20000000);
	CHECK_INT(kv_config_price(&cf, "text-embedding-3-small")->output, 0);
	CHECK_INT(kv_config_price(&cf, "text-embedding-3-small")->cached_input, -1);
	/* unknown_models = deny: no price, so the request is refused */
	CHECK(kv_config_price(&cf, "some-other-model") == NULL);
	/* ... but the catalogue prices what the sections lacked: a search
	 * model at $2.50 / $10 and $0.035 a search (the medium context size) */
	CHECK(kv_config_price(&cf, "gpt-4o-search-preview") != NULL &&
	    kv_config_price(&cf, "gpt-4o-search-preview")->input == 2500000000 &&
	    kv_config_price(&cf, "gpt-4o-search-preview")->web_search_call == 35000000);
	/* -pro, -deep-research and dated variants at their own prices */
	CHECK_INT(kv_config_price(&cf, "o1-pro")->output, 600000000000);
	CHECK_INT(kv_config_price(&cf, "o3-pro-2025-06-10")->input, 20000000000);
	CHECK_INT(kv_config_price(&cf, "gpt-5-pro")->output, 120000000000);
	CHECK_INT(kv_config_price(&cf, "gpt-5-2025-08-07")->input, 1250000000);
	CHECK_INT(kv_config_price(&cf, "o3-deep-research")->input, 10000000000);
	CHECK_INT(kv_config_price(&cf, "o4-mini-deep-research-2025-06-26")->output, 8000000000);
	CHECK_INT(kv_config_price(&cf, "gpt-4o-2024-05-13")->input, 5000000000);
	CHECK_INT(kv_config_price(&cf, "claude-opus-4-5-20251101")->input, 5000000000);
	/* the tiers */
	CHECK_INT(kv_config_price(&cf, "gpt-5")->priority_output, 20000000000);
	/* [price gpt-5] sets only the web_search fee ($10 per 1,000): the rest
	 * is the file's entry, its input bound (272,000, not the old 400,000
	 * context_window) and max output; gpt-5-pro's max output 128,000 */
	CHECK_INT(kv_config_price(&cf, "gpt-5")->src, KV_PRICE_OVERRIDE);
	CHECK_INT(kv_config_price(&cf, "gpt-5")->web_search_call, 10000000);
	CHECK_INT(kv_config_price(&cf, "gpt-5")->input, 1250000000);
	CHECK_INT(kv_config_price(&cf, "gpt-5")->cached_input, 125000000);
	CHECK_INT(kv_config_price(&cf, "gpt-5")->context_window, 272000);
	CHECK_INT(kv_config_price(&cf, "gpt-5")->max_output, 128000);
	CHECK_INT(kv_config_price(&cf, "gpt-5-mini")->context_window, 272000);
	CHECK_INT(kv_config_price(&cf, "gpt-5.1")->context_window, 272000);
	CHECK_INT(kv_config_price(&cf, "gpt-5.1")->flex_output, 5000000000);
	CHECK_INT(kv_config_price(&cf, "gpt-5-pro")->max_output, 128000);
	CHECK_INT(kv_config_price(&cf, "gpt-4o")->web_search_call, 25000000);
	/* a glob stands alone: gpt-5-20* keeps its own figures */
	CHECK_INT(kv_config_price(&cf, "gpt-5-2099-01-01")->src, KV_PRICE_INI);
	CHECK_INT(kv_config_price(&cf, "gpt-5-2099-01-01")->max_input, -1);
	CHECK_INT(kv_config_price(&cf, "claude-sonnet-4-5-20250929")->long_context_threshold, 200000);
	CHECK_INT(kv_config_price(&cf, "claude-haiku-4-5")->cache_write_1h, 2000000000);
	check_bundled_providers(&cf);
	kv_config_free(&cf);
}

/* The input and output prices kv_price_find_in gives MODEL for PROVIDER
 * in REGION (NULL: none), and the name of the entry that gave them. */
static void
check_for(const struct kv_config *cf, int provider, const char *region, const char *model,
    const char *entry, int64_t in, int64_t out)
{
	const struct kv_price *p = kv_price_find_in(cf, provider, region, model, NULL, NULL);

	if (p == NULL) {
		fprintf(stderr, "%s (provider %d): no price\n", model, provider);
		CHECK(0);
		return;
	}
	CHECK_STR(p->model, entry);
	CHECK_INT(p->input, in);
	CHECK_INT(p->output, out);
}

/* Issue 35: one model name, each provider's own price, by LiteLLM's
 * prefix rules, exactly as the shipped JSON has them (USD per token x
 * 10^15: 3.3e-06 is 3,300,000,000 nano-USD per 1M tokens). */
static void
check_bundled_providers(const struct kv_config *cf)
{
	/* a Bedrock id, a us. inference profile (10% over the id), a global.
	 * one, and an ARN of one, at Bedrock's prices */
	check_for(cf, KV_PROVIDER_BEDROCK, NULL, "anthropic.claude-sonnet-4-20250514-v1:0",
	    "anthropic.claude-sonnet-4-20250514-v1:0", 3000000000, 15000000000);
	check_for(cf, KV_PROVIDER_BEDROCK, "us-east-1",
	    "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
	    "us.anthropic.claude-sonnet-4-5-20250929-v1:0", 3300000000, 16500000000);
	check_for(cf, KV_PROVIDER_BEDROCK, NULL, "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
	    "global.anthropic.claude-sonnet-4-5-20250929-v1:0", 3000000000, 15000000000);
	check_for(cf, KV_PROVIDER_BEDROCK, NULL, "arn:aws:bedrock:us-east-1:123456789012:"
	    "inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
	    "us.anthropic.claude-sonnet-4-5-20250929-v1:0", 3300000000, 16500000000);
	/* a region's own entry (bedrock/REGION/ID) before the id's */
	check_for(cf, KV_PROVIDER_BEDROCK, "eu-central-1", "anthropic.claude-instant-v1",
	    "bedrock/eu-central-1/anthropic.claude-instant-v1", 2480000000, 8380000000);
	check_for(cf, KV_PROVIDER_BEDROCK, "us-east-1", "anthropic.claude-instant-v1",
	    "bedrock/us-east-1/anthropic.claude-instant-v1", 800000000, 2400000000);
	check_for(cf, KV_PROVIDER_BEDROCK, "ca-central-1", "anthropic.claude-instant-v1",
	    "anthropic.claude-instant-v1", 800000000, 2400000000);
	/* Vertex and Azure by their prefixes; Gemini's API against Vertex's
	 * bare name */
	check_for(cf, KV_PROVIDER_VERTEX, NULL, "claude-sonnet-4-5@20250929",
	    "vertex_ai/claude-sonnet-4-5@20250929", 3000000000, 15000000000);
	check_for(cf, KV_PROVIDER_AZURE, NULL, "gpt-4o", "azure/gpt-4o", 2500000000,
	    10000000000);
	check_for(cf, KV_PROVIDER_GEMINI, NULL, "gemini-2.5-pro", "gemini/gemini-2.5-pro",
	    1250000000, 10000000000);
	check_for(cf, KV_PROVIDER_VERTEX, NULL, "gemini-2.5-pro", "gemini-2.5-pro", 1250000000,
	    10000000000);
	/* the Anthropic API's name stays the Anthropic API's price, with or
	 * without a provider kind */
	check_for(cf, KV_PROVIDER_ANTHROPIC, NULL, "claude-sonnet-4-5", "claude-sonnet-4-5",
	    3000000000, 15000000000);
	check_for(cf, KV_PROVIDER_AUTO, NULL, "claude-sonnet-4-5", "claude-sonnet-4-5",
	    3000000000, 15000000000);
	/* a Bedrock id is not priced for the Anthropic API nor without a
	 * kind (unknown_models = deny: refused), nor an Anthropic name for Bedrock */
	CHECK(kv_price_find_for(cf, KV_PROVIDER_ANTHROPIC,
	    "us.anthropic.claude-sonnet-4-5-20250929-v1:0") == NULL);
	CHECK(kv_price_find_for(cf, KV_PROVIDER_AUTO,
	    "anthropic.claude-sonnet-4-20250514-v1:0") == NULL);
	{
		enum kv_price_rule rule;

		/* the [price] globs are the operator's, for every provider */
		CHECK(kv_price_find_in(cf, KV_PROVIDER_BEDROCK, NULL, "claude-sonnet-4-5-20250929",
		    &rule, NULL) != NULL && rule == KV_RULE_GLOB);
	}
	/* Azure's bare computer-use-preview is not OpenAI's: the glob prices it */
	CHECK(kv_price_find_for(cf, KV_PROVIDER_AUTO, "computer-use-preview") ==
	    kv_price_find_for(cf, KV_PROVIDER_AUTO, "computer-use-preview-2099"));
	/* a name that carries its provider prices without a kind */
	check_for(cf, KV_PROVIDER_AUTO, NULL, "azure/gpt-4o", "azure/gpt-4o", 2500000000,
	    10000000000);
}

/* Every section of the bundled table is whole: max_output (but for
 * embeddings) and context_window (a catalogue entry may lack them: tts
 * models), and [price default] at least the dearest price in the table, so
 * unknown_models = default never undercharges. */
static void
check_bundled_prices(const struct kv_config *cf)
{
	const struct kv_price *p, *d = &cf->default_price;
	size_t i;

	for (i = 0; i < cf->nprices; i++) {
		p = &cf->prices[i];
		/* the default stands for what a provider kind or a bare name
		 * would price: LiteLLM lists wandb's prices per 1M tokens as
		 * per token ($135,000 per 1M), and others of no kind as dear */
		if (p->src == KV_PRICE_FILE && !p->bare && p->kind == KV_PROVIDER_AUTO)
			continue;
		if (p->output > 0 && p->src == KV_PRICE_INI)
			CHECK(p->max_output > 0);
		if (p->src == KV_PRICE_INI)
			CHECK(p->context_window > 0);
		CHECK(d->input >= p->input && d->input >= p->cached_input &&
		    d->input >= p->cache_write && d->input >= p->cache_write_1h &&
		    d->input >= p->priority_input && d->input >= p->flex_input &&
		    d->input >= p->long_context_input);
		CHECK(d->output >= p->output && d->output >= p->priority_output &&
		    d->output >= p->flex_output && d->output >= p->long_context_output);
		if (p->max_output <= 0 && p->output > 0 && p->src == KV_PRICE_INI)
			fprintf(stderr, "bundled: [price %s] has no max_output\n", p->model);
	}
}

static void
test_errors(void)
{
	EXPECT_ERR("[server]\nlisten = 1\n[bogus]\n", ":3: unknown section [bogus]");
	EXPECT_ERR("[server x]\n", ":1: unknown section [server x]");
	EXPECT_ERR("[upstream]\n", ":1: unknown section [upstream]");
	EXPECT_ERR("; c\n\n[server]\nlisten = 8080\n  bogus = 1 ; c\n",
	    ":5: unknown key 'bogus' in [server]");
	EXPECT_ERR(UP "api_keys = x\n", ":4: unknown key 'api_keys' in [upstream o]");
	EXPECT_ERR("[server]\nworkers = lots\n", ":2: workers: 'lots' is not a number");
	EXPECT_ERR("[server]\nworkers = 0\n", ":2: workers: 0 is out of range (1..32)");
	EXPECT_ERR("[server]\nclient_timeout = -5\n",
	    ":2: client_timeout: '-5' is not a number of seconds or a duration "
	    "(10s, 500ms, 2m, 1h)");
	EXPECT_ERR("[server]\nmax_keys = 4096x\n", ":2: max_keys: '4096x' is not a number");
	EXPECT_ERR("[server]\nmax_body = 1q\n",
	    ":2: max_body: '1q' is not a size (bytes with an optional k, m or g)");
	EXPECT_ERR("[server]\nlisten = ::1:80\n",
	    ":2: listen: bad address '::1:80' (want HOST:PORT, [IPV6]:PORT or PORT)");
	EXPECT_ERR("[server]\nlisten = 0.0.0.0:70000\n",
	    ":2: listen: bad address '0.0.0.0:70000' (want HOST:PORT, [IPV6]:PORT or PORT)");
	EXPECT_ERR("\n[upstream a]\nurl = ftp://x\n",
	    ":3: url: bad URL 'ftp://x' (want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR("[upstream a]\nurl = https://\n",
	    ":2: url: bad URL 'https://' (want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR("[upstream a]\nurl = http://h:0/\n",
	    ":2: url: bad URL 'http://h:0/' (want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR("[upstream a]\nurl = http://u@h/\n",
	    ":2: url: bad URL 'http://u@h/' (want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR("[upstream a]\nurl = http://[::1/\n",
	    ":2: url: bad URL 'http://[::1/' (want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR("[upstream a]\nurl = http://h\npaths = v1/chat\n",
	    ":3: paths: bad entry 'v1/chat'");
	EXPECT_ERR("[upstream a]\nurl = http://h\nmodels = a*b\n",
	    ":3: models: bad entry 'a*b'");
	EXPECT_ERR("[budget]\nperiod = yearly\n",
	    ":2: period: 'yearly' is not none, daily, weekly or monthly");
	EXPECT_ERR("[budget]\nunknown_keys = maybe\n",
	    ":2: unknown_keys: 'maybe' is not allow or deny");
	EXPECT_ERR("[budget]\ndefault = 2,00\n", ":2: default: '2,00' is not a decimal amount");
	EXPECT_ERR(UP "[price x]\ninput = 1.0\noutput = abc\n",
	    ":6: output: 'abc' is not a decimal amount");
	EXPECT_ERR(UP "[price x]\ninput = -1\n", ":5: input: '-1' is not a decimal amount");
	EXPECT_ERR(UP "[price x]\ninput = 1\nmax_output = 0\n",
	    ":6: max_output: 0 is out of range (1..100000000)");
	EXPECT_ERR(UP "[price x]\ninput = 1\ncontext_window = 1.5\n",
	    ":6: context_window: '1.5' is not a number");
	/* prices fail closed */
	EXPECT_ERR(UP "[price x]\ninput = 1\n", ":4: [price x]: output is required "
	    "(write output = 0 for a model that bills no output, such as embeddings)");
	EXPECT_ERR(UP "[price x]\ninput = 1\noutput = 2\nlong_context_threshold = 200000\n",
	    ":4: [price x]: long_context_threshold, long_context_input and "
	    "long_context_output go together");
	EXPECT_ERR(UP "[price x]\ninput = 1\noutput = 2\nlong_context_input = 2\n"
	    "long_context_output = 3\n", ":4: [price x]: long_context_threshold, "
	    "long_context_input and long_context_output go together");
	EXPECT_ERR(UP "[price x]\ninput = 1\noutput = 2\npriority_input = 2\n",
	    ":4: [price x]: priority_input and priority_output go together");
	EXPECT_ERR(UP "[price x]\ninput = 1\noutput = 2\nflex_output = 2\n",
	    ":4: [price x]: flex_input and flex_output go together");
	EXPECT_ERR(UP "[price x]\ninput = 1\noutput = 2\ncache_write_1h = x\n",
	    ":7: cache_write_1h: 'x' is not a decimal amount");
	EXPECT_ERR("[budget]\nunknown_models = maybe\n",
	    ":2: unknown_models: 'maybe' is not default or deny");
	EXPECT_ERR("[server]\nspool_max = 0\n",
	    ":2: spool_max: '0' is not a size above 0 (bytes with an optional k, m or g)");
	EXPECT_ERR("[server]\nmemory_limit = 512k\n",
	    ":2: memory_limit: '512k' is not auto, off or a size of at least 1m "
	    "(bytes with an optional k, m or g)");
	EXPECT_ERR("[server]\nmemory_refuse = 95\n",
	    ":2: memory_refuse: '95' is not a percentage (50%..99%)");
	EXPECT_ERR("[server]\nmemory_refuse = 100%\n",
	    ":2: memory_refuse: 100 is out of range (50..99)");
	EXPECT_ERR("[server]\nadmin_token = x\n[upstream a]\napi_key = env:KV_TEST_SECRET\n",
	    ":4: api_key: environment variable KV_TEST_SECRET is not set");
	EXPECT_ERR("[server]\nledger = env:1BAD\n",
	    ":2: ledger: bad environment variable name '1BAD'");
	EXPECT_ERR(UP "[upstream o]\n", ":4: duplicate section [upstream o]");
	EXPECT_ERR(UP "[price a]\ninput=1\noutput=0\n[price a]\n", ":7: duplicate section [price a]");
	EXPECT_ERR(UP "[price default]\ninput=1\noutput=1\n[price default]\n",
	    ":7: duplicate section [price default]");
	EXPECT_ERR("[server]\n[budget]\n[server]\n", ":3: duplicate section [server]");
	EXPECT_ERR(UP "[key a]\nkey = k1\n[key a]\n", ":6: duplicate section [key a]");
	EXPECT_ERR(UP "[key a]\nkey = k1\n[key b]\nkey = k1\n", ":6: [key b]: same key as [key a]");
	EXPECT_ERR("[server]\nlisten = 8080\n", ": no [upstream NAME] section");
	EXPECT_ERR("", ": no [upstream NAME] section");
	EXPECT_ERR("[upstream a]\npaths = /x\n[server]\n", ":1: [upstream a]: url is required");
	EXPECT_ERR("[upstream a]\nurl = http://h\n", ":1: [upstream a]: needs paths or models "
	    "(or to be another upstream's fallback)");
	EXPECT_ERR(UP "fallback = nope\n", ": [upstream o] fallback: no other upstream named 'nope'");
	EXPECT_ERR("[upstream o]\nurl = http://a ftp://b\n", ":2: url: bad URL 'ftp://b' "
	    "(want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR(UP "model_map = a=b c\n", ":4: model_map: bad entry 'c'");
	EXPECT_ERR(UP "[price a]\noutput = 1\n", ":4: [price a]: input is required");
	EXPECT_ERR(UP "[key a]\nbudget = 1\n", ":4: [key a]: key is required");
	EXPECT_ERR(UP "[key a]\nkey = sha256:abc\n", ":5: key: sha256: needs 64 hex digits");
	EXPECT_ERR("[server]\nlisten = 1\nlisten = 2\n", ":3: 'listen' is set twice in [server]");
	EXPECT_ERR("listen = 1\n", ":1: 'listen' is outside any section");
	EXPECT_ERR("[server]\njunk\n", ":2: syntax error (want NAME = VALUE or [SECTION])");
	EXPECT_ERR("[server\n", ":1: bad section header (want [NAME])");
	EXPECT_ERR(UP "[upstream b]\nurl = http://h\nca_file = /nonexistent/ca.pem\n",
	    ":6: ca_file: /nonexistent/ca.pem: No such file or directory");
	EXPECT_ERR(UP "[upstream b]\nurl = https://h\ntls_record_layer = quic\n",
	    ":6: tls_record_layer: 'quic' is not own, openssl or kernel");
	EXPECT_ERR("[key abcdefghijabcdefghijabcdefghijabcdefghijabcdefgh]\n",
	    ":1: bad key name 'abcdefghijabcdefghijabcdefghijabcdefghijabcdefgh': "
	    "1 to 47 bytes");
	/* Issue 33: names share kvctl's and the admin API's arguments with key
	 * ids, and the admin API's paths. */
	EXPECT_ERR("[key bd2268f58cb6]\n", ":1: bad key name 'bd2268f58cb6': it reads "
	    "as a key id (6 or more hex digits and nothing else): add a letter past "
	    "f, or a '-'");
	EXPECT_ERR("[key Ab12Cd]\n", ":1: bad key name 'Ab12Cd': it reads as a key id "
	    "(6 or more hex digits and nothing else): add a letter past f, or a '-'");
	EXPECT_ERR("[key a+b]\n", ":1: bad key name 'a+b': use letters, digits and "
	    "-_.@:/ only (no spaces, quotes, % or control bytes)");
	EXPECT_ERR("[key team/]\n", ":1: bad key name 'team/': not '.' or '..', and a "
	    "'/' only between two parts of the name, none of them empty, '.' or '..'");
	EXPECT_ERR("[key a/../b]\n", ":1: bad key name 'a/../b': not '.' or '..', and "
	    "a '/' only between two parts of the name, none of them empty, '.' or "
	    "'..'");
}

static void
test_error_edges(void)
{
	struct kv_config cf;
	char text[600];

	/* Over-long lines are refused rather than split into two "lines". */
	snprintf(text, sizeof(text), "[server]\n\nledger = /%0300d\n", 0);
	EXPECT_ERR(text, ":3: line too long (at most 198 bytes without comments)");
	/* ...but a long comment does not count. */
	snprintf(text, sizeof(text), UP "[server]\nledger = /x ; %0300d\nworkers = x\n", 0);
	EXPECT_ERR(text, ":6: workers: 'x' is not a number");
	/* A NUL byte can not hide the rest of a line. */
	{
		FILE *f;
		write_cfg("");
		f = fopen(tmpfile_path, "w");
		CHECK(f != NULL);
		if (f != NULL) {
			fwrite("[server]\nlisten = 1\0junk\n", 1, 25, f);
			fclose(f);
		}
		CHECK_INT(kv_config_load(&cf, tmpfile_path, err, sizeof(err)), -1);
		CHECK(strstr(err, ":2: NUL byte in line") != NULL);
	}
	CHECK_INT(kv_config_load(&cf, "/nonexistent/kv.ini", err, sizeof(err)), -1);
	CHECK_STR(err, "/nonexistent/kv.ini: No such file or directory");
	/* A truncated message is still terminated. */
	{
		char small[12];
		CHECK_INT(kv_config_load(&cf, "/nonexistent/kv.ini", small, sizeof(small)), -1);
		CHECK_STR(small, "/nonexisten");
	}
	/* The loader leaves nothing to free, and nothing of the failed file. */
	CHECK_INT(load_text(&cf, UP "[server]\nadmin_token = tok\nlisten = x:y\n"), -1);
	CHECK(cf.admin_token == NULL && cf.upstreams == NULL && cf.nupstreams == 0);
}

/* Secrets never appear in a message. */
static void
test_secrets(void)
{
	struct kv_config cf;

	CHECK_INT(load_text(&cf, "[upstream a]\nurl = http://h\npaths = /\napi_key =\n"), -1);
	CHECK(strstr(err, ":4: api_key: empty value") != NULL);
	CHECK_INT(load_text(&cf, UP "[key a]\nkey = sha256:zzzzSECRET\n"), -1);
	CHECK(strstr(err, "SECRET") == NULL);
	CHECK_INT(load_text(&cf, UP "[key a]\nkey = k\napi_key = SECRET\n"), -1);
	CHECK(strstr(err, "SECRET") == NULL);
	CHECK(strstr(err, ":6: unknown key 'api_key' in [key a]") != NULL);
	/* "NAME: VALUE" is not accepted: the name would carry the secret. */
	CHECK_INT(load_text(&cf, UP "api_key sk-SECRET:x\n"), -1);
	CHECK(strstr(err, "SECRET") == NULL);
	CHECK(strstr(err, ":4: syntax error") != NULL);
	CHECK_INT(load_text(&cf, UP "api_key: sk-SECRET\n"), -1);
	CHECK(strstr(err, ":4: syntax error") != NULL);
}

static void
test_values(void)
{
	struct kv_config cf;
	static const uint8_t h_abc[4] = { 0xba, 0x78, 0x16, 0xbf };	/* sha256("abc") */

	CHECK_INT(load_text(&cf, UP
	    "[server]\nlisten = [::1]:8443\nworkers = 3\nstatus_listen = off\n"
	    "max_body = 16m\nuser = kilovolt\nshutdown_timeout = 0\n"
	    "spool_dir = /tmp/sp\nspool_max = 2m\nmemory_limit = 30m\nmemory_refuse = 90%\n"
	    "[price m1]\ninput = 1\noutput = 2\nmax_output = 32000\ncontext_window = 200000\n"
	    "[budget]\nperiod = monthly\nunknown_keys = deny\ndefault = 0.5\n"
	    "[key alice]\nkey = abc\nbudget = 25.00\n"
	    "[key bob]\nkey = sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\n"), 0);
	if (err[0] != '\0')
		fprintf(stderr, "values: %s\n", err);
	CHECK_STR(cf.listen_host, "::1");
	CHECK_STR(cf.listen_port, "8443");
	CHECK_INT(cf.workers, 3);
	CHECK_STR(cf.status_host, "");
	CHECK_INT(cf.max_body, 16 << 20);
	CHECK_STR(cf.spool_dir, "/tmp/sp");
	CHECK_INT(cf.spool_max, 2 << 20);
	CHECK_INT(cf.memory_limit, 30 << 20);
	CHECK_INT(cf.memory_refuse_pct, 90);
	CHECK_INT(kv_config_price(&cf, "m1")->max_output, 32000);
	CHECK_INT(kv_config_price(&cf, "m1")->context_window, 200000);
	CHECK_STR(cf.user, "kilovolt");
	CHECK_INT(cf.shutdown_timeout, 0);
	CHECK_INT(cf.period, KV_PERIOD_MONTHLY);
	CHECK_INT(cf.unknown_keys_deny, 1);
	CHECK_INT(cf.default_budget_nusd, 500000000);
	CHECK_INT(cf.nkeys, 2);
	if (cf.nkeys == 2) {
		CHECK(memcmp(cf.keys[0].hash, h_abc, 4) == 0);
		CHECK(cf.keys[1].hash[0] == 0xe3 && cf.keys[1].hash[31] == 0x55);
		CHECK_INT(cf.keys[0].budget_nusd, 25000000000);
		CHECK_INT(cf.keys[1].budget_nusd, -1);
		CHECK_STR(cf.keys[1].label, "bob");
	}
	kv_config_free(&cf);
	kv_config_free(&cf);	/* idempotent */

	CHECK_INT(load_text(&cf, UP "[server]\nlisten = 9000\nstatus_listen =\n"), 0);
	CHECK_STR(cf.listen_host, "0.0.0.0");
	CHECK_STR(cf.listen_port, "9000");
	CHECK_STR(cf.status_port, "");
	kv_config_free(&cf);
}

/* Two [key] sections hashing the same raw key collide (checked above); here
 * a sha256: form of the same key collides with the raw one. */
static void
test_key_forms(void)
{
	EXPECT_ERR(UP "[key a]\nkey = abc\n[key b]\n"
	    "key = sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
	    ":6: [key b]: same key as [key a]");
}

static void
test_urls(void)
{
	struct kv_config cf;
	const struct kv_upstream *u;

	CHECK_INT(load_text(&cf,
	    "[upstream a]\nurl = https://api.example.com/\npaths = /a\n"
	    "[upstream b]\nurl = http://example.com:8080/base/v1//\npaths = /b\n"
	    "[upstream c]\nurl = https://[2001:db8::1]:8443\npaths = /c\n"
	    "[upstream d]\nurl = http://[::1]\npaths = /d\n"
	    "[upstream e]\nurl = https://h:443/x\npaths = /e\n"), 0);
	if (cf.nupstreams != 5) {
		fprintf(stderr, "urls: %s\n", err);
		CHECK(0);
		return;
	}
	u = &cf.upstreams[0];
	CHECK_INT(u->tls, 1);
	CHECK_STR(u->host, "api.example.com");
	CHECK_STR(u->port, "443");
	CHECK_STR(u->host_header, "api.example.com");
	CHECK_STR(u->base_path, "");
	CHECK_STR(u->url, "https://api.example.com/");
	u = &cf.upstreams[1];
	CHECK_INT(u->tls, 0);
	CHECK_STR(u->host, "example.com");
	CHECK_STR(u->port, "8080");
	CHECK_STR(u->host_header, "example.com:8080");
	CHECK_STR(u->base_path, "/base/v1");
	u = &cf.upstreams[2];
	CHECK_STR(u->host, "2001:db8::1");
	CHECK_STR(u->port, "8443");
	CHECK_STR(u->host_header, "[2001:db8::1]:8443");
	u = &cf.upstreams[3];
	CHECK_STR(u->host, "::1");
	CHECK_STR(u->port, "80");
	CHECK_STR(u->host_header, "[::1]");
	u = &cf.upstreams[4];
	CHECK_STR(u->port, "443");
	CHECK_STR(u->host_header, "h");
	CHECK_STR(u->base_path, "/x");
	kv_config_free(&cf);
}

static void
test_env(void)
{
	struct kv_config cf;
	const char *text = UP "[server]\nlisten = 127.0.0.1:8080\nadmin_token = env:KILOVOLT_ADMIN_TOKEN\n"
	    "[upstream x]\nurl = http://h\nmodels = m\napi_key = env:KV_TEST_SECRET\n";

	setenv("KV_TEST_SECRET", "sk-test", 1);
	CHECK_INT(load_text(&cf, text), 0);
	CHECK(cf.admin_token == NULL);
	CHECK(cf.nupstreams == 2 && cf.upstreams[1].api_key != NULL &&
	    strcmp(cf.upstreams[1].api_key, "sk-test") == 0);
	kv_config_free(&cf);

	setenv("KILOVOLT_ADMIN_TOKEN", "adm", 1);
	setenv("KILOVOLT_PORT", "9999", 1);
	setenv("KILOVOLT_WORKERS", "7", 1);
	setenv("KILOVOLT_LEDGER", "/tmp/l", 1);
	setenv("KILOVOLT_DEFAULT_BUDGET", "0.25", 1);
	CHECK_INT(load_text(&cf, text), 0);
	CHECK(cf.admin_token != NULL && strcmp(cf.admin_token, "adm") == 0);
	CHECK_STR(cf.listen_host, "127.0.0.1");
	CHECK_STR(cf.listen_port, "9999");
	CHECK_INT(cf.workers, 7);
	CHECK_STR(cf.ledger, "/tmp/l");
	CHECK_INT(cf.default_budget_nusd, 250000000);
	kv_config_free(&cf);

	/* The environment wins over the file. */
	CHECK_INT(load_text(&cf, UP "[server]\nworkers = 2\n[budget]\ndefault = 9\n"), 0);
	CHECK_INT(cf.workers, 7);
	CHECK_INT(cf.default_budget_nusd, 250000000);
	kv_config_free(&cf);

	setenv("KILOVOLT_PORT", "80x", 1);
	EXPECT_ERR(text, "KILOVOLT_PORT: not a port");
	setenv("KILOVOLT_PORT", "0", 1);
	EXPECT_ERR(text, "KILOVOLT_PORT: not a port");
	unsetenv("KILOVOLT_PORT");
	setenv("KILOVOLT_WORKERS", "many", 1);
	EXPECT_ERR(text, "KILOVOLT_WORKERS: not auto or 1..32");
	setenv("KILOVOLT_WORKERS", "auto", 1);
	CHECK_INT(load_text(&cf, UP "[server]\nworkers = 2\n"), 0);
	CHECK_INT(cf.workers, sysconf(_SC_NPROCESSORS_ONLN) > 32 ? 32 : sysconf(_SC_NPROCESSORS_ONLN));
	kv_config_free(&cf);
	unsetenv("KILOVOLT_WORKERS");
	setenv("KILOVOLT_DEFAULT_BUDGET", "$5", 1);
	EXPECT_ERR(text, "KILOVOLT_DEFAULT_BUDGET: not a decimal amount");
	unset_env();

	/* env: works for any value. */
	setenv("KV_TEST_SECRET", "3", 1);
	CHECK_INT(load_text(&cf, UP "[server]\nworkers = env:KV_TEST_SECRET\n"), 0);
	CHECK_INT(cf.workers, 3);
	kv_config_free(&cf);
	unset_env();
}

static void
test_route(void)
{
	struct kv_config cf;
	const struct kv_upstream *u;

	CHECK_INT(load_text(&cf,
	    "[upstream p]\nurl = http://p\npaths = /v1/models /v1/chat/ /v1/x\npaths = /v2\n"
	    "[upstream m]\nurl = http://m\nmodels = llama-* gpt-4o\n"
	    "[upstream all]\nurl = http://a\nmodels = *\n"), 0);
	if (cf.nupstreams != 3) {
		fprintf(stderr, "route: %s\n", err);
		CHECK(0);
		return;
	}
#define ROUTE(path, model) ((u = kv_config_route(&cf, path, model)) ? u->name : "(none)")
	CHECK_STR(ROUTE("/v1/models", NULL), "p");
	CHECK_STR(ROUTE("/v1/models/gpt-4o", NULL), "p");
	CHECK_STR(ROUTE("/v1/models?x=1", NULL), "p");
	CHECK_STR(ROUTE("/v1/modelsX", NULL), "(none)");
	CHECK_STR(ROUTE("/v1/chat/completions", NULL), "p");
	CHECK_STR(ROUTE("/v1/chat", NULL), "(none)");
	CHECK_STR(ROUTE("/v2/anything", ""), "p");
	CHECK_STR(ROUTE("/v1/chat/completions", "llama-3.1"), "m");
	CHECK_STR(ROUTE("/nowhere", "gpt-4o"), "m");
	CHECK_STR(ROUTE("/v1/chat/completions", "gpt-4o-mini"), "all");
	CHECK_STR(ROUTE("/v1/chat/completions", "llama"), "all");
	CHECK_STR(ROUTE(NULL, NULL), "(none)");
	CHECK_INT(cf.upstreams[0].npaths, 4);
#undef ROUTE
	kv_config_free(&cf);

	CHECK_INT(kv_glob_match("a*", "a"), 1);
	CHECK_INT(kv_glob_match("a*", "abc"), 1);
	CHECK_INT(kv_glob_match("a*", "b"), 0);
	CHECK_INT(kv_glob_match("abc", "ab"), 0);
	CHECK_INT(kv_glob_match("abc", "abc"), 1);
	CHECK_INT(kv_glob_match("*", ""), 1);
}

/* A [price NAME] section over a catalogue entry of that name overrides it
 * key by key (pricetab.h kv_pricetab_merge); a glob, or a name the file
 * lacks, stands alone. */
static void
test_override(void)
{
	static const char cat[] =
	    "{\"m1\": {\"litellm_provider\": \"openai\", \"input_cost_per_token\": 1e-06,\n"
	    "  \"output_cost_per_token\": 2e-06, \"cache_read_input_token_cost\": 1e-07,\n"
	    "  \"input_cost_per_token_priority\": 2e-06, \"output_cost_per_token_priority\": 4e-06,\n"
	    "  \"max_input_tokens\": 1000, \"max_output_tokens\": 500},\n"
	    " \"m1-2025-01-01\": {\"litellm_provider\": \"openai\", \"input_cost_per_token\": 1e-06,\n"
	    "  \"output_cost_per_token\": 2e-06},\n"
	    " \"m2\": {\"litellm_provider\": \"openai\", \"input_cost_per_token\": 3e-06,\n"
	    "  \"output_cost_per_token\": 6e-06}}\n";
	const struct kv_price *p;
	enum kv_price_rule rule;
	struct kv_config cf;
	char path[600], want[1400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cat.json", tmpdir);
	f = fopen(path, "w");
	if (f == NULL || fputs(cat, f) == EOF || fclose(f) == EOF) {
		perror(path);
		exit(1);
	}
	CHECK_INT(load_text(&cf, UP "[budget]\nprices = cat.json\n"
	    "[price m1]\noutput = 9\n"
	    "[price m2]\ninput = 4\noutput = 5\nweb_search = 10\n"
	    "[price m1*]\ninput = 7\noutput = 8\n"), 0);
	CHECK_INT(cf.nprices_overridden, 2);
	CHECK_INT(cf.nprices, 4);
	/* m1: the section's output, every other figure the file's */
	p = kv_price_lookup(&cf, "m1", &rule, NULL);
	CHECK(p != NULL && rule == KV_RULE_OVERRIDE && p->src == KV_PRICE_OVERRIDE);
	CHECK(p != NULL && p->set == (uint64_t)1 << kv_price_bit(offsetof(struct kv_price, output)));
	CHECK_INT(p->output, 9000000000);
	CHECK_INT(p->input, 1000000000);
	CHECK_INT(p->cached_input, 100000000);
	CHECK_INT(p->priority_input, 2000000000);
	CHECK_INT(p->priority_output, 4000000000);
	CHECK_INT(p->max_input, 1000);
	CHECK_INT(p->context_window, 1000);
	CHECK_INT(p->max_output, 500);
	CHECK_INT(p->web_search_call, -1);
	CHECK_INT(p->line, 6);
	/* m2: what the section adds (a fee) beside the prices it sets */
	p = kv_price_lookup(&cf, "m2", &rule, NULL);
	CHECK(p != NULL && rule == KV_RULE_OVERRIDE);
	CHECK_INT(p->input, 4000000000);
	CHECK_INT(p->output, 5000000000);
	CHECK_INT(p->web_search_call, 10000000);
	CHECK_INT(p->cached_input, -1);
	/* the glob: its own figures only, for a model the file lacks; the
	 * file's dated entry stays the file's */
	p = kv_price_lookup(&cf, "m1-new", &rule, NULL);
	CHECK(p != NULL && rule == KV_RULE_GLOB && p->src == KV_PRICE_INI);
	CHECK_INT(p->input, 7000000000);
	CHECK_INT(p->cached_input, -1);
	CHECK_INT(p->max_input, -1);
	CHECK_INT(p->max_output, -1);
	p = kv_price_lookup(&cf, "m1-2025-01-01", &rule, NULL);
	CHECK(p != NULL && rule == KV_RULE_FILE && p->input == 1000000000);
	kv_config_free(&cf);
	/* a section the file cannot complete: an error at its line */
	snprintf(want, sizeof(want), ":6: [price m3]: input is required (the catalogue "
	    "%s has no entry m3 to take it from)", path);
	EXPECT_ERR(UP "[budget]\nprices = cat.json\n[price m3]\nweb_search = 10\n", want);
	snprintf(want, sizeof(want), ":6: [price m3]: output is required (write output = 0 "
	    "for a model that bills no output, such as embeddings) (the catalogue %s has no "
	    "entry m3 to take it from)", path);
	EXPECT_ERR(UP "[budget]\nprices = cat.json\n[price m3]\ninput = 1\n", want);
	/* a glob is never completed by the file */
	EXPECT_ERR(UP "[budget]\nprices = cat.json\n[price m1*]\noutput = 1\n",
	    ":6: [price m1*]: input is required");
	EXPECT_ERR(UP "[price default]\noutput = 1\n", ":4: [price default]: input is required");
	if (unlink(path) == -1)
		perror(path);
}

/* The older-family rule (pricetab.h): a glob does not price a model of a
 * newer version than its family's exact entries. */
static void
test_older_family(void)
{
	const struct kv_price *p, *older;
	enum kv_price_rule rule;
	struct kv_config cf;

	CHECK_INT(load_text(&cf, UP "[budget]\nunknown_models = default\n"
	    "[price claude-opus-4*]\ninput = 15\noutput = 75\n"
	    "[price claude-opus-4-1]\ninput = 15\noutput = 75\n"
	    "[price gpt-3.5-turbo*]\ninput = 0.5\noutput = 1.5\n"
	    "[price gpt-5-20*]\ninput = 1.25\noutput = 10\n"
	    "[price gpt-5-2025-08-07]\ninput = 1.25\noutput = 10\n"
	    "[price default]\ninput = 150\noutput = 600\n"), 0);
	/* 4-6 after claude-opus-4: newer than 4-1, the family's newest */
	p = kv_price_lookup(&cf, "claude-opus-4-6", &rule, &older);
	CHECK(p == &cf.default_price && rule == KV_RULE_DEFAULT);
	CHECK(older != NULL && strcmp(older->model, "claude-opus-4*") == 0);
	p = kv_price_lookup(&cf, "claude-opus-4-1-20250805", &rule, &older);
	CHECK(p != NULL && strcmp(p->model, "claude-opus-4*") == 0 && rule == KV_RULE_GLOB);
	CHECK(older == NULL);
	/* a date or a snapshot number is not a version */
	p = kv_price_lookup(&cf, "claude-opus-4-20250514", &rule, &older);
	CHECK(p != NULL && rule == KV_RULE_GLOB && older == NULL);
	p = kv_price_lookup(&cf, "gpt-3.5-turbo-0125", &rule, &older);
	CHECK(p != NULL && rule == KV_RULE_GLOB && older == NULL);
	p = kv_price_lookup(&cf, "gpt-5-2026-01-15", &rule, &older);
	CHECK(p != NULL && strcmp(p->model, "gpt-5-20*") == 0 && older == NULL);
	p = kv_price_lookup(&cf, "gpt-3.5-turbo-16k", &rule, &older);
	CHECK(p != NULL && rule == KV_RULE_GLOB && older == NULL);
	/* 4-1-1 is newer than 4-1; 4.6 spelled with a dot too */
	CHECK(kv_price_lookup(&cf, "claude-opus-4-1-1", NULL, &older) == &cf.default_price &&
	    older != NULL);
	CHECK(kv_price_lookup(&cf, "claude-opus-4.6", NULL, &older) == &cf.default_price &&
	    older != NULL);
	/* a glob with no exact entry knows no version of its family: it
	 * prices all it matches (an operator's [price my-model*]) */
	p = kv_price_lookup(&cf, "gpt-3.5-turbo-2", NULL, &older);
	CHECK(p != NULL && strcmp(p->model, "gpt-3.5-turbo*") == 0 && older == NULL);
	kv_config_free(&cf);

	/* unknown_models = deny: refused, and OLDER says why */
	CHECK_INT(load_text(&cf, UP "[budget]\nunknown_models = deny\n"
	    "[price claude-opus-4*]\ninput = 15\noutput = 75\n"
	    "[price claude-opus-4-1]\ninput = 15\noutput = 75\n"
	    "[price default]\ninput = 150\noutput = 600\n"), 0);
	p = kv_price_lookup(&cf, "claude-opus-4-6", &rule, &older);
	CHECK(p == NULL && rule == KV_RULE_REFUSED && older != NULL);
	p = kv_price_lookup(&cf, "claude-opus-4-1-20250805", &rule, &older);
	CHECK(p != NULL && rule == KV_RULE_GLOB && older == NULL);
	kv_config_free(&cf);
}

static void
test_price(void)
{
	struct kv_config cf;

	CHECK_INT(load_text(&cf, UP
	    "[price gpt-4o*]\ninput = 5\noutput = 1\n"
	    "[price gpt-4o-mini*]\ninput = 0.15\noutput = 1\n"
	    "[price gpt-4o]\ninput = 2.5\noutput = 10\ncached_input = 1.25\n"
	    "[price g*]\ninput = 9\noutput = 0\n"), 0);
	if (cf.nprices != 4) {
		fprintf(stderr, "price: %s\n", err);
		CHECK(0);
		return;
	}
#define PRICE(m) (kv_config_price(&cf, m) ? kv_config_price(&cf, m)->model : "(none)")
	CHECK_STR(PRICE("gpt-4o"), "gpt-4o");
	CHECK_STR(PRICE("gpt-4o-2024-08-06"), "gpt-4o*");
	CHECK_STR(PRICE("gpt-4o-mini-2024-07-18"), "gpt-4o-mini*");
	CHECK_STR(PRICE("gemini"), "g*");
	CHECK_STR(PRICE("claude"), "(none)");
	CHECK_STR(PRICE(NULL), "(none)");
	CHECK_INT(kv_config_price(&cf, "gpt-4o")->cached_input, 1250000000);
	CHECK_INT(kv_config_price(&cf, "gpt-4o")->cache_write, -1);
	CHECK_INT(kv_config_price(&cf, "gpt-4o")->cache_write_1h, -1);
	CHECK_INT(kv_config_price(&cf, "gemini")->output, 0);
	/* no [price default], unknown_models unset: deny */
	CHECK_INT(cf.unknown_models_deny, 1);
#undef PRICE
	kv_config_free(&cf);

	/* a [price default], unknown_models unset: default */
	CHECK_INT(load_text(&cf, UP "[price default]\ninput = 1\noutput = 1\n"
	    "[price x]\ninput = 2\noutput = 2\n"), 0);
	CHECK_INT(cf.unknown_models_deny, 0);
	CHECK_STR(kv_config_price(&cf, "y")->model, "default");
	CHECK_STR(kv_config_price(&cf, NULL)->model, "default");
	CHECK_STR(kv_config_price(&cf, "x")->model, "x");
	kv_config_free(&cf);

	/* deny: [price default] is not used for unknown models */
	CHECK_INT(load_text(&cf, "[budget]\nunknown_models = deny\n" UP
	    "[price default]\ninput = 1\noutput = 1\n[price x]\ninput = 2\noutput = 2\n"), 0);
	CHECK_INT(cf.unknown_models_deny, 1);
	CHECK(kv_config_price(&cf, "y") == NULL);
	CHECK_STR(kv_config_price(&cf, "x")->model, "x");
	kv_config_free(&cf);
	CHECK_INT(load_text(&cf, "[budget]\nunknown_models = default\n" UP
	    "[price x]\ninput = 2\noutput = 2\n"), 0);
	CHECK_INT(cf.unknown_models_deny, 0);
	CHECK(kv_config_price(&cf, "y") == NULL);	/* nothing to default to */
	kv_config_free(&cf);

	/* the keys for what else changes the bill */
	CHECK_INT(load_text(&cf, UP "[price c]\ninput = 3\noutput = 15\ncache_write_1h = 6\n"
	    "long_context_threshold = 200000\nlong_context_input = 6\n"
	    "long_context_output = 22.5\npriority_input = 5\npriority_output = 25\n"
	    "flex_input = 1.5\nflex_output = 7.5\n"), 0);
	CHECK_INT(kv_config_price(&cf, "c")->cache_write_1h, 6000000000LL);
	CHECK_INT(kv_config_price(&cf, "c")->long_context_threshold, 200000);
	CHECK_INT(kv_config_price(&cf, "c")->long_context_output, 22500000000LL);
	CHECK_INT(kv_config_price(&cf, "c")->priority_output, 25000000000LL);
	CHECK_INT(kv_config_price(&cf, "c")->flex_input, 1500000000LL);
	CHECK_INT(kv_config_price(&cf, "c")->web_search_call, -1);
	CHECK_INT(kv_config_price(&cf, "c")->code_exec_hour, -1);
	kv_config_free(&cf);

	/* per-call fees: per 1,000 calls in the file, per call in the struct,
	 * rounded up; code execution per container-hour */
	CHECK_INT(load_text(&cf, UP "[price c]\ninput = 3\noutput = 15\nweb_search = 10\n"
	    "web_fetch = 0.0000015\ncode_execution = 0.05\n"), 0);
	CHECK_INT(kv_config_price(&cf, "c")->web_search_call, 10000000LL);
	CHECK_INT(kv_config_price(&cf, "c")->web_fetch_call, 2);
	CHECK_INT(kv_config_price(&cf, "c")->code_exec_hour, 50000000LL);
	kv_config_free(&cf);
	/* what a cut charges */
	CHECK_INT(load_text(&cf, UP), 0);
	CHECK_INT(cf.on_cut_drain, 0);
	CHECK_INT(cf.drain_timeout, 60);
	CHECK_INT(cf.drain_max, 4 << 20);
	kv_config_free(&cf);
	CHECK_INT(load_text(&cf, "[budget]\non_cut = drain\ndrain_timeout = 5\ndrain_max = 64k\n"
	    UP), 0);
	CHECK_INT(cf.on_cut_drain, 1);
	CHECK_INT(cf.drain_timeout, 5);
	CHECK_INT(cf.drain_max, 65536);
	kv_config_free(&cf);
	EXPECT_ERR("[budget]\non_cut = estimate\n" UP,
	    ":2: on_cut: 'estimate' is not charge_reserved or drain");
	EXPECT_ERR("[budget]\ndrain_max = 0\n" UP,
	    ":2: drain_max: '0' is not a size above 0 (bytes with an optional k, m or g)");
	EXPECT_ERR(UP "[price x]\ninput = 1\noutput = 2\nweb_search = $10\n",
	    ":7: web_search: '$10' is not a decimal amount");
}

static void
test_default_path(void)
{
	setenv("KILOVOLT_CONFIG", "/some/where.ini", 1);
	CHECK_STR(kv_config_default_path(), "/some/where.ini");
	unsetenv("KILOVOLT_CONFIG");
	CHECK_STR(kv_config_default_path(), access("/etc/kilovolt/kilovolt.ini", F_OK) == 0 ?
	    "/etc/kilovolt/kilovolt.ini" : "./kilovolt.ini");
}

static void
test_cluster(void)
{
	struct kv_config cf;

	CHECK_INT(load_text(&cf, UP), 0);
	CHECK_INT(cf.cluster.enabled, 0);
	kv_config_free(&cf);
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = redis://10.0.0.5\nhost_id = gw-1\n"
	    "lease_max = 2.50\non_redis_down = open\n"), 0);
	CHECK_INT(cf.cluster.enabled, 1);
	CHECK_STR(cf.cluster.redis_host, "10.0.0.5");
	CHECK_STR(cf.cluster.redis_port, "6379");
	CHECK_STR(cf.cluster.host_id, "gw-1");
	CHECK_INT(cf.cluster.lease_max_nusd, 2500000000LL);
	CHECK_INT(cf.cluster.lease_min_nusd, 10000000);
	CHECK_INT(cf.cluster.lease_ttl, 10);
	CHECK_INT(cf.cluster.departed_after, 300);
	CHECK_INT(cf.cluster.open_when_down, 1);
	CHECK(cf.cluster.password == NULL);
	kv_config_free(&cf);
	setenv("KV_TEST_SECRET", "s3cret", 1);
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = unix:/run/redis.sock\n"
	    "password = env:KV_TEST_SECRET\n"), 0);
	CHECK_STR(cf.cluster.redis_unix, "/run/redis.sock");
	CHECK_STR(cf.cluster.password, "s3cret");
	CHECK(cf.cluster.host_id[0] != '\0');	/* the host name */
	{
		char hn[256];

		/* the full name, not cut at its first dot (issue 22) */
		if (gethostname(hn, sizeof(hn)) == 0 && strlen(hn) < 64 &&
		    strcmp(hn, "localhost") != 0 && strchr(hn, ' ') == NULL)
			CHECK_STR(cf.cluster.host_id, hn);
	}
	CHECK_INT(cf.cluster.require_persistence, 0);
	kv_config_free(&cf);
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = redis://x\nrequire_persistence = yes\n"), 0);
	CHECK_INT(cf.cluster.require_persistence, 1);
	kv_config_free(&cf);
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = redis://x\ndeparted_after = 0\n"), 0);
	CHECK_INT(cf.cluster.departed_after, 0);	/* never */
	kv_config_free(&cf);
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = redis://x\nuser = kvgw\npassword = pw\n"), 0);
	CHECK_STR(cf.cluster.user, "kvgw");
	kv_config_free(&cf);
	EXPECT_ERR(UP "[cluster]\nredis = redis://x\nuser = kvgw\n",
	    ":4: [cluster]: user needs a password");
	EXPECT_ERR(UP "[cluster]\nredis = redis://x\nrequire_persistence = maybe\n",
	    ":6: require_persistence: 'maybe' is not yes or no");
	unsetenv("KV_TEST_SECRET");
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = redis://[::1]:7000\n"), 0);
	CHECK_STR(cf.cluster.redis_host, "::1");
	CHECK_STR(cf.cluster.redis_port, "7000");
	kv_config_free(&cf);
	EXPECT_ERR(UP "[cluster]\nhost_id = a\n", ":4: [cluster]: redis is required");
	EXPECT_ERR(UP "[cluster]\nredis = http://x\n", ":5: redis: want redis://HOST:PORT, "
	    "rediss://HOST:PORT, redis+sentinel://HOST:PORT/MASTER or unix:PATH (the password goes in 'password')");
	EXPECT_ERR(UP "[cluster]\nredis = redis://u:p@x:1\n", ":5: redis: want "
	    "redis://HOST:PORT, rediss://HOST:PORT, redis+sentinel://HOST:PORT/MASTER or unix:PATH (the password goes in 'password')");
	EXPECT_ERR(UP "[cluster]\nredis = redisss://x\n", ":5: redis: want "
	    "redis://HOST:PORT, rediss://HOST:PORT, redis+sentinel://HOST:PORT/MASTER or unix:PATH (the password goes in 'password')");
	/* rediss://: TLS, the port defaults as for redis:// */
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = rediss://r.example\nca_file = /dev/null\n"), 0);
	CHECK_INT(cf.cluster.redis_tls, 1);
	CHECK_STR(cf.cluster.redis_host, "r.example");
	CHECK_STR(cf.cluster.redis_port, "6379");
	CHECK_STR(cf.cluster.ca_file, "/dev/null");
	kv_config_free(&cf);
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = redis+sentinel://s1,s2:26000/kvm\n"), 0);
	CHECK_INT(cf.cluster.nsentinels, 2);
	CHECK_STR(cf.cluster.sentinel_host[0], "s1");
	CHECK_STR(cf.cluster.sentinel_port[0], "26379");
	CHECK_STR(cf.cluster.sentinel_host[1], "s2");
	CHECK_STR(cf.cluster.sentinel_port[1], "26000");
	CHECK_STR(cf.cluster.sentinel_master, "kvm");
	kv_config_free(&cf);
	EXPECT_ERR(UP "[cluster]\nredis = redis+sentinel://s1\n", ":5: redis: want "
	    "redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER");
	CHECK_INT(load_text(&cf, UP "[cluster]\nredis = redis://r.example:7\n"), 0);
	CHECK_INT(cf.cluster.redis_tls, 0);
	kv_config_free(&cf);
	EXPECT_ERR(UP "[cluster]\nredis = rediss://x\nca_file = /nonexistent/ca.pem\n",
	    ":6: ca_file: /nonexistent/ca.pem: No such file or directory");
	EXPECT_ERR(UP "[cluster]\nredis = unix:rel\n", ":5: redis: unix: needs an absolute "
	    "path of at most 107 bytes");
	EXPECT_ERR(UP "[cluster]\nredis = redis://x:0\n", ":5: redis: bad host or port in "
	    "'redis://x:0'");
	EXPECT_ERR(UP "[cluster]\nredis = redis://x\non_redis_down = maybe\n",
	    ":6: on_redis_down: 'maybe' is not closed or open");
	EXPECT_ERR(UP "[cluster]\nredis = redis://x\nlease_min = 2\nlease_max = 1\n",
	    ":4: [cluster]: lease_min is above lease_max");
	EXPECT_ERR(UP "[cluster]\nredis = redis://x\nhost_id = a:b\n",
	    ":6: host_id: at most 63 printable characters, no blanks or ':'");
}

/* url = A B C: extra targets become entries with no routes; a fallback
 * may have neither paths nor models. */
static void
test_targets(void)
{
	struct kv_config cf;
	const struct kv_upstream *u, *t;

	CHECK_INT(load_text(&cf, "[upstream pool]\nurl = http://a:1 https://b/base http://c:3\n"
	    "paths = /v1\neject_after = 3\neject_time = 7\nfallback = spare\n"
	    "tls_record_layer = openssl\n"
	    "[upstream spare]\nurl = https://spare\napi_key = sk-spare\n"
	    "model_map = gpt-4o=dep1 x=y\n"), 0);
	if (unit_fail)
		return;
	CHECK_INT(cf.nupstreams, 4);
	u = &cf.upstreams[0];
	CHECK_INT(u->nextra, 2);
	CHECK_INT(u->first_extra, 2);
	CHECK_INT(u->eject_after, 3);
	CHECK_INT(u->eject_secs, 7);
	CHECK_INT(u->retry_budget, 10);
	CHECK_INT(u->fallback_idx, 2);
	t = &cf.upstreams[2];
	CHECK_STR(t->name, "pool");
	CHECK_STR(t->host, "b");
	CHECK_STR(t->port, "443");
	CHECK_STR(t->base_path, "/base");
	CHECK_INT(t->tls, 1);
	CHECK_INT(t->npaths, 0);
	CHECK_INT(t->target_of, 1);
	CHECK_INT(t->tls_record_layer, KV_TLS_RECORDS_OPENSSL);	/* each target keeps its upstream's */
	CHECK_INT(cf.upstreams[1].tls_record_layer, KV_TLS_RECORDS_OWN);	/* own by default */
	CHECK_STR(cf.upstreams[3].port, "3");
	CHECK_INT(cf.upstreams[1].nmodel_map, 2);
	CHECK(kv_config_route(&cf, "/v1/x", NULL) == u);
	CHECK(kv_config_route(&cf, "/other", NULL) == NULL);
	CHECK_STR(u->health_path, "");
	CHECK_INT(u->health_interval, 10);
	kv_config_free(&cf);
	/* tls_record_layer = kernel: each target too, and not OpenSSL's */
	CHECK_INT(load_text(&cf, "[upstream k]\nurl = https://a https://b\npaths = /v1\n"
	    "tls_record_layer = kernel\n"), 0);
	if (unit_fail)
		return;
	CHECK_INT(cf.upstreams[0].tls_record_layer, KV_TLS_RECORDS_KERNEL);
	CHECK_INT(cf.upstreams[1].tls_record_layer, KV_TLS_RECORDS_KERNEL);
	kv_config_free(&cf);
	/* Further url lines add targets; at most KV_MAX_TARGETS. */
	CHECK_INT(load_text(&cf, "[upstream pool]\nurl = http://a:1 http://b:2\npaths = /v1\n"
	    "url = http://c:3\nurl = http://d:4 http://e:5\n"), 0);
	if (unit_fail)
		return;
	CHECK_INT(cf.nupstreams, 5);
	CHECK_INT(cf.upstreams[0].nextra, 4);
	CHECK_STR(cf.upstreams[0].port, "1");
	CHECK_STR(cf.upstreams[2].port, "3");
	CHECK_STR(cf.upstreams[4].port, "5");
	kv_config_free(&cf);
	{
		char text[8192];
		int i, n = snprintf(text, sizeof(text), "[upstream pool]\npaths = /v1\n");

		for (i = 0; i < KV_MAX_TARGETS + 1; i++)
			n += snprintf(text + n, sizeof(text) - (size_t)n, "url = http://h%d:1\n", i);
		EXPECT_ERR(text, ":67: url: at most 64 targets per upstream");
	}
}

/* health_check = PATH, health_interval = N or Ns. */
static void
test_health(void)
{
	struct kv_config cf;

	CHECK_INT(load_text(&cf, "[upstream pool]\nurl = http://a:1 http://b:2\npaths = /v1\n"
	    "health_check = /health?deep=1\nhealth_interval = 3s\n"
	    "[upstream other]\nurl = http://c\npaths = /x\nhealth_check = /h\n"
	    "health_interval = 30\n"), 0);
	if (unit_fail)
		return;
	CHECK_STR(cf.upstreams[0].health_path, "/health?deep=1");
	CHECK_INT(cf.upstreams[0].health_interval, 3);
	CHECK_INT(cf.upstreams[1].health_interval, 30);
	kv_config_free(&cf);
	EXPECT_ERR("[upstream u]\nurl = http://a\npaths = /v1\nhealth_check = health\n",
	    ":4: health_check: 'health' is not a path (want /PATH, no spaces)");
	EXPECT_ERR("[upstream u]\nurl = http://a\npaths = /v1\nhealth_check = /a b\n",
	    ":4: health_check: '/a b' is not a path (want /PATH, no spaces)");
	EXPECT_ERR("[upstream u]\nurl = http://a\npaths = /v1\nhealth_interval = 0s\n",
	    ":4: health_interval: 0s is out of range (1s..1h)");
	EXPECT_ERR("[upstream u]\nurl = http://a\npaths = /v1\nhealth_interval = 0\n",
	    ":4: health_interval: 0 is out of range (1..3600)");
	EXPECT_ERR("[upstream u]\nurl = http://a\npaths = /v1\nhealth_interval = 5x\n",
	    ":4: health_interval: '5x' is not a number of seconds or a duration "
	    "(10s, 500ms, 2m, 1h)");
}

/* One duration grammar for every duration key, one size grammar for every
 * size key (kilovolt.ini(5) VALUES): a plain number keeps its old meaning
 * (seconds, bytes), and what is not whole seconds is refused, not rounded. */
static void
test_units(void)
{
	static const struct { const char *in; long long ms; } durs[] = {
		{ "90", 90000 }, { "250ms", 250 }, { "1d2h3m4s5ms", 93784005 }, { "5", 5000 },
		{ "", -1 }, { "s", -1 }, { "5mss", -1 }, { "400d", -1 }, { "-1s", -1 },
		{ "9999999999999", -1 }, { "1s1s", -1 }, { "1.5s", -1 }, { "1sm", -1 },
	};
	static const struct { long long n; const char *out; } secs[] = {
		{ 5400, "1h30m" }, { 0, "0s" }, { 86401, "1d1s" }, { 59, "59s" },
	}, sizes[] = {
		{ 3 << 20, "3m" }, { 1000, "1000" }, { 0, "0" }, { 1LL << 40, "1024g" },
		{ 1536, "1536" }, { 2048, "2k" },
	}, nanos[] = {
		{ 1250000000, "1.25" }, { 1, "0.000000001" }, { 2000000000, "2" }, { 0, "0" },
	};
	struct kv_config cf;
	int64_t ms;
	uint64_t sz;
	char buf[64];
	size_t i;

	/* ms before s is out of order */
	EXPECT_ERR("[server]\nheader_timeout = 1500ms1s\n", ":2: header_timeout: '1500ms1s' "
	    "is not a number of seconds or a duration (10s, 500ms, 2m, 1h)");
	CHECK_INT(load_text(&cf, "[server]\nclient_timeout = 2m\nupstream_timeout = 1h30m\n"
	    "connect_timeout = 7\nheader_timeout = 1s1000ms\nshutdown_timeout = 0s\n"
	    "max_body = 64k\nspool_max = 2G\n"
	    "[budget]\ndrain_timeout = 1m\ndrain_max = 1m\n"
	    "[upstream u]\nurl = http://a\npaths = /v1\neject_time = 2m\nretry_budget = 10s\n"
	    "health_interval = 5m\n"
	    "[cluster]\nredis = redis://127.0.0.1\nlease_ttl = 1m\ndeparted_after = 1d\n"), 0);
	if (err[0] != '\0')
		fprintf(stderr, "units: %s\n", err);
	if (cf.nupstreams == 1) {
		const long long got[] = { cf.client_timeout, cf.upstream_timeout,
		    cf.connect_timeout, cf.header_timeout, cf.shutdown_timeout,
		    (long long)cf.max_body, (long long)cf.spool_max, cf.drain_timeout,
		    (long long)cf.drain_max, cf.upstreams[0].eject_secs,
		    cf.upstreams[0].retry_budget, cf.upstreams[0].health_interval,
		    cf.cluster.lease_ttl, cf.cluster.departed_after };
		const long long want[] = { 120, 5400, 7, 2, 0, 65536, 2LL << 30, 60, 1 << 20,
		    120, 10, 300, 60, 86400 };

		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			if (got[i] != want[i])
				fprintf(stderr, "  units: value %zu\n", i);
			CHECK_INT(got[i], want[i]);
		}
	}
	CHECK_INT(cf.nupstreams, 1);
	kv_config_free(&cf);

	EXPECT_ERR("[server]\nupstream_timeout = 1500ms\n",
	    ":2: upstream_timeout: '1500ms' is not a whole number of seconds");
	EXPECT_ERR("[server]\nclient_timeout = 2d\n",
	    ":2: client_timeout: 2d is out of range (1s..1d)");
	EXPECT_ERR("[budget]\ndrain_timeout = 1h1s\n",
	    ":2: drain_timeout: 1h1s is out of range (1s..1h)");
	EXPECT_ERR("[server]\nclient_timeout = 1m1m\n", ":2: client_timeout: '1m1m' is not a "
	    "number of seconds or a duration (10s, 500ms, 2m, 1h)");
	EXPECT_ERR("[server]\nclient_timeout = 10 s\n", ":2: client_timeout: '10 s' is not a "
	    "number of seconds or a duration (10s, 500ms, 2m, 1h)");
	EXPECT_ERR("[server]\nmax_body = 2t\n",
	    ":2: max_body: '2t' is not a size (bytes with an optional k, m or g)");
	EXPECT_ERR("[server]\nmax_body = k\n",
	    ":2: max_body: 'k' is not a size (bytes with an optional k, m or g)");

	/* the grammar itself; -1: refused */
	for (i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		ms = -1;
		if (kv_cfg_parse_duration(durs[i].in, 1000, &ms) == -1)
			ms = -1;
		if (ms != durs[i].ms)
			fprintf(stderr, "  duration '%s'\n", durs[i].in);
		CHECK_INT(ms, durs[i].ms);
	}
	for (i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		kv_cfg_format_secs(secs[i].n, buf, sizeof(buf));
		CHECK_STR(buf, secs[i].out);
		CHECK_INT(kv_cfg_parse_duration(buf, 1000, &ms), 0);
		CHECK_INT(ms, secs[i].n * 1000);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		kv_cfg_format_size((uint64_t)sizes[i].n, buf, sizeof(buf));
		CHECK_STR(buf, sizes[i].out);
		CHECK_INT(kv_cfg_parse_size(buf, &sz), 0);
		CHECK_INT(sz, sizes[i].n);
	}
	CHECK_INT(kv_cfg_parse_size("1025g", &sz), -1);
	CHECK_INT(kv_cfg_parse_size("1G", &sz), 0);
	CHECK_INT(sz, 1 << 30);
	for (i = 0; i < sizeof(nanos) / sizeof(nanos[0]); i++) {
		kv_cfg_format_nano(nanos[i].n, buf, sizeof(buf));
		CHECK_STR(buf, nanos[i].out);
	}
}

/* What -T prints must read back the same (tests/fuzz/fuzz_config.c checks
 * it): a control byte inside a URL or a model_map word, which the reader
 * would trim at a line's end, is refused where it is written. */
static void
test_control_bytes(void)
{
	EXPECT_ERR(UP "[upstream b]\nurl = http://h/a\fb\npaths = /x\n",
	    ":5: url: bad URL 'http://h/a\fb' (want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR(UP "model_map = a=b\fc d=e\n", ":4: model_map: bad entry 'a=b\fc'");
	/* and a Sentinel URL without a Sentinel, which -T could not print */
	EXPECT_ERR(UP "[cluster]\nredis = redis+sentinel:///m\n", ":5: redis: want "
	    "redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER");
}

/* provider = bedrock: the region gives the url and paths; an AWS region
 * is for Bedrock only; the data-residency words keep their meaning. */
static void
test_bedrock(void)
{
	struct kv_config cf;
	const struct kv_upstream *u;

	CHECK_INT(load_text(&cf, "[upstream b]\nprovider = bedrock\nregion = eu-central-1\n"
	    "[upstream o]\nurl = https://eu.api.openai.com\npaths = /v1/\nregion = eu\n"), 0);
	CHECK_INT(cf.nupstreams, 3);	/* and b's control plane */
	if (cf.nupstreams == 3) {
		u = &cf.upstreams[0];
		CHECK_INT(u->provider, KV_PROVIDER_BEDROCK);
		CHECK_STR(u->aws_region, "eu-central-1");
		CHECK_STR(u->url, "https://bedrock-runtime.eu-central-1.amazonaws.com");
		CHECK_STR(u->host, "bedrock-runtime.eu-central-1.amazonaws.com");
		CHECK_INT(u->tls, 1);
		CHECK_INT(u->npaths, 1);
		CHECK_STR(u->paths[0], "/model/");
		CHECK_INT(u->region, KV_REGION_NONE);
		CHECK_INT(cf.upstreams[1].provider, KV_PROVIDER_AUTO);
		CHECK_INT(cf.upstreams[1].region, KV_REGION_EU);
		CHECK_STR(cf.upstreams[1].aws_region, "");
		/* the control plane: a hidden entry, signed as the runtime */
		CHECK_STR(u->control_url, "https://bedrock.eu-central-1.amazonaws.com");
		CHECK_INT((int)u->control_idx, 3);
		CHECK_STR(cf.upstreams[2].host, "bedrock.eu-central-1.amazonaws.com");
		CHECK_INT((int)cf.upstreams[2].target_of, 1);
		CHECK_INT(cf.upstreams[2].provider, KV_PROVIDER_BEDROCK);
		CHECK_STR(cf.upstreams[2].aws_region, "eu-central-1");
		CHECK_INT((int)cf.upstreams[2].npaths + (int)cf.upstreams[2].nmodels, 0);
		CHECK_INT((int)cf.upstreams[1].control_idx, 0);
		kv_config_free(&cf);
	}
	/* written url and paths win; extra targets inherit the kind */
	CHECK_INT(load_text(&cf, "[upstream b]\nprovider = bedrock\nregion = us-gov-west-1\n"
	    "url = http://127.0.0.1:9 http://127.0.0.1:10\npaths = /model/ /openai/v1/\n"
	    "control_url = http://127.0.0.1:11/c\n"), 0);
	CHECK_INT(cf.nupstreams, 3);
	if (cf.nupstreams == 3) {
		CHECK_STR(cf.upstreams[0].url, "http://127.0.0.1:9");
		CHECK_INT(cf.upstreams[0].npaths, 2);
		CHECK_INT(cf.upstreams[1].provider, KV_PROVIDER_BEDROCK);
		CHECK_STR(cf.upstreams[1].aws_region, "us-gov-west-1");
		/* the extra target stays next to its upstream, the control after */
		CHECK_INT((int)cf.upstreams[0].first_extra, 1);
		CHECK_INT((int)cf.upstreams[0].nextra, 1);
		CHECK_INT((int)cf.upstreams[0].control_idx, 3);
		CHECK_STR(cf.upstreams[2].url, "http://127.0.0.1:11/c");
		CHECK_STR(cf.upstreams[2].base_path, "/c");
		CHECK_INT(cf.upstreams[2].tls, 0);
		kv_config_free(&cf);
	}
	EXPECT_ERR(UP "control_url = http://127.0.0.1:11\n",
	    ":1: [upstream o]: control_url is for provider = bedrock only");
	EXPECT_ERR("[upstream b]\nprovider = bedrock\nregion = us-east-1\ncontrol_url = ftp://x\n",
	    ":4: control_url: bad URL 'ftp://x' (want http[s]://HOST[:PORT][/PATH])");
	EXPECT_ERR("[upstream b]\nprovider = bedrock\n",
	    ":1: [upstream b]: provider = bedrock needs region = AWS_REGION (us-east-1)");
	EXPECT_ERR(UP "region = us-east-1\n",
	    ":1: [upstream o]: region = us-east-1 is an AWS region, for provider = bedrock only");
	EXPECT_ERR("[upstream b]\nprovider = bedrock\nregion = us-east-1.evil.com\n",
	    ":3: region: 'us-east-1.evil.com' is neither auto, none, us, eu nor an AWS region "
	    "name (us-east-1)");
	EXPECT_ERR("[upstream b]\nprovider = bedrock\nregion = us--1\n",
	    ":3: region: 'us--1' is neither auto, none, us, eu nor an AWS region name (us-east-1)");
	EXPECT_ERR("[upstream b]\nprovider = aws\nregion = us-east-1\n",
	    ":2: provider: 'aws' is not auto, openai, anthropic, bedrock, gemini, vertex or azure");
}

/* A Bedrock path goes to a bedrock upstream only, by its decoded model
 * id, then its paths; the control plane's reads to the first bedrock
 * upstream; a bedrock upstream's models take only the paths it serves. */
static void
test_bedrock_route(void)
{
	struct kv_config cf;
	const struct kv_upstream *u;

	CHECK_INT(load_text(&cf,
	    "[upstream all]\nurl = http://a\nmodels = *\npaths = /\n"
	    "[upstream east]\nprovider = bedrock\nregion = us-east-1\n"
	    "paths = /model/ /openai/v1/\n"
	    "[upstream eu]\nprovider = bedrock\nregion = eu-west-1\nmodels = eu.*\n"), 0);
	if (cf.nupstreams != 5) {
		fprintf(stderr, "bedrock route: %s (%zu)\n", err, cf.nupstreams);
		CHECK(0);
		return;
	}
#define ROUTE(path, model) ((u = kv_config_route(&cf, path, model)) ? u->name : "(none)")
	CHECK_STR(ROUTE("/model/us.anthropic.claude-x/invoke", "us.anthropic.claude-x"), "east");
	CHECK_STR(ROUTE("/model/eu.anthropic.claude-x/converse", "eu.anthropic.claude-x"), "eu");
	CHECK_STR(ROUTE("/model/arn%3Aaws%3Ab%2Feu.m/converse-stream", "eu.m"), "eu");
	CHECK_STR(ROUTE("/inference-profiles?type=SYSTEM_DEFINED", NULL), "east");
	CHECK_STR(ROUTE("/foundation-models/anthropic.claude-x", NULL), "east");
	/* not a Bedrock path: the catch-all's, whatever the model */
	CHECK_STR(ROUTE("/v1/chat/completions", "eu.m"), "all");
	CHECK_STR(ROUTE("/model/x/invoke/more", "x"), "all");
	CHECK_STR(ROUTE("/openai/v1/chat/completions", "eu.m"), "all");
	kv_config_free(&cf);
	/* no bedrock upstream: a Bedrock path goes nowhere */
	CHECK_INT(load_text(&cf, "[upstream all]\nurl = http://a\nmodels = *\npaths = /\n"), 0);
	CHECK_STR(ROUTE("/model/m/invoke", "m"), "(none)");
	CHECK_STR(ROUTE("/inference-profiles", NULL), "(none)");
	kv_config_free(&cf);
	/* a bedrock upstream's OpenAI-compatible paths, by path or model */
	CHECK_INT(load_text(&cf, "[upstream b]\nprovider = bedrock\nregion = us-east-1\n"
	    "paths = /model/ /openai/v1/\nmodels = openai.*\n"
	    "[upstream o]\nurl = http://o\npaths = /v1/\n"), 0);
	CHECK_STR(ROUTE("/openai/v1/chat/completions", "openai.gpt-oss-120b-1:0"), "b");
	CHECK_STR(ROUTE("/v1/chat/completions", "openai.gpt-oss-120b-1:0"), "o");
#undef ROUTE
	kv_config_free(&cf);
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	unset_env();
	unsetenv("KILOVOLT_CONFIG");
	test_bundled();
	test_errors();
	test_error_edges();
	test_secrets();
	test_values();
	test_key_forms();
	test_urls();
	test_env();
	test_route();
	test_price();
	test_older_family();
	test_override();
	test_default_path();
	test_cluster();
	test_targets();
	test_health();
	test_units();
	test_control_bytes();
	test_bedrock();
	test_bedrock_route();
	unlink(tmpfile_path);
	rmdir(tmpdir);
	return unit_done();
}

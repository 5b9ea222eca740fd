/* The figures of a price as kvctl says them: the table of a kv_price's
 * fields with how each is reserved and charged, their formatting, which
 * rule found a model's price and where it was written, and a price as
 * JSON. Below kvctl_prices.c and kvctl_prices_check.c, which share it. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl_prices.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/catalog.h"
#include "common/jsonline.h"
#include "common/pricetab.h"

#define P(f)	offsetof(struct kv_price, f)
const struct pfield kvctl_price_fields[] = {
	{ "input",			"input",		P(input),		K_PRICE,
	    "uncached text input tokens; reserved: every body byte (the context window for fetched content)" },
	{ "output",			"output",		P(output),		K_PRICE,
	    "text output tokens; reserved: the output limit x n" },
	{ "cached input",		"cached_input",		P(cached_input),	K_PRICE,
	    "cache reads (cached_tokens, cache_read_input_tokens)" },
	{ "cache write",		"cache_write",		P(cache_write),		K_PRICE,
	    "cache writes (cache_write_tokens, cache_creation_input_tokens); reserved where dearer" },
	{ "cache write 1h",		"cache_write_1h",	P(cache_write_1h),	K_PRICE,
	    "Anthropic 1-hour writes (cache_creation.ephemeral_1h_input_tokens); reserved under ttl 1h" },
	{ "audio input",		"audio_input",		P(audio_input),		K_PRICE,
	    "audio input tokens (prompt_tokens_details.audio_tokens, Gemini's promptTokensDetails AUDIO); "
	    "reserved for input_audio, audio.id, Gemini's non-image inlineData and fileData" },
	{ "audio output",		"audio_output",		P(audio_output),	K_PRICE,
	    "audio output tokens; reserved for a request that may answer in audio" },
	{ "reasoning output",		"reasoning_output",	P(reasoning_output),	K_PRICE,
	    "reasoning tokens; reserved where dearer" },
	{ "long-context input",		"long_context_input",	P(long_context_input),	K_PRICE,
	    "every input token once input passes the threshold" },
	{ "long-context output",	"long_context_output",	P(long_context_output),	K_PRICE,
	    "every output token once input passes the threshold" },
	{ "long-context cached",	"long_context_cached",	P(long_context_cached),	K_PRICE,
	    "cache reads past the threshold" },
	{ "long-context write",		"long_context_write",	P(long_context_write),	K_PRICE,
	    "cache writes past the threshold" },
	{ "long-context write 1h",	"long_context_write_1h", P(long_context_write_1h), K_PRICE,
	    "1-hour writes past the threshold" },
	{ "priority input",		"priority_input",	P(priority_input),	K_PRICE,
	    "service_tier priority (the response's); reserved at the dearest tier" },
	{ "priority output",		"priority_output",	P(priority_output),	K_PRICE,
	    "service_tier priority" },
	{ "priority cached",		"priority_cached",	P(priority_cached),	K_PRICE,
	    "cache reads at priority" },
	{ "priority write",		"priority_write",	P(priority_write),	K_PRICE,
	    "cache writes at priority" },
	{ "flex input",			"flex_input",		P(flex_input),		K_PRICE,
	    "service_tier flex (the response's)" },
	{ "flex output",		"flex_output",		P(flex_output),		K_PRICE,
	    "service_tier flex" },
	{ "flex cached",		"flex_cached",		P(flex_cached),		K_PRICE,
	    "cache reads at flex" },
	{ "flex write",			"flex_write",		P(flex_write),		K_PRICE,
	    "cache writes at flex" },
	{ "batch input",		"batch_input",		P(batch_input),		K_PRICE,
	    "shown only: batches are refused" },
	{ "batch output",		"batch_output",		P(batch_output),	K_PRICE,
	    "shown only: batches are refused" },
	{ "web search",			"web_search_call",	P(web_search_call),	K_FEE,
	    "each search the response reports; reserved: max_uses" },
	{ "web fetch",			"web_fetch_call",	P(web_fetch_call),	K_FEE,
	    "each fetch the response reports; reserved: max_uses" },
	{ "code execution",		"code_exec_hour",	P(code_exec_hour),	K_FEE,
	    "a response naming a container: 5 minutes" },
	{ "long context above",		"long_context_threshold", P(long_context_threshold), K_TOKENS,
	    "input tokens past which the long-context prices apply" },
	{ "max input",			"max_input",		P(max_input),		K_TOKENS,
	    "the input bound (context window)" },
	{ "max output",			"max_output",		P(max_output),		K_TOKENS,
	    "output reserved when the request names no limit" },
	{ "context window",		"context_window",	P(context_window),	K_TOKENS,
	    "input reserved for content the body does not bound" },
	{ "fast mode",			"fast",			P(fast_mult),		K_MULT,
	    "\"speed\": \"fast\" (usage.speed); refused without it" },
	{ "US-only inference",		"us_inference",		P(geo_us_mult),		K_MULT,
	    "\"inference_geo\": \"us\" (usage.inference_geo); refused without it" },
	{ "regional US",		"regional_us",		P(region_us_mult),	K_MULT,
	    "an upstream with region us" },
	{ "regional EU",		"regional_eu",		P(region_eu_mult),	K_MULT,
	    "an upstream with region eu" },
};
#undef P
const size_t kvctl_price_nfields = sizeof(kvctl_price_fields) / sizeof(kvctl_price_fields[0]);


int64_t
kvctl_price_field_value(const struct kv_price *p, const struct pfield *f)
{
	int64_t v = *(const int64_t *)(const void *)((const char *)p + f->off);

	/* the long-context threshold is 0, not -1, when there is none */
	return f->off == offsetof(struct kv_price, long_context_threshold) && v == 0 ? -1 : v;
}

/* Nano-dollars as "$5.00", "$0.075", "$0.0000375": every digit the price
 * has, at least two decimals. */
void
kvctl_price_format(int64_t nusd, char *buf, size_t len)
{
	char frac[16];
	int n;

	snprintf(frac, sizeof(frac), "%09" PRId64, nusd % 1000000000);
	for (n = 9; n > 2 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	snprintf(buf, len, "$%" PRId64 ".%s", nusd / 1000000000, frac);
}

/* V of F, with its unit unless BARE ("$5.00" against "$5.00 / 1M tokens"). */
void
kvctl_price_format_field(const struct pfield *f, int64_t v, int bare, char *buf, size_t len)
{
	char money[40];

	if (v < 0) {
		snprintf(buf, len, "-");
		return;
	}
	if (f->kind == K_TOKENS) {
		snprintf(buf, len, "%" PRId64 "%s", v, bare ? "" : " tokens");
		return;
	}
	if (f->kind == K_MULT) {	/* x 10^9: "6x", "1.1x" */
		kvctl_price_format(v, money, sizeof(money));
		snprintf(buf, len, "%sx%s", money + 1, bare ? "" : " every token price");
		return;
	}
	kvctl_price_format(v, money, sizeof(money));
	snprintf(buf, len, "%s%s", money, bare ? "" : f->kind == K_PRICE ? " / 1M tokens" :
	    f->off == offsetof(struct kv_price, code_exec_hour) ? " / hour" : " / call");
}

const char *
kvctl_price_rule_name(enum kv_price_rule r)
{
	static const char *const names[] = { "file", "ini", "glob", "default", "refused",
	    "override" };

	return names[r];
}

/* Is F one of the figures P's [price] section sets over its file entry? */
static int
section_sets(const struct kv_price *p, const struct pfield *f)
{
	return p->src == KV_PRICE_OVERRIDE && (p->set >> kv_price_bit(f->off) & 1) != 0;
}

/* Is F one the [price GLOB]s matching P's file entry give (pricetab.c)? */
static int
glob_gives(const struct kv_price *p, const struct pfield *f)
{
	return p->src != KV_PRICE_INI && (p->globbed >> kv_price_bit(f->off) & 1) != 0;
}

/* The labels of the figures P's section sets (its globs give, if GLOBS),
 * ", " between them: "web search, max output". */
static void
section_fields(const struct kv_price *p, int globs, char *buf, size_t len)
{
	size_t i, k = 0;
	int n;

	buf[0] = '\0';
	for (i = 0; i < NFIELDS; i++) {
		if (globs ? !glob_gives(p, &kvctl_price_fields[i]) : !section_sets(p, &kvctl_price_fields[i]))
			continue;
		n = snprintf(buf + k, len - k, "%s%s", k ? ", " : "", kvctl_price_fields[i].label);
		if (n < 0 || (size_t)n >= len - k)
			return;
		k += (size_t)n;
	}
}

/* " + [price GLOB] for: web search, priority input" after BUF's text:
 * what the globs matching a file entry give it. */
static void
glob_source(const struct kv_config *cf, const struct priced *m, char *buf, size_t len)
{
	char fields[1024];
	size_t k = strlen(buf);

	if (m->p == NULL || m->p->glob_from == 0 ||
	    (m->rule != KV_RULE_FILE && m->rule != KV_RULE_OVERRIDE))
		return;
	section_fields(m->p, 1, fields, sizeof(fields));
	if (snprintf(buf + k, len - k, " + [price %s] for: %s",
	    cf->prices[m->p->glob_from - 1].model, fields) < 0)
		buf[k] = '\0';
}

/* Where the rule's price was written: the file, the section, or the
 * file's entry under the section's figures. */
void
kvctl_price_rule_source(const struct kv_config *cf, const struct priced *m, char *buf, size_t len)
{
	char fields[1024];
	int n = 0;

	/* the older-family rule: why the glob that matches does not price it */
	if (m->older != NULL) {
		n = snprintf(buf, len, "newer than the family [price %s] was written for; ",
		    m->older->model);
		if (n < 0 || (size_t)n >= len)
			return;
		buf += n;
		len -= (size_t)n;
	}
	if (m->p == NULL)
		snprintf(buf, len, "%s", cf->unknown_models_deny ? "unknown_models = deny" :
		    "no [price] section matches, and no [price default]");
	else if (m->rule == KV_RULE_FILE)
		snprintf(buf, len, "%s", cf->prices_file);
	else if (m->rule == KV_RULE_DEFAULT)
		snprintf(buf, len, "[price default]");
	else if (m->rule == KV_RULE_OVERRIDE) {
		section_fields(m->p, 0, fields, sizeof(fields));
		/* a path near PATH_MAX may cut the field list: shown, not parsed */
		if (snprintf(buf, len, "%s entry + [price %s] override: %s", cf->prices_file,
		    m->p->model, fields) < 0)
			buf[0] = '\0';
	} else
		snprintf(buf, len, "[price %s]", m->p->model);
	glob_source(cf, m, buf, len);
}

void
kvctl_price_lookup(const struct kv_config *cf, const char *model, struct priced *m)
{
	kvctl_price_lookup_for(cf, KV_PROVIDER_AUTO, NULL, model, m);
}

void
kvctl_price_lookup_for(const struct kv_config *cf, int provider, const char *region,
    const char *model, struct priced *m)
{
	m->model = model;
	m->p = kv_price_find_in(cf, provider, region, model, &m->rule, &m->older);
}

const char *
kvctl_price_provider(const struct kv_config *cf, const struct kv_price *p)
{
	if (p == NULL || p->prov == 0 || p->prov > cf->nprice_prov)
		return NULL;
	return cf->price_prov[p->prov - 1];
}

void
kvctl_price_json(FILE *f, const struct kv_config *cf, const struct priced *m)
{
	static const char *const groups[] = { "prices", "fees", "limits", "multipliers" };
	static const char *const suffix[] = { "_per_1m_nusd", "_nusd", "_tokens", "_x1e9" };
	char src[4200];
	const char *sep;
	size_t i;
	int64_t v;
	int k;

	kvctl_price_rule_source(cf, m, src, sizeof(src));
	fputs("{\"model\":", f);
	kv_json_write_string(f, m->model);
	fprintf(f, ",\"rule\":\"%s\",\"source\":", kvctl_price_rule_name(m->rule));
	kv_json_write_string(f, src);
	if (m->p != NULL && m->p->model[0] != '\0' && strcmp(m->p->model, m->model) != 0) {
		fputs(",\"section\":", f);
		kv_json_write_string(f, m->p->model);
	}
	if (kvctl_price_provider(cf, m->p) != NULL) {
		fputs(",\"provider\":", f);
		kv_json_write_string(f, kvctl_price_provider(cf, m->p));
	}
	if (m->older != NULL) {
		fputs(",\"older_family\":", f);
		kv_json_write_string(f, m->older->model);
	}
	/* an override: which figures are the section's, by their JSON names */
	for (i = 0, sep = ""; m->p != NULL && m->rule == KV_RULE_OVERRIDE && i < NFIELDS; i++) {
		if (!section_sets(m->p, &kvctl_price_fields[i]))
			continue;
		fprintf(f, "%s\"%s%s\"", *sep == '\0' ? ",\"override\":[" : ",",
		    kvctl_price_fields[i].json, suffix[kvctl_price_fields[i].kind]);
		sep = ",";
	}
	if (*sep != '\0')
		fputc(']', f);
	/* the figures the [price GLOB]s over a file entry give */
	if (m->p != NULL && m->p->glob_from != 0 &&
	    (m->rule == KV_RULE_FILE || m->rule == KV_RULE_OVERRIDE)) {
		fputs(",\"glob\":", f);
		kv_json_write_string(f, cf->prices[m->p->glob_from - 1].model);
		for (i = 0, sep = ",\"from_glob\":["; i < NFIELDS; i++)
			if (glob_gives(m->p, &kvctl_price_fields[i])) {
				fprintf(f, "%s\"%s%s\"", sep, kvctl_price_fields[i].json,
				    suffix[kvctl_price_fields[i].kind]);
				sep = ",";
			}
		fputc(']', f);
	}
	/* prices are nano-USD per 1M tokens, fees nano-USD each */
	for (k = 0; k < 4; k++) {
		fprintf(f, ",\"%s\":{", groups[k]);
		for (i = 0, sep = ""; m->p != NULL && i < NFIELDS; i++) {
			if (kvctl_price_fields[i].kind != k || (v = kvctl_price_field_value(m->p, &kvctl_price_fields[i])) < 0)
				continue;
			fprintf(f, "%s\"%s%s\":%" PRId64, sep, kvctl_price_fields[i].json, suffix[k], v);
			sep = ",";
		}
		fputc('}', f);
	}
	fputc('}', f);
}

/* The LiteLLM catalogue loader (catalog.h). Each entry's fields go through
 * one table: a price field is converted from its decimal text exactly
 * (kv_jr_decimal, USD per token x 10^15 = nano-USD per 1M tokens); a field
 * that only describes the model (supports_*, mode, ...) is passed over; any
 * other field is one kilovolt does not understand and is counted by name,
 * never guessed at. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "common/catalog.h"
#include "common/jsonread.h"
#include "common/money.h"

#define SCALE_PER_TOKEN	15	/* USD/token -> nano-USD per 1M tokens */
#define SCALE_USD	9	/* USD -> nano-USD */
#define ENTRY_UNKNOWN	32	/* unknown fields remembered per entry */
#define CATALOG_MAX	(64u << 20)	/* bytes: far past the 1.5 MB file */

enum { F_PRICE, F_TOKENS, F_LONG, F_SEARCH, F_MULT, F_PSE };

struct field {
	const char	*name;
	size_t		 off;
	int		 kind;
};

#define P(f)	offsetof(struct kv_price, f)
static const struct field fields[] = {
	{ "input_cost_per_token",		P(input),		F_PRICE },
	{ "output_cost_per_token",		P(output),		F_PRICE },
	{ "cache_read_input_token_cost",	P(cached_input),	F_PRICE },
	{ "cache_creation_input_token_cost",	P(cache_write),		F_PRICE },
	{ "cache_creation_input_token_cost_above_1hr", P(cache_write_1h), F_PRICE },
	{ "input_cost_per_token_priority",	P(priority_input),	F_PRICE },
	{ "output_cost_per_token_priority",	P(priority_output),	F_PRICE },
	{ "cache_read_input_token_cost_priority", P(priority_cached),	F_PRICE },
	{ "cache_creation_input_token_cost_priority", P(priority_write), F_PRICE },
	{ "input_cost_per_token_flex",		P(flex_input),		F_PRICE },
	{ "output_cost_per_token_flex",		P(flex_output),		F_PRICE },
	{ "cache_read_input_token_cost_flex",	P(flex_cached),		F_PRICE },
	{ "cache_creation_input_token_cost_flex", P(flex_write),	F_PRICE },
	{ "input_cost_per_token_batches",	P(batch_input),		F_PRICE },
	{ "output_cost_per_token_batches",	P(batch_output),	F_PRICE },
	{ "input_cost_per_audio_token",		P(audio_input),		F_PRICE },
	{ "output_cost_per_audio_token",	P(audio_output),	F_PRICE },
	{ "output_cost_per_reasoning_token",	P(reasoning_output),	F_PRICE },
	{ "max_input_tokens",			P(max_input),		F_TOKENS },
	{ "max_output_tokens",			P(max_output),		F_TOKENS },
	{ "search_context_cost_per_query",	P(web_search_call),	F_SEARCH },
	{ "regional_processing_uplift_multiplier_us", P(region_us_mult), F_MULT },
	{ "regional_processing_uplift_multiplier_eu", P(region_eu_mult), F_MULT },
	/* {"fast": 6, "us": 1.1}: Anthropic's fast mode and US-only inference */
	{ "provider_specific_entry",		0,			F_PSE },
	/* BASE_above_NNNk_tokens: the long-context tier */
	{ "input_cost_per_token",		P(long_context_input),	F_LONG },
	{ "output_cost_per_token",		P(long_context_output),	F_LONG },
	{ "cache_read_input_token_cost",	P(long_context_cached),	F_LONG },
	{ "cache_creation_input_token_cost",	P(long_context_write),	F_LONG },
	{ "cache_creation_input_token_cost_above_1hr", P(long_context_write_1h), F_LONG },
};
#undef P

/* Fields that describe a model without changing what a request costs. */
static int
informational(const char *k)
{
	static const char *const names[] = {
		"litellm_provider", "mode", "max_tokens", "source", "metadata",
		"deprecation_date", "prompt_cache_min_tokens", "output_vector_size",
		"tpm", "rpm", "comment", "use_openai_responses_path", "uses_embed_content",
		"web_search_billing_unit", "audio_transcription_config",
		/* the hidden tool prompt: reserved by kilovolt's own table
		 * (worker/tool_prompts.c), billed as input tokens */
		"tool_use_system_prompt_tokens",
		/* Databricks' DBU figures: input/output_cost_per_token are
		 * the same prices in USD (DBUs x $0.070) */
		"input_dbu_cost_per_token", "output_dbu_cost_per_token",
	};
	size_t i;

	if (strncmp(k, "supports_", 9) == 0 || strncmp(k, "supported_", 10) == 0 ||
	    strncmp(k, "bedrock_", 8) == 0 || strncmp(k, "gemini_", 7) == 0)
		return 1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(k, names[i]) == 0)
			return 1;
	return 0;
}

/* One entry while it is read: its provider is known only at its end. */
struct entry {
	struct kv_price	 p;
	/* figures kilovolt derives from others, checked at the end */
	int64_t		 hit;		/* input_cost_per_token_cache_hit */
	int64_t		 lcp[3];	/* BASE_above_NNNk_tokens_priority: in, out, cached */
	int64_t		 lcp_threshold;
	char		 lcp_name[64];	/* the first one's name */
	char		 provider[64];
	char		 mode[32];	/* "mode": what the model is for */
	char		 unknown[ENTRY_UNKNOWN][64];
	size_t		 nunknown;
	int		 inexact;
	char		 bad[160];	/* first value of the wrong type */
};

void
kv_price_unset(struct kv_price *p, const char *model)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->model, sizeof(p->model), "%s", model);
	p->input = p->output = -1;
	p->cached_input = p->cache_write = p->cache_write_1h = -1;
	p->max_output = p->context_window = p->max_input = -1;
	p->long_context_input = p->long_context_output = -1;
	p->long_context_cached = p->long_context_write = p->long_context_write_1h = -1;
	p->priority_input = p->priority_output = p->priority_cached = p->priority_write = -1;
	p->flex_input = p->flex_output = p->flex_cached = p->flex_write = -1;
	p->batch_input = p->batch_output = -1;
	p->fast_mult = p->geo_us_mult = p->region_us_mult = p->region_eu_mult = -1;
	p->audio_input = p->audio_output = p->reasoning_output = -1;
	p->web_search_call = p->web_fetch_call = p->code_exec_hour = -1;
}

static void
entry_unknown(struct entry *e, const char *k)
{
	if (e->nunknown < ENTRY_UNKNOWN)
		if (snprintf(e->unknown[e->nunknown++], sizeof(e->unknown[0]), "%s", k) < 0)
			e->unknown[e->nunknown - 1][0] = '\0';	/* a long name is cut */
}

static void
entry_bad(struct kv_jr *jr, struct entry *e, const char *k, const char *what)
{
	if (e->bad[0] == '\0')
		if (snprintf(e->bad, sizeof(e->bad), "%d:%ld: %s: %s", jr->line,
		    (long)(jr->p - jr->line_start) + 1, k, what) < 0)
			e->bad[0] = '\0';	/* a long message is cut */
}

/* A number field at SCALE into *dst; a value of another type is noted. */
static int
read_scaled(struct kv_jr *jr, struct entry *e, const char *k, int scale, int64_t *dst)
{
	const char *t;
	size_t n;
	long long v;
	int inexact;

	if (kv_jr_peek(jr) != KV_JR_NUMBER) {
		if (!jr->failed)
			entry_bad(jr, e, k, "expected a number");
		return kv_jr_skip(jr);
	}
	if (kv_jr_number(jr, &t, &n) == -1)
		return -1;
	if (kv_jr_decimal(t, n, scale, &v, &inexact) == -1) {
		entry_bad(jr, e, k, "negative or too large");
		return 0;
	}
	if (inexact && scale == 0) {
		entry_bad(jr, e, k, "expected a whole number of tokens");
		return 0;
	}
	e->inexact |= inexact;
	*dst = v;
	return 0;
}

/* An object field K's value: 1 entered; 0 not an object (noted and
 * skipped); -1 the JSON is broken. */
static int
enter_object(struct kv_jr *jr, struct entry *e, const char *k)
{
	if (kv_jr_peek(jr) != KV_JR_OBJECT) {
		if (!jr->failed)
			entry_bad(jr, e, k, "expected an object");
		return kv_jr_skip(jr);
	}
	return kv_jr_enter(jr, KV_JR_OBJECT) == -1 ? -1 : 1;
}

/* search_context_cost_per_query: USD per search by the request's
 * search_context_size. kilovolt does not see the size a response used,
 * so a search costs the "medium" figure (OpenAI's default size), else the
 * dearest one the entry names. */
static int
read_search(struct kv_jr *jr, struct entry *e, const char *k, int64_t *dst)
{
	char name[64];
	int64_t v, medium = -1, most = -1;
	int r;

	if ((r = enter_object(jr, e, k)) != 1)
		return r;
	while ((r = kv_jr_member(jr, name, sizeof(name))) == 1) {
		v = -1;
		if (read_scaled(jr, e, k, SCALE_USD, &v) == -1)
			return -1;
		if (strcmp(name, "search_context_size_medium") == 0)
			medium = v;
		if (v > most)
			most = v;
	}
	if (r == -1)
		return -1;
	*dst = medium >= 0 ? medium : most;
	return 0;
}

/* provider_specific_entry: multipliers by name, x 10^9 like a USD figure.
 * A name kilovolt does not apply is counted as "provider_specific_entry.
 * NAME", never guessed at. */
static int
read_pse(struct kv_jr *jr, struct entry *e, const char *k)
{
	char name[64], full[200];
	int64_t v, *dst;
	int r;

	if ((r = enter_object(jr, e, k)) != 1)
		return r;
	while ((r = kv_jr_member(jr, name, sizeof(name))) == 1) {
		dst = strcmp(name, "fast") == 0 ? &e->p.fast_mult :
		    strcmp(name, "us") == 0 ? &e->p.geo_us_mult : NULL;
		/* the name of the body Bedrock's InvokeModel takes: no price */
		if (strcmp(name, "bedrock_invocation_schema") == 0) {
			if (kv_jr_skip(jr) == -1)
				return -1;
			continue;
		}
		if (dst == NULL) {
			if (snprintf(full, sizeof(full), "%.100s.%s", k, name) < 0)
				full[0] = '\0';
			entry_unknown(e, full);
			if (kv_jr_skip(jr) == -1)
				return -1;
			continue;
		}
		v = -1;
		if (read_scaled(jr, e, k, SCALE_USD, &v) == -1)
			return -1;
		*dst = v;
	}
	return r == -1 ? -1 : 0;
}

/* "BASE_above_NNNk_tokens" -> BASE's length and NNN x 1000 tokens. */
static int
long_context_name(const char *k, size_t *baselen, int64_t *threshold)
{
	const char *a = strstr(k, "_above_"), *d;
	int64_t n = 0;

	/* the last one: cache_creation_input_token_cost_above_1hr_above_200k_tokens */
	while (a != NULL && strstr(a + 1, "_above_") != NULL)
		a = strstr(a + 1, "_above_");
	if (a == NULL)
		return -1;
	for (d = a + 7; *d >= '0' && *d <= '9' && n < 100000; d++)
		n = n * 10 + (*d - '0');
	if (d == a + 7 || strcmp(d, "k_tokens") != 0 || n == 0)
		return -1;
	*baselen = (size_t)(a - k);
	*threshold = n * 1000;
	return 0;
}

static const struct field *
field_of(const char *k, int64_t *threshold)
{
	size_t i, baselen;

	*threshold = 0;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i].kind != F_LONG && strcmp(fields[i].name, k) == 0)
			return &fields[i];
	if (long_context_name(k, &baselen, threshold) == -1)
		return NULL;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (fields[i].kind == F_LONG && strlen(fields[i].name) == baselen &&
		    strncmp(fields[i].name, k, baselen) == 0)
			return &fields[i];
	return NULL;
}

/* BASE_above_NNNk_tokens_priority, BASE the input, output or cache read
 * price: where it goes in E, or NULL when K is none of those or names
 * another threshold than the entry's first. */
static int64_t *
lcp_field(struct entry *e, const char *k)
{
	static const char *const bases[] = { "input_cost_per_token", "output_cost_per_token",
		"cache_read_input_token_cost" };
	char base[128];
	size_t n = strlen(k), baselen, i;
	int64_t th;

	if (n <= 9 || n - 9 >= sizeof(base) || strcmp(k + n - 9, "_priority") != 0)
		return NULL;
	memcpy(base, k, n - 9);
	base[n - 9] = '\0';
	if (long_context_name(base, &baselen, &th) == -1 ||
	    (e->lcp_threshold > 0 && th != e->lcp_threshold))
		return NULL;
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (strlen(bases[i]) == baselen && strncmp(bases[i], base, baselen) == 0) {
			e->lcp_threshold = th;
			if (e->lcp_name[0] == '\0')
				snprintf(e->lcp_name, sizeof(e->lcp_name), "%.63s", k);
			return &e->lcp[i];
		}
	return NULL;
}

static int
read_field(struct kv_jr *jr, struct entry *e, const char *k)
{
	const struct field *f;
	int64_t th, *dst;

	if (strcmp(k, "litellm_provider") == 0 || strcmp(k, "mode") == 0) {
		if (kv_jr_peek(jr) == KV_JR_STRING)
			return k[0] == 'm' ? kv_jr_string(jr, e->mode, sizeof(e->mode)) :
			    kv_jr_string(jr, e->provider, sizeof(e->provider));
		return kv_jr_skip(jr);
	}
	/* DeepSeek's name for the cache-read price */
	if (strcmp(k, "input_cost_per_token_cache_hit") == 0)
		return read_scaled(jr, e, k, SCALE_PER_TOKEN, &e->hit);
	if ((dst = lcp_field(e, k)) != NULL)
		return read_scaled(jr, e, k, SCALE_PER_TOKEN, dst);
	f = field_of(k, &th);
	/* one long-context threshold per entry: a second one is not understood */
	if (f != NULL && f->kind == F_LONG && e->p.long_context_threshold > 0 &&
	    th != e->p.long_context_threshold)
		f = NULL;
	if (f == NULL) {
		if (!informational(k))
			entry_unknown(e, k);
		return kv_jr_skip(jr);
	}
	dst = (int64_t *)(void *)((char *)&e->p + f->off);
	if (f->kind == F_LONG)
		e->p.long_context_threshold = th;
	if (f->kind == F_SEARCH)
		return read_search(jr, e, k, dst);
	if (f->kind == F_PSE)
		return read_pse(jr, e, k);
	return read_scaled(jr, e, k, f->kind == F_TOKENS ? 0 : f->kind == F_MULT ? SCALE_USD :
	    SCALE_PER_TOKEN, dst);
}

void
kv_catalog_providers(const struct kv_config *cf, const char **prov)
{
	size_t np = 0, i;

	prov[np++] = "openai";
	prov[np++] = "anthropic";
	/* an upstream of a provider kind is priced by its kind's rules
	 * (pricetab.c), whatever its name */
	for (i = 0; cf != NULL && i < cf->nupstreams && np < KV_CATALOG_PROVIDERS_MAX - 1; i++)
		if (cf->upstreams[i].target_of == 0 &&
		    cf->upstreams[i].provider == KV_PROVIDER_AUTO)
			prov[np++] = cf->upstreams[i].name;
	prov[np] = NULL;
}

static int
keep_provider(const char *const *providers, const char *name)
{
	if (name[0] == '\0')
		return 0;
	if (providers == NULL)
		return 1;
	for (; *providers != NULL; providers++)
		if (strcmp(*providers, name) == 0)
			return 1;
	return 0;
}

/* Count NAME in TAB: 1 + its index, or 0 when the table is full. */
static size_t
count_name(struct kv_catalog_count *tab, size_t *n, size_t max, size_t *more,
    const char *name)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(tab[i].name, name) == 0) {
			tab[i].n++;
			return i + 1;
		}
	if (*n == max) {
		if (more != NULL)
			(*more)++;
		return 0;
	}
	snprintf(tab[*n].name, sizeof(tab[0].name), "%s", name);
	tab[(*n)++].n = 1;
	return *n;
}

/* A tier the catalogue gives only one side of costs the standard price on
 * the other side (as LiteLLM reads it); kv_cost wants both. */
static void
entry_complete(struct kv_price *p)
{
	if ((p->priority_input >= 0) != (p->priority_output >= 0)) {
		if (p->priority_input < 0)
			p->priority_input = p->input;
		else
			p->priority_output = p->output;
	}
	if ((p->flex_input >= 0) != (p->flex_output >= 0)) {
		if (p->flex_input < 0)
			p->flex_input = p->input;
		else
			p->flex_output = p->output;
	}
	if (p->long_context_threshold > 0) {
		if (p->long_context_input < 0)
			p->long_context_input = p->input;
		if (p->long_context_output < 0)
			p->long_context_output = p->output;
	}
	p->src = KV_PRICE_FILE;
}

/* The long-context priority prices: kilovolt charges a priority request
 * past the threshold the long-context prices scaled by the priority tier
 * (money.c rates_for, which needs the long-context input price to differ
 * from the standard one); the catalogue's own figures are understood when
 * they are exactly that. */
static int
lcp_exact(const struct entry *e)
{
	const struct kv_price *p = &e->p;
	int64_t lin = p->long_context_input >= 0 ? p->long_context_input : p->input;
	int64_t lout = p->long_context_output >= 0 ? p->long_context_output : p->output;
	int64_t cached = p->cached_input >= 0 ? p->cached_input : p->input;
	int64_t pin, pout, lcached;

	if (e->lcp_threshold != p->long_context_threshold || p->priority_input < 0 ||
	    lin == p->input)
		return 0;
	pin = kv_price_scaled(lin, p->priority_input, p->input);
	pout = kv_price_scaled(lout, p->priority_output >= 0 ? p->priority_output : p->output,
	    p->output);
	lcached = p->long_context_cached >= 0 ? p->long_context_cached :
	    kv_price_scaled(cached, lin, p->input);
	return (e->lcp[0] < 0 || e->lcp[0] == pin) && (e->lcp[1] < 0 || e->lcp[1] == pout) &&
	    (e->lcp[2] < 0 || e->lcp[2] == kv_price_scaled(lcached, pin, lin));
}

/* Figures kilovolt derives from others: understood when they are what it
 * would charge, else named as not understood. */
static void
entry_derived(struct entry *e)
{
	if (e->hit >= 0) {
		if (e->p.cached_input < 0)
			e->p.cached_input = e->hit;
		else if (e->p.cached_input != e->hit)
			entry_unknown(e, "input_cost_per_token_cache_hit");
	}
	if (e->lcp_name[0] != '\0' && !lcp_exact(e))
		entry_unknown(e, e->lcp_name);
}

struct parse {
	struct kv_jr	 jr;
	const char *const *providers;
	const char	*ignore;
	struct kv_price	**out;
	size_t		*nout;
	size_t		 cap;
	struct kv_catalog_stats *st;
};

static int
parse_fail(struct parse *ps, const char *what)
{
	return kv_jr_fail(&ps->jr, what);
}

/* Is W one of LIST's blank-separated words? */
static int
word_in(const char *list, const char *w)
{
	size_t n = strlen(w), k;
	const char *s = list;

	while (*(s += strspn(s, " \t")) != '\0') {
		k = strcspn(s, " \t");
		if (k == n && memcmp(s, w, n) == 0)
			return 1;
		s += k;
	}
	return 0;
}

/* Is MODE ("" when the entry has none) one kilovolt meters? Realtime,
 * speech, transcription and image-generation entries are priced for
 * endpoints it does not relay. */
static int
served_mode(const char *mode)
{
	return mode[0] == '\0' || strcmp(mode, "chat") == 0 || strcmp(mode, "completion") == 0 ||
	    strcmp(mode, "responses") == 0 || strcmp(mode, "embedding") == 0;
}

static void
count_served(struct kv_catalog_stats *st, const char *field, const char *model)
{
	size_t i;

	for (i = 0; i < st->nserved; i++)
		if (strcmp(st->served[i].name, field) == 0) {
			st->served[i].n++;
			return;
		}
	if (st->nserved == KV_CATALOG_FIELDS)
		return;
	snprintf(st->served[st->nserved].name, sizeof(st->served[0].name), "%s", field);
	if (snprintf(st->served_model[st->nserved], sizeof(st->served_model[0]), "%s",
	    model) < 0)
		st->served_model[st->nserved][0] = '\0';
	st->served[st->nserved++].n = 1;
}

/* An entry of a provider not priced by bare name that prices what
 * kilovolt would not charge (a field it does not understand, on a model
 * it serves, that IGNORE does not name; or a malformed value): not kept,
 * counted by field. 1 when refused. */
static int
entry_refused(struct parse *ps, const struct entry *e, const char *name)
{
	struct kv_catalog_stats *st = ps->st;
	size_t i;
	int bad = e->bad[0] != '\0', refused = bad;

	if (bad)
		count_name(st->refused_field, &st->nrefused_field, KV_CATALOG_FIELDS, NULL,
		    "(a malformed value)");
	for (i = 0; !bad && served_mode(e->mode) && i < e->nunknown; i++)
		if (!word_in(ps->ignore, e->unknown[i])) {
			count_name(st->refused_field, &st->nrefused_field, KV_CATALOG_FIELDS,
			    NULL, e->unknown[i]);
			refused = 1;
		}
	if (refused && st->refused++ == 0 &&
	    snprintf(st->refused_model, sizeof(st->refused_model), "%s", name) < 0)
		st->refused_model[0] = '\0';
	return refused;
}

/* The entry is complete: keep it or count why not. An entry of a
 * provider priced by bare name (PROVIDERS) is held to issue 33's rule: a
 * malformed value fails the load, a field not understood is counted for
 * kv_catalog_unserved; another provider's entry is refused alone. */
static int
entry_done(struct parse *ps, struct entry *e, const char *name)
{
	struct kv_catalog_stats *st = ps->st;
	struct kv_price *grown;
	size_t i;
	int bare;

	if (e->provider[0] == '\0') {
		st->not_models++;
		return 0;
	}
	bare = keep_provider(ps->providers, e->provider);
	if (bare && e->bad[0] != '\0') {
		if (snprintf(ps->jr.err, sizeof(ps->jr.err), "%s (model %.40s)", e->bad, name) < 0)
			ps->jr.err[0] = '\0';	/* a long message is cut */
		ps->jr.failed = 1;
		return -1;
	}
	if (e->bad[0] != '\0')
		return entry_refused(ps, e, name) ? 0 : -1;
	if (e->p.input < 0 || e->p.output < 0) {
		st->unpriced++;
		return 0;
	}
	if (strlen(name) >= KV_NAME_MAX) {
		st->long_names++;
		return 0;
	}
	entry_derived(e);
	if (!bare && entry_refused(ps, e, name))
		return 0;
	for (i = 0; i < e->nunknown; i++) {
		count_name(st->unknown, &st->nunknown, KV_CATALOG_FIELDS, &st->unknown_more,
		    e->unknown[i]);
		if (served_mode(e->mode))
			count_served(st, e->unknown[i], name);
	}
	st->inexact += e->inexact != 0;
	/* the reservation's input bound for fetched content is context_window */
	if (e->p.context_window < 0 && e->p.max_input > 0)
		e->p.context_window = e->p.max_input;
	i = count_name(st->prov, &st->nprov, KV_CATALOG_PROVIDERS, NULL, e->provider);
	e->p.prov = (unsigned short)i;
	e->p.kind = (unsigned char)kv_catalog_kind(e->provider);
	e->p.bare = (unsigned char)bare;
	if (*ps->nout == ps->cap) {
		ps->cap = ps->cap ? ps->cap * 2 : 256;
		grown = realloc(*ps->out, ps->cap * sizeof(**ps->out));
		if (grown == NULL)
			return parse_fail(ps, "out of memory");
		*ps->out = grown;
	}
	snprintf(e->p.model, sizeof(e->p.model), "%s", name);
	entry_complete(&e->p);
	(*ps->out)[(*ps->nout)++] = e->p;
	st->kept++;
	return 0;
}

static int
parse_entry(struct parse *ps, const char *name)
{
	struct entry e;
	char k[128];
	int r;

	ps->st->entries++;
	if (strcmp(name, "sample_spec") == 0 || kv_jr_peek(&ps->jr) != KV_JR_OBJECT) {
		ps->st->not_models++;
		return kv_jr_skip(&ps->jr);
	}
	memset(&e, 0, sizeof(e));
	kv_price_unset(&e.p, "");
	e.hit = e.lcp[0] = e.lcp[1] = e.lcp[2] = -1;
	if (kv_jr_enter(&ps->jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((r = kv_jr_member(&ps->jr, k, sizeof(k))) == 1)
		if (read_field(&ps->jr, &e, k) == -1)
			return -1;
	if (r == -1)
		return -1;
	return entry_done(ps, &e, name);
}

/* Names are exact entries: the same one twice would leave which price
 * holds to the order of the file. Sorted once, checked once. */
static int
cmp_model(const void *a, const void *b)
{
	return strcmp(((const struct kv_price *)a)->model, ((const struct kv_price *)b)->model);
}

int
kv_catalog_parse(const char *buf, size_t len, const char *const *providers,
    const char *ignore, struct kv_price **out, size_t *nout, struct kv_catalog_stats *st,
    char *err, size_t errlen)
{
	struct parse ps;
	char name[1024];
	size_t i, first = *nout;
	int r;

	memset(&ps, 0, sizeof(ps));
	memset(st, 0, sizeof(*st));
	kv_jr_init(&ps.jr, buf, len);
	ps.providers = providers;
	ps.ignore = ignore != NULL ? ignore : "";
	ps.out = out;
	ps.nout = nout;
	ps.cap = *nout;
	ps.st = st;
	if (kv_jr_enter(&ps.jr, KV_JR_OBJECT) == -1)
		goto fail;
	while ((r = kv_jr_member(&ps.jr, name, sizeof(name))) == 1)
		if (parse_entry(&ps, name) == -1)
			goto fail;
	if (r == -1 || kv_jr_finish(&ps.jr) == -1)
		goto fail;
	if (*nout > first)
		qsort(*out + first, *nout - first, sizeof(**out), cmp_model);
	for (i = first + 1; i < *nout; i++)
		if (strcmp((*out)[i - 1].model, (*out)[i].model) == 0) {
			snprintf(err, errlen, "model %s is named twice", (*out)[i].model);
			return -1;
		}
	return 0;
fail:
	snprintf(err, errlen, "%s", ps.jr.err);
	return -1;
}

static char *
read_all(const char *file, size_t *len, char *err, size_t errlen)
{
	struct stat sb;
	char *buf = NULL;
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &sb) == -1) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(sb.st_mode) || (size_t)sb.st_size > CATALOG_MAX) {
		snprintf(err, errlen, "%s: not a regular file of at most %u MB", file,
		    CATALOG_MAX >> 20);
		goto fail;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (buf == NULL) {
		snprintf(err, errlen, "%s: out of memory", file);
		goto fail;
	}
	while (got < (size_t)sb.st_size) {
		n = read(fd, buf + got, (size_t)sb.st_size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "%s: %s", file, n == 0 ? "file shrank while read" :
			    strerror(errno));
			goto fail;
		}
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
fail:
	if (fd != -1)
		close(fd);
	free(buf);
	return NULL;
}

int
kv_catalog_load(const char *file, const char *const *providers, const char *ignore,
    struct kv_price **out, size_t *nout, struct kv_catalog_stats *st,
    char *err, size_t errlen)
{
	char why[192];
	size_t len;
	char *buf = read_all(file, &len, err, errlen);
	int r;

	if (buf == NULL)
		return -1;
	r = kv_catalog_parse(buf, len, providers, ignore, out, nout, st, why, sizeof(why));
	free(buf);
	if (r == -1)
		snprintf(err, errlen, "%s: %s", file, why);
	return r;
}

int
kv_catalog_unserved(const struct kv_catalog_stats *st, const char *ignore, char *buf,
    size_t len)
{
	size_t i;

	for (i = 0; i < st->nserved; i++) {
		if (word_in(ignore, st->served[i].name))
			continue;
		snprintf(buf, len, "%s on %s%s", st->served[i].name, st->served_model[i],
		    st->served[i].n > 1 ? " and other models" : "");
		return -1;
	}
	return 0;
}

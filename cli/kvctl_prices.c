/* kvctl prices: the prices a config puts in effect (its catalogue file,
 * its [price] sections, their globs and the default); --check, what a
 * refreshed catalogue would change, is kvctl_prices_check.c. It reads the config, not the ledger:
 * prices are not in shared memory, and the daemon loads the same file the
 * same way (kv_config_load), at start-up and on SIGHUP. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"
#include "cli/kvctl_prices.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/catalog.h"
#include "common/config.h"
#include "common/jsonline.h"
#include "common/pricetab.h"
#include "shm/report.h"

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
	    "audio input tokens (prompt_tokens_details.audio_tokens); reserved for input_audio and audio.id" },
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
static void
format_price(int64_t nusd, char *buf, size_t len)
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
		format_price(v, money, sizeof(money));
		snprintf(buf, len, "%sx%s", money + 1, bare ? "" : " every token price");
		return;
	}
	format_price(v, money, sizeof(money));
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
	m->model = model;
	m->p = kv_price_lookup(cf, model, &m->rule, &m->older);
}

/* ---- showing ------------------------------------------------------------ */

static void
print_detail(FILE *f, const struct kv_config *cf, const struct priced *m)
{
	char src[4200], v[64];
	size_t i;

	kvctl_price_rule_source(cf, m, src, sizeof(src));
	fprintf(f, "%s: %s (%s)\n", m->model, kvctl_price_rule_name(m->rule), src);
	for (i = 0; m->p != NULL && i < NFIELDS; i++)
		if (kvctl_price_field_value(m->p, &kvctl_price_fields[i]) >= 0) {
			kvctl_price_format_field(&kvctl_price_fields[i], kvctl_price_field_value(m->p, &kvctl_price_fields[i]), 0, v, sizeof(v));
			fprintf(f, "  %-22s %-24s %s\n", kvctl_price_fields[i].label, v, kvctl_price_fields[i].how);
		}
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

static int
cmp_price_name(const void *a, const void *b)
{
	return strcmp((*(const struct kv_price *const *)a)->model,
	    (*(const struct kv_price *const *)b)->model);
}

/* Every exact entry and glob, by name, then the default. */
static int
collect_all(const struct kv_config *cf, struct priced **out, size_t *n)
{
	const struct kv_price **all;
	size_t i, k = 0;

	all = malloc((cf->nprices + 1) * sizeof(*all));
	*out = calloc(cf->nprices + 1, sizeof(**out));
	if (all == NULL || *out == NULL) {
		free(all);
		free(*out);
		return -1;
	}
	for (i = 0; i < cf->nprices; i++)
		all[i] = &cf->prices[i];
	qsort(all, cf->nprices, sizeof(*all), cmp_price_name);
	for (i = 0; i < cf->nprices; i++) {
		(*out)[k].model = all[i]->model;
		(*out)[k].p = all[i];
		(*out)[k++].rule = all[i]->src == KV_PRICE_FILE ? KV_RULE_FILE :
		    all[i]->src == KV_PRICE_OVERRIDE ? KV_RULE_OVERRIDE :
		    strchr(all[i]->model, '*') != NULL ? KV_RULE_GLOB : KV_RULE_INI;
	}
	if (cf->has_default_price)
		(*out)[k++] = (struct priced){ "default", &cf->default_price, KV_RULE_DEFAULT, NULL };
	free(all);
	*n = k;
	return 0;
}

static void
print_table(FILE *f, const struct kv_config *cf, const struct priced *ms, size_t n)
{
	static const size_t cols[] = { offsetof(struct kv_price, input),
	    offsetof(struct kv_price, output), offsetof(struct kv_price, cached_input),
	    offsetof(struct kv_price, cache_write) };
	char v[40], sources[4608];
	size_t i, c, w = 5;
	int64_t x;

	if (cf->prices_file[0] != '\0')
		fprintf(f, "catalogue %s: %s\n", cf->prices_file, cf->prices_summary);
	kv_pricetab_sources(cf, sources, sizeof(sources));
	fprintf(f, "%s\n", sources);
	fprintf(f, "USD per 1M tokens; kvctl prices MODEL shows every price of a model\n\n");
	for (i = 0; i < n; i++)
		if (strlen(ms[i].model) > w)
			w = strlen(ms[i].model);
	fprintf(f, "%-*s  %-8s  %12s  %12s  %12s  %12s\n", (int)w, "MODEL", "RULE", "INPUT",
	    "OUTPUT", "CACHED", "CACHE WRITE");
	for (i = 0; i < n; i++) {
		fprintf(f, "%-*s  %-8s", (int)w, ms[i].model, kvctl_price_rule_name(ms[i].rule));
		for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
			x = *(const int64_t *)(const void *)((const char *)ms[i].p + cols[c]);
			if (x < 0)
				snprintf(v, sizeof(v), "-");
			else
				format_price(x, v, sizeof(v));
			fprintf(f, "  %12s", v);
		}
		fputc('\n', f);
	}
}

static int
show_prices(const struct kv_config *cf, char **models, int nmodels, int json)
{
	struct priced *ms;
	size_t n, i;
	int rc = KVCTL_EXIT_OK;

	if (nmodels == 0) {
		if (collect_all(cf, &ms, &n) == -1) {
			perror("kvctl");
			return KVCTL_EXIT_USAGE;
		}
	} else {
		n = (size_t)nmodels;
		if ((ms = calloc(n, sizeof(*ms))) == NULL) {
			perror("kvctl");
			return KVCTL_EXIT_USAGE;
		}
		for (i = 0; i < n; i++) {
			kvctl_price_lookup(cf, models[i], &ms[i]);
			if (ms[i].p == NULL)
				rc = KVCTL_EXIT_NOTFOUND;	/* refused: a script's "not found" */
		}
	}
	if (json) {
		fputs("{\"prices\":[", stdout);
		for (i = 0; i < n; i++) {
			fputs(i ? "," : "", stdout);
			kvctl_price_json(stdout, cf, &ms[i]);
		}
		fputs("]}\n", stdout);
	} else if (nmodels == 0) {
		print_table(stdout, cf, ms, n);
	} else {
		for (i = 0; i < n; i++)
			print_detail(stdout, cf, &ms[i]);
	}
	free(ms);
	return rc;
}

/* ---- the command -------------------------------------------------------- */

struct prices_args {
	int		 json;
	const char	*check;
	char		**models;
	int		 nmodels;
};

static int
parse_args(int argc, char **argv, struct prices_args *a)
{
	int i, dashdash = 0;

	memset(a, 0, sizeof(*a));
	if ((a->models = calloc((size_t)argc, sizeof(*a->models))) == NULL) {
		perror("kvctl");
		return KVCTL_EXIT_USAGE;
	}
	for (i = 1; i < argc; i++) {
		if (!dashdash && strcmp(argv[i], "--") == 0)
			dashdash = 1;
		else if (!dashdash && strcmp(argv[i], "--json") == 0)
			a->json = 1;
		else if (!dashdash && strcmp(argv[i], "--check") == 0 && i + 1 < argc)
			a->check = argv[++i];
		else if (!dashdash && strncmp(argv[i], "--", 2) == 0) {
			fprintf(stderr, "kvctl: prices: %s '%s'\n(kvctl --help for usage)\n",
			    strcmp(argv[i], "--check") == 0 ? "a file is needed after" :
			    "unknown option", argv[i]);
			return KVCTL_EXIT_USAGE;
		} else
			a->models[a->nmodels++] = argv[i];
	}
	if (a->check != NULL && a->nmodels > 0) {
		fputs("kvctl: prices: --check FILE takes no MODEL\n(kvctl --help for usage)\n",
		    stderr);
		return KVCTL_EXIT_USAGE;
	}
	return 0;
}

/* The config: -c, else the default; for --check, no config at all is
 * allowed (the file is only validated). */
static int
load_config(const char *config, int optional, struct kv_config **cf, const char **path)
{
	char err[4400];

	*cf = NULL;
	*path = config != NULL ? config : kv_config_default_path();
	if (config == NULL && optional && access(*path, F_OK) == -1 && errno == ENOENT)
		return 0;
	if ((*cf = calloc(1, sizeof(**cf))) == NULL) {
		perror("kvctl");
		return -1;
	}
	if (kv_config_load(*cf, *path, err, sizeof(err)) == -1) {
		fprintf(stderr, "kvctl: %s\n", err);
		free(*cf);
		*cf = NULL;
		return -1;
	}
	return 0;
}

int
kvctl_prices(const char *config, const char *ledger, int argc, char **argv)
{
	struct prices_args a;
	struct kv_config *cf;
	const char *path;
	int rc;

	if ((rc = parse_args(argc, argv, &a)) != 0) {
		free(a.models);
		return rc;
	}
	if (ledger != NULL && a.check == NULL) {
		fputs("kvctl: prices: needs the config (-c CONFIG), not -l LEDGER: prices are "
		    "not in the ledger\n", stderr);
		free(a.models);
		return KVCTL_EXIT_USAGE;
	}
	/* -l LEDGER --check: the file alone, as without a config */
	cf = NULL;
	path = NULL;
	if (ledger == NULL && load_config(config, a.check != NULL, &cf, &path) == -1) {
		free(a.models);
		return KVCTL_EXIT_USAGE;
	}
	if (a.check != NULL)
		rc = kvctl_prices_check(cf, path, a.check, a.json);
	else
		rc = show_prices(cf, a.models, a.nmodels, a.json);
	if (cf != NULL) {
		kv_config_free(cf);
		free(cf);
	}
	free(a.models);
	return rc;
}

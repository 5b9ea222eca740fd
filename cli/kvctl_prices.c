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

/* ---- showing ------------------------------------------------------------ */

static void
print_detail(FILE *f, const struct kv_config *cf, const struct priced *m)
{
	char src[4200], v[64];
	size_t i;

	kvctl_price_rule_source(cf, m, src, sizeof(src));
	fprintf(f, "%s: %s (%s)\n", m->model, kvctl_price_rule_name(m->rule), src);
	if (kvctl_price_provider(cf, m->p) != NULL)
		fprintf(f, "  %-22s %s\n", "provider", kvctl_price_provider(cf, m->p));
	for (i = 0; m->p != NULL && i < NFIELDS; i++)
		if (kvctl_price_field_value(m->p, &kvctl_price_fields[i]) >= 0) {
			kvctl_price_format_field(&kvctl_price_fields[i], kvctl_price_field_value(m->p, &kvctl_price_fields[i]), 0, v, sizeof(v));
			fprintf(f, "  %-22s %-24s %s\n", kvctl_price_fields[i].label, v, kvctl_price_fields[i].how);
		}
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
	fprintf(f, "%-*s  %-8s  %12s  %12s  %12s  %12s  %s\n", (int)w, "MODEL", "RULE", "INPUT",
	    "OUTPUT", "CACHED", "CACHE WRITE", "PROVIDER");
	for (i = 0; i < n; i++) {
		fprintf(f, "%-*s  %-8s", (int)w, ms[i].model, kvctl_price_rule_name(ms[i].rule));
		for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
			x = *(const int64_t *)(const void *)((const char *)ms[i].p + cols[c]);
			if (x < 0)
				snprintf(v, sizeof(v), "-");
			else
				kvctl_price_format(x, v, sizeof(v));
			fprintf(f, "  %12s", v);
		}
		fprintf(f, "  %s\n", kvctl_price_provider(cf, ms[i].p) != NULL ?
		    kvctl_price_provider(cf, ms[i].p) : "-");
	}
}

/* The ---provider and --region of a lookup. */
struct lookup_as {
	int		 provider;	/* enum kv_provider */
	const char	*region;
};

/* A model a lookup of no kind leaves to [price default] or refuses, that
 * the catalogue prices for a provider kind (a Bedrock id, Vertex's
 * names): say which, and how to see that price. */
static void
print_kind_hint(FILE *f, const struct kv_config *cf, const struct priced *m)
{
	static const char *const kinds[] = { "openai", "anthropic", "bedrock", "gemini",
		"vertex", "azure" };
	const struct kv_price *p;
	enum kv_price_rule rule;
	int k;

	if (m->p != NULL && m->rule != KV_RULE_DEFAULT)
		return;
	for (k = KV_PROVIDER_OPENAI; k <= KV_PROVIDER_AZURE; k++) {
		p = kv_price_find_in(cf, k, NULL, m->model, &rule, NULL);
		if (p == NULL || rule != KV_RULE_FILE)
			continue;
		fprintf(f, "  the catalogue prices it for provider = %s (%s): kvctl prices "
		    "--provider %s %s\n", kinds[k - 1], kvctl_price_provider(cf, p) != NULL ?
		    kvctl_price_provider(cf, p) : "?", kinds[k - 1], m->model);
		return;
	}
}

static int
show_prices(const struct kv_config *cf, char **models, int nmodels, int json,
    const struct lookup_as *as)
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
			kvctl_price_lookup_for(cf, as->provider, as->region, models[i], &ms[i]);
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
		for (i = 0; i < n; i++) {
			print_detail(stdout, cf, &ms[i]);
			if (as->provider == KV_PROVIDER_AUTO)
				print_kind_hint(stdout, cf, &ms[i]);
		}
	}
	free(ms);
	return rc;
}

/* ---- the command -------------------------------------------------------- */

struct prices_args {
	int		 json;
	struct lookup_as as;
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
		else if (!dashdash && strcmp(argv[i], "--region") == 0 && i + 1 < argc)
			a->as.region = argv[++i];
		else if (!dashdash && strcmp(argv[i], "--provider") == 0 && i + 1 < argc &&
		    (a->as.provider = kv_catalog_kind(argv[i + 1])) != KV_PROVIDER_AUTO)
			i++;
		else if (!dashdash && strncmp(argv[i], "--", 2) == 0) {
			fprintf(stderr, "kvctl: prices: %s '%s'\n(kvctl --help for usage)\n",
			    strcmp(argv[i], "--provider") == 0 ? "openai, anthropic, bedrock, "
			    "gemini, vertex or azure is needed after" :
			    strcmp(argv[i], "--check") == 0 || strcmp(argv[i], "--region") == 0 ?
			    "a value is needed after" : "unknown option", argv[i]);
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
		rc = show_prices(cf, a.models, a.nmodels, a.json, &a.as);
	if (cf != NULL) {
		kv_config_free(cf);
		free(cf);
	}
	free(a.models);
	return rc;
}

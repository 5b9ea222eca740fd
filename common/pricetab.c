/* The running price table (pricetab.h): merge, index, lookup. */
#include <stdlib.h>
#include <string.h>

#include "common/pricetab.h"

static int
is_glob(const struct kv_price *p)
{
	size_t n = strlen(p->model);

	return n > 0 && p->model[n - 1] == '*';
}

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct kv_price *)a)->model, ((const struct kv_price *)b)->model);
}

/* The section overrides prices; the catalogue still knows the model's
 * limits, which a contract price does not change. */
static void
inherit_limits(struct kv_price *ini, const struct kv_price *file)
{
	if (ini->max_input < 0)
		ini->max_input = file->max_input;
	if (ini->max_output < 0)
		ini->max_output = file->max_output;
	if (ini->context_window < 0)
		ini->context_window = file->context_window;
}

int
kv_pricetab_merge(struct kv_config *cf, struct kv_price *file, size_t n)
{
	struct kv_price *all, *hit;
	size_t i, k = 0, dropped = 0;

	qsort(file, n, sizeof(*file), cmp_entry);
	for (i = 0; i < cf->nprices; i++) {
		if (is_glob(&cf->prices[i]))
			continue;
		hit = bsearch(&cf->prices[i], file, n, sizeof(*file), cmp_entry);
		if (hit == NULL)
			continue;
		inherit_limits(&cf->prices[i], hit);
		hit->src = -1;	/* replaced */
		dropped++;
	}
	all = malloc((cf->nprices + n - dropped + 1) * sizeof(*all));
	if (all == NULL) {
		free(file);
		return -1;
	}
	if (cf->nprices > 0)
		memcpy(all, cf->prices, cf->nprices * sizeof(*all));
	k = cf->nprices;
	for (i = 0; i < n; i++)
		if (file[i].src != -1)
			all[k++] = file[i];
	free(file);
	free(cf->prices);
	cf->nprices_ini = cf->nprices;
	cf->nprices_file = n;
	cf->nprices_overridden = dropped;
	cf->prices = all;
	cf->nprices = k;
	return kv_pricetab_index(cf);
}

static int
cmp_ptr_name(const void *a, const void *b)
{
	return strcmp((*(const struct kv_price *const *)a)->model,
	    (*(const struct kv_price *const *)b)->model);
}

/* Longest prefix first: the first glob that matches is the best one. */
static int
cmp_ptr_len(const void *a, const void *b)
{
	size_t la = strlen((*(const struct kv_price *const *)a)->model);
	size_t lb = strlen((*(const struct kv_price *const *)b)->model);

	return la < lb ? 1 : la > lb ? -1 : cmp_ptr_name(a, b);
}

void
kv_pricetab_free(struct kv_config *cf)
{
	free(cf->price_exact);
	free(cf->price_glob);
	cf->price_exact = cf->price_glob = NULL;
	cf->nprice_exact = cf->nprice_glob = 0;
}

int
kv_pricetab_index(struct kv_config *cf)
{
	size_t i;

	kv_pricetab_free(cf);
	cf->price_exact = malloc((cf->nprices + 1) * sizeof(*cf->price_exact));
	cf->price_glob = malloc((cf->nprices + 1) * sizeof(*cf->price_glob));
	if (cf->price_exact == NULL || cf->price_glob == NULL) {
		kv_pricetab_free(cf);
		return -1;
	}
	for (i = 0; i < cf->nprices; i++) {
		if (is_glob(&cf->prices[i]))
			cf->price_glob[cf->nprice_glob++] = &cf->prices[i];
		else
			cf->price_exact[cf->nprice_exact++] = &cf->prices[i];
	}
	qsort(cf->price_exact, cf->nprice_exact, sizeof(*cf->price_exact), cmp_ptr_name);
	qsort(cf->price_glob, cf->nprice_glob, sizeof(*cf->price_glob), cmp_ptr_len);
	return 0;
}

static const struct kv_price *
exact_find(const struct kv_config *cf, const char *model)
{
	size_t lo = 0, hi = cf->nprice_exact, m;
	int c;

	while (lo < hi) {
		m = lo + (hi - lo) / 2;
		c = strcmp(model, cf->price_exact[m]->model);
		if (c == 0)
			return cf->price_exact[m];
		if (c < 0)
			hi = m;
		else
			lo = m + 1;
	}
	return NULL;
}

/* A configuration built by hand (unit tests) has no index: the same rule
 * by a scan, exact names first, then the longest glob. */
static const struct kv_price *
scan_find(const struct kv_config *cf, const char *model, enum kv_price_rule *rule)
{
	const struct kv_price *best = NULL;
	size_t i, len, bestlen = 0;

	for (i = 0; i < cf->nprices; i++)
		if (strcmp(cf->prices[i].model, model) == 0) {
			*rule = cf->prices[i].src == KV_PRICE_FILE ? KV_RULE_FILE : KV_RULE_INI;
			return &cf->prices[i];
		}
	for (i = 0; i < cf->nprices; i++) {
		len = strlen(cf->prices[i].model);
		if (len > 0 && cf->prices[i].model[len - 1] == '*' &&
		    kv_glob_match(cf->prices[i].model, model) && (best == NULL || len > bestlen)) {
			best = &cf->prices[i];
			bestlen = len;
		}
	}
	if (best != NULL)
		*rule = KV_RULE_GLOB;
	return best;
}

/* The older-family rule (version_after) is not applied yet: a glob prices
 * every model it matches, as before the catalogue. */
const struct kv_price *
kv_price_lookup(const struct kv_config *cf, const char *model,
    enum kv_price_rule *rule, const struct kv_price **older)
{
	const struct kv_price *hit;
	enum kv_price_rule dummy;
	size_t i;

	if (rule == NULL)
		rule = &dummy;
	if (older != NULL)
		*older = NULL;
	if (model != NULL && cf->price_exact == NULL && cf->price_glob == NULL) {
		if ((hit = scan_find(cf, model, rule)) != NULL)
			return hit;
	} else if (model != NULL && (hit = exact_find(cf, model)) != NULL) {
		*rule = hit->src == KV_PRICE_FILE ? KV_RULE_FILE : KV_RULE_INI;
		return hit;
	}
	for (i = 0; model != NULL && i < cf->nprice_glob; i++) {
		if (!kv_glob_match(cf->price_glob[i]->model, model))
			continue;
		*rule = KV_RULE_GLOB;
		return cf->price_glob[i];
	}
	if (cf->has_default_price && !cf->unknown_models_deny) {
		*rule = KV_RULE_DEFAULT;
		return &cf->default_price;
	}
	*rule = KV_RULE_REFUSED;
	return NULL;
}

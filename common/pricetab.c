/* The running price table (pricetab.h): merge, index, lookup. */
#include <stdlib.h>
#include <string.h>

#include "common/pricetab.h"

const char *
kv_price_rule_name(enum kv_price_rule r)
{
	static const char *const names[] = {
		[KV_RULE_FILE] = "file", [KV_RULE_INI] = "ini", [KV_RULE_GLOB] = "glob",
		[KV_RULE_DEFAULT] = "default", [KV_RULE_REFUSED] = "refused",
	};

	return (unsigned)r < sizeof(names) / sizeof(names[0]) ? names[r] : "?";
}

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

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int
is_sep(char c)
{
	return c == '-' || c == '.' || c == '_';
}

/* The version number that follows PREFIX (plen bytes) in S: "-6" in
 * claude-opus-4-6 after "claude-opus-4", ".2" in gpt-5.2 after "gpt-5";
 * 0 when none does: no digits, or a date or snapshot ("-20250514",
 * "-2024-08-06", "-0613": four digits or more). A prefix that does not end
 * in a version (gpt-4o*, llama-*) has no versions after it: 0. Digits that
 * continue the prefix's own number (claude-opus-45 after claude-opus-4)
 * make a greater number: 1000. */
static long
version_after(const char *s, size_t plen)
{
	const char *r = s + plen;
	size_t end = plen, n = 0;
	long v = 0;

	while (end > 0 && is_sep(s[end - 1]))
		end--;
	if (end == 0 || !is_digit(s[end - 1]))
		return 0;
	if (end == plen && is_digit(*r))
		return 1000;
	if (end == plen && is_sep(*r))
		r++;
	for (; is_digit(r[n]) && n < 4; n++)
		v = v * 10 + (r[n] - '0');
	return n == 0 || n >= 4 ? 0 : v;
}

/* The greatest version any exact entry under GLOB has (see above). */
static long
glob_known_version(const struct kv_config *cf, const struct kv_price *glob, size_t plen)
{
	const struct kv_price *const *lo = cf->price_exact, *const *hi = lo + cf->nprice_exact;
	const struct kv_price *const *m;
	long best = 0, v;

	/* the exact names that start with the prefix are one sorted run */
	while (lo < hi) {
		m = lo + (hi - lo) / 2;
		if (strncmp((*m)->model, glob->model, plen) < 0)
			lo = m + 1;
		else
			hi = m;
	}
	for (; lo < cf->price_exact + cf->nprice_exact &&
	    strncmp((*lo)->model, glob->model, plen) == 0; lo++) {
		v = version_after((*lo)->model, plen);
		if (v > best)
			best = v;
	}
	return best;
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

const struct kv_price *
kv_price_lookup(const struct kv_config *cf, const char *model,
    enum kv_price_rule *rule, const struct kv_price **older)
{
	const struct kv_price *hit;
	enum kv_price_rule dummy;
	size_t i, plen;
	long v;

	if (rule == NULL)
		rule = &dummy;
	if (older != NULL)
		*older = NULL;
	if (model != NULL && (hit = exact_find(cf, model)) != NULL) {
		*rule = hit->src == KV_PRICE_FILE ? KV_RULE_FILE : KV_RULE_INI;
		return hit;
	}
	for (i = 0; model != NULL && i < cf->nprice_glob; i++) {
		if (!kv_glob_match(cf->price_glob[i]->model, model))
			continue;
		plen = strlen(cf->price_glob[i]->model) - 1;
		v = version_after(model, plen);
		if (v > 0 && v > glob_known_version(cf, cf->price_glob[i], plen)) {
			if (older != NULL)
				*older = cf->price_glob[i];
			break;	/* a newer family: not priced as the old one */
		}
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

int64_t
kv_price_input_bound(const struct kv_price *p)
{
	if (p->max_input > 0)
		return p->max_input;
	return p->context_window > 0 ? p->context_window : -1;
}

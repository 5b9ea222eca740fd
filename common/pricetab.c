/* The running price table (pricetab.h): merge, index, lookup. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/glob.h"
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

/* A kv_price's figures are the int64_t fields from input to batch_output,
 * nothing between them: the merge walks them by offset. */
_Static_assert(offsetof(struct kv_price, batch_output) > offsetof(struct kv_price, input) &&
    (offsetof(struct kv_price, batch_output) - offsetof(struct kv_price, input)) %
    sizeof(int64_t) == 0, "kv_price figures are contiguous int64_t");
_Static_assert(KV_PRICE_NFIELDS <= 64, "kv_price.set holds a bit per figure");

static int64_t *
figure(struct kv_price *p, unsigned i)
{
	return &p->input + i;
}

/* Did the section write figure I? Unset is -1, but for the long-context
 * threshold, whose unset is 0 (the ini allows no 0). */
static int
figure_set(const struct kv_price *p, unsigned i)
{
	int64_t v = (&p->input)[i];

	return i == kv_price_bit(offsetof(struct kv_price, long_context_threshold)) ? v > 0 :
	    v >= 0;
}

/* Does the entry P price a request to an upstream of PROVIDER that names
 * it as written? A [price] section (alone or over an entry of its name)
 * prices its name everywhere; a catalogue entry prices it for its
 * provider's kind, and without a kind when its provider is priced by bare
 * name or its name says its provider ("azure/gpt-4o": LiteLLM's rule). */
static int
priced_for(const struct kv_price *p, int provider)
{
	if (p->src != KV_PRICE_FILE)
		return 1;
	if (provider != KV_PROVIDER_AUTO)
		return p->kind == provider;
	return p->bare || strchr(p->model, '/') != NULL;
}

/* INI over the catalogue's entry FILE, as LiteLLM merges custom pricing:
 * each figure the section sets wins, each it leaves unset is the file's
 * (its limits, cache and audio prices, tiers). The section's name, line
 * and the figures it set are kept for kvctl prices. */
static void
override(struct kv_price *ini, const struct kv_price *file)
{
	struct kv_price out = *file;
	unsigned i;

	out.set = 0;
	for (i = 0; i < KV_PRICE_NFIELDS; i++)
		if (figure_set(ini, i)) {
			*figure(&out, i) = *figure(ini, i);
			out.set |= (uint64_t)1 << i;
		}
	out.src = KV_PRICE_OVERRIDE;
	out.line = ini->line;
	*ini = out;
}

/* A section the catalogue does not name stands alone: end_price let an
 * exact name leave input and output for the file to give. */
static int
check_alone(const struct kv_price *p, const struct kv_config *cf, char *err, size_t errlen)
{
	const char *why = p->input < 0 ? "input is required" : p->output < 0 ?
	    "output is required (write output = 0 for a model that bills no output, "
	    "such as embeddings)" : NULL;

	if (why == NULL)
		return 0;
	if (cf->prices_file[0] != '\0')
		snprintf(err, errlen, "[price %s]: %s (the catalogue %s has no entry %s to "
		    "take it from)", p->model, why, cf->prices_file, p->model);
	else
		snprintf(err, errlen, "[price %s]: %s", p->model, why);
	return -1;
}

/* The [price GLOB] G over the catalogue entry E: each figure E leaves
 * unset that G sets. Called longest glob first, so that of the globs the
 * most specific gives a figure (an exact section's figures and the
 * catalogue's own are set already: they win). */
static void
fill_from_glob(struct kv_price *e, const struct kv_price *g, int gidx)
{
	unsigned i;

	for (i = 0; i < KV_PRICE_NFIELDS; i++) {
		if (figure_set(e, i) || !figure_set(g, i))
			continue;
		*figure(e, i) = (&g->input)[i];
		e->globbed |= (uint64_t)1 << i;
		if (e->glob_from == 0)
			e->glob_from = gidx + 1;
	}
}

/* Globs compose over the catalogue (issue 33): a bundled [price o3-20*]
 * gives the dated o3-2025-04-16 the priority prices and web search fee
 * its catalogue entry lacks, where an exact entry used to shadow every
 * glob. The globs that match no catalogue entry are named for -t. */
static void
compose(struct kv_config *cf)
{
	struct kv_price *e;
	size_t i, g, used, k = 0;
	int n;

	cf->prices_dead[0] = '\0';
	for (g = 0; g < cf->nprice_glob; g++) {
		used = 0;
		for (i = 0; i < cf->nprices; i++) {
			e = &cf->prices[i];
			if (e->src == KV_PRICE_INI || is_glob(e) || !priced_for(e, KV_PROVIDER_AUTO) ||
			    !kv_glob_match(cf->price_glob[g]->model, e->model))
				continue;
			used++;
			fill_from_glob(e, cf->price_glob[g], (int)(cf->price_glob[g] - cf->prices));
		}
		if (used > 0 || cf->nprices_file == 0 || k >= sizeof(cf->prices_dead))
			continue;
		n = snprintf(cf->prices_dead + k, sizeof(cf->prices_dead) - k, "%s[price %s]",
		    k ? ", " : "", cf->price_glob[g]->model);
		k = n < 0 ? sizeof(cf->prices_dead) : k + (size_t)n;
	}
}

int
kv_pricetab_merge(struct kv_config *cf, struct kv_price *file, size_t n, char *err,
    size_t errlen, int *line)
{
	struct kv_price *all, *hit;
	size_t i, k = 0, dropped = 0;

	*line = 0;
	if (n > 0)
		qsort(file, n, sizeof(*file), cmp_entry);
	for (i = 0; i < cf->nprices; i++) {
		hit = n == 0 || is_glob(&cf->prices[i]) ? NULL :
		    bsearch(&cf->prices[i], file, n, sizeof(*file), cmp_entry);
		if (hit == NULL) {
			if (check_alone(&cf->prices[i], cf, err, errlen) == -1) {
				*line = cf->prices[i].line;
				free(file);
				return -1;
			}
			continue;
		}
		override(&cf->prices[i], hit);
		hit->src = -1;	/* merged into the section's slot */
		dropped++;
	}
	all = malloc((cf->nprices + n - dropped + 1) * sizeof(*all));
	if (all == NULL) {
		free(file);
		snprintf(err, errlen, "out of memory");
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
	if (kv_pricetab_index(cf) == -1) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	compose(cf);
	return 0;
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

/* The version numbers TAIL starts with: components of 1-3 digits, each
 * after a '-' or '.' (or at the start) and before one or the end. Four
 * digits or more are a date or a snapshot (-20250514, -0125), not a
 * version; a letter ends the version (-16k, -mini). */
static struct kv_pver
version_of(const char *tail)
{
	struct kv_pver v = { 0, 0, { 0 } };
	const char *s = tail;
	size_t d;

	while (v.n < 4) {
		if (*s == '-' || *s == '.')
			s++;
		for (d = 0; s[d] >= '0' && s[d] <= '9'; d++)
			;
		if (d == 0 || d > 3 || (s[d] != '\0' && s[d] != '-' && s[d] != '.'))
			break;
		v.v[v.n++] = (unsigned short)atoi(s);
		s += d;
	}
	return v;
}

/* The version of MODEL after a glob prefix of PLEN characters. A prefix
 * that ends inside a number ("gpt-5-20*", written for dated snapshots)
 * takes the whole number: gpt-5-2026-01-15 is a date, not version 26. */
static struct kv_pver
version_after(const char *model, size_t plen)
{
	while (plen > 0 && model[plen] >= '0' && model[plen] <= '9' &&
	    model[plen - 1] >= '0' && model[plen - 1] <= '9')
		plen--;
	return version_of(model + plen);
}

/* -1, 0, 1 as A is older, the same, newer than B; 4-1 is newer than 4. */
static int
version_cmp(const struct kv_pver *a, const struct kv_pver *b)
{
	unsigned i;

	for (i = 0; i < a->n && i < b->n; i++)
		if (a->v[i] != b->v[i])
			return a->v[i] < b->v[i] ? -1 : 1;
	return a->n < b->n ? -1 : a->n > b->n ? 1 : 0;
}

/* The glob's prefix length: up to its first '*'. */
static size_t
glob_prefix(const char *glob)
{
	return strcspn(glob, "*");
}

/* The newest version of GLOB's family: the greatest among the exact
 * entries it matches. With none the family's versions are unknown (an
 * operator's [price my-model*] is written for all it matches): known 0. */
static struct kv_pver
family_version(const struct kv_price *const *exact, size_t n, const char *glob)
{
	struct kv_pver best = { 0, 0, { 0 } }, v;
	size_t i, plen = glob_prefix(glob);

	for (i = 0; i < n; i++) {
		if (!priced_for(exact[i], KV_PROVIDER_AUTO) || !kv_glob_match(glob, exact[i]->model))
			continue;
		v = version_after(exact[i]->model, plen);
		if (!best.known || version_cmp(&v, &best) > 0)
			best = v;
		best.known = 1;
	}
	return best;
}

void
kv_pricetab_free(struct kv_config *cf)
{
	free(cf->price_exact);
	free(cf->price_glob);
	free(cf->price_glob_ver);
	cf->price_glob_ver = NULL;
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
	cf->price_glob_ver = malloc((cf->nprice_glob + 1) * sizeof(*cf->price_glob_ver));
	if (cf->price_glob_ver == NULL) {
		kv_pricetab_free(cf);
		return -1;
	}
	/* Once per load, not per request: nglob x nexact glob matches. */
	for (i = 0; i < cf->nprice_glob; i++)
		cf->price_glob_ver[i] = family_version(cf->price_exact, cf->nprice_exact,
		    cf->price_glob[i]->model);
	return 0;
}

/* Is MODEL (matched by GLOB) of a newer version than FAMILY, the glob's? */
static int
newer_than_family(const char *glob, const struct kv_pver *family, const char *model)
{
	struct kv_pver v = version_after(model, glob_prefix(glob));

	return family->known && version_cmp(&v, family) > 0;
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

int
kv_price_reached_by(const struct kv_price *p)
{
	if (priced_for(p, KV_PROVIDER_AUTO))
		return KV_PROVIDER_AUTO;
	return p->kind != KV_PROVIDER_AUTO ? p->kind : -1;
}

/* LiteLLM's provider prefixes, by kind: "bedrock/..." and the others. */
static const char *
prefix_of(int provider)
{
	switch (provider) {
	case KV_PROVIDER_BEDROCK:	return "bedrock/";
	case KV_PROVIDER_VERTEX:	return "vertex_ai/";
	case KV_PROVIDER_GEMINI:	return "gemini/";
	case KV_PROVIDER_AZURE:		return "azure/";
	case KV_PROVIDER_OPENAI:	return "openai/";
	default:			return NULL;
	}
}

/* A Bedrock model ARN names the model or inference profile after its
 * last '/' (arn:aws:bedrock:us-east-1:123:inference-profile/us.anthropic...):
 * that is the name the catalogue knows. */
static const char *
bedrock_id(const char *model)
{
	const char *slash;

	if (strncmp(model, "arn:", 4) != 0 || (slash = strrchr(model, '/')) == NULL)
		return model;
	return slash + 1;
}

/* The catalogue entry (or section) of MODEL for PROVIDER, by LiteLLM's
 * names: "bedrock/REGION/ID", then "PREFIX/MODEL", then MODEL as given;
 * NULL when none prices it for PROVIDER. */
static const struct kv_price *
named_find(const struct kv_config *cf, int provider, const char *region, const char *model)
{
	const struct kv_price *hit;
	const char *pre = prefix_of(provider);
	char name[KV_NAME_MAX];
	int n;

	if (provider == KV_PROVIDER_BEDROCK && region != NULL && region[0] != '\0') {
		n = snprintf(name, sizeof(name), "bedrock/%s/%s", region, model);
		if (n > 0 && (size_t)n < sizeof(name) && (hit = exact_find(cf, name)) != NULL &&
		    priced_for(hit, provider))
			return hit;
	}
	if (pre != NULL) {
		n = snprintf(name, sizeof(name), "%s%s", pre, model);
		if (n > 0 && (size_t)n < sizeof(name) && (hit = exact_find(cf, name)) != NULL &&
		    priced_for(hit, provider))
			return hit;
	}
	hit = exact_find(cf, model);
	if (hit != NULL && priced_for(hit, provider))
		return hit;
	/* Azure OpenAI runs OpenAI's models: one the catalogue has no azure/
	 * entry for is priced as OpenAI's */
	return provider == KV_PROVIDER_AZURE ? named_find(cf, KV_PROVIDER_OPENAI, NULL, model) :
	    NULL;
}

const struct kv_price *
kv_price_lookup(const struct kv_config *cf, const char *model,
    enum kv_price_rule *rule, const struct kv_price **older)
{
	return kv_price_find_in(cf, KV_PROVIDER_AUTO, NULL, model, rule, older);
}

const struct kv_price *
kv_price_find_for(const struct kv_config *cf, int provider, const char *model)
{
	return kv_price_find_in(cf, provider, NULL, model, NULL, NULL);
}

/* Only the longest matching glob is asked: a model newer than its family
 * is newer than the shorter globs' too, and goes to unknown_models. */
const struct kv_price *
kv_price_find_in(const struct kv_config *cf, int provider, const char *region,
    const char *model, enum kv_price_rule *rule, const struct kv_price **older)
{
	const struct kv_price *hit, *dummy_older;
	enum kv_price_rule dummy;
	size_t i;

	if (rule == NULL)
		rule = &dummy;
	if (older == NULL)
		older = &dummy_older;
	*older = NULL;
	if (model != NULL && provider == KV_PROVIDER_BEDROCK)
		model = bedrock_id(model);
	if (model != NULL && (hit = named_find(cf, provider, region, model)) != NULL) {
		*rule = hit->src == KV_PRICE_FILE ? KV_RULE_FILE :
		    hit->src == KV_PRICE_OVERRIDE ? KV_RULE_OVERRIDE : KV_RULE_INI;
		return hit;
	}
	for (i = 0; model != NULL && i < cf->nprice_glob; i++) {
		if (!kv_glob_match(cf->price_glob[i]->model, model))
			continue;
		if (newer_than_family(cf->price_glob[i]->model, &cf->price_glob_ver[i], model)) {
			*older = cf->price_glob[i];
			break;
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

void
kv_pricetab_sources(const struct kv_config *cf, char *buf, size_t len)
{
	size_t i, file = 0, over = 0, ini = 0, glob = 0;
	const char *name = cf->prices_file[0] != '\0' ? cf->prices_file : "no catalogue";

	for (i = 0; i < cf->nprices; i++) {
		if (is_glob(&cf->prices[i]))
			glob++;
		else if (cf->prices[i].src == KV_PRICE_FILE)
			file++;
		else if (cf->prices[i].src == KV_PRICE_OVERRIDE)
			over++;
		else
			ini++;
	}
	snprintf(buf, len, "%zu models priced: %zu from %s, %zu from its entry with a [price] "
	    "override, %zu from [price] sections alone; %zu [price] glob%s; any other model: %s",
	    file + over + ini, file, name, over, ini, glob, glob == 1 ? "" : "s",
	    cf->has_default_price && !cf->unknown_models_deny ? "[price default]" :
	    cf->unknown_models_deny ? "refused (unknown_models = deny)" :
	    "refused (no [price default])");
}

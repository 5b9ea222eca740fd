/* What a response is charged: the dearer model's price, the per-request
 * fees the usage leaves out, and the output of a response cut short. */
#include <stdint.h>
#include <string.h>

#include "common/pricetab.h"
#include "worker/charge_rules.h"

static int
differs(const char *a, const char *b)
{
	return a != NULL && a[0] != '\0' && (b == NULL || strcmp(a, b) != 0);
}

static void
take(const struct kv_price *p, const struct kv_usage *u, int64_t *best,
    const struct kv_price **priced, int *flags)
{
	int64_t cost;

	if (p == NULL)
		return;
	if (kv_cost(p, u, &cost) == -1) {
		*flags |= KV_CHARGE_OVERFLOW;
		cost = INT64_MAX / 4;
	}
	if (*priced == NULL || cost > *best) {
		*best = cost;
		*priced = p;
	}
}

int
kv_charge_resp_named(const char *resp_model, const char *body_model)
{
	return differs(resp_model, body_model);
}

int64_t
kv_charge_cost(const struct kv_config *cf, const struct kv_price *body_price,
    int resp_named, const struct kv_price *resp_price, const struct kv_usage *u,
    int *flags, const struct kv_price **priced)
{
	const struct kv_price *pr = NULL;
	int64_t best = 0;

	*flags = 0;
	*priced = NULL;
	if (resp_named) {
		pr = resp_price;
		if (pr == NULL || pr == &cf->default_price)
			*flags |= KV_CHARGE_RESP_UNPRICED;
	}
	take(body_price, u, &best, priced, flags);
	/* The response's model priced by the same section (a glob such as
	 * [price gpt-4o-mini*] matches the dated name a response gives): the
	 * same inputs, the same cost, which cannot be dearer; priced once. */
	if (pr != body_price)
		take(pr, u, &best, priced, flags);
	if (*priced == NULL) {
		*flags |= KV_CHARGE_NO_PRICE;
		return 0;
	}
	if (kv_cost_fees_unpriced(*priced, u))
		*flags |= KV_CHARGE_FEES_UNPRICED;
	return best;
}

void
kv_charge_implied_calls(enum kv_api api, const char *model, struct kv_usage *u)
{
	if (api == KV_API_OPENAI_CHAT && model != NULL && strstr(model, "-search-") != NULL &&
	    u->web_search < 1)
		u->web_search = 1;
}

int64_t
kv_charge_cut_output(int64_t reserved, int64_t seen)
{
	return reserved > seen ? reserved : seen;
}

/* The last few names this worker priced: admission and settlement look
 * up the same names request after request, and kv_price_lookup is a
 * binary search and a glob match each time. A worker's config never
 * changes under it (a reload starts new workers), so a name and the
 * config it was looked up in always find the same section. Names that
 * do not fit are looked up every time; strangers' names only evict. */
#define PRICE_MEMO	4
#define PRICE_NAME	128

static struct {
	const struct kv_config	*cf;	/* NULL: an empty entry */
	int			 provider;
	const char		*region;	/* the upstream's, in cf: compared by address */
	const struct kv_price	*p, *older;
	char			 name[PRICE_NAME];	/* NUL-terminated */
} memo[PRICE_MEMO];
static unsigned memo_next;

const struct kv_price *
kv_charge_price(const struct kv_config *cf, const char *model, const struct kv_price **older)
{
	return kv_charge_price_for(cf, KV_PROVIDER_AUTO, NULL, model, older);
}

const struct kv_price *
kv_charge_price_for(const struct kv_config *cf, int provider, const char *region,
    const char *model, const struct kv_price **older)
{
	const struct kv_price *p, *o;
	size_t len, i;

	if (model == NULL)
		return kv_price_find_in(cf, provider, region, model, NULL, older);
	/* a kept name is shorter than PRICE_NAME: strcmp equal means the
	 * same name, and a longer one never matches */
	for (i = 0; i < PRICE_MEMO; i++) {
		if (memo[i].cf != cf || memo[i].provider != provider ||
		    memo[i].region != region || memo[i].name[0] != model[0] ||
		    strcmp(memo[i].name, model) != 0)
			continue;
		if (older != NULL)
			*older = memo[i].older;
		return memo[i].p;
	}
	p = kv_price_find_in(cf, provider, region, model, NULL, &o);
	if ((len = strnlen(model, PRICE_NAME)) < PRICE_NAME) {
		i = memo_next++ % PRICE_MEMO;
		memo[i].cf = cf;
		memo[i].provider = provider;
		memo[i].region = region;
		memo[i].p = p;
		memo[i].older = o;
		memcpy(memo[i].name, model, len + 1);
	}
	if (older != NULL)
		*older = o;
	return p;
}

/* [budget] prices read into the config: the catalogue file's entries of
 * every provider, its summary lines, and the [price] sections merged over
 * them (pricetab.c). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_int.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/catalog.h"
#include "common/pricetab.h"

/* The [price] sections over the catalogue's N entries (FILE, consumed). */
static int
cfg_merge_prices(struct cfg_parse *p, struct kv_price *file, size_t n)
{
	char why[512];
	int line;

	if (kv_pricetab_merge(p->cf, file, n, why, sizeof(why), &line) == -1)
		return cfg_err(p, line, "%s", why);
	return 0;
}

/* The catalogue's provider names, which kv_price.prov indexes. */
static int
cfg_price_providers(struct kv_config *cf, const struct kv_catalog_stats *st)
{
	size_t i;

	free(cf->price_prov);
	cf->nprice_prov = 0;
	cf->price_prov = malloc((st->nprov + 1) * sizeof(*cf->price_prov));
	if (cf->price_prov == NULL)
		return -1;
	for (i = 0; i < st->nprov; i++)
		snprintf(cf->price_prov[i], sizeof(cf->price_prov[0]), "%.39s",
		    st->prov[i].name);
	cf->nprice_prov = st->nprov;
	return 0;
}

/* See config_int.h. */
int
cfg_load_prices(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	const char *prov[KV_CATALOG_PROVIDERS_MAX];
	struct kv_catalog_stats st;
	struct kv_price *file = NULL;
	size_t n = 0;
	char why[512];

	cf->nprices_ini = cf->nprices;
	if (p->prices_instead != NULL &&
	    snprintf(cf->prices_file, sizeof(cf->prices_file), "%s", p->prices_instead) >=
	    (int)sizeof(cf->prices_file))
		return cfg_err(p, 0, "prices: path too long");
	/* "" from kvctl's ledger read: no prices wanted, none checked */
	if (p->prices_instead != NULL && p->prices_instead[0] == '\0')
		return kv_pricetab_index(cf) == -1 ? cfg_err(p, 0, "out of memory") : 0;
	if (cf->prices_file[0] == '\0')
		return cfg_merge_prices(p, NULL, 0);
	kv_catalog_providers(cf, prov);
	if (kv_catalog_load(cf->prices_file, prov, cf->prices_ignore, &file, &n, &st, why,
	    sizeof(why)) == -1) {
		free(file);
		return cfg_err(p, p->prices_line, "prices: %s", why);
	}
	kv_catalog_summary(&st, cf->prices_summary, sizeof(cf->prices_summary));
	kv_catalog_unknown(&st, cf->prices_unknown, sizeof(cf->prices_unknown));
	kv_catalog_refused(&st, cf->prices_refused, sizeof(cf->prices_refused));
	if (cfg_price_providers(cf, &st) == -1) {
		free(file);
		return cfg_err(p, 0, "out of memory");
	}
	/* fail closed (issue 33): a price kilovolt would not charge */
	if (kv_catalog_unserved(&st, cf->prices_ignore, why, sizeof(why)) == -1) {
		free(file);
		return cfg_err(p, p->prices_line, "prices: %s: a price field kilovolt does "
		    "not understand, which it would not charge; name the field in [budget] "
		    "prices_ignore to serve these models without it", why);
	}
	cf->prices_inexact = st.inexact;
	return cfg_merge_prices(p, file, n);
}

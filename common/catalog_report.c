/* What a catalogue load kept and dropped, in words for the log, -t and
 * kvctl prices, and the kind of upstream a LiteLLM provider name prices
 * (catalog.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/catalog.h"

/* Most entries first, then by name. */
static int
cmp_count(const void *a, const void *b)
{
	const struct kv_catalog_count *x = *(const struct kv_catalog_count *const *)a;
	const struct kv_catalog_count *y = *(const struct kv_catalog_count *const *)b;

	return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->name, y->name);
}

void
kv_catalog_summary(const struct kv_catalog_stats *st, char *buf, size_t len)
{
	const struct kv_catalog_count *by[KV_CATALOG_PROVIDERS];
	size_t i, pos;
	int n;

	for (i = 0; i < st->nprov; i++)
		by[i] = &st->prov[i];
	qsort(by, st->nprov, sizeof(by[0]), cmp_count);
	n = snprintf(buf, len, "%zu models of %zu providers (", st->kept, st->nprov);
	for (i = 0; n >= 0 && (size_t)n < len && i < st->nprov; i++)
		n += snprintf(buf + n, len - n, "%s%s %zu", i ? ", " : "", by[i]->name, by[i]->n);
	if (n < 0 || (size_t)n >= len)
		return;
	pos = (size_t)n;
	snprintf(buf + pos, len - pos, "); skipped: %zu pricing what kilovolt would not "
	    "charge, %zu not priced per token, %zu not models%s", st->refused, st->unpriced,
	    st->not_models, st->long_names ? ", some names too long" : "");
}

void
kv_catalog_refused(const struct kv_catalog_stats *st, char *buf, size_t len)
{
	size_t i;
	int n;

	buf[0] = '\0';
	if (st->refused == 0)
		return;
	n = snprintf(buf, len, "%zu entr%s (%s%s) not kept, pricing what kilovolt would not "
	    "charge:", st->refused, st->refused == 1 ? "y" : "ies", st->refused_model,
	    st->refused > 1 ? " and others" : "");
	for (i = 0; n >= 0 && (size_t)n < len && i < st->nrefused_field; i++)
		n += snprintf(buf + n, len - n, "%s %s (%zu)", i ? "," : "",
		    st->refused_field[i].name, st->refused_field[i].n);
}

/* litellm_provider names by the kind of upstream whose requests they
 * price (LiteLLM's own families: bedrock_converse is Bedrock's Converse
 * API, vertex_ai-anthropic_models Claude on Vertex); a prefix ending in
 * '-' also takes the names it starts. */
int
kv_catalog_kind(const char *provider)
{
	static const struct {
		const char	*name;
		int		 kind;
	} kinds[] = {
		{ "openai", KV_PROVIDER_OPENAI }, { "text-completion-openai", KV_PROVIDER_OPENAI },
		{ "anthropic", KV_PROVIDER_ANTHROPIC },
		{ "bedrock", KV_PROVIDER_BEDROCK }, { "bedrock_converse", KV_PROVIDER_BEDROCK },
		{ "bedrock_mantle", KV_PROVIDER_BEDROCK },
		{ "gemini", KV_PROVIDER_GEMINI },
		{ "vertex_ai", KV_PROVIDER_VERTEX }, { "vertex_ai-", KV_PROVIDER_VERTEX },
		{ "vertex", KV_PROVIDER_VERTEX },
		{ "azure", KV_PROVIDER_AZURE }, { "azure_text", KV_PROVIDER_AZURE },
	};
	size_t i, n;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		n = strlen(kinds[i].name);
		if (kinds[i].name[n - 1] == '-' ? strncmp(provider, kinds[i].name, n) == 0 :
		    strcmp(provider, kinds[i].name) == 0)
			return kinds[i].kind;
	}
	return KV_PROVIDER_AUTO;
}

void
kv_catalog_unknown(const struct kv_catalog_stats *st, char *buf, size_t len)
{
	size_t i;
	int n = 0;

	buf[0] = '\0';
	for (i = 0; i < st->nunknown && n >= 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s (%zu)", i ? ", " : "",
		    st->unknown[i].name, st->unknown[i].n);
	if (st->unknown_more && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - n, " and %zu more", st->unknown_more);
}

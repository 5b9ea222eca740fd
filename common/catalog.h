/* LiteLLM's model price catalogue (model_prices_and_context_window.json):
 * a JSON object of model name -> fields, prices in USD per token. Read at
 * start-up and on SIGHUP (never per request) with our own strict reader
 * (common/jsonread.c), into struct kv_price entries in kilovolt's units:
 * nano-USD per 1M tokens, converted from the decimal text exactly. */
#ifndef KV_CATALOG_H
#define KV_CATALOG_H

#include <stddef.h>

#include "common/config.h"

#define KV_CATALOG_PROVIDERS	256	/* providers counted by name */
#define KV_CATALOG_FIELDS	64	/* fields not understood, by name */

struct kv_catalog_count {
	char	  name[64];
	size_t	  n;
};

/* What one load kept and dropped, for the log, -t and kvctl prices. */
struct kv_catalog_stats {
	size_t	  entries;	/* top-level members */
	size_t	  not_models;	/* sample_spec, entries without litellm_provider,
				 * values that are not objects */
	size_t	  unpriced;	/* entries without per-token input and output
				 * prices (images, tts, ...) */
	/* entries of providers not priced by bare name that price what
	 * kilovolt would not charge (a field not understood on a served
	 * model, not in IGNORE; a malformed value): not kept, by field, and
	 * the first such model */
	size_t	  refused;
	struct kv_catalog_count refused_field[KV_CATALOG_FIELDS];
	size_t	  nrefused_field;
	char	  refused_model[KV_NAME_MAX];
	size_t	  long_names;	/* names longer than a kv_price holds */
	size_t	  kept;
	/* kept, by provider (kv_price.prov is 1 + the index) */
	struct kv_catalog_count prov[KV_CATALOG_PROVIDERS];
	size_t	  nprov;
	/* fields of kept entries kilovolt does not understand: never guessed,
	 * named once in the log */
	struct kv_catalog_count unknown[KV_CATALOG_FIELDS];
	size_t	  nunknown;
	size_t	  unknown_more;	/* distinct names past the table */
	/* of those, the ones on entries of models kilovolt serves (mode chat,
	 * completion, responses, embedding, or none), with the first such
	 * model: fail closed unless ignored (issue 33) */
	struct kv_catalog_count served[KV_CATALOG_FIELDS];
	char	  served_model[KV_CATALOG_FIELDS][64];
	size_t	  nserved;
	size_t	  inexact;	/* prices below the nano-dollar, rounded up */
};

#define KV_CATALOG_PROVIDERS_MAX	(2 + 64 + 1)	/* kv_catalog_providers' array */

/* The providers whose entries price a model by its bare name on an
 * upstream of no provider kind (kv_price.bare), into PROV (NULL-terminated,
 * KV_CATALOG_PROVIDERS_MAX slots): openai, anthropic, and the name of each
 * [upstream NAME] of CF (may be NULL) of no provider kind, up to 64. */
void	kv_catalog_providers(const struct kv_config *cf, const char **prov);

/* The enum kv_provider whose requests a litellm_provider's entries price
 * (bedrock and bedrock_converse: KV_PROVIDER_BEDROCK, vertex_ai-*:
 * KV_PROVIDER_VERTEX, ...; the config's own words too), KV_PROVIDER_AUTO
 * for the providers of no kind (mistral, groq, ...). */
int	kv_catalog_kind(const char *provider);

/* Parse the catalogue in BUF (LEN bytes). Keeps every entry that has
 * per-token input and output prices; each becomes a kv_price with src
 * KV_PRICE_FILE, its provider's kind, bare (its provider is one of
 * PROVIDERS, NULL-terminated; NULL: all are) and prov, appended to *out
 * (*nout entries, realloc'd; the caller frees). An entry of a provider
 * not in PROVIDERS that carries a field kilovolt does not understand on a
 * served model (not named in IGNORE, blank-separated; may be NULL), or a
 * malformed value, is not kept (st->refused). Returns 0, or -1 with
 * "LINE:COL: what" in err for malformed or truncated JSON, a price of a
 * PROVIDERS entry that is not a number, or a model named twice. */
int	kv_catalog_parse(const char *buf, size_t len, const char *const *providers,
	    const char *ignore, struct kv_price **out, size_t *nout,
	    struct kv_catalog_stats *st, char *err, size_t errlen);

/* kv_catalog_parse of the file FILE; errors read "FILE: LINE:COL: what"
 * (or "FILE: strerror"). */
int	kv_catalog_load(const char *file, const char *const *providers, const char *ignore,
	    struct kv_price **out, size_t *nout, struct kv_catalog_stats *st,
	    char *err, size_t errlen);

/* One line of what a load kept, by provider (most entries first), into
 * buf: "2,339 models of 90 providers (fireworks_ai 279, ...); skipped: ...". */
void	kv_catalog_summary(const struct kv_catalog_stats *st, char *buf, size_t len);

/* The entries not kept for what they price, one line into buf ("" if
 * none): "N entries (MODEL and others) not kept, pricing what kilovolt
 * would not charge: FIELD (n), ...". */
void	kv_catalog_refused(const struct kv_catalog_stats *st, char *buf, size_t len);

/* The first field not understood on a served model's entry that IGNORE
 * (space-separated names; may be empty) does not name: 0, or -1 with
 * "FIELD on MODEL (and other models)" in BUF. */
int	kv_catalog_unserved(const struct kv_catalog_stats *st, const char *ignore, char *buf,
	    size_t len);

/* The fields not understood, "name (count), ..." into buf ("" if none). */
void	kv_catalog_unknown(const struct kv_catalog_stats *st, char *buf, size_t len);

/* A price with every optional field unset (-1) and MODEL as its name. */
void	kv_price_unset(struct kv_price *p, const char *model);

#endif

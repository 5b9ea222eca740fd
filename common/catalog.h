/* LiteLLM's model price catalogue (model_prices_and_context_window.json):
 * a JSON object of model name -> fields, prices in USD per token. Read at
 * start-up and on SIGHUP (never per request) with our own strict reader
 * (common/jsonread.c), into struct kv_price entries in kilovolt's units:
 * nano-USD per 1M tokens, converted from the decimal text exactly. */
#ifndef KV_CATALOG_H
#define KV_CATALOG_H

#include <stddef.h>

#include "common/config.h"

#define KV_CATALOG_PROVIDERS	16	/* providers counted by name */
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
	size_t	  other;	/* models of providers not kept */
	size_t	  unpriced;	/* kept providers' entries without per-token
				 * input and output prices (images, tts, ...) */
	size_t	  long_names;	/* names longer than a kv_price holds */
	size_t	  kept;
	struct kv_catalog_count prov[KV_CATALOG_PROVIDERS];	/* kept, by provider */
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

/* The providers whose entries kilovolt keeps, into PROV (NULL-terminated,
 * KV_CATALOG_PROVIDERS_MAX slots): openai, anthropic, and the name of each
 * [upstream NAME] of CF (may be NULL), up to 64 of them. */
void	kv_catalog_providers(const struct kv_config *cf, const char **prov);

/* Parse the catalogue in BUF (LEN bytes). Keeps the entries whose
 * litellm_provider is one of PROVIDERS (NULL-terminated; NULL keeps every
 * provider) and that have per-token input and output prices; each becomes a
 * kv_price with src KV_PRICE_FILE, appended to *out (*nout entries,
 * realloc'd; the caller frees). Returns 0, or -1 with "LINE:COL: what" in
 * err for malformed or truncated JSON, a price that is not a number, or a
 * model named twice. */
int	kv_catalog_parse(const char *buf, size_t len, const char *const *providers,
	    struct kv_price **out, size_t *nout, struct kv_catalog_stats *st,
	    char *err, size_t errlen);

/* kv_catalog_parse of the file FILE; errors read "FILE: LINE:COL: what"
 * (or "FILE: strerror"). */
int	kv_catalog_load(const char *file, const char *const *providers,
	    struct kv_price **out, size_t *nout, struct kv_catalog_stats *st,
	    char *err, size_t errlen);

/* One line of what a load kept, by provider, into buf:
 * "243 models (openai 219, anthropic 24); 2,742 skipped: ...". */
void	kv_catalog_summary(const struct kv_catalog_stats *st, char *buf, size_t len);

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

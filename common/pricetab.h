/* The running price table: the catalogue's entries and the ini's [price]
 * sections merged into kv_config.prices, and the index built over them at
 * load so that a lookup costs a binary search (exact names) and a short
 * walk over the globs, whatever the catalogue's size. */
#ifndef KV_PRICETAB_H
#define KV_PRICETAB_H

#include <stddef.h>

#include "common/config.h"

/* Which rule priced a model (kvctl prices, the worker's log). */
enum kv_price_rule {
	KV_RULE_FILE,		/* an entry of [budget] prices = FILE.json */
	KV_RULE_INI,		/* a [price NAME] section alone, exact */
	KV_RULE_GLOB,		/* a [price PREFIX*] section */
	KV_RULE_DEFAULT,	/* [price default] under unknown_models = default */
	KV_RULE_REFUSED,	/* nothing: the request is refused */
	KV_RULE_OVERRIDE,	/* a file entry with a [price NAME] section over it */
};

/* The figures of a kv_price (input .. batch_output), and the bit of the one
 * at offset OFF in kv_price.set. */
#define KV_PRICE_NFIELDS	((offsetof(struct kv_price, batch_output) - \
	    offsetof(struct kv_price, input)) / sizeof(int64_t) + 1)
static inline unsigned
kv_price_bit(size_t off)
{
	return (unsigned)((off - offsetof(struct kv_price, input)) / sizeof(int64_t));
}

/* Merge the catalogue's FILE entries (n, src KV_PRICE_FILE, consumed:
 * freed here; n may be 0, FILE NULL: no catalogue) into cf->prices. A
 * [price NAME] section whose NAME is an entry overrides it field by field
 * (src KV_PRICE_OVERRIDE): each figure the section sets wins, each it
 * leaves unset is the entry's, `set` says which are the section's. A glob,
 * or a name the file lacks, stands alone and must set input and output.
 * Then build the index, and compose the globs over the file's entries:
 * each figure an entry leaves unset is the longest matching glob's that
 * sets it (`globbed`, `glob_from`); the globs that match no entry are
 * named in cf->prices_dead. Returns 0; or -1 with "[price NAME]: what" in ERR
 * and *LINE the section's line, or "out of memory" and *LINE 0. */
int	kv_pricetab_merge(struct kv_config *cf, struct kv_price *file, size_t n, char *err,
	    size_t errlen, int *line);

/* Build (or rebuild) the lookup index over cf->prices. 0 / -1 (memory). */
int	kv_pricetab_index(struct kv_config *cf);

void	kv_pricetab_free(struct kv_config *cf);

/* Where CF's prices come from, one line into BUF (kilovoltd -t, kvctl
 * prices): "174 models priced: 170 from data/x.json, 1 from its entry
 * with a [price] override, 3 from [price] sections alone; 2 [price] globs;
 * any other model: [price default]" (or "refused (unknown_models = deny)"). */
void	kv_pricetab_sources(const struct kv_config *cf, char *buf, size_t len);

/* The price of MODEL: an exact name first; else the longest glob that
 * matches, unless the model is a newer version of the glob's family (a
 * version number after the glob's prefix greater than any exact entry
 * under that glob has: claude-opus-4-6 against a claude-opus-4* written
 * for 4 and 4-1; a glob matching no exact entry prices all it matches),
 * which then sets *older to that glob and falls through;
 * else [price default] unless unknown_models = deny. NULL when refused.
 * RULE (may be NULL) says which; OLDER (may be NULL) is set or NULL.
 * CF must be indexed (kv_pricetab_index, which kv_config_load runs): the
 * one lookup path the daemon, kvctl and the tests share. */
const struct kv_price *kv_price_lookup(const struct kv_config *cf, const char *model,
	    enum kv_price_rule *rule, const struct kv_price **older);

/* kv_price_lookup for a request to an upstream of PROVIDER (enum
 * kv_provider) in REGION (Bedrock's AWS region; may be NULL), by
 * LiteLLM's provider rules, where the same model is priced differently
 * by provider: the exact names tried are, for Bedrock, "bedrock/REGION/ID"
 * then "bedrock/ID" then ID (a model ARN's ID is what follows its last
 * '/'); for Vertex, Gemini, Azure and OpenAI "vertex_ai/M", "gemini/M",
 * "azure/M", "openai/M" then M; and each is taken only from an entry of
 * that provider's kind (kv_price.kind: us.anthropic.claude-... is
 * Bedrock's, claude-... the Anthropic API's) or a [price] section alone.
 * KV_PROVIDER_AUTO (kv_price_lookup) takes the entries of the providers
 * priced by bare name (kv_price.bare) and those whose name carries its
 * provider ("azure/gpt-4o"). Then the globs and the default, as above. */
const struct kv_price *kv_price_find_in(const struct kv_config *cf, int provider,
	    const char *region, const char *model, enum kv_price_rule *rule,
	    const struct kv_price **older);

/* The enum kv_provider whose lookups find P by its own name
 * (KV_PROVIDER_AUTO for a section, a bare-name provider's entry or a
 * name with its provider's prefix; else its kind), or -1 when none does
 * (an entry of a provider of no kind, not priced by bare name). */
int	kv_price_reached_by(const struct kv_price *p);

/* kv_price_find_in without a region, rule or older family. */
const struct kv_price *kv_price_find_for(const struct kv_config *cf, int provider,
	    const char *model);


#endif

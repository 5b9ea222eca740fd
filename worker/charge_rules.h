/* What a response is charged (README "What a request is charged"): the
 * price a charge uses when the response names a model of its own, and the
 * output a response without final usage is charged. Pure functions of the
 * config and the counts, used by the settlement (settle.c). */
#ifndef KV_CHARGE_RULES_H
#define KV_CHARGE_RULES_H

#include <stdint.h>

#include "common/config.h"
#include "common/money.h"
#include "worker/usage.h"

/* kv_charge_cost's *flags */
#define KV_CHARGE_RESP_UNPRICED	0x1	/* the response's model has no price of its own */
#define KV_CHARGE_NO_PRICE	0x2	/* neither model has any price: charged 0 */
#define KV_CHARGE_FEES_UNPRICED	0x4	/* calls reported that the price sets no fee for */
#define KV_CHARGE_OVERFLOW	0x8	/* the cost overflowed: INT64_MAX / 4 */

/* 1 when the response names a model of its own, RESP_MODEL (non-empty,
 * and not BODY_MODEL, the model the body named: either may be "" or
 * NULL): its price then counts too (kv_charge_cost). */
int	kv_charge_resp_named(const char *resp_model, const char *body_model);

/* The cost of U for a request whose body named a model priced BODY_PRICE
 * (kv_config_price, resolved once at admission; NULL when the body named
 * none) and, when RESP_NAMED (kv_charge_resp_named), was answered by a
 * model priced RESP_PRICE: the dearer of the two prices, so that a
 * deployment answering with a dearer model than the body names (Azure
 * ignores the body's model) is charged for it, and one answering with a
 * cheaper one is charged what was admitted. A response model without a
 * price section of its own (RESP_PRICE NULL, or [price default] when
 * unknown_models = default) counts at that, and *flags says so; *priced is
 * the section the cost came from (NULL with KV_CHARGE_NO_PRICE). */
int64_t	kv_charge_cost(const struct kv_config *cf, const struct kv_price *body_price,
	    int resp_named, const struct kv_price *resp_price, const struct kv_usage *u,
	    int *flags, const struct kv_price **priced);

/* Per-request fees a response does not report as counts: a chat
 * completion of OpenAI's search models (a name with "-search-", such as
 * gpt-4o-search-preview) bills at least one search; U gets it. */
void	kv_charge_implied_calls(enum kv_api api, const char *model, struct kv_usage *u);

/* kv_price_lookup(CF, MODEL, NULL, OLDER), remembered for the last few
 * names: CF must not change once a name was priced in it (a worker's
 * config does not; a test that edits one must look up afresh). */
const struct kv_price *kv_charge_price(const struct kv_config *cf, const char *model,
	    const struct kv_price **older);

/* kv_charge_price for a request to an upstream of PROVIDER (enum
 * kv_provider; its kv_upstream.provider) in REGION (its AWS region, a
 * string of CF, or NULL): kv_price_find_in, remembered the same way, so
 * that a Bedrock id resolves to Bedrock's price (pricetab.h). */
const struct kv_price *kv_charge_price_for(const struct kv_config *cf, int provider,
	    const char *region, const char *model, const struct kv_price **older);

/* The output tokens a response whose final usage never arrived is charged
 * (a cut stream, an Anthropic stream that ended in an error event, a
 * request the provider got whole and never answered): the provider may
 * have billed up to the reservation's output before the first visible byte
 * (a reasoning model's hidden tokens), so never less than RESERVED; never
 * less than what was relayed (SEEN) either. */
int64_t	kv_charge_cut_output(int64_t reserved, int64_t seen);

#endif

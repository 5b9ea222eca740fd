/* The price dimensions a request asks for (issue 33): Anthropic's fast
 * mode and US-only inference, OpenAI's regional processing and service
 * tiers. A dimension the request's price does not name is refused, one it
 * names is reserved at its rate and charged from the response's usage
 * (else from what the request asked). Pure functions of the price, the
 * request and the upstream. */
#ifndef KV_PRICE_DIMS_H
#define KV_PRICE_DIMS_H

#include <stddef.h>

#include "common/config.h"
#include "common/money.h"
#include "worker/reqscan.h"

/* The region (KV_REGION_US, _EU or _NONE) requests to UP are processed
 * in: its `region`, else by its host (us.api.openai.com, eu.api...). */
int	kv_dims_region(const struct kv_upstream *up);

/* NULL when P prices every dimension RI asks for, in REGION; else the
 * refusal (a 400) in MSG, naming the request's field and the section. */
const char *kv_dims_refusal(const struct kv_price *p, const struct kv_request_info *ri,
	    int region, char *msg, size_t len);

/* The reservation EST (its input and output set) of a request RI to P, in
 * REGION, on Anthropic's API if ANTHROPIC: the multipliers it reaches, and
 * its input and output at the dearest rate they can be billed at: audio
 * (a request that carries, recalls or may return audio), cache writes
 * (OpenAI's automatic ones where P prices them, Anthropic's under a
 * cache_control, 1-hour ones under "ttl": "1h"), reasoning. */
void	kv_dims_reserve(const struct kv_price *p, const struct kv_request_info *ri,
	    int anthropic, int region, struct kv_usage *est);

/* U's multipliers for the charge: fast and geo as the response's usage
 * reports them (SPEED_SEEN, GEO_SEEN), else as RI asked; REGION. */
void	kv_dims_charge(const struct kv_request_info *ri, int region, int speed_seen,
	    int geo_seen, struct kv_usage *u);

#endif

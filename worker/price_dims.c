/* The price dimensions a request asks for: refusal, reservation and
 * charge (price_dims.h). */
#include <stdio.h>
#include <string.h>

#include "worker/price_dims.h"

int
kv_dims_region(const struct kv_upstream *up)
{
	if (up == NULL)
		return KV_REGION_NONE;
	if (up->region != KV_REGION_AUTO)
		return up->region;
	if (strncmp(up->host, "us.", 3) == 0)
		return KV_REGION_US;
	if (strncmp(up->host, "eu.", 3) == 0)
		return KV_REGION_EU;
	return KV_REGION_NONE;
}

const char *
kv_dims_refusal(const struct kv_price *p, const struct kv_request_info *ri, int region,
    char *msg, size_t len)
{
	const char *field = NULL, *key = NULL;

	if (ri->dim_other[0] != '\0') {
		snprintf(msg, len, "kilovolt cannot price %s for model '%s': send the request "
		    "without it", ri->dim_other, p->model);
		return msg;
	}
	if (ri->fast == 1 && p->fast_mult < 0)
		field = "\"speed\": \"fast\"", key = "fast_multiplier";
	else if (ri->geo == KV_GEO_US && p->geo_us_mult < 0)
		field = "\"inference_geo\": \"us\"", key = "us_inference_multiplier";
	else if (ri->tier == KV_TIER_PRIORITY && p->priority_input < 0)
		field = "\"service_tier\": \"priority\"", key = "priority_input and priority_output";
	else if (region == KV_REGION_US && p->region_us_mult < 0 && p->region_eu_mult >= 0)
		field = "regional processing (upstream region us)", key = "regional_us_multiplier";
	else if (region == KV_REGION_EU && p->region_eu_mult < 0 && p->region_us_mult >= 0)
		field = "regional processing (upstream region eu)", key = "regional_eu_multiplier";
	if (field == NULL)
		return NULL;
	snprintf(msg, len, "%s: the price of model '%s' has no rate for it, and kilovolt "
	    "will not charge it as standard: set %s in [price %s], or send the request "
	    "without it", field, p->model, key, p->model);
	return msg;
}

static int64_t
max4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t m = a > b ? a : b;

	m = m > c ? m : c;
	return m > d ? m : d;
}

/* Input at the dearest of the text prices (any tier or long-context
 * rate), audio, and the cache writes the request can make. One kind
 * takes all the input (kv_cost wants the kinds to sum to no more). */
static void
reserve_input(const struct kv_price *p, const struct kv_request_info *ri, int anthropic,
    struct kv_usage *est)
{
	int64_t text = max4(p->input, p->priority_input, p->flex_input, p->long_context_input);
	int64_t audio = ri->audio_in && p->audio_input > text ? p->audio_input : -1;
	int64_t w1h = p->cache_write_1h >= 0 ? p->cache_write_1h : 2 * p->input;
	int64_t write = -1;

	if (anthropic && ri->cache_ctl)
		write = ri->cache_1h && w1h > p->cache_write ? w1h : p->cache_write >= 0 ?
		    p->cache_write : p->input;
	else if (!anthropic && p->cache_write >= 0)
		write = p->cache_write;	/* OpenAI's automatic writes */
	if (write <= text && audio < 0)
		return;
	if (audio >= write) {
		est->audio_input = est->input;
		return;
	}
	est->cache_write = est->input;
	if (anthropic && ri->cache_1h && w1h > p->cache_write)
		est->cache_write_1h = est->input;
}

/* Output at the dearest of text (any tier), reasoning and, for a request
 * that may answer in audio, audio. */
static void
reserve_output(const struct kv_price *p, const struct kv_request_info *ri,
    struct kv_usage *est)
{
	int64_t text = max4(p->output, p->priority_output, p->flex_output,
	    p->long_context_output);

	if (ri->audio_out && p->audio_output > text && p->audio_output > p->reasoning_output)
		est->audio_output = est->output;
	else if (p->reasoning_output > p->output)
		est->reasoning = est->output;
}

void
kv_dims_reserve(const struct kv_price *p, const struct kv_request_info *ri, int anthropic,
    int region, struct kv_usage *est)
{
	est->fast = ri->fast == 1;
	est->geo_us = ri->geo == KV_GEO_US;
	est->region = region;
	reserve_input(p, ri, anthropic, est);
	reserve_output(p, ri, est);
}

void
kv_dims_charge(const struct kv_request_info *ri, int region, int speed_seen, int geo_seen,
    struct kv_usage *u)
{
	if (!speed_seen)
		u->fast = ri->fast == 1;
	if (!geo_seen)
		u->geo_us = ri->geo == KV_GEO_US;
	u->region = region;
}

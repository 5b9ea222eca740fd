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

void
kv_dims_reserve(const struct kv_request_info *ri, int region, struct kv_usage *est)
{
	est->fast = ri->fast == 1;
	est->geo_us = ri->geo == KV_GEO_US;
	est->region = region;
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

/* The 404 for a path no upstream serves, with the fix when there is one
 * (issue 24): a base URL missing its /v1, or with one too many. */
#ifndef KV_ROUTE_HINT_H
#define KV_ROUTE_HINT_H

#include <stddef.h>

#include "common/config.h"

/* Write the 404 message for TARGET (the request target, query and all)
 * into MSG. When the path with "/v1" put in front, or taken off, routes
 * (kv_config_route_client with MODEL and ANTHROPIC), the message names
 * that path and the base URL change that gets it. */
void	kv_route_hint(const struct kv_config *cf, const char *target, const char *model,
	    int anthropic, char *msg, size_t len);

#endif

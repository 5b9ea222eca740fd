/* 404s that teach: see route_hint.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "worker/route_hint.h"

#include "common/bedrock_path.h"

#include <stdio.h>
#include <string.h>

#define HINT_PATH_MAX	200	/* longer paths are cut in the message */

void
kv_route_hint(const struct kv_config *cf, const char *target, const char *model,
    int anthropic, char *msg, size_t len)
{
	char alt[HINT_PATH_MAX + 8];
	int n = (int)strcspn(target, "?"), v1;

	if (n > HINT_PATH_MAX)
		n = HINT_PATH_MAX;
	if (kv_br_path(target, strlen(target), NULL, NULL) != KV_BR_NONE) {
		snprintf(msg, len, "no upstream with provider = bedrock serves the path %.*s%s%s "
		    "(a Bedrock path goes to a bedrock upstream only: check its paths and "
		    "models)", n, target, model != NULL ? " for model " : "",
		    model != NULL ? model : "");
		return;
	}
	v1 = n >= 4 && strncmp(target, "/v1/", 4) == 0;
	/* With /v1 taken off (it was there) or put in front (it was not). */
	if (v1)
		snprintf(alt, sizeof(alt), "%.*s", n - 3, target + 3);
	else
		snprintf(alt, sizeof(alt), "/v1%.*s", n, target);
	if (n > 0 && target[0] == '/' &&
	    kv_config_route_client(cf, alt, model, anthropic) != NULL) {
		snprintf(msg, len, "no upstream is configured for the path %.*s; did you "
		    "mean %s? (%s)", n, target, alt, v1 ? "drop /v1 from the client's base "
		    "URL" : "end the client's base URL with /v1, e.g. http://HOST:PORT/v1");
		return;
	}
	snprintf(msg, len, "no upstream is configured for the path %.*s", n, target);
}

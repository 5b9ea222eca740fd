/* A gemini upstream's defaults (issue 38): the Gemini API's url and the
 * path prefix its model methods sit under, when the section writes
 * neither. Routing sends the Gemini API's paths to a gemini upstream only
 * (config_route.c). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/config_int.h"

#define GEMINI_URL	"https://generativelanguage.googleapis.com"

int
cfg_end_gemini(struct cfg_parse *p, struct kv_upstream *u)
{
	if (u->provider != KV_PROVIDER_GEMINI)
		return 0;
	if (u->url[0] == '\0') {
		if (cfg_parse_url(GEMINI_URL, u) == -1)
			return cfg_err(p, p->sect_line, "%s: cannot use %s", p->sect_text,
			    GEMINI_URL);
		strcpy(u->url, GEMINI_URL);
	}
	if (u->npaths == 0 && u->nmodels == 0) {
		if ((u->paths = calloc(1, sizeof(char *))) == NULL ||
		    (u->paths[0] = strdup("/v1beta/models")) == NULL)
			return cfg_err(p, 0, "out of memory");
		u->npaths = 1;
	}
	return 0;
}

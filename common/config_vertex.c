/* A vertex upstream's own keys (project, location) and defaults: its url
 * from its location, its paths the Vertex AI API's (v1, v1beta1). The
 * project and location go into a host name and into every request's path,
 * so only the characters Google allows in them pass. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/config_int.h"

/* 1..MAX-1 bytes of lower-case letters, digits, '-' and the characters of
 * EXTRA, starting with a letter or digit. */
static int
gcp_name(const char *v, size_t max, const char *extra)
{
	size_t n = strlen(v), i;

	if (n == 0 || n >= max || v[0] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!(v[i] >= 'a' && v[i] <= 'z') && !(v[i] >= '0' && v[i] <= '9') &&
		    v[i] != '-' && strchr(extra, v[i]) == NULL)
			return 0;
	return 1;
}

int
cfg_set_gcp_project(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base);

	/* "example.com:my-project" is a domain-scoped project's id */
	if (!gcp_name(v, sizeof(u->gcp_project), ".:"))
		return cfg_err(p, p->lineno, "project: '%s' is not a Google Cloud project id "
		    "(lower-case letters, digits, '-')", v);
	strcpy(u->gcp_project, v);
	return 0;
}

int
cfg_set_gcp_location(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base);

	if (!gcp_name(v, sizeof(u->gcp_location), ""))
		return cfg_err(p, p->lineno, "location: '%s' is not a Google Cloud location "
		    "(us-east5, europe-west1, global)", v);
	strcpy(u->gcp_location, v);
	return 0;
}

/* The Vertex AI endpoint of LOCATION: global's has no location in it. */
static void
default_url(const char *location, char *url, size_t len)
{
	if (strcmp(location, "global") == 0)
		snprintf(url, len, "https://aiplatform.googleapis.com");
	else
		snprintf(url, len, "https://%s-aiplatform.googleapis.com", location);
}

int
cfg_end_vertex(struct cfg_parse *p, struct kv_upstream *u)
{
	char url[sizeof(u->url)];

	if (u->provider != KV_PROVIDER_VERTEX) {
		if (u->gcp_project[0] != '\0' || u->gcp_location[0] != '\0')
			return cfg_err(p, p->sect_line, "%s: project and location are for "
			    "provider = vertex only", p->sect_text);
		return 0;
	}
	if (u->gcp_project[0] == '\0' || u->gcp_location[0] == '\0')
		return cfg_err(p, p->sect_line, "%s: provider = vertex needs project = "
		    "PROJECT_ID and location = LOCATION (us-east5, global)", p->sect_text);
	if (u->url[0] == '\0') {
		default_url(u->gcp_location, url, sizeof(url));
		if (cfg_parse_url(url, u) == -1)
			return cfg_err(p, p->sect_line, "%s: bad location for a url", p->sect_text);
		strcpy(u->url, url);
	}
	/* v1beta1: where @google/genai sends its Vertex AI calls */
	if (u->npaths == 0 && u->nmodels == 0) {
		if ((u->paths = calloc(2, sizeof(char *))) == NULL ||
		    (u->paths[0] = strdup("/v1/projects/")) == NULL ||
		    (u->paths[1] = strdup("/v1beta1/projects/")) == NULL)
			return cfg_err(p, 0, "out of memory");
		u->npaths = 2;
	}
	return 0;
}

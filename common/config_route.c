/* Questions asked of a loaded config on every request (config.h): which
 * upstream serves a path or a model, and what a model costs. The loader
 * (config.c) builds the tables; this only reads them. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <string.h>

#include "common/bedrock_path.h"
#include "common/gemini_path.h"
#include "common/config.h"
#include "common/glob.h"
#include "common/pricetab.h"
#include "common/vertex_path.h"

int
kv_path_match(const char *prefix, const char *path)
{
	size_t len = strlen(prefix);

	if (strncmp(prefix, path, len) != 0)
		return 0;
	return path[len] == '\0' || path[len] == '/' || path[len] == '?' ||
	    (len > 0 && prefix[len - 1] == '/');
}

static int
is_bedrock(const struct kv_upstream *u)
{
	return u->provider == KV_PROVIDER_BEDROCK;
}

/* PATH is under one of U's paths or free_paths. */
static int
serves_path(const struct kv_upstream *u, const char *path)
{
	size_t j;

	for (j = 0; j < u->nfree_paths; j++)
		if (kv_path_match(u->free_paths[j], path))
			return 1;
	for (j = 0; j < u->npaths; j++)
		if (kv_path_match(u->paths[j], path))
			return 1;
	return 0;
}

/* A Bedrock path (bedrock_path.h) goes to a bedrock upstream only: the
 * first whose models match the path's model id, else the first that
 * serves the path; the control plane's reads to the first bedrock one. */
static const struct kv_upstream *
route_bedrock(const struct kv_config *cf, const char *path, const char *model,
    enum kv_br_kind kind)
{
	size_t i, j;

	for (i = 0; model != NULL && *model != '\0' && i < cf->nupstreams; i++)
		for (j = 0; is_bedrock(&cf->upstreams[i]) && j < cf->upstreams[i].nmodels; j++)
			if (kv_glob_match(cf->upstreams[i].models[j], model))
				return &cf->upstreams[i];
	for (i = 0; i < cf->nupstreams; i++)
		if (is_bedrock(&cf->upstreams[i]) && cf->upstreams[i].target_of == 0 &&
		    (kind == KV_BR_CONTROL || serves_path(&cf->upstreams[i], path)))
			return &cf->upstreams[i];
	return NULL;
}

/* A Vertex AI path goes to a vertex upstream only: the first whose models
 * match the path's model, else the first that serves the path. */
static const struct kv_upstream *
route_vertex(const struct kv_config *cf, const char *path, const char *model)
{
	const struct kv_upstream *u;
	size_t i, j;

	for (i = 0; model != NULL && *model != '\0' && i < cf->nupstreams; i++)
		for (j = 0, u = &cf->upstreams[i]; u->provider == KV_PROVIDER_VERTEX &&
		    j < u->nmodels; j++)
			if (kv_glob_match(u->models[j], model))
				return u;
	for (i = 0; i < cf->nupstreams; i++)
		if (cf->upstreams[i].provider == KV_PROVIDER_VERTEX &&
		    cf->upstreams[i].target_of == 0 && serves_path(&cf->upstreams[i], path))
			return &cf->upstreams[i];
	return NULL;
}

/* A Gemini API path (gemini_path.h) goes to a gemini upstream only: the
 * first whose models match the path's model, else the first one (its
 * paths or not: no other provider serves these paths). */
static const struct kv_upstream *
route_gemini(const struct kv_config *cf, const char *model)
{
	size_t i, j;

	for (i = 0; model != NULL && *model != '\0' && i < cf->nupstreams; i++)
		for (j = 0; cf->upstreams[i].provider == KV_PROVIDER_GEMINI &&
		    j < cf->upstreams[i].nmodels; j++)
			if (kv_glob_match(cf->upstreams[i].models[j], model))
				return &cf->upstreams[i];
	for (i = 0; i < cf->nupstreams; i++)
		if (cf->upstreams[i].provider == KV_PROVIDER_GEMINI &&
		    cf->upstreams[i].target_of == 0)
			return &cf->upstreams[i];
	return NULL;
}

const struct kv_upstream *
kv_config_route(const struct kv_config *cf, const char *path, const char *model)
{
	struct kv_vx_path vx;
	enum kv_br_kind kind;
	size_t i, j;

	if (path != NULL && (kind = kv_br_path(path, strlen(path), NULL, NULL)) != KV_BR_NONE)
		return route_bedrock(cf, path, model, kind);
	if (path != NULL && kv_vx_path(path, strlen(path), &vx) != KV_VX_NONE)
		return route_vertex(cf, path, model);
	if (path != NULL && kv_gm_path(path, strlen(path), NULL, NULL) != KV_GM_NONE)
		return route_gemini(cf, model);
	/* a bedrock upstream's models take only the paths it serves (its
	 * OpenAI-compatible /openai/v1): Bedrock serves no other wire */
	for (i = 0; model != NULL && *model != '\0' && i < cf->nupstreams; i++)
		for (j = 0; j < cf->upstreams[i].nmodels; j++)
			if (kv_glob_match(cf->upstreams[i].models[j], model) &&
			    (!is_bedrock(&cf->upstreams[i]) ||
			    (path != NULL && serves_path(&cf->upstreams[i], path))))
				return &cf->upstreams[i];
	/* free_paths first: an upstream that lists a path serves it, even
	 * when another upstream's paths (a /v1 catch-all) cover it too */
	for (i = 0; path != NULL && i < cf->nupstreams; i++)
		for (j = 0; j < cf->upstreams[i].nfree_paths; j++)
			if (kv_path_match(cf->upstreams[i].free_paths[j], path))
				return &cf->upstreams[i];
	for (i = 0; path != NULL && i < cf->nupstreams; i++)
		for (j = 0; j < cf->upstreams[i].npaths; j++)
			if (kv_path_match(cf->upstreams[i].paths[j], path))
				return &cf->upstreams[i];
	return NULL;
}

int
kv_config_shared_path(const char *path)
{
	static const char *const shared[] = { "/v1/models", "/v1/files" };
	size_t i, n;

	for (i = 0; path != NULL && i < sizeof(shared) / sizeof(shared[0]); i++) {
		n = strlen(shared[i]);
		if (strncmp(path, shared[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/' || path[n] == '?'))
			return 1;
	}
	return 0;
}

const struct kv_upstream *
kv_config_route_client(const struct kv_config *cf, const char *path,
    const char *model, int anthropic_client)
{
	const struct kv_upstream *up;

	if (anthropic_client && kv_config_shared_path(path) &&
	    (up = kv_config_route(cf, "/v1/messages", NULL)) != NULL)
		return up;
	return kv_config_route(cf, path, model);
}

const struct kv_price *
kv_config_price(const struct kv_config *cf, const char *model)
{
	return kv_price_lookup(cf, model, NULL, NULL);
}

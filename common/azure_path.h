/* The request targets of Azure OpenAI (issue 38) and the deployments an
 * azure upstream maps to catalogue models: /openai/deployments/{name}/...
 * names its deployment in the path; the others under /openai/ (the v1
 * API's /openai/v1/..., and /openai/responses, where the openai SDK's
 * AzureOpenAI client sends Responses) in the body's "model".
 * Pure functions: no I/O, no allocation. Under common/ because the config
 * checks a deployments word with them too. */
#ifndef KV_AZURE_PATH_H
#define KV_AZURE_PATH_H

#include <stddef.h>

#include "common/config.h"

enum kv_az_kind {
	KV_AZ_NONE = 0,		/* not an Azure OpenAI path */
	KV_AZ_DEPLOYMENT,	/* /openai/deployments/{name}/{operation...} */
	KV_AZ_BODY,		/* /openai/{other...}: the body's "model" names it */
};

/* A deployment name's bytes at most (Azure allows 64). */
#define KV_AZ_NAME_MAX	64

/* What TARGET (LEN bytes, query included) is. A deployment path is
 * /openai/deployments/ then one non-empty segment then '/' and more; for
 * it *DEP and *DLEN give that segment as sent (both set only then). Any
 * other path below /openai/ but /openai/deployments/ is KV_AZ_BODY. */
enum kv_az_kind kv_az_path(const char *target, size_t len, const char **dep, size_t *dlen);

/* Whether NAME (LEN bytes) may be a deployment name: 1 to KV_AZ_NAME_MAX
 * of letters, digits, '-', '_' and '.' (what Azure accepts; nothing that
 * could change a path's meaning). */
int	kv_az_name_ok(const char *name, size_t len);

/* Whether W (LEN bytes) is a deployments word: NAME:MODEL with NAME as
 * kv_az_name_ok takes it and a printable MODEL under KV_NAME_MAX bytes. */
int	kv_az_word_ok(const char *w, size_t len);

/* The model UP's deployments map deployment NAME (LEN bytes) to, a
 * NUL-terminated string inside UP's config, or NULL when UP has no such
 * deployment. Names compare exactly (Azure's are case-insensitive, but a
 * client's spelling must find the price the operator wrote). */
const char *kv_az_model(const struct kv_upstream *up, const char *name, size_t len);

#endif

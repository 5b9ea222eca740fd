/* The request targets of Vertex AI (issue 38):
 * /v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{model}:{method}
 * with publisher anthropic (Claude: rawPredict, streamRawPredict, and
 * count-tokens:rawPredict) or google (Gemini: generateContent,
 * streamGenerateContent, countTokens). Pure functions: no I/O, no
 * allocation. Under common/ because routing (config_route.c) asks them
 * too. */
#ifndef KV_VERTEX_PATH_H
#define KV_VERTEX_PATH_H

#include <stddef.h>

enum kv_vx_kind {
	KV_VX_NONE = 0,		/* not under /v1/projects/ */
	KV_VX_OTHER,		/* under it, but none of the below */
	KV_VX_RAW,		/* anthropic .../{model}:rawPredict */
	KV_VX_STREAM_RAW,	/* anthropic .../{model}:streamRawPredict */
	KV_VX_GENERATE,		/* google .../{model}:generateContent */
	KV_VX_STREAM_GENERATE,	/* google .../{model}:streamGenerateContent */
	KV_VX_COUNT,		/* countTokens, either publisher's; count-tokens:rawPredict */
};

/* What a Vertex AI path is, and where its parts are (offsets into the
 * target as sent). */
struct kv_vx_path {
	enum kv_vx_kind	 kind;
	int		 anthropic;	/* publisher anthropic (else google) */
	size_t		 rest_off;	/* "/publishers/...": what follows the location */
	size_t		 model_off, model_len;
};

/* A model id, at most this long with its NUL (reqscan.h's KV_REQ_MODEL). */
#define KV_VX_MODEL_MAX	96

/* Parse TARGET (LEN bytes, query included) into *P; returns P->kind. A
 * path of one of the kinds above is exactly
 * /v1/projects/{p}/locations/{l}/publishers/{pub}/models/{m}:{method}
 * with each segment non-empty, {m} of letters, digits and "-._@" (shorter
 * than KV_VX_MODEL_MAX), and nothing after but a query; any other path
 * under /v1/projects/ (or /v1beta1/projects/) is KV_VX_OTHER. */
enum kv_vx_kind kv_vx_path(const char *target, size_t len, struct kv_vx_path *p);

/* Whether kind K answers with a stream. */
int	kv_vx_streams(enum kv_vx_kind k);

#endif

/* The request targets of the Gemini API (issue 38):
 * /{version}/models/{model}:{method}, the model a path names and the
 * method it calls, and the model list and reads. Pure functions: no I/O,
 * no allocation. Under common/ because routing (config_route.c) asks
 * them too; Vertex AI's publishers/google paths end in the same
 * models/{model}:{method}, which kv_gm_method reads. */
#ifndef KV_GEMINI_PATH_H
#define KV_GEMINI_PATH_H

#include <stddef.h>

enum kv_gm_kind {
	KV_GM_NONE = 0,		/* not a Gemini API path */
	KV_GM_GENERATE,		/* :generateContent */
	KV_GM_STREAM,		/* :streamGenerateContent (alt=sse, or a JSON array) */
	KV_GM_COUNT,		/* :countTokens (free) */
	KV_GM_EMBED,		/* :embedContent */
	KV_GM_BATCH_EMBED,	/* :batchEmbedContents */
	KV_GM_OTHER,		/* another :method of a model (refused) */
	KV_GM_MODELS,		/* /{version}/models or /{version}/models/{model} */
};

/* The model name's longest accepted form (reqscan.h's KV_REQ_MODEL). */
#define KV_GM_MODEL_MAX	96

/* The method named by S[0..N) (the text after the ':' of a model
 * segment): one of the kinds above, KV_GM_OTHER for any other name. */
enum kv_gm_kind kv_gm_method(const char *s, size_t n);

/* What TARGET (LEN bytes, query included) is: exactly /v1beta/, /v1/ or
 * /v1alpha/ then models/{model}:{method} with nothing after it but a
 * query, or models alone or with one segment (no ':') after it, but for
 * /v1/ (where those two are OpenAI's reads). The
 * model is letters, digits, '.', '-' and '_' only (no escape). *M_OFF and
 * *M_LEN give the model name (M_LEN 0 for the list); both may be NULL. */
enum kv_gm_kind kv_gm_path(const char *target, size_t len, size_t *m_off, size_t *m_len);

#endif

/* The Gemini API's request targets (see gemini_path.h). Source: the
 * Gemini API reference (read 2026-12-07), "models" methods:
 *   https://ai.google.dev/api/generate-content
 *   https://ai.google.dev/api/tokens  https://ai.google.dev/api/embeddings */
#include "common/gemini_path.h"

#include <string.h>

#define LIT(s)	(s), sizeof(s) - 1

enum kv_gm_kind
kv_gm_method(const char *s, size_t n)
{
	static const struct { const char *name; size_t len; enum kv_gm_kind k; } m[] = {
		{ LIT("generateContent"), KV_GM_GENERATE },
		{ LIT("streamGenerateContent"), KV_GM_STREAM },
		{ LIT("countTokens"), KV_GM_COUNT },
		{ LIT("embedContent"), KV_GM_EMBED },
		{ LIT("batchEmbedContents"), KV_GM_BATCH_EMBED },
	};
	size_t i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (n == m[i].len && memcmp(s, m[i].name, n) == 0)
			return m[i].k;
	return KV_GM_OTHER;
}

/* The version prefix's length ("/v1beta/models", ...), or 0. */
static size_t
models_prefix(const char *t, size_t plen)
{
	static const struct { const char *s; size_t len; } v[] = {
		{ LIT("/v1beta/models") }, { LIT("/v1/models") }, { LIT("/v1alpha/models") },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (plen >= v[i].len && memcmp(t, v[i].s, v[i].len) == 0 &&
		    (plen == v[i].len || t[v[i].len] == '/'))
			return v[i].len;
	return 0;
}

static int
model_char(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
}

enum kv_gm_kind
kv_gm_path(const char *target, size_t len, size_t *m_off, size_t *m_len)
{
	const char *q = memchr(target, '?', len);
	size_t plen = q != NULL ? (size_t)(q - target) : len, pre, i, colon = 0, mlen;

	if (m_off != NULL)
		*m_off = *m_len = 0;
	if ((pre = models_prefix(target, plen)) == 0)
		return KV_GM_NONE;
	/* /v1/models and /v1/models/{id} are OpenAI's too: there only a
	 * model's :method is Gemini's */
	if (plen == pre)
		return pre == 10 ? KV_GM_NONE : KV_GM_MODELS;
	for (i = pre + 1; i < plen; i++) {
		if (target[i] == ':' && colon == 0)
			colon = i;
		else if (colon == 0 && !model_char((unsigned char)target[i]))
			return KV_GM_NONE;
	}
	if (colon == pre + 1 || plen == pre + 1)
		return KV_GM_NONE;	/* an empty model, or "/models/" */
	mlen = (colon != 0 ? colon : plen) - pre - 1;
	if (mlen > KV_GM_MODEL_MAX - 1)
		return KV_GM_NONE;
	if (m_off != NULL) {
		*m_off = pre + 1;
		*m_len = mlen;
	}
	if (colon == 0)
		return pre == 10 ? KV_GM_NONE : KV_GM_MODELS;
	return kv_gm_method(target + colon + 1, plen - colon - 1);
}

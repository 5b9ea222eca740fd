/* libFuzzer target: Vertex AI's request targets (kv_vx_path) and the
 * endpoint policy's reading of them. Properties: no crash; a metered or
 * counted kind has its model segment inside the target, non-empty, shorter
 * than KV_VX_MODEL_MAX and of letters, digits and "-._@", after the
 * location's end (rest_off), which starts "/publishers/"; only Claude's
 * rawPredict and streamRawPredict are Anthropic's Messages API to
 * kv_endpoint_api, only Gemini's generateContent and its stream Gemini's
 * API; the same target parses the same way twice. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/vertex_path.h"
#include "worker/endpoints.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	struct kv_vx_path a, b;
	enum kv_vx_kind k = kv_vx_path(t, size, &a);
	enum kv_api api = kv_endpoint_api("POST", t, size);
	size_t i;

	if (kv_vx_path(t, size, &b) != k || memcmp(&a, &b, sizeof(a)) != 0 || a.kind != k)
		abort();
	if (k != KV_VX_NONE && ((api == KV_API_ANTHROPIC_MESSAGES) !=
	    (k == KV_VX_RAW || k == KV_VX_STREAM_RAW) || (api == KV_API_GEMINI) !=
	    (k == KV_VX_GENERATE || k == KV_VX_STREAM_GENERATE)))
		abort();
	if (k == KV_VX_NONE || k == KV_VX_OTHER)
		return 0;
	if (a.rest_off == 0 || a.rest_off + 12 > size || memcmp(t + a.rest_off, "/publishers/", 12) != 0 ||
	    a.model_off <= a.rest_off || a.model_len == 0 || a.model_len >= KV_VX_MODEL_MAX ||
	    a.model_off + a.model_len >= size || t[a.model_off + a.model_len] != ':')
		abort();
	for (i = 0; i < a.model_len; i++)
		if ((t[a.model_off + i] == '\0' || strchr("-._@", t[a.model_off + i]) == NULL) &&
		    !((t[a.model_off + i] | 0x20) >= 'a' && (t[a.model_off + i] | 0x20) <= 'z') &&
		    !(t[a.model_off + i] >= '0' && t[a.model_off + i] <= '9'))
			abort();
	return 0;
}

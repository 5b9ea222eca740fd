/* libFuzzer target: the Gemini API's framings and paths. Input: byte 0
 * picks the response's framing (0 a JSON body or the JSON-array stream, 1
 * alt=sse) and the API (bit 1: generateContent, else the embeddings);
 * bytes 1-2 a split point; the rest is the body, also read as a request
 * target by kv_gm_path. Beyond "no crash": the usage scanner fed whole,
 * in two pieces and byte by byte agrees, its usage is consistent (cached
 * within input, audio within the uncached input, reasoning within output,
 * final only with usage), and a
 * path's model lies inside the target and is made of model characters. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/gemini_path.h"
#include "worker/usage.h"
#include "worker/usage_json.h"
#include "tests/fuzz/usage_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
same(const struct kv_usage_scanner *a, const struct kv_usage_scanner *b)
{
	const struct kv_usage *x = kv_usage_result(a), *y = kv_usage_result(b);

	return x->found == y->found && x->input == y->input && x->output == y->output &&
	    x->cached_input == y->cached_input && x->reasoning == y->reasoning &&
	    x->audio_input == y->audio_input &&
	    a->final == b->final && strcmp(a->model, b->model) == 0;
}

static void
check_usage(const struct kv_usage_scanner *s)
{
	const struct kv_usage *u = kv_usage_result(s);

	if (memchr(s->model, '\0', sizeof(s->model)) == NULL)
		abort();
	if (u->input < 0 || u->output < 0 || u->cached_input > u->input ||
	    u->reasoning > u->output || (s->final && !u->found) || u->audio_input < 0 ||
	    u->audio_input > u->input - u->cached_input ||
	    (!u->found && (u->input || u->output)))
		abort();
}

static void
check_path(const char *t, size_t len)
{
	size_t off, n, i;
	enum kv_gm_kind k = kv_gm_path(t, len, &off, &n);

	if (k == KV_GM_NONE)
		return;
	if (off + n > len || n >= KV_GM_MODEL_MAX)
		abort();
	for (i = off; i < off + n; i++)
		if (t[i] == '/' || t[i] == ':' || t[i] == '?' || t[i] == '%')
			abort();
	if (k != KV_GM_MODELS && n == 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_usage_scanner whole, split, bytes;
	enum kv_api api;
	size_t len, at;
	char *body;
	int sse;

	if (size < 3)
		return 0;
	sse = data[0] & 1;
	api = data[0] & 2 ? KV_API_GEMINI : KV_API_GEMINI_EMBED;
	len = size - 3;
	at = len ? ((size_t)data[1] << 8 | data[2]) % (len + 1) : 0;
	body = malloc(len ? len : 1);	/* exact size: ASan sees a read past it */
	if (body == NULL)
		abort();
	memcpy(body, data + 3, len);
	usage_fuzz_scan(api, sse, body, len, len, 0, &whole);
	usage_fuzz_scan(api, sse, body, len, at, 0, &split);
	usage_fuzz_scan(api, sse, body, len, 0, 1, &bytes);
	check_path(body, len);
	free(body);
	if (!same(&whole, &split) || !same(&whole, &bytes))
		abort();
	check_usage(&whole);
	return 0;
}

/* libFuzzer target: the strict JSON validator and the request scanner on
 * top of it (as a Responses body, as an Anthropic Messages body sent to a
 * Bedrock path, as a Bedrock Converse body), and the usage-only chunk
 * test. Beyond "no crash" it checks:
 * the verdict, the error text and everything the scanner found do not
 * depend on how the body is split (the relay feeds it as it arrives), and
 * the offsets it reports point at the braces they name; and the validator
 * (whole, and cut at a) says what the byte-wise one it replaced
 * (jsonv_ref.h) says, verdict and error text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/reqscan.h"
#include "worker/usage.h"
#include "worker/sse_filter.h"
#include "tests/fuzz/jsonv_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Scan data in pieces: cut at a, then b (a <= b <= size). */
static int
scan3(const uint8_t *data, size_t size, size_t a, size_t b, enum kv_api api,
    struct kv_reqscan *r)
{
	static const char model[] = "us.anthropic.claude-sonnet-4-20250514-v1:0";
	char *copy = malloc(size ? size : 1);
	int ok;

	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	kv_reqscan_init(r, api);
	if (api == KV_API_ANTHROPIC_MESSAGES &&
	    kv_reqscan_model(r, model, sizeof(model) - 1) == -1)
		abort();
	ok = kv_reqscan_feed(r, copy, a) == 0 && kv_reqscan_feed(r, copy + a, b - a) == 0 &&
	    kv_reqscan_feed(r, copy + b, size - b) == 0 && kv_reqscan_finish(r) == 0;
	free(copy);
	return ok;
}

static int
same(const struct kv_request_info *x, const struct kv_request_info *y)
{
	return strcmp(x->model, y->model) == 0 && x->stream == y->stream &&
	    x->has_stream_options == y->has_stream_options &&
	    x->include_usage == y->include_usage && x->max_output == y->max_output &&
	    x->mult == y->mult && strcmp(x->fetches, y->fetches) == 0 &&
	    x->so_start == y->so_start && x->so_end == y->so_end &&
	    x->so_members == y->so_members && x->obj_end == y->obj_end &&
	    x->members == y->members && x->images == y->images &&
	    memcmp(x->img_tok, y->img_tok, sizeof(x->img_tok)) == 0 &&
	    x->thinking == y->thinking && x->hidden == y->hidden &&
	    x->cache_ctl == y->cache_ctl && x->cache_1h == y->cache_1h &&
	    x->tool_uses == y->tool_uses && x->tools_unbounded == y->tools_unbounded &&
	    x->tier == y->tier && strcmp(x->dim_other, y->dim_other) == 0 &&
	    x->audio_in == y->audio_in;
}

static void
check_offsets(const uint8_t *data, size_t size, const struct kv_request_info *ri)
{
	if (ri->obj_end >= size || data[ri->obj_end] != '}')
		abort();
	if (ri->so_start != 0 && ri->so_end != 0 &&
	    (data[ri->so_start] != '{' || data[ri->so_end] != '}' || ri->so_end <= ri->so_start))
		abort();
	if (ri->max_output < -1 || ri->max_output > KV_REQ_LIMIT_MAX || ri->mult < 1 ||
	    ri->thinking < KV_REQ_THINK_DYNAMIC || ri->thinking > KV_REQ_LIMIT_MAX)
		abort();
}

/* The validator against the oracle; returns the oracle's verdict (0/-1). */
static int
against_ref(const char *d, size_t size, size_t a)
{
	static struct kv_jv ref, whole, split;
	int r0, r1, r2;

	ref_jv_init(&ref);
	r0 = ref_jv_feed(&ref, d, size, NULL, NULL) == 0 ? ref_jv_finish(&ref) : -1;
	kv_jv_init(&whole);
	r1 = kv_jv_feed(&whole, d, size, NULL, NULL) == 0 ? kv_jv_finish(&whole) : -1;
	kv_jv_init(&split);
	r2 = kv_jv_feed(&split, d, a, NULL, NULL) == 0 &&
	    kv_jv_feed(&split, d + a, size - a, NULL, NULL) == 0 ? kv_jv_finish(&split) : -1;
	if (r0 != r1 || r0 != r2 || strcmp(ref.err, whole.err) != 0 ||
	    strcmp(ref.err, split.err) != 0)
		abort();
	return r0;
}

/* The body scanned to API whole and cut at A and B must say the same;
 * invalid JSON (JSON_OK 0, the oracle's verdict) is refused, valid JSON
 * never as such. */
static void
one_api(const uint8_t *data, size_t size, size_t a, size_t b, enum kv_api api, int json_ok)
{
	static struct kv_reqscan whole, split;
	int ok1, ok2;

	ok1 = scan3(data, size, size, size, api, &whole);
	ok2 = scan3(data, size, a, b, api, &split);
	if (ok1 != ok2 || strcmp(whole.err, split.err) != 0)
		abort();
	if (ok1) {
		if (!same(&whole.ri, &split.ri))
			abort();
		check_offsets(data, size, &whole.ri);
	}
	if (!json_ok ? ok1 : !ok1 && strncmp(whole.err, "the body is not valid JSON", 26) == 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum kv_api apis[] = { KV_API_OPENAI_RESPONSES, KV_API_ANTHROPIC_MESSAGES,
	    KV_API_BEDROCK_CONVERSE, KV_API_GEMINI, KV_API_GEMINI_EMBED };
	size_t a = size ? data[0] % (size + 1) : 0, b, i;
	int json_ok;
	char *copy;

	b = size > 1 ? a + data[1] % (size - a + 1) : size;
	copy = malloc(size ? size : 1);
	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	json_ok = against_ref(copy, size, a) == 0;
	for (i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
		one_api(data, size, a, b, apis[i], json_ok);
	(void)kv_sse_is_usage_only(copy, size);
	free(copy);
	return 0;
}

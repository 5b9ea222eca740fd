/* libFuzzer target: the response usage scanner over any bytes.
 * Input: byte 0 picks the API (low 3 bits, modulo the number of APIs) and
 * SSE (bit 3); bytes 1-2 pick a split point; the rest is the body.
 * Beyond "no crash" it checks what the relay relies on: the body fed whole,
 * fed in two pieces at the split point and fed byte by byte gives the same
 * result, and the result is sane (terminated model, consistent counts).
 * output_bytes, the estimate used only for cut streams, is compared by
 * test_usage on well-formed streams: for a malformed event the scanner's
 * fast path (a whole one-line event, text counted without lexing) and the
 * lexer may count differently, so here it is only checked to be sane. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/usage.h"
#include "worker/usage_json.h"
#include "tests/fuzz/usage_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_APIS	(KV_API_OTHER + 1)

static int
same(const struct kv_usage_scanner *a, const struct kv_usage_scanner *b)
{
	const struct kv_usage *x = kv_usage_result(a), *y = kv_usage_result(b);

	return x->found == y->found && x->input == y->input &&
	    x->output == y->output && x->cached_input == y->cached_input &&
	    x->cache_write == y->cache_write && x->estimated == y->estimated &&
	    x->cache_write_1h == y->cache_write_1h && x->tier == y->tier &&
	    a->final == b->final && strcmp(a->model, b->model) == 0 &&
	    x->web_search == y->web_search && x->web_fetch == y->web_fetch &&
	    x->code_exec_ms == y->code_exec_ms &&
	    a->error_event == b->error_event;
}

static void
check_sane(const struct kv_usage_scanner *s, size_t len)
{
	const struct kv_usage *u = kv_usage_result(s);

	if (memchr(s->model, '\0', sizeof(s->model)) == NULL)
		abort();
	if (s->output_bytes < 0 || (uint64_t)s->output_bytes > len)
		abort();
	if (s->output_high < 0 || s->output_high > s->output_bytes ||
	    s->output_chars < 0 || s->output_chars > s->output_high ||
	    s->output_events < 0 || (uint64_t)s->output_events > len ||
	    kv_usage_output_estimate(s) < 0)
		abort();
	if (u->web_search < 0 || u->web_fetch < 0 || (uint64_t)u->web_search > len)
		abort();
	if (s->error_event && s->final)
		abort();
	if (u->input < 0 || u->output < 0 || u->cached_input < 0 || u->cache_write < 0)
		abort();
	if (u->found && (u->cached_input > u->input || u->cache_write > u->input ||
	    u->cache_write_1h > u->cache_write))
		abort();
	if (s->final && !u->found)
		abort();
	if (!u->found && (u->input || u->output || u->cached_input || u->cache_write))
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
	api = (enum kv_api)((data[0] & 7) % N_APIS);
	sse = (data[0] >> 3) & 1;
	len = size - 3;
	at = len ? ((size_t)data[1] << 8 | data[2]) % (len + 1) : 0;
	/* an exact-size copy, so ASan sees any read past the end */
	body = malloc(len ? len : 1);
	if (body == NULL)
		abort();
	memcpy(body, data + 3, len);
	usage_fuzz_scan(api, sse, body, len, len, 0, &whole);
	usage_fuzz_scan(api, sse, body, len, at, 0, &split);
	usage_fuzz_scan(api, sse, body, len, 0, 1, &bytes);
	free(body);
	if (!same(&whole, &split) || !same(&whole, &bytes))
		abort();
	check_sane(&whole, len);
	return 0;
}

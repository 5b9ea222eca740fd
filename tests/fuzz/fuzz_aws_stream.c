/* libFuzzer target: the AWS event-stream usage filter
 * (worker/aws_stream_filter.h) as the relay runs it on a Bedrock stream's
 * reads: the decoder, the chunk decoder and the usage scanner behind them.
 * The usage it leaves (every kv_usage field, final, the text counted, the
 * cut and the exception named) must not depend on where reads split the
 * stream: whole, cut at two points picked from the input, and byte by
 * byte must agree; a cut is never final. The first input byte picks the
 * mode: bit 0, the CRCs of the rest are fixed up first (fuzz_aws_eventstream
 * does the same); bit 1, a ConverseStream instead of an InvokeModel stream. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/aes_crcs.h"
#include "worker/aws_stream_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct result {
	struct kv_usage	 u;
	int		 final;
	int64_t		 text, events;
	enum kv_aws_cut	 cut;
	char		 exception[48];
};

/* Run DATA with read boundaries at cuts[0..ncut) (ascending); each piece
 * an exact-size copy so ASan sees any read past a read's end. */
static void
run(enum kv_api api, const uint8_t *data, size_t size, const size_t *cuts, size_t ncut,
    struct result *r)
{
	struct kv_usage_scanner s;
	struct kv_aws_stream *a;
	size_t start = 0, end, i;
	char *piece;

	kv_usage_init(&s, api, 1);
	if ((a = kv_aws_stream_new(&s)) == NULL)
		abort();
	for (i = 0; i <= ncut; i++, start = end) {
		end = i < ncut ? cuts[i] : size;
		if ((piece = malloc(end - start + 1)) == NULL)
			abort();
		memcpy(piece, data + start, end - start);
		kv_aws_stream_feed(a, piece, end - start);
		free(piece);
	}
	kv_aws_stream_end(a);
	memset(r, 0, sizeof(*r));
	r->u = *kv_usage_result(&s);
	r->final = s.final;
	r->text = s.output_bytes;
	r->events = s.output_events;
	r->cut = a->cut;
	memcpy(r->exception, a->exception, sizeof(r->exception));
	if (r->cut != KV_AWS_OK && r->final)
		abort();	/* a cut is never final */
	if (r->u.input < 0 || r->u.output < 0 || r->u.cached_input > r->u.input ||
	    r->u.cache_write_1h > r->u.cache_write)
		abort();
	kv_aws_stream_free(a);
}

static void
same(const struct result *a, const struct result *b)
{
	if (memcmp(&a->u, &b->u, sizeof(a->u)) != 0 || a->final != b->final ||
	    a->text != b->text || a->events != b->events || a->cut != b->cut ||
	    strcmp(a->exception, b->exception) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum kv_api api;
	struct result whole, cut;
	size_t cuts[2], *each;
	uint8_t *in;

	if (size < 1)
		return 0;
	api = data[0] & 2 ? KV_API_BEDROCK_CONVERSE : KV_API_ANTHROPIC_MESSAGES;
	in = aes_input(data, size, &size, cuts);
	run(api, in, size, NULL, 0, &whole);
	run(api, in, size, cuts, 2, &cut);
	same(&whole, &cut);
	if ((each = aes_every_byte(size)) != NULL) {
		run(api, in, size, each, size - 1, &cut);
		same(&whole, &cut);
		free(each);
	}
	free(in);
	return 0;
}

/* libFuzzer target: the SSE filter (worker/sse_filter.h). The relay feeds
 * it whatever each read() returned, so while no event outgrows the filter's
 * buffer the output must not depend on where reads split the stream:
 * filtering whole, cut at two points picked from the input, and byte by
 * byte must give the same bytes. The filter only drops and cuts: never more
 * bytes out than in. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/sse_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
	char	*buf;
	size_t	 len, cap;
};

/* The filter's output callback: both pieces appended. */
static int
take(void *arg, const char *a, size_t alen, const char *b, size_t blen)
{
	struct sink *s = arg;

	if (s->len + alen + blen > s->cap)
		abort();	/* more out than in */
	if (alen > 0)
		memcpy(s->buf + s->len, a, alen);
	if (blen > 0)
		memcpy(s->buf + s->len + alen, b, blen);
	s->len += alen + blen;
	return 0;
}

/* Filter DATA with read boundaries at cuts[0..ncut) (ascending). Each
 * piece is an exact-size copy so ASan sees any read past a read's end. */
static void
filter(const uint8_t *data, size_t size, const size_t *cuts, size_t ncut, struct sink *o)
{
	struct kv_sse_filter f;
	size_t start = 0, end, i;
	char *piece;

	memset(o, 0, sizeof(*o));
	o->cap = size;
	if ((o->buf = malloc(size + 1)) == NULL)
		abort();
	memset(&f, 0, sizeof(f));
	kv_sse_filter_init(&f, take, o);
	for (i = 0; i <= ncut; i++, start = end) {
		end = i < ncut ? cuts[i] : size;
		if ((piece = malloc(end - start + 1)) == NULL)
			abort();
		memcpy(piece, data + start, end - start);
		if (kv_sse_filter_feed(&f, end > start ? piece : NULL, end - start) == -1)
			abort();
		free(piece);
		kv_sse_filter_idle(&f);
	}
	if (kv_sse_filter_flush(&f) == -1)
		abort();
	kv_sse_filter_free(&f);
}

static void
same(const struct sink *a, const struct sink *b)
{
	if (a->len != b->len || memcmp(a->buf, b->buf, a->len) != 0)
		abort();
}

static void
byte_by_byte(const uint8_t *data, size_t size, const struct sink *whole)
{
	struct sink o;
	size_t *cuts, i;

	if (size > 4096 || size < 2)
		return;
	if ((cuts = malloc(size * sizeof(*cuts))) == NULL)
		abort();
	for (i = 1; i < size; i++)
		cuts[i - 1] = i;
	filter(data, size, cuts, size - 1, &o);
	same(whole, &o);
	free(o.buf);
	free(cuts);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sink whole, split;
	size_t cuts[2];

	filter(data, size, NULL, 0, &whole);
	if (size > 0 && size < KV_EBUF_SIZE) {
		cuts[0] = data[0] % (size + 1);
		cuts[1] = cuts[0] + (size - cuts[0]) / 2;
		filter(data, size, cuts, 2, &split);
		same(&whole, &split);
		free(split.buf);
		byte_by_byte(data, size, &whole);
	}
	free(whole.buf);
	return 0;
}

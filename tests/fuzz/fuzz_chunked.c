/* libFuzzer target: the chunked decoder. The relay feeds it whatever each
 * read() returned, so the result must not depend on where reads split the
 * stream: decoding whole, cut at two points picked from the input, and byte
 * by byte must give the same payload, the same end and the same verdict. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	char	*payload;
	size_t	 plen;
	size_t	 used;
	int	 done;
	int	 err;
};

/* Feed in[0..len) as one read, checking the per-call contract. */
static int
feed_piece(struct kv_chunked *c, const char *in, size_t len, struct outcome *o)
{
	const char *d;
	size_t dlen, off = 0;
	ssize_t n;

	while (off < len && !c->done) {
		n = kv_chunked_feed(c, in + off, len - off, &d, &dlen);
		if (n == -1)
			return -1;
		if (n <= 0 || (size_t)n > len - off)
			abort();
		if (dlen > 0 && (d < in + off || d + dlen > in + off + (size_t)n))
			abort();
		if (dlen > 0) {
			memcpy(o->payload + o->plen, d, dlen);
			o->plen += dlen;
		}
		off += (size_t)n;
	}
	o->used += off;
	return 0;
}

/* Decode with read boundaries at cuts[0..ncut) (ascending). Each piece is
 * an exact-size copy so ASan sees any read past a read's end. */
static void
decode(const uint8_t *data, size_t size, const size_t *cuts, size_t ncut,
    struct outcome *o)
{
	struct kv_chunked c;
	size_t start = 0, end, i;
	char *piece;

	memset(o, 0, sizeof(*o));
	o->payload = malloc(size + 1);
	if (o->payload == NULL)
		abort();
	kv_chunked_init(&c);
	for (i = 0; i <= ncut && !c.done && !o->err; i++, start = end) {
		end = i < ncut ? cuts[i] : size;
		if ((piece = malloc(end - start + 1)) == NULL)
			abort();
		memcpy(piece, data + start, end - start);
		o->err = feed_piece(&c, piece, end - start, o) == -1;
		free(piece);
	}
	o->done = c.done;
}

static void
same(const struct outcome *a, const struct outcome *b)
{
	if (a->err != b->err)
		abort();
	if (a->err)
		return;
	if (a->done != b->done || a->plen != b->plen || a->used != b->used ||
	    memcmp(a->payload, b->payload, a->plen) != 0)
		abort();
}

static void
byte_by_byte(const uint8_t *data, size_t size, const struct outcome *whole)
{
	struct outcome o;
	size_t *cuts, i;

	if (size > 4096 || size < 2)
		return;
	if ((cuts = malloc(size * sizeof(*cuts))) == NULL)
		abort();
	for (i = 1; i < size; i++)
		cuts[i - 1] = i;
	decode(data, size, cuts, size - 1, &o);
	same(whole, &o);
	free(o.payload);
	free(cuts);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome whole, split;
	size_t cuts[2];

	decode(data, size, NULL, 0, &whole);
	if (whole.plen > size || whole.used > size)
		abort();
	if (size > 0) {
		cuts[0] = data[0] % (size + 1);
		cuts[1] = cuts[0] + (size - cuts[0]) / 2;
		decode(data, size, cuts, 2, &split);
		same(&whole, &split);
		free(split.payload);
	}
	byte_by_byte(data, size, &whole);
	free(whole.payload);
	return 0;
}

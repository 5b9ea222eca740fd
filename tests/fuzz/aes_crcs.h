/* For the event-stream fuzz targets (fuzz_aws_eventstream.c,
 * fuzz_aws_stream.c): the stream an input stands for (its CRCs made right
 * when its first byte is odd, so that mutations reach the headers and
 * payloads behind them), and the two cut points it picks. */
#ifndef KV_FUZZ_AES_CRCS_H
#define KV_FUZZ_AES_CRCS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32.h"

static void
put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

/* Make each message's CRCs right, as far as the lengths allow. */
static void
fix_crcs(uint8_t *b, size_t size)
{
	size_t pos = 0;
	uint32_t total;

	while (size - pos >= 12) {
		put32(b + pos + 8, kv_crc32(0, b + pos, 8));
		total = (uint32_t)b[pos] << 24 | (uint32_t)b[pos + 1] << 16 |
		    (uint32_t)b[pos + 2] << 8 | b[pos + 3];
		if (total < 16 || total > size - pos)
			return;
		put32(b + pos + total - 4, kv_crc32(0, b + pos, total - 4));
		pos += total;
	}
}

/* The stream of DATA[0..SIZE) (SIZE >= 1): its bytes after the first,
 * *N of them, in a buffer of their own (for free), CRCs fixed when DATA[0]
 * is odd; CUTS, two ascending cut points picked by DATA[0]. */
static uint8_t *
aes_input(const uint8_t *data, size_t size, size_t *n, size_t cuts[2])
{
	uint8_t *in;

	if ((in = malloc(size)) == NULL)
		abort();
	memcpy(in, data + 1, size - 1);
	*n = size - 1;
	if (data[0] & 1)
		fix_crcs(in, *n);
	cuts[0] = *n ? data[0] % *n : 0;
	cuts[1] = *n ? cuts[0] + (*n - cuts[0]) / 2 : 0;
	return in;
}

/* Every cut point of a stream of N bytes, 1 to N - 1: a feed a byte at a
 * time (N - 1 of them, in a buffer to free); NULL past 4 KiB or under 2
 * bytes, where the targets skip it. */
static size_t *
aes_every_byte(size_t n)
{
	size_t *each, i;

	if (n > 4096 || n < 2)
		return NULL;
	if ((each = malloc(n * sizeof(*each))) == NULL)
		abort();
	for (i = 0; i < n - 1; i++)
		each[i] = i + 1;
	return each;
}

#endif

/* For the event-stream fuzz targets (fuzz_aws_eventstream.c,
 * fuzz_aws_stream.c): an input's CRCs made right, so that mutations reach
 * the headers and payloads behind them. */
#ifndef KV_FUZZ_AES_CRCS_H
#define KV_FUZZ_AES_CRCS_H

#include <stddef.h>
#include <stdint.h>

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

#endif

/* For the event-stream unit tests (test_aws_eventstream.c,
 * test_aws_stream_filter.c): a message built by hand, its CRCs right. */
#ifndef KV_TESTS_AES_FRAME_H
#define KV_TESTS_AES_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/crc32.h"

static inline void
be32_put(unsigned char *b, uint32_t v)
{
	b[0] = (unsigned char)(v >> 24);
	b[1] = (unsigned char)(v >> 16);
	b[2] = (unsigned char)(v >> 8);
	b[3] = (unsigned char)v;
}

/* A frame into OUT claiming TOTAL and HLEN, with HEADERS and PAYLOAD as
 * given and both CRCs right; returns its size. */
static inline size_t
aes_frame(unsigned char *out, uint32_t total, uint32_t hlen, const void *headers,
    size_t hn, const void *payload, size_t pn)
{
	size_t n = 12 + hn + pn;

	be32_put(out, total);
	be32_put(out + 4, hlen);
	be32_put(out + 8, kv_crc32(0, out, 8));
	memcpy(out + 12, headers, hn);
	memcpy(out + 12 + hn, payload, pn);
	be32_put(out + n, kv_crc32(0, out, n));
	return n + 4;
}

#endif

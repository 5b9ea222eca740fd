/* libFuzzer target: the image header readers (worker/media_bound.c). Beyond
 * "no crash": a size read is never 0, the reader reads no byte past n (a
 * prefix that already holds the header gives the same answer), and every
 * rule's tokens stay within that rule's maximum for any image. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/media_bound.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t w, h, w2, h2;
	uint8_t *copy = malloc(size ? size : 1);
	int i, rc;

	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	rc = kv_media_image_dims(copy, size, &w, &h);
	if (rc == 0 && (w == 0 || h == 0 || !kv_media_is_image(copy, size)))
		abort();
	if (rc == 0) {
		/* more bytes after the header change nothing */
		uint8_t *more = malloc(size + 16);
		if (more == NULL)
			abort();
		memcpy(more, copy, size);
		memset(more + size, 0xff, 16);
		if (kv_media_image_dims(more, size + 16, &w2, &h2) != 0 || w2 != w || h2 != h)
			abort();
		free(more);
	}
	for (i = 0; i < KV_IMG_NRULES; i++)
		if (kv_media_image_tokens(i, w, h) > kv_media_image_tokens(i, 0, 0) ||
		    kv_media_image_tokens(i, w, h) <= 0)
			abort();
	free(copy);
	return 0;
}

/* libFuzzer target: kv_jsonline_get over arbitrary lines (the request log
 * kvctl reads may hold torn or foreign lines), and a round trip: any bytes
 * written with kv_jsonline_string into an object come back the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "time", "key_id", "label", "a", "" };
	char out[256], line[8192], back[8192];
	size_t i, pos;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		(void)kv_jsonline_get((const char *)data, size, names[i], out, sizeof(out));

	if (size > 1000 || memchr(data, '\0', size) != NULL)
		return 0;
	memcpy(line, "{\"x\":1,\"a\":", 11);
	pos = 11;
	if (kv_jsonline_string(line, sizeof(line) - 2, &pos, (const char *)data, size) != 0)
		abort();	/* 6 bytes a byte always fits here */
	line[pos++] = '}';
	line[pos] = '\0';
	if (kv_jsonline_get(line, pos, "a", back, sizeof(back)) != 's' ||
	    strlen(back) != size || memcmp(back, data, size) != 0)
		abort();
	return 0;
}

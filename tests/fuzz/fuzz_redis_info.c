/* libFuzzer target: the INFO scanner. Whatever the text, it stays inside
 * its bytes, and a value it returns is the one a line states. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/redis_info.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = malloc(size ? size : 1), want[32];
	int64_t v;

	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);	/* exact size: ASan sees any overread */
	if (kv_redis_info_int(copy, size, "aof_enabled", &v) == 0) {
		int n = snprintf(want, sizeof(want), "aof_enabled:%lld", (long long)v);
		/* the printed form is in the text unless it had leading zeros */
		if (memmem(copy, size, "aof_enabled:", 12) == NULL || n <= 12)
			abort();
	}
	free(copy);
	return 0;
}

/* libFuzzer target: the request-body scanner and the usage-only chunk test.
 * Beyond "no crash" it checks: results stay inside the input, a prefix of
 * a body valid so far is itself valid so far (the relay scans a growing
 * prefix), what a complete object says does not change when more bytes of
 * a prefix are seen, and a usage-only chunk is a complete JSON object. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "worker/usage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
scan_copy(const uint8_t *data, size_t len, struct kv_request_info *ri)
{
	char *copy = malloc(len ? len : 1);

	if (copy == NULL)
		abort();
	memcpy(copy, data, len);
	kv_request_scan(copy, len, ri);
	free(copy);
}

static void
check_sane(const struct kv_request_info *ri, size_t len)
{
	if (memchr(ri->model, '\0', sizeof(ri->model)) == NULL)
		abort();
	if (ri->object_start > len || ri->max_output < -1)
		abort();
	if (ri->include_usage && !ri->has_stream_options)
		abort();
	if (ri->complete && ri->object_start == 0)
		abort();
}

static int
same_info(const struct kv_request_info *a, const struct kv_request_info *b)
{
	return strcmp(a->model, b->model) == 0 && a->stream == b->stream &&
	    a->has_stream_options == b->has_stream_options &&
	    a->include_usage == b->include_usage && a->max_output == b->max_output &&
	    a->object_start == b->object_start;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_request_info full, pre;
	size_t cut = size ? data[0] % (size + 1) : 0;
	char *copy;
	int only;

	scan_copy(data, size, &full);
	check_sane(&full, size);
	scan_copy(data, cut, &pre);
	check_sane(&pre, cut);
	if (full.valid && !pre.valid)
		abort();
	/* once the object is complete, later bytes can only make it invalid */
	if (pre.valid && pre.complete && full.valid && !same_info(&pre, &full))
		abort();
	copy = malloc(size ? size : 1);
	if (copy == NULL)
		abort();
	memcpy(copy, data, size);
	only = kv_sse_is_usage_only(copy, size);
	free(copy);
	if (only && !(full.valid && full.complete))
		abort();
	return 0;
}

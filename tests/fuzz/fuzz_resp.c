/* libFuzzer target: the RESP2 reply parser. A complete reply must encode
 * back to exactly the bytes it was parsed from, and every proper prefix of
 * it must ask for more rather than fail or claim a reply (the master feeds
 * the parser whatever one read returned). The command encoder's output
 * must parse back into the same arguments. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct kv_resp_reply reply, again;
static char enc[1 << 16];

static void
check_reply(const char *buf, size_t size)
{
	size_t used = 0, used2, k, step;
	long n;
	int rc = kv_resp_parse(buf, size, &reply, &used);

	if (rc != 1)
		return;
	if (used == 0 || used > size)
		abort();
	n = kv_resp_encode(enc, sizeof(enc), &reply.nodes[0]);
	if (n >= 0 && ((size_t)n != used || memcmp(enc, buf, used) != 0))
		abort();
	step = used > 256 ? used / 64 : 1;
	for (k = 0; k < used; k += step)
		if (kv_resp_parse(buf, k, &again, &used2) != 0)
			abort();
}

/* Arguments are the input split at 0xff bytes. */
static void
check_command(const char *buf, size_t size)
{
	const char *argv[64];
	size_t lens[64], used = 0, i;
	int argc = 0;
	long n;
	const char *s = buf, *e = buf + size, *q;

	while (argc < 64 && s <= e) {
		q = memchr(s, 0xff, (size_t)(e - s));
		argv[argc] = s;
		lens[argc] = q ? (size_t)(q - s) : (size_t)(e - s);
		argc++;
		if (q == NULL)
			break;
		s = q + 1;
	}
	n = kv_resp_command(enc, sizeof(enc), argc, argv, lens);
	if (n < 0)
		return;
	if (kv_resp_parse(enc, (size_t)n, &reply, &used) != 1 || used != (size_t)n)
		abort();
	if (reply.nodes[0].type != KV_RESP_ARRAY || reply.nodes[0].n != (size_t)argc)
		abort();
	for (i = 0; i < (size_t)argc; i++) {
		const struct kv_resp_value *v = &reply.nodes[0].elem[i];
		if (v->type != KV_RESP_BULK || v->len != lens[i] ||
		    memcmp(v->str, argv[i], lens[i]) != 0)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_reply((const char *)data, size);
	check_command((const char *)data, size);
	return 0;
}

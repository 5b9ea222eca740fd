/* libFuzzer target: the request-target check and the endpoint policy.
 * Properties: no crash; a target that passes kv_target_check has no "."
 * or ".." segment, no "//" and no '\' in its path, and a %2F only in a
 * Bedrock path's id segment, whose model id decodes bounded; a metered
 * classification always names an API; a refusal always has a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/bedrock_path.h"
#include "worker/endpoints.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_path(const char *t, size_t len)
{
	const char *q = memchr(t, '?', len);
	size_t plen = q ? (size_t)(q - t) : len, i, start = 1;

	if (plen == 0 || t[0] != '/')
		abort();
	for (i = 1; i <= plen; i++) {
		if (i < plen && t[i] != '/')
			continue;
		if (i - start == 0 && i < plen)
			abort();
		if ((i - start == 1 && t[start] == '.') ||
		    (i - start == 2 && t[start] == '.' && t[start + 1] == '.'))
			abort();
		start = i + 1;
	}
	if (memchr(t, '\\', plen) != NULL)
		abort();
}

/* A %2F that passed lies in a Bedrock path's id segment, and that id
 * decodes to a bounded string without control bytes, or is refused. */
static void
check_bedrock(const char *t, size_t len)
{
	const char *q = memchr(t, '?', len), *why = NULL;
	size_t plen = q ? (size_t)(q - t) : len, i, off = 0, n = 0;
	enum kv_br_kind k = kv_br_path(t, len, &off, &n);
	char m[KV_BR_MODEL_MAX];

	for (i = 0; i + 2 < plen; i++)
		if (t[i] == '%' && t[i + 1] == '2' && (t[i + 2] == 'F' || t[i + 2] == 'f') &&
		    (k == KV_BR_NONE || i < off || i + 3 > off + n))
			abort();
	if (k == KV_BR_NONE || n == 0)
		return;
	if (kv_br_model(t + off, n, m, sizeof(m), &why) == 0) {
		if (strlen(m) >= sizeof(m) || m[0] == '\0')
			abort();
		for (i = 0; m[i] != '\0'; i++)
			if ((unsigned char)m[i] < 0x20 || m[i] == 0x7f)
				abort();
	} else if (why == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *fp[] = { "/v1/batches", "/v1/responses", "/x" };
	static const char *methods[] = { "GET", "POST", "DELETE", "HEAD" };
	struct kv_upstream up;
	struct kv_endpoint ep;
	const char *why;
	char *t;

	if (size < 1)
		return 0;
	if ((t = malloc(size)) == NULL)
		return 0;
	memcpy(t, data + 1, size - 1);
	memset(&up, 0, sizeof(up));
	strcpy(up.name, "fuzz");
	up.free_paths = fp;
	up.nfree_paths = 3;
	up.api_key = (data[0] & 4) ? "k" : NULL;
	up.shared_stored_objects = (data[0] & 8) != 0;
	up.provider = (data[0] & 16) ? KV_PROVIDER_BEDROCK : KV_PROVIDER_AUTO;
	if (kv_target_check(t, size - 1, &why) == 0) {
		check_path(t, size - 1);
		check_bedrock(t, size - 1);
		/* classification wants a NUL-terminated target, as admission.c has */
		char *z = malloc(size);
		if (z != NULL) {
			memcpy(z, t, size - 1);
			z[size - 1] = '\0';
			if (memchr(z, '\0', size - 1) == NULL) {
				kv_endpoint_classify(methods[data[0] & 3], z, size - 1, &up, &ep);
				if (ep.kind == KV_EP_METERED && ep.api == KV_API_OTHER)
					abort();
				if (ep.kind == KV_EP_REFUSED && (ep.status != 404 || ep.msg[0] == '\0'))
					abort();
			}
			free(z);
		}
	} else if (why == NULL || why[0] == '\0')
		abort();
	free(t);
	return 0;
}

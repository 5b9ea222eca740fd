/* libFuzzer target: the credential reader (worker/credential.c) on the
 * input parsed as a request head. Beyond "no crash", it checks what the
 * account lookup relies on: a key found is non-empty and lies inside the
 * head or the target it was read from, a refusal says why, and the answer
 * is the same when asked twice. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"
#include "worker/credential.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
inside(const char *p, size_t n, const char *base, size_t len)
{
	return p >= base && n <= len && p - base <= (ptrdiff_t)(len - n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_http_request req;
	const char *key, *key2, *why = NULL, *q;
	size_t len, len2, ql;
	char *copy, *target;
	int st, r, r2, x, x2;

	if ((copy = malloc(size ? size : 1)) == NULL)
		abort();
	memcpy(copy, data, size);
	if (kv_http_parse_request(copy, size, &req, &st, NULL) <= 0) {
		free(copy);
		return 0;
	}
	if ((target = strndup(req.target, req.target_len)) == NULL)
		abort();
	r = kv_cred_find(&req, target, &key, &len, &x, &why);
	r2 = kv_cred_find(&req, target, &key2, &len2, &x2, &why);
	if (r != r2 || (r == 0 && (key != key2 || len != len2 || x != x2)))
		abort();
	if (r == -2 && why == NULL)
		abort();
	if (r == 0 && (len == 0 || !(inside(key, len, copy, size) ||
	    inside(key, len, target, strlen(target)))))
		abort();
	if (r == -1 && key != NULL)
		abort();
	q = kv_cred_query_key(target, &ql);
	if (q != NULL && !inside(q, ql, target, strlen(target)))
		abort();
	/* the SigV4 test is a pure question: one answer, 0 or 1 */
	if ((st = kv_cred_sigv4(&req, target)) != kv_cred_sigv4(&req, target) || (st & ~1) != 0)
		abort();
	free(target);
	free(copy);
	return 0;
}

/* The check both AWS credential parsers' fuzz targets make: PARSE run
 * twice on the input gives the same answer; a success leaves every value
 * terminated, within its field and fit for a header; a failure gives a
 * reason, the same both times. */
#ifndef KV_AWS_CREDS_FUZZ_H
#define KV_AWS_CREDS_FUZZ_H

#include <stdlib.h>
#include <string.h>

#include "common/aws_creds_parse.h"

typedef int aws_parse_fn(const char *, size_t, struct kv_aws_creds *, char *, size_t);

static inline void
aws_creds_fuzz(aws_parse_fn *parse, const uint8_t *data, size_t size)
{
	static struct kv_aws_creds a, b;
	char err[256] = "", err2[256] = "";
	int r;

	r = parse((const char *)data, size, &a, err, sizeof(err));
	if (r != parse((const char *)data, size, &b, err2, sizeof(err2)))
		abort();
	if (r == -1 && (err[0] == '\0' || strcmp(err, err2) != 0))
		abort();
	if (r == 0 && (memcmp(&a, &b, sizeof(a)) != 0 ||
	    !kv_aws_value_ok(a.access_key, KV_AWS_KEY_MAX) ||
	    !kv_aws_value_ok(a.secret, KV_AWS_SECRET_MAX) ||
	    !kv_aws_value_ok(a.token, KV_AWS_TOKEN_MAX)))
		abort();
}

#endif

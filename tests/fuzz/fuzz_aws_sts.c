/* libFuzzer target: STS's AssumeRoleWithWebIdentity answer
 * (kv_aws_parse_sts) and the ISO 8601 times it carries. Whatever the input,
 * the parse is the same twice; on success every value is terminated, fits
 * its field and is fit for a header; on failure there is a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws_creds_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kv_aws_creds a, b;
	char err[256] = "", err2[256] = "";
	int64_t t;
	int r;

	r = kv_aws_parse_sts((const char *)data, size, &a, err, sizeof(err));
	if (r != kv_aws_parse_sts((const char *)data, size, &b, err2, sizeof(err2)))
		abort();
	if (r == -1 && (err[0] == '\0' || strcmp(err, err2) != 0))
		abort();
	if (r == 0 && (memcmp(&a, &b, sizeof(a)) != 0 ||
	    !kv_aws_value_ok(a.access_key, KV_AWS_KEY_MAX) ||
	    !kv_aws_value_ok(a.secret, KV_AWS_SECRET_MAX) ||
	    !kv_aws_value_ok(a.token, KV_AWS_TOKEN_MAX)))
		abort();
	if (kv_aws_parse_time((const char *)data, size, &t) == 0 && size < 20)
		abort();
	return 0;
}

/* libFuzzer target: STS's AssumeRoleWithWebIdentity answer
 * (kv_aws_parse_sts), checked as aws_creds_fuzz.h says, and the ISO 8601
 * times it carries. */
#include <stdint.h>
#include <stdlib.h>

#include "tests/fuzz/aws_creds_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t t;

	aws_creds_fuzz(kv_aws_parse_sts, data, size);
	if (kv_aws_parse_time((const char *)data, size, &t) == 0 && size < 20)
		abort();
	return 0;
}

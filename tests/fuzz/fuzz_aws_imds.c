/* libFuzzer target: the instance metadata service's answers: the role's
 * credentials JSON (kv_aws_parse_imds), checked as aws_creds_fuzz.h says,
 * and the role list (kv_aws_parse_role): a role name accepted is 1 to
 * KV_AWS_ROLE_MAX bytes and cannot leave its path segment; a refusal has a
 * reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/aws_creds_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256] = "", role[KV_AWS_ROLE_MAX + 1];

	aws_creds_fuzz(kv_aws_parse_imds, data, size);
	if (kv_aws_parse_role((const char *)data, size, role, err, sizeof(err)) == 0) {
		if (strlen(role) == 0 || strlen(role) > KV_AWS_ROLE_MAX || strchr(role, '/') != NULL ||
		    strcmp(role, "..") == 0 || strcmp(role, ".") == 0)
			abort();
	} else if (err[0] == '\0')
		abort();
	return 0;
}

/* libFuzzer target: the instance metadata service's answers: the role
 * list (kv_aws_parse_role) and the role's credentials JSON
 * (kv_aws_parse_imds). The same twice; on success every value is
 * terminated, fits its field and is fit for a header (a role name, for a
 * path); on failure there is a reason. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/aws_creds_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct kv_aws_creds a, b;
	char err[256] = "", err2[256] = "", role[KV_AWS_ROLE_MAX + 1];
	int r;

	r = kv_aws_parse_imds((const char *)data, size, &a, err, sizeof(err));
	if (r != kv_aws_parse_imds((const char *)data, size, &b, err2, sizeof(err2)))
		abort();
	if (r == -1 && (err[0] == '\0' || strcmp(err, err2) != 0))
		abort();
	if (r == 0 && (memcmp(&a, &b, sizeof(a)) != 0 ||
	    !kv_aws_value_ok(a.access_key, KV_AWS_KEY_MAX) ||
	    !kv_aws_value_ok(a.secret, KV_AWS_SECRET_MAX) ||
	    !kv_aws_value_ok(a.token, KV_AWS_TOKEN_MAX) || a.expires == 0))
		abort();
	err[0] = '\0';
	if (kv_aws_parse_role((const char *)data, size, role, err, sizeof(err)) == 0) {
		if (strlen(role) == 0 || strlen(role) > KV_AWS_ROLE_MAX || strchr(role, '/') != NULL)
			abort();
	} else if (err[0] == '\0')
		abort();
	return 0;
}

/* libFuzzer target: Google's credential documents, a service account key
 * file (kv_gcp_parse_sa) and a token answer (kv_gcp_parse_token), the same
 * input given to each. Properties: each parse run twice gives the same
 * answer; a failure gives a reason; a key file read has its email, key and
 * token URI terminated within their fields; a token read is fit for a
 * header and expires 1 s to a day after the time given. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/gcp_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW	1765000000

static void
sa(const char *p, size_t n)
{
	static struct kv_gcp_sa a, b;
	char err[256] = "", err2[256] = "";
	int r = kv_gcp_parse_sa(p, n, &a, err, sizeof(err));

	if (r != kv_gcp_parse_sa(p, n, &b, err2, sizeof(err2)))
		abort();
	if (r == -1 && (err[0] == '\0' || strcmp(err, err2) != 0))
		abort();
	if (r == 0 && (memcmp(&a, &b, sizeof(a)) != 0 || a.client_email[0] == '\0' ||
	    a.private_key[0] == '\0' || a.token_uri[0] == '\0' ||
	    strnlen(a.client_email, sizeof(a.client_email)) == sizeof(a.client_email) ||
	    strnlen(a.private_key, sizeof(a.private_key)) == sizeof(a.private_key) ||
	    strnlen(a.token_uri, sizeof(a.token_uri)) == sizeof(a.token_uri) ||
	    strnlen(a.private_key_id, sizeof(a.private_key_id)) == sizeof(a.private_key_id)))
		abort();
}

static void
token(const char *p, size_t n)
{
	static struct kv_gcp_token a, b;
	char err[256] = "", err2[256] = "";
	int r = kv_gcp_parse_token(p, n, NOW, &a, err, sizeof(err));
	size_t i;

	if (r != kv_gcp_parse_token(p, n, NOW, &b, err2, sizeof(err2)))
		abort();
	if (r == -1 && (err[0] == '\0' || strcmp(err, err2) != 0))
		abort();
	if (r == -1)
		return;
	if (memcmp(&a, &b, sizeof(a)) != 0 || a.token[0] == '\0' || a.expires < NOW + 1 ||
	    a.expires > NOW + 86400 || strnlen(a.token, sizeof(a.token)) == sizeof(a.token))
		abort();
	for (i = 0; a.token[i] != '\0'; i++)
		if (a.token[i] <= ' ' || a.token[i] > '~')
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sa((const char *)data, size);
	token((const char *)data, size);
	return 0;
}

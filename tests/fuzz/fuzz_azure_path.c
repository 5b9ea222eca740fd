/* libFuzzer target: Azure OpenAI's request targets and deployments words
 * (common/azure_path.c). Properties: no crash; a deployment path's name
 * lies inside the path (before any '?'), is not empty and holds no '/';
 * a word kv_az_word_ok takes has a name kv_az_name_ok takes before its
 * first ':', and looking that name up in an upstream holding only the
 * word finds the word's model; a name with a ':' finds nothing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/azure_path.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_path(const char *t, size_t len)
{
	const char *q = memchr(t, '?', len), *dep = NULL;
	size_t plen = q != NULL ? (size_t)(q - t) : len, dlen = 0;

	if (kv_az_path(t, len, &dep, &dlen) != KV_AZ_DEPLOYMENT)
		return;
	if (dep < t || dlen == 0 || dep + dlen >= t + plen || memchr(dep, '/', dlen) != NULL)
		abort();
}

static void
check_word(char *w, size_t len)
{
	struct kv_upstream u;
	char *words[1] = { w };
	const char *colon, *m;

	if (!kv_az_word_ok(w, len))
		return;
	colon = memchr(w, ':', len);
	if (colon == NULL || !kv_az_name_ok(w, (size_t)(colon - w)))
		abort();
	memset(&u, 0, sizeof(u));
	u.deployments = words;
	u.ndeployments = 1;
	m = kv_az_model(&u, w, (size_t)(colon - w));
	if (m != colon + 1)
		abort();
	if (kv_az_model(&u, w, len) != NULL && memchr(w, ':', len) != NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_path(s, size);
	if (memchr(s, '\0', size) == NULL)	/* a config word is a C string */
		check_word(s, size);
	free(s);
	return 0;
}

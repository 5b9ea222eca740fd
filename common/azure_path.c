/* Azure OpenAI's request targets and deployments (see azure_path.h). */
#include "common/azure_path.h"

#include <ctype.h>
#include <string.h>

#define DEPLOYMENTS	"/openai/deployments/"
#define OPENAI		"/openai/"

enum kv_az_kind
kv_az_path(const char *target, size_t len, const char **dep, size_t *dlen)
{
	const char *q = memchr(target, '?', len), *name, *slash;
	size_t plen = q != NULL ? (size_t)(q - target) : len;

	if (plen <= sizeof(OPENAI) - 1 || memcmp(target, OPENAI, sizeof(OPENAI) - 1) != 0)
		return KV_AZ_NONE;
	if (plen < sizeof(DEPLOYMENTS) - 1 ||
	    memcmp(target, DEPLOYMENTS, sizeof(DEPLOYMENTS) - 1) != 0)
		return KV_AZ_BODY;
	name = target + sizeof(DEPLOYMENTS) - 1;
	slash = memchr(name, '/', plen - (size_t)(name - target));
	/* a name, then an operation after it */
	if (slash == NULL || slash == name || slash + 1 == target + plen)
		return KV_AZ_NONE;
	*dep = name;
	*dlen = (size_t)(slash - name);
	return KV_AZ_DEPLOYMENT;
}

int
kv_az_name_ok(const char *name, size_t len)
{
	size_t i;

	if (len == 0 || len > KV_AZ_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '-' && name[i] != '_' &&
		    name[i] != '.')
			return 0;
	return 1;
}

int
kv_az_word_ok(const char *w, size_t len)
{
	const char *colon = memchr(w, ':', len);
	size_t i, mlen;

	if (colon == NULL || !kv_az_name_ok(w, (size_t)(colon - w)))
		return 0;
	mlen = len - (size_t)(colon + 1 - w);
	if (mlen == 0 || mlen >= KV_NAME_MAX)
		return 0;
	for (i = 0; i < mlen; i++)
		if (!isgraph((unsigned char)colon[1 + i]))
			return 0;
	return 1;
}

const char *
kv_az_model(const struct kv_upstream *up, const char *name, size_t len)
{
	size_t i;

	if (!kv_az_name_ok(name, len))
		return NULL;	/* a ':' in it would reach into a model */
	for (i = 0; i < up->ndeployments; i++) {
		const char *w = up->deployments[i];

		/* each word passed kv_az_word_ok: NAME ':' MODEL */
		if (strncmp(w, name, len) == 0 && w[len] == ':')
			return w + len + 1;
	}
	return NULL;
}

/* The Entra ID token an azure upstream sends as Authorization: Bearer:
 * the master's (master/entra_refresh.c), read from the shared slot only
 * when its generation moved, so a request costs one atomic load. */
#include "worker/azure_cred.h"

#include <string.h>

#include "common/entra_token.h"

int
kv_azure_entra(const struct kv_upstream *up)
{
	return up->provider == KV_PROVIDER_AZURE && up->tenant[0] != '\0';
}

/* The worker's copy of the token. */
static struct {
	uint64_t		gen;
	size_t			len;
	struct kv_gcp_token	tok;
} W;

const char *
kv_azure_bearer(size_t *len)
{
	const struct kv_gcp_slot *s = kv_entra_slot_get();
	uint64_t g;

	if (s == NULL || (g = kv_gcp_slot_generation(s)) == 0)
		return NULL;
	if (g != W.gen) {
		if (kv_gcp_slot_read(s, &W.tok, &W.gen) == -1)
			return NULL;
		W.len = strlen(W.tok.token);
	}
	*len = W.len;
	return W.tok.token;
}

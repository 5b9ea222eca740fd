/* The Entra ID token an azure upstream sends as Authorization: Bearer:
 * the master's (master/entra_refresh.c), read from the shared slot only
 * when its generation moved, so a request costs one atomic load. */
#include "worker/azure_cred.h"

#include "common/entra_token.h"

int
kv_azure_entra(const struct kv_upstream *up)
{
	return up->provider == KV_PROVIDER_AZURE && up->tenant[0] != '\0';
}

/* The worker's copy of the token. */
static struct kv_gcp_copy W;

const char *
kv_azure_bearer(size_t *len)
{
	return kv_gcp_slot_copy(kv_entra_slot_get(), &W, len);
}

/* Entra ID's access token for provider = azure upstreams with tenant set
 * (issue 38), handed from the master to the workers through a shared slot
 * of its own. Entra's token endpoint answers in OAuth 2.0's shape, as
 * Google's does, so the token and its slot are gcp_token.h's types: the
 * master fetches and refreshes it (master/entra_refresh.h), a worker sends
 * it as Authorization: Bearer. One per master: every azure upstream with
 * tenant set names the same identity (config_azure.c). */
#ifndef KV_ENTRA_TOKEN_H
#define KV_ENTRA_TOKEN_H

#include "common/gcp_token.h"

/* Where a token came from: the client-credentials grant (kv_gcp_token's
 * source). */
#define KV_ENTRA_CLIENT_SECRET	100

/* The scope asked for: Azure OpenAI's (Cognitive Services'). */
#define KV_ENTRA_SCOPE	"https://cognitiveservices.azure.com/.default"

/* Map the process's slot, zeroed (idempotent). Called by the master before
 * it forks; children inherit it. NULL with errno set when mmap fails. */
struct kv_gcp_slot *kv_entra_slot_map(void);

/* The mapping kv_entra_slot_map made in this process or a parent, or NULL. */
struct kv_gcp_slot *kv_entra_slot_get(void);

#endif

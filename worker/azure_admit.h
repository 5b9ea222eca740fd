/* An Azure OpenAI request at admission (azure_admit.c). */
#ifndef KV_AZURE_ADMIT_H
#define KV_AZURE_ADMIT_H

#include "worker/conn-t.h"

/* After routing to UP, before the endpoint policy and the reservation:
 * on a provider = azure UP, a metered request's deployment (the path's,
 * or on Azure's other paths the body's "model") becomes the model it is priced
 * at, by UP's deployments; an unknown one is refused 404 (nothing sent).
 * A key in an api-key header (Azure's) alone, on a request routed
 * anywhere else, is refused 400. KV_NEXT, or the refusal's KV_REPLY. */
enum kv_rc kv_azure_admit(struct kv_conn *c, const struct kv_upstream *up);

#endif

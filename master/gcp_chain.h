/* Google's application default credentials, as the client libraries find
 * them, for a Vertex AI upstream: the service account key file named by
 * GOOGLE_APPLICATION_CREDENTIALS (an RS256 JWT assertion, signed with its
 * key, exchanged at its own token_uri for an access token: RFC 7523); else
 * the metadata server (GCE_METADATA_HOST, else metadata.google.internal)
 * and its default service account's token. Blocking, each exchange
 * bounded (master/http_fetch.h): for the master's start-up and its refresh
 * helper process, never its loop. */
#ifndef KV_GCP_CHAIN_H
#define KV_GCP_CHAIN_H

#include <stddef.h>

#include "common/gcp_token.h"

#define KV_GCP_TOKEN_TIMEOUT_MS		10000	/* one token endpoint exchange */
#define KV_GCP_METADATA_TIMEOUT_MS	3000	/* one metadata server exchange */

/* The scope the token is asked for: Vertex AI's. */
#define KV_GCP_SCOPE	"https://www.googleapis.com/auth/cloud-platform"

/* An access token into *OUT (source set). 0, or -1 with the reason in
 * ERR[0..ERRLEN): which source failed and why. Nothing secret in ERR. */
int	kv_gcp_chain_fetch(struct kv_gcp_token *out, char *err, size_t errlen);

#endif

/* The one credential a request head carries (credential.c). Every header a
 * provider reads a key from (OpenAI, Anthropic, Azure, Google) is read:
 * a throw-away key in one of them would be charged while the provider
 * bills the real one in another. */
#ifndef KV_CREDENTIAL_H
#define KV_CREDENTIAL_H

#include <stddef.h>

#include "common/http.h"

/* The key in REQ's Authorization (as Bearer K), x-api-key, api-key or
 * x-goog-api-key headers, or TARGET's ?key=: *KEY and *LEN point into
 * REQ or TARGET, *X_API_KEY is 1 when the key came in x-api-key. The
 * account charged must be the key the provider sees, so two that differ, a
 * repeated header, or a Connection header naming one are refused: -2 with
 * *WHY set (the reason a walk over the headers, once per name, meets
 * first). Returns 0, or -1 when there is none. */
int	kv_cred_find(const struct kv_http_request *req, const char *target, const char **key,
	    size_t *len, int *x_api_key, const char **why);

/* The value of the query parameter key= in TARGET (Google's ?key=), its
 * length in *LEN; NULL when there is none. */
const char *kv_cred_query_key(const char *target, size_t *len);

/* Take every key= parameter out of TARGET's query, in place (Google's
 * ?key=: never forwarded nor logged), and a '?' left with nothing after
 * it. Returns the parameters taken (0 none); 2 or more is a request to
 * refuse, since kv_cred_query_key read only the first. */
int	kv_cred_strip_query_key(char *target);

/* Whether REQ was signed by the client with AWS SigV4: an Authorization
 * header of the AWS4-HMAC-SHA256 scheme, or X-Amz-Signature in TARGET's
 * query (a presigned URL), in any case. kilovolt never takes an AWS
 * signature for a key: on a Bedrock path such a request is refused. */
int	kv_cred_sigv4(const struct kv_http_request *req, const char *target);

#endif

/* The endpoint policy: which request targets kilovolt meters, which it
 * relays free, and which it refuses. A path is metered only when kilovolt
 * knows how the provider reports its usage; everything else under an
 * upstream's paths is refused unless the operator lists it in that
 * upstream's free_paths (relayed, charged $0, counted as free). Pure
 * functions: no I/O, no allocation. */
#ifndef KV_ENDPOINTS_H
#define KV_ENDPOINTS_H

#include <stddef.h>

#include "common/config.h"
#include "worker/usage.h"

enum kv_ep_kind {
	KV_EP_METERED,	/* usage scanned and charged */
	KV_EP_FREE,	/* relayed, charged $0 (built in, or free_paths) */
	KV_EP_REFUSED,	/* answered by kilovolt with status and msg */
};

struct kv_endpoint {
	enum kv_ep_kind	 kind;
	enum kv_api	 api;		/* KV_EP_METERED: the API; else KV_API_OTHER */
	int		 status;	/* KV_EP_REFUSED: 404 */
	char		 msg[1024];	/* KV_EP_REFUSED: why, naming the setting */
};

/* 0 when TARGET (the request target, LEN bytes, query included) is one
 * kilovolt forwards; -1 with a static reason in *why when its path (the
 * part before '?') is not in origin form, holds a "." or ".." segment,
 * an empty segment ("//"), a backslash, or a percent-encoded '/', '.' or
 * '\' (%2F %2E %5C in either case): providers and proxies on the way may
 * normalise those, so the path kilovolt classified would not be the path
 * that is served. The one exception: %2F inside the id segment of a
 * Bedrock path (common/bedrock_path.h), where the AWS SDKs put an ARN. */
int	kv_target_check(const char *target, size_t len, const char **why);

/* The API a metered METHOD TARGET speaks, or KV_API_OTHER: POST to a path
 * ending in /chat/completions, /completions, /embeddings, /responses (so
 * a base path such as Azure's /openai/deployments/{name} or Bedrock's
 * /openai/v1 still matches) or /v1/messages; the query is ignored, a
 * trailing slash is not. A Bedrock runtime path: /converse and
 * /converse-stream are KV_API_BEDROCK_CONVERSE, /invoke and
 * /invoke-with-response-stream KV_API_ANTHROPIC_MESSAGES for an
 * Anthropic model (kv_br_anthropic), else KV_API_OTHER. A Gemini API
 * path (gemini_path.h): :generateContent and :streamGenerateContent are
 * KV_API_GEMINI, :embedContent and :batchEmbedContents
 * KV_API_GEMINI_EMBED, any other method KV_API_OTHER. */
enum kv_api kv_endpoint_api(const char *method, const char *target, size_t len);

/* Whether a request to TARGET gets Anthropic's error shape: its path is
 * /v1/messages or below it. */
int	kv_endpoint_anthropic(const char *target, size_t len);

/* Classify METHOD TARGET routed to upstream UP into *ep. Metered: the
 * list above. Free: GET/HEAD /v1/models and /v1/models/{id}, POST
 * /v1/messages/count_tokens, and whatever UP's free_paths list; except
 * that with UP's api_key set or a bedrock UP (virtual keys) a
 * stored-object endpoint (stored chat completions and responses, files,
 * batches, vector stores, assistants, threads, conversations, ...) listed
 * there stays refused unless UP says shared_stored_objects = yes. On a
 * bedrock UP, GET/HEAD of the control plane's reads are free, and any
 * other method on a Bedrock path, or InvokeModel of a model not
 * Anthropic's, is refused. On a gemini UP, POST of a model's :countTokens
 * and GET/HEAD of the model list are free, any other Gemini path refused.
 * Refused: anything else, with 404 and a message
 * naming the setting (or the endpoint) that would allow it. */
void	kv_endpoint_classify(const char *method, const char *target, size_t len,
	    const struct kv_upstream *up, struct kv_endpoint *ep);

#endif

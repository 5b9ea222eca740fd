/* The request targets of AWS Bedrock (issue 35): the runtime's
 * /model/{modelId}/{action} and the control plane's reads kilovolt
 * relays, the one segment of them where a percent-encoded '/' may stand
 * (the AWS SDK sends an ARN's '/' and ':' as %2F and %3A), and the model
 * id that segment names. Pure functions: no I/O, no allocation. Under
 * common/ because routing (config_route.c) asks them too. */
#ifndef KV_BEDROCK_PATH_H
#define KV_BEDROCK_PATH_H

#include <stddef.h>

enum kv_br_kind {
	KV_BR_NONE = 0,		/* not a Bedrock path */
	KV_BR_INVOKE,		/* /model/{id}/invoke */
	KV_BR_INVOKE_STREAM,	/* /model/{id}/invoke-with-response-stream */
	KV_BR_CONVERSE,		/* /model/{id}/converse */
	KV_BR_CONVERSE_STREAM,	/* /model/{id}/converse-stream */
	KV_BR_CONTROL,		/* /inference-profiles[/{id}], /foundation-models[/{id}] */
};

/* The model id's decoded form fits this (reqscan.h's KV_REQ_MODEL). */
#define KV_BR_MODEL_MAX	96
/* A model id segment decodes to at most this (Bedrock's own limit on a
 * modelId, ARNs included). */
#define KV_BR_ID_MAX	2048

/* What TARGET (LEN bytes, query included) is. A runtime path is exactly
 * /model/{one non-empty segment}/{action} with nothing after it but a
 * query; a control path is /inference-profiles or /foundation-models,
 * alone or with one non-empty segment after it. For either, *ID_OFF and
 * *ID_LEN give the id segment as sent (ID_LEN 0 for a list); both may be
 * NULL. */
enum kv_br_kind kv_br_path(const char *target, size_t len, size_t *id_off, size_t *id_len);

/* Whether the runtime kind K answers with an AWS event stream. */
int	kv_br_streams(enum kv_br_kind k);

/* The model id segment S (LEN bytes, as sent) decoded once into OUT
 * (OUTLEN bytes, NUL-terminated): the id kilovolt routes and prices by.
 * For an ARN (arn:...:TYPE/ID: an inference profile, a foundation model)
 * that is the part after its last '/', the profile's own id
 * (us.anthropic.claude-...). 0, or -1 with a static reason in *WHY: a bad
 * escape, a control byte, a '/' outside an ARN, a Prompt management ARN
 * (its prompt names the model), an empty id, one longer than OUTLEN - 1
 * or a segment decoding past KV_BR_ID_MAX. */
int	kv_br_model(const char *s, size_t len, char *out, size_t outlen, const char **why);

/* Whether the decoded MODEL is one of Anthropic's on Bedrock (it holds
 * "anthropic."): the ones whose InvokeModel body kilovolt meters. */
int	kv_br_anthropic(const char *model);

#endif

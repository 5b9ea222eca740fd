/* The usage scanner: finds the provider's token counts in a response body as
 * it streams by, in bounded memory, resuming at any split of the input.
 * It tracks JSON nesting, the current key path and the numbers under usage
 * keys; string contents are skipped, never stored (except short values of
 * keys it needs: "model", "type"). Input is the de-chunked body. */
#ifndef KV_USAGE_H
#define KV_USAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/money.h"

enum kv_api {
	KV_API_OPENAI_CHAT,		/* /v1/chat/completions */
	KV_API_OPENAI_COMPLETIONS,	/* /v1/completions */
	KV_API_OPENAI_EMBEDDINGS,	/* /v1/embeddings */
	KV_API_OPENAI_RESPONSES,	/* /v1/responses */
	KV_API_ANTHROPIC_MESSAGES,	/* /v1/messages */
	KV_API_OTHER,			/* no usage expected */
};

/* Which API a request path speaks (query string ignored). */
enum kv_api kv_api_from_path(const char *path, size_t len);

#define KV_SCAN_DEPTH	32
#define KV_SCAN_MODEL	96

struct kv_usage_scanner {
	/* opaque to callers; fixed size, no pointers to heap */
	enum kv_api	 api;
	int		 sse;		/* body is text/event-stream */
	int		 state;
	int		 depth;
	uint32_t	 path[KV_SCAN_DEPTH];	/* interned key ids per level */
	char		 key[40];	/* current key, truncated */
	size_t		 keylen;
	char		 str[KV_SCAN_MODEL];	/* current short string value */
	size_t		 strlen_;
	int64_t		 num;
	int		 numstate;
	int		 sse_state;
	int		 flags;
	/* results so far */
	struct kv_usage	 usage;
	char		 model[KV_SCAN_MODEL];	/* the response's model, "" if unseen */
	int64_t		 output_bytes;	/* content bytes seen, for estimates */
	/* scratch used by the implementation */
	int64_t		 tmp[8];
};

/* Start scanning a response of API; sse when Content-Type is
 * text/event-stream. */
void	kv_usage_init(struct kv_usage_scanner *s, enum kv_api api, int sse);

/* Feed de-chunked body bytes; any split is fine. Never fails: malformed
 * input only means no usage is found. */
void	kv_usage_feed(struct kv_usage_scanner *s, const char *buf, size_t len);

/* The usage found so far (normalised per SPEC: input counts all billed input
 * tokens; Anthropic's cache reads and writes are added to input). usage.found
 * is 0 when the response carried none. */
const struct kv_usage *kv_usage_result(const struct kv_usage_scanner *s);

/* What a request body says, from a bounded prefix of it (JSON object). */
struct kv_request_info {
	char		 model[KV_SCAN_MODEL];	/* "" when absent or too long */
	int		 stream;		/* "stream": true */
	int		 has_stream_options;	/* a "stream_options" key exists */
	int		 include_usage;		/* stream_options.include_usage: true */
	int64_t		 max_output;	/* max_tokens / max_completion_tokens /
					   max_output_tokens; -1 when absent */
	size_t		 object_start;	/* offset just past the top-level '{' */
	int		 complete;	/* the whole top-level object was seen */
	int		 valid;		/* parsed as a JSON object so far */
};

/* Scan body[0..len) (a prefix or the whole body). */
void	kv_request_scan(const char *body, size_t len, struct kv_request_info *ri);

/* For a buffered SSE event's data (the JSON after "data: "): 1 when it is
 * OpenAI's extra usage-only chunk ("choices": [] and a non-null "usage"),
 * which the proxy drops when it injected include_usage itself. */
int	kv_sse_is_usage_only(const char *json, size_t len);

#endif

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
#include "worker/usage_json-t.h"

enum kv_api {
	KV_API_OPENAI_CHAT,		/* /v1/chat/completions */
	KV_API_OPENAI_COMPLETIONS,	/* /v1/completions */
	KV_API_OPENAI_EMBEDDINGS,	/* /v1/embeddings */
	KV_API_OPENAI_RESPONSES,	/* /v1/responses */
	KV_API_ANTHROPIC_MESSAGES,	/* /v1/messages; Bedrock's InvokeModel of
					   an Anthropic model (its body) */
	KV_API_BEDROCK_CONVERSE,	/* Bedrock /model/{id}/converse and
					   /converse-stream: its body and usage */
	KV_API_GEMINI,			/* the Gemini API's generateContent and
					   streamGenerateContent (and Vertex AI's
					   Gemini): the body and usageMetadata */
	KV_API_GEMINI_EMBED,		/* :embedContent, :batchEmbedContents */
	KV_API_OTHER,			/* no usage expected */
};

struct kv_usage_scanner {
	/* public results (read-only for callers) */
	enum kv_api	 api;
	int		 sse;		/* body is text/event-stream */
	struct kv_usage	 usage;		/* as kv_usage_result() */
	char		 model[KV_SCAN_MODEL];	/* the response's model, "" if unseen */
	/* Raw bytes of string values that carry generated text ("content",
	 * "text", "arguments", "thinking", "partial_json", ...; for a
	 * Responses API stream only the events' top-level "delta"), escapes
	 * counted as written. Estimates use output_bytes / 4 tokens. A whole
	 * one-line SSE event without usage is counted without lexing, so for
	 * a malformed event the count may depend on how the bytes arrived. */
	int64_t		 output_bytes;
	int64_t		 output_high;	/* of output_bytes, those >= 0x80 */
	int64_t		 output_chars;	/* non-ASCII characters among them */
	int64_t		 output_events;	/* SSE events carrying counted text */
	/* usage holds the provider's final figures: a non-streamed body's
	 * usage, the usage chunk of an OpenAI stream, a Responses API
	 * response.completed/incomplete/failed, or an Anthropic stream's
	 * last message_delta once message_stop is seen. 0 while only a
	 * stream's opening figures (message_start, response.created/
	 * in_progress) are known: then usage.input (cache fields included)
	 * is exact and usage.output is what the stream counted so far. */
	int		 final;
	/* Usage.web_search counts Anthropic's server_tool_use.
	 * web_search_requests (web_fetch: web_fetch_requests) and, for the
	 * Responses API, its web_search_call output items: the larger of the
	 * items a stream added and those its final response lists.
	 * error_event is set by an Anthropic stream's "error" event: the
	 * usage is then not final, whatever came before. */

	/* opaque to callers: fixed size, no pointers */
	struct kv_json	 json;
	int		 sse_state;
	int		 sse_cr;	/* last byte was CR (a following LF is eaten) */
	int		 sse_fpos;	/* bytes of the field name matched */
	int		 sse_data;	/* data lines seen in this event */
	int		 ev_type;	/* the event's top-level "type" */
	int		 cand_depth;	/* depth of the usage object being read */
	int		 cand_src;	/* where it sits (top level or nested) */
	int		 cand_done;	/* a complete usage object was read */
	int64_t		 cand[16];	/* its numbers, -1 when absent */
	int64_t		 anth[8];	/* Anthropic fields so far, -1 unseen */
	int64_t		 bedrock[4];	/* Bedrock's own input, output, cache read, write */
	int64_t		 detail_tokens;	/* Converse cacheDetails: this element's inputTokens */
	int		 detail_1h;	/* ... and its ttl is "1h" */
	int		 ev_counted;	/* this event carried counted text */
	int64_t		 str_bytes0;	/* nbytes when the current string began */
	int		 ev_ws_item;	/* this event's "item" is a web_search_call */
	int64_t		 ev_ws;		/* web_search_call items in this event's response */
	int64_t		 ws_added;	/* Responses stream: search items added */
	int64_t		 ws_listed;	/* Responses: items in the final output list */
	int		 error_event;	/* an SSE "error" event came (Anthropic) */
	/* usage.speed and usage.inference_geo were read (Anthropic): the
	 * usage's fast and geo_us are the response's, not unknown */
	int		 speed_seen;
	int		 geo_seen;
	int		 gm_finish;	/* Gemini: this chunk has a finishReason */
	int		 gm_audio;	/* ... this modality entry is "AUDIO" */
	int64_t		 gm_count;	/* ... and its tokenCount, -1 unseen */
	uint64_t	 run_want;	/* the lexer run's WANT (usage_json.h) */
};

/* Start scanning a response of API; sse when Content-Type is
 * text/event-stream. */
void	kv_usage_init(struct kv_usage_scanner *s, enum kv_api api, int sse);

/* Feed de-chunked body bytes; any split is fine. Never fails: malformed
 * input only means no usage is found. Usage is taken when the top-level
 * object holding it closes: top-level "usage" (every API),
 * "message.usage" in an Anthropic message_start event, "response.usage" in
 * a Responses API response.completed/incomplete/failed event. A later
 * usage replaces an earlier one (OpenAI: the last non-null usage wins;
 * Anthropic: each field a later event names replaces the earlier value, so
 * cumulative message_delta counts work). A "usage": null never clears a
 * usage already found. In SSE, a malformed event is ignored and scanning
 * resumes at the next event; outside SSE the body may hold several
 * concatenated JSON values. */
void	kv_usage_feed(struct kv_usage_scanner *s, const char *buf, size_t len);

/* Bedrock's counts of a response given apart from its body (InvokeModel's
 * X-Amzn-Bedrock-Input-Token-Count, -Output-, -Cache-Read-Input-, and
 * -Cache-Write-Input-Token-Count headers): COUNTS[0..3] are the input
 * (without the cache's, as Anthropic's input_tokens), output, cache read
 * and cache write tokens, -1 each when not given. Like the invocation
 * metrics of a stream's last chunk, they are what AWS bills: they replace
 * what the body names, and the usage is final. Only for the Anthropic and
 * Converse APIs. */
void	kv_usage_bedrock_counts(struct kv_usage_scanner *s, const int64_t counts[4]);

/* One event's JSON fed outside SSE framing (an AWS event-stream message's
 * payload, or the Anthropic event a Bedrock chunk carries), on a scanner
 * started with sse = 1: the pieces of one event through feed_event (any
 * split), then end_event, as an SSE event's data and its blank line. */
void	kv_usage_feed_event(struct kv_usage_scanner *s, const char *buf, size_t len);
void	kv_usage_end_event(struct kv_usage_scanner *s);

/* A scanner as it stands between two events fed with kv_usage_feed_event,
 * less its lexer (which each event starts afresh; only its text counts
 * carry over): what kv_usage_undo puts back, voiding the event begun since
 * (an AWS message whose CRC failed). 608 bytes, not the scanner's 896. */
struct kv_usage_mark {
	unsigned char	 head[offsetof(struct kv_usage_scanner, json)];
	unsigned char	 tail[sizeof(struct kv_usage_scanner) -
			     offsetof(struct kv_usage_scanner, json) - sizeof(struct kv_json)];
	int64_t		 text[3];
};
void	kv_usage_mark(const struct kv_usage_scanner *s, struct kv_usage_mark *m);
void	kv_usage_undo(struct kv_usage_scanner *s, const struct kv_usage_mark *m);

/* The stream broke off (an AWS exception message, a malformed event
 * stream): its usage is not final, and nothing later is taken, as after an
 * Anthropic stream's error event. */
void	kv_usage_cut(struct kv_usage_scanner *s);

/* The usage found so far (normalised per SPEC: input counts all billed input
 * tokens; Anthropic's cache reads and writes are added to input). usage.found
 * is 0 when the response carried none. */
const struct kv_usage *kv_usage_result(const struct kv_usage_scanner *s);

/* The output tokens of what was relayed, by estimate, for a response
 * whose usage never came: never lower than the tokens the text can hold
 * (ASCII bytes / 4, rounded up, plus one per non-ASCII character: a CJK
 * character or a byte-fallback script is at least a token each), and at
 * least one per SSE event that carried text (providers send a token or
 * more per delta). */
int64_t	kv_usage_output_estimate(const struct kv_usage_scanner *s);

#endif

/* The usage of an AWS event-stream response (Bedrock's
 * InvokeModelWithResponseStream and ConverseStream): the stream's bytes,
 * as the relay reads them, through the event-stream decoder
 * (aws_eventstream.h) into the usage scanner (usage.h). An InvokeModel
 * stream's `chunk` events carry the model's own stream events in base64
 * (aws_chunk.h): the Anthropic events, scanned as an SSE stream's, and
 * Bedrock's amazon-bedrock-invocationMetrics in the last. A ConverseStream's
 * events are JSON: its `contentBlockDelta` text counts as output, its
 * `metadata` usage is the final usage. An exception message, a malformed
 * stream or one that ends inside a message is a cut: the usage is not
 * final (README "How cuts, cancels and timeouts are charged"). The bytes
 * themselves are the caller's to relay, unchanged. Pure, no I/O; its
 * memory is the struct (1,032 bytes on x86-64), allocated only for these
 * streams, and a message's headers past 128 bytes while it is open. */
#ifndef KV_AWS_STREAM_FILTER_H
#define KV_AWS_STREAM_FILTER_H

#include <stddef.h>

#include "worker/aws_chunk.h"
#include "worker/aws_eventstream.h"
#include "worker/usage.h"

/* What an AWS stream came to, for the log (kv_aws_stream.cut). */
enum kv_aws_cut {
	KV_AWS_OK = 0,
	KV_AWS_CUT_EXCEPTION,	/* an exception or error message came */
	KV_AWS_CUT_MALFORMED,	/* the decoder refused the stream (dec.err) */
	KV_AWS_CUT_CHUNK,	/* a chunk's payload was no {"bytes": base64} */
	KV_AWS_CUT_TRUNCATED	/* the body ended inside a message */
};

struct kv_aws_stream {
	struct kv_usage_scanner	*scan;
	enum kv_aws_cut		 cut;
	int			 kind;		/* what the open message's payload feeds */
	int			 ended;		/* kv_aws_stream_end ran */
	char			 exception[48];	/* an exception's :exception-type, "" none */
	struct kv_aes_dec	 dec;
	struct kv_aws_chunk	 chunk;
	/* the scanner as it was before the open message: a message counts
	 * once its CRC matched, one that fails is voided */
	struct kv_usage_mark	 saved;
};

/* A new filter feeding SCAN, which the caller started for API
 * (KV_API_ANTHROPIC_MESSAGES: an InvokeModel stream; KV_API_BEDROCK_CONVERSE:
 * a ConverseStream) with sse = 1. NULL when out of memory. */
struct kv_aws_stream *kv_aws_stream_new(struct kv_usage_scanner *scan);

/* The next LEN bytes of the response body, cut anywhere: the usage the
 * scanner ends with does not depend on the cuts. Never fails: a stream
 * that breaks is a cut (a->cut), and later bytes are ignored. */
void	kv_aws_stream_feed(struct kv_aws_stream *a, const char *p, size_t len);

/* The body ended (or the request is being settled): a message still open
 * is voided and the stream is a cut. Idempotent. */
void	kv_aws_stream_end(struct kv_aws_stream *a);

/* A short English reason for the cut, for logs. */
const char *kv_aws_stream_why(const struct kv_aws_stream *a);

void	kv_aws_stream_free(struct kv_aws_stream *a);

#endif

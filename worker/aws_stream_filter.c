/* The AWS event-stream usage filter (aws_stream_filter.h): the decoder's
 * callbacks sort each message by its :message-type and :event-type, and
 * hand its payload to the usage scanner, through the chunk decoder for an
 * InvokeModel stream's chunks. */
#include "worker/aws_stream_filter.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What the open message's payload feeds. */
enum { K_SKIP, K_CHUNK, K_JSON };

static int
on_inner(void *arg, const char *p, size_t len)
{
	struct kv_aws_stream *a = arg;

	kv_usage_feed_event(a->scan, p, len);
	return 0;
}

static void
exception_named(struct kv_aws_stream *a, const struct kv_aes_msg *m)
{
	struct kv_aes_header h;
	size_t n;

	a->cut = KV_AWS_CUT_EXCEPTION;
	if ((kv_aes_header_find(m, ":exception-type", &h) ||
	    kv_aes_header_find(m, ":error-code", &h)) && h.type == KV_AES_STRING) {
		n = h.bytes_len < sizeof(a->exception) - 1 ? h.bytes_len : sizeof(a->exception) - 1;
		memcpy(a->exception, h.bytes, n);
		a->exception[n] = '\0';
	}
}

/* A message's headers are in: an exception (or an eventstream "error")
 * breaks the stream off; an event's payload is scanned, an InvokeModel
 * stream's only when it is a chunk. */
static int
on_head(void *arg, const struct kv_aes_msg *m)
{
	struct kv_aws_stream *a = arg;
	struct kv_aes_header h;

	a->kind = K_SKIP;
	if (!kv_aes_header_find(m, ":message-type", &h))
		return 0;
	if (kv_aes_header_is(&h, "exception") || kv_aes_header_is(&h, "error")) {
		exception_named(a, m);
		return -1;
	}
	if (!kv_aes_header_is(&h, "event"))
		return 0;
	if (a->scan->api == KV_API_ANTHROPIC_MESSAGES) {
		if (!kv_aes_header_find(m, ":event-type", &h) || !kv_aes_header_is(&h, "chunk"))
			return 0;
		kv_aws_chunk_init(&a->chunk, on_inner, a);
		a->kind = K_CHUNK;
	} else {
		a->kind = K_JSON;
	}
	kv_usage_mark(a->scan, &a->saved);
	return 0;
}

static int
on_payload(void *arg, const struct kv_aes_msg *m, const char *p, size_t len)
{
	struct kv_aws_stream *a = arg;

	(void)m;
	if (a->kind == K_JSON)
		kv_usage_feed_event(a->scan, p, len);
	else if (a->kind == K_CHUNK && kv_aws_chunk_feed(&a->chunk, p, len) == -1) {
		a->cut = KV_AWS_CUT_CHUNK;
		return -1;
	}
	return 0;
}

/* The message's CRC matched: what it fed counts. */
static int
on_end(void *arg, const struct kv_aes_msg *m)
{
	struct kv_aws_stream *a = arg;

	(void)m;
	if (a->kind == K_CHUNK && kv_aws_chunk_finish(&a->chunk) == -1) {
		a->cut = KV_AWS_CUT_CHUNK;
		return -1;
	}
	if (a->kind != K_SKIP)
		kv_usage_end_event(a->scan);
	a->kind = K_SKIP;
	return 0;
}

static const struct kv_aes_ops ops = { on_head, on_payload, on_end };

struct kv_aws_stream *
kv_aws_stream_new(struct kv_usage_scanner *scan)
{
	struct kv_aws_stream *a = malloc(sizeof(*a));

	if (a == NULL)
		return NULL;
	memset(a, 0, offsetof(struct kv_aws_stream, saved));
	a->scan = scan;
	kv_aes_init(&a->dec, &ops, a);
	return a;
}

/* The stream broke off: the open message is void, the usage not final. */
static void
broken(struct kv_aws_stream *a, enum kv_aws_cut why)
{
	if (a->kind != K_SKIP)
		kv_usage_undo(a->scan, &a->saved);
	a->kind = K_SKIP;
	if (a->cut == KV_AWS_OK)
		a->cut = why;
	kv_usage_cut(a->scan);
}

void
kv_aws_stream_feed(struct kv_aws_stream *a, const char *p, size_t len)
{
	if (a->dec.err != KV_AES_E_NONE || a->ended)
		return;
	if (kv_aes_feed(&a->dec, p, len) == -1)
		broken(a, KV_AWS_CUT_MALFORMED);
}

void
kv_aws_stream_end(struct kv_aws_stream *a)
{
	if (a->ended)
		return;
	a->ended = 1;
	if (a->dec.err == KV_AES_E_NONE && kv_aes_finish(&a->dec) == -1)
		broken(a, KV_AWS_CUT_TRUNCATED);
}

const char *
kv_aws_stream_why(const struct kv_aws_stream *a)
{
	switch (a->cut) {
	case KV_AWS_OK:			return "no cut";
	case KV_AWS_CUT_EXCEPTION:	return "an exception message";
	case KV_AWS_CUT_MALFORMED:	return kv_aes_strerror(a->dec.err);
	case KV_AWS_CUT_CHUNK:		return "a chunk payload that is not {\"bytes\": base64}";
	case KV_AWS_CUT_TRUNCATED:	return "the body ended inside a message";
	}
	return "?";
}

void
kv_aws_stream_free(struct kv_aws_stream *a)
{
	if (a == NULL)
		return;
	kv_aes_release(&a->dec);
	free(a);
}

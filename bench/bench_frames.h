/* bench_frames.h: the events of benchmock's paced streams. */
#ifndef KV_BENCH_FRAMES_H
#define KV_BENCH_FRAMES_H

#include <stddef.h>

enum kv_bench_kind {
	KV_BENCH_NONE = 0,
	KV_BENCH_SSE,		/* OpenAI chat completion chunks */
	KV_BENCH_INVOKE,	/* Bedrock InvokeModelWithResponseStream */
	KV_BENCH_CONVERSE,	/* Bedrock ConverseStream */
};

struct kv_bench_stream {
	enum kv_bench_kind kind;
	long		 tokens;	/* one-token deltas in all */
	long		 seq;		/* the next event's number */
};

/* Room for one event, HTTP chunk framing included. */
#define KV_BENCH_EVENT_MAX	2048

/* The kind of stream the request head [p, p + n) asks for, by its path. */
enum kv_bench_kind	kv_bench_kind(const char *p, size_t n);

/* The response head of stream s into out (cap bytes); its length. */
size_t	kv_bench_head(const struct kv_bench_stream *s, char *out, size_t cap);

/* Stream s's next event as one HTTP chunk into out (cap ≥
 * KV_BENCH_EVENT_MAX), the chunked body's end appended after the last
 * event (*last set to 1 then); advances s->seq; the bytes written. */
size_t	kv_bench_event(struct kv_bench_stream *s, char *out, size_t cap, int *last);

#endif

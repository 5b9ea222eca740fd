/* The SSE filter: what a streamed chat or completion the client did not ask
 * usage of must look like to it when kilovolt asked for usage itself
 * (stream_options.include_usage, request_build.c): the usage-only event
 * dropped, and the ,"usage":null the provider then adds to every chunk
 * cut out. Pure: bytes in, bytes out through a callback, no I/O. */
#ifndef KV_SSE_FILTER_H
#define KV_SSE_FILTER_H

#include <stddef.h>

#define KV_EBUF_SIZE	(16 * 1024)	/* one SSE event held back, at most */

/* Where the filter's output goes: A[0..ALEN) then B[0..BLEN), to be sent
 * as one piece (B lets an event go out with a piece cut from its middle).
 * Returns 0, or -1 to stop the filter. */
typedef int (*kv_sse_out)(void *arg, const char *a, size_t alen, const char *b,
    size_t blen);

struct kv_sse_filter {
	char		*ebuf;		/* the start of an event cut by a read's end */
	size_t		 elen;
	int		 eoverflow;	/* current event too big: passed through */
	kv_sse_out	 out;
	void		*arg;
};

/* For a buffered SSE event's data (the JSON after "data: "): 1 when it is
 * OpenAI's extra usage-only chunk ("choices": [] and a non-null "usage"),
 * which the proxy drops when it injected include_usage itself. */
int	kv_sse_is_usage_only(const char *json, size_t len);

/* Send F's output to OUT(ARG, ...). F is zeroed or freed; it may hold
 * no event yet. */
void	kv_sse_filter_init(struct kv_sse_filter *f, kv_sse_out out, void *arg);

/* Take the next LEN bytes of the event stream (P may be NULL when LEN is
 * 0): every event whole in them goes out at once, filtered; the start of an
 * event they cut is held back for the next call, up to KV_EBUF_SIZE, past
 * which its first part goes out (an event that large is not the usage
 * event). The output does not depend on how the stream is cut into calls
 * while no event outgrows KV_EBUF_SIZE. Returns 0, or -1 (out of memory,
 * or OUT failed). */
int	kv_sse_filter_feed(struct kv_sse_filter *f, const char *p, size_t len);

/* The stream ended: what is held back goes out as it is. Returns 0 or -1. */
int	kv_sse_filter_flush(struct kv_sse_filter *f);

/* Between reads: free the buffer when it holds no event. */
void	kv_sse_filter_idle(struct kv_sse_filter *f);

/* Free what F holds; it may be fed again after kv_sse_filter_init. */
void	kv_sse_filter_free(struct kv_sse_filter *f);

#endif

/* The response's filter chain (resp_filter.c). */
#ifndef KV_RESP_FILTER_H
#define KV_RESP_FILTER_H

#include <sys/types.h>

#include "worker/conn-t.h"

/* The response head RES arrived: its status, framing (chunked, a length,
 * or until close) and whether the connection may be kept, on both sides;
 * the usage scanner started for a metered 2xx body, and the SSE filter
 * and re-chunking set up when we re-frame (the injected usage event is
 * dropped, or the client speaks HTTP/1.0). */
void	resp_filter_start(struct kv_conn *c, const struct kv_http_response *res);

/* Account for LEN bytes read from the upstream at P: decoded (chunked),
 * scanned, re-framed or filtered as the response's framing says, the
 * output in obuf; at the body's end the filter is flushed and a re-chunked
 * body closed. Returns how many belong to this response (the rest is
 * discarded), or -1 for broken framing or no memory. */
ssize_t	resp_filter_consume(struct kv_conn *c, const char *p, size_t len);

#endif

/* The response body (relay.c). */
#ifndef KV_RELAY_H
#define KV_RELAY_H

#include <sys/types.h>

#include "worker/conn-t.h"

/* CS_RELAY: move the body from the upstream to the client until it ends,
 * the client goes or a deadline passes, then settle and go on to the next
 * request (or close). */
enum step relay_body(struct kv_conn *c);

/* Account for LEN bytes read from the upstream at P: decoded (chunked),
 * scanned, re-framed or filtered as the response's framing says. Returns
 * how many belong to this response (the rest is discarded), or -1 for
 * broken framing. */
ssize_t	relay_consume(struct kv_conn *c, const char *p, size_t len);

/* The SSE filter's output callback (sse_filter.h): to the client, framed
 * as one chunk when the response is re-framed. ARG is the connection. */
int	relay_sse_out(void *arg, const char *a, size_t alen, const char *b, size_t blen);

#endif

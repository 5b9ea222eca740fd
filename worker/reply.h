/* The answers the gateway makes itself (reply.c): an error in the
 * provider's own shape with its retry headers, and a CORS preflight's. */
#ifndef KV_REPLY_H
#define KV_REPLY_H

#include "common/http.h"

struct kv_conn;

/* Answer C with our own error STATUS (the provider's error shape, MSG its
 * message; x-kilovolt-key, the rate-limit and retry headers, the request
 * id, CORS), put in obuf (the engine lets the upstream connection go). Returns KV_REPLY, or KV_CUT once response bytes reached the
 * client (all that can be done then is to cut the stream) or when there
 * is no memory for the answer. */
enum kv_rc reply_error(struct kv_conn *c, int status, const char *msg);

/* Answer the CORS preflight REQ (204 with the allowed origin, or 403).
 * Returns KV_REPLY, or KV_CLOSE without memory for it. */
enum kv_rc reply_preflight(struct kv_conn *c, const struct kv_http_request *req);

#endif

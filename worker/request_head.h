/* The request head (request_head.c): CS_HEAD's step, and what the other
 * request files share of it. */
#ifndef KV_REQUEST_HEAD_H
#define KV_REQUEST_HEAD_H

#include <sys/types.h>

#include "worker/conn-t.h"

/* CS_HEAD: read until a whole head is parsed, then take it: the target
 * checked, a CORS preflight answered, the one credential found and hashed
 * into c->keyhash and c->keyid, body intake set up (CS_BODY_IN), a refusal
 * answered with conn_fail. */
enum step request_head(struct kv_conn *c);

/* Read up to LEN client bytes into BUF (kv_stream_read's result), counting
 * them in bytes_in and pushing the client deadline on: a head must arrive
 * whole within header_timeout, a body only must not stall. */
ssize_t	request_client_read(struct kv_conn *c, char *buf, size_t len);

/* Every header a provider reads a key from, NULL-terminated:
 * "authorization" first, then "x-api-key", "api-key", "x-goog-api-key". */
extern const char *const request_cred_headers[];

/* The value of the query parameter key= in TARGET (Google's ?key=), its
 * length in *LEN; NULL when there is none. */
const char *request_query_key(const char *target, size_t *len);

#endif

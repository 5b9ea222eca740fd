/* CORS for browser apps ([server] cors_origins): a preflight (OPTIONS with
 * Origin and Access-Control-Request-Method) is answered by the gateway
 * itself, without a credential: 204 with the Access-Control-Allow-* headers
 * for a listed origin, 403 for any other. A real request from a listed
 * origin gets Access-Control-Allow-Origin (and the kilovolt headers
 * exposed) on its response, whoever made it. */
#ifndef KV_CORS_H
#define KV_CORS_H

#include <stddef.h>

#include "common/http.h"

#define KV_CORS_ORIGIN_MAX	256

/* Whether ORIGIN (len bytes) is in LIST (space-separated origins; "*"
 * allows any). An empty LIST allows none. */
int	kv_cors_allowed(const char *list, const char *origin, size_t len);

/* The request's Origin header when LIST allows it, copied into out
 * (terminated); "" otherwise (no Origin, not listed, too long). */
void	kv_cors_origin(const char *list, const struct kv_http_request *req,
	    char out[KV_CORS_ORIGIN_MAX]);

/* Whether REQ is a CORS preflight. */
int	kv_cors_is_preflight(const char *method, const struct kv_http_request *req);

/* The headers (each ending in CRLF) a response to a request from the
 * allowed ORIGIN carries. Returns the length written, or -1 if cap is too
 * small. */
int	kv_cors_response_headers(char *buf, size_t cap, const char *origin);

/* The whole preflight response: 204 with the allow headers for the allowed
 * ORIGIN (requested headers echoed when they are plain header names), or
 * 403 when ORIGIN is "" (not allowed); both carry REQID as
 * x-kilovolt-request-id. Returns the length, or -1. */
int	kv_cors_preflight_response(char *buf, size_t cap, const char *origin,
	    const struct kv_http_request *req, int keep_alive, const char *reqid);

#endif

/* CORS: see cors.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "worker/cors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What a browser app may read of a response besides the safelisted
 * headers: the budget, the request id, and Retry-After. */
#define EXPOSED "x-kilovolt-key, x-kilovolt-budget-remaining, x-kilovolt-request-id, retry-after"

int
kv_cors_allowed(const char *list, const char *origin, size_t len)
{
	const char *s = list;
	size_t n;

	if (len == 0)
		return 0;
	while (*(s += strspn(s, " \t")) != '\0') {
		n = strcspn(s, " \t");
		if ((n == 1 && *s == '*') || (n == len && memcmp(s, origin, len) == 0))
			return 1;
		s += n;
	}
	return 0;
}

static const struct kv_http_header *
header(const struct kv_http_request *req, const char *name)
{
	size_t i, n = strlen(name);

	for (i = 0; i < req->nheaders; i++)
		if (req->headers[i].name_len == n &&
		    strncasecmp(req->headers[i].name, name, n) == 0)
			return &req->headers[i];
	return NULL;
}

void
kv_cors_origin(const char *list, const struct kv_http_request *req,
    char out[KV_CORS_ORIGIN_MAX])
{
	const struct kv_http_header *h = header(req, "origin");

	out[0] = '\0';
	if (h == NULL || h->value_len >= KV_CORS_ORIGIN_MAX ||
	    !kv_cors_allowed(list, h->value, h->value_len))
		return;
	memcpy(out, h->value, h->value_len);
	out[h->value_len] = '\0';
}

int
kv_cors_is_preflight(const char *method, const struct kv_http_request *req)
{
	return strcmp(method, "OPTIONS") == 0 && header(req, "origin") != NULL &&
	    header(req, "access-control-request-method") != NULL;
}

int
kv_cors_response_headers(char *buf, size_t cap, const char *origin)
{
	int n = snprintf(buf, cap, "Access-Control-Allow-Origin: %s\r\nVary: Origin\r\n"
	    "Access-Control-Expose-Headers: " EXPOSED "\r\n", origin);

	return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* Header names and commas only: anything else is not echoed. */
static int
plain_names(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || strchr("-_, ", s[i]) != NULL))
			return 0;
	return n < 1024;
}

int
kv_cors_preflight_response(char *buf, size_t cap, const char *origin,
    const struct kv_http_request *req, int keep_alive, const char *reqid)
{
	static const char deny[] = "origin not allowed by [server] cors_origins\n";
	const struct kv_http_header *rh = header(req, "access-control-request-headers");
	const char *conn = keep_alive ? "" : "Connection: close\r\n";
	int n;

	if (origin[0] == '\0')
		n = snprintf(buf, cap, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n"
		    "Content-Length: %zu\r\nVary: Origin\r\nx-kilovolt-request-id: %s\r\n%s\r\n%s",
		    sizeof(deny) - 1, reqid, conn, deny);
	else
		n = snprintf(buf, cap, "HTTP/1.1 204 No Content\r\n"
		    "Access-Control-Allow-Origin: %s\r\nVary: Origin\r\n"
		    "Access-Control-Allow-Methods: GET, POST, DELETE, OPTIONS\r\n"
		    "Access-Control-Allow-Headers: %.*s\r\n"
		    "Access-Control-Max-Age: 600\r\nx-kilovolt-request-id: %s\r\n%s\r\n", origin,
		    rh != NULL && plain_names(rh->value, rh->value_len) ? (int)rh->value_len : 12,
		    rh != NULL && plain_names(rh->value, rh->value_len) ? rh->value : "content-type",
		    reqid, conn);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* The WebSocket upgrade (ws_upgrade.h): which upgrade requests are
 * relayed, the key a browser client sends as a subprotocol, and which
 * handshake headers go on. */
#include "worker/ws_upgrade.h"

#include <string.h>
#include <strings.h>

/* Whether the comma-separated list V (LEN bytes) holds TOKEN, any case. */
static int
list_has(const char *v, size_t len, const char *token)
{
	size_t tl = strlen(token);
	const char *p = v, *end = v + len, *t;

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		for (t = p; p < end && *p != ',' && *p != ' ' && *p != '\t'; p++)
			;
		if ((size_t)(p - t) == tl && strncasecmp(t, token, tl) == 0)
			return 1;
		while (p < end && *p != ',')
			p++;
	}
	return 0;
}

/* The path's kind: its part before '?' ends in /v1/responses or
 * /v1/realtime. */
static enum kv_ws_kind_path
path_kind(const char *target)
{
	size_t n = strcspn(target, "?");

	if (n >= 13 && memcmp(target + n - 13, "/v1/responses", 13) == 0)
		return KV_WSK_RESPONSES;
	if (n >= 12 && memcmp(target + n - 12, "/v1/realtime", 12) == 0)
		return KV_WSK_REALTIME;
	return KV_WSK_NONE;
}

int
kv_ws_upgrade_kind(const struct kv_http_request *req, const char *target,
    const char **why)
{
	const struct kv_http_header *up, *conn, *ver, *key;
	enum kv_ws_kind_path k;
	size_t i, keys = 0;

	/* another protocol (h2c) is declined by not relaying the header */
	if ((up = kv_http_find(req->headers, req->nheaders, "upgrade")) == NULL ||
	    !list_has(up->value, up->value_len, "websocket"))
		return KV_WSK_NONE;
	*why = "kilovolt relays only WebSocket upgrades of GET /v1/responses and /v1/realtime";
	k = path_kind(target);
	if (k == KV_WSK_NONE || req->method_len != 3 || memcmp(req->method, "GET", 3) != 0)
		return -1;
	*why = "a WebSocket upgrade needs Connection: Upgrade, one Sec-WebSocket-Key and "
	    "Sec-WebSocket-Version: 13";
	conn = kv_http_find(req->headers, req->nheaders, "connection");
	ver = kv_http_find(req->headers, req->nheaders, "sec-websocket-version");
	for (i = 0; i < req->nheaders; i++)
		keys += req->headers[i].name_len == 17 &&
		    kv_http_lit_eq(req->headers[i].name, "sec-websocket-key", 17);
	key = kv_http_find(req->headers, req->nheaders, "sec-websocket-key");
	if (conn == NULL || !list_has(conn->value, conn->value_len, "upgrade") || ver == NULL ||
	    ver->value_len != 2 || memcmp(ver->value, "13", 2) != 0 || keys != 1 ||
	    key->value_len == 0 || req->content_length > 0 || req->chunked)
		return -1;
	return (int)k;
}

/* Call FN on each entry of the Sec-WebSocket-Protocol headers. */
#define EACH_PROTO(req, t, tl, body) do { \
	size_t i_; \
	for (i_ = 0; i_ < (req)->nheaders; i_++) { \
		const struct kv_http_header *h_ = &(req)->headers[i_]; \
		const char *p_ = h_->value, *e_ = h_->value + h_->value_len; \
		if (h_->name_len != 22 || !kv_http_lit_eq(h_->name, "sec-websocket-protocol", 22)) \
			continue; \
		while (p_ < e_) { \
			while (p_ < e_ && (*p_ == ' ' || *p_ == '\t' || *p_ == ',')) \
				p_++; \
			for (t = p_; p_ < e_ && *p_ != ',' && *p_ != ' ' && *p_ != '\t'; p_++) \
				; \
			tl = (size_t)(p_ - t); \
			if (tl > 0) { body } \
		} \
	} \
} while (0)

static int
is_key_proto(const char *t, size_t tl)
{
	return tl > KV_WS_KEY_PROTO_LEN && memcmp(t, KV_WS_KEY_PROTO, KV_WS_KEY_PROTO_LEN) == 0;
}

const char *
kv_ws_proto_key(const struct kv_http_request *req, size_t *len)
{
	const char *t, *found = NULL;
	size_t tl;

	EACH_PROTO(req, t, tl, {
		if (found == NULL && is_key_proto(t, tl)) {
			found = t + KV_WS_KEY_PROTO_LEN;
			*len = tl - KV_WS_KEY_PROTO_LEN;
		}
	});
	return found;
}

int
kv_ws_proto_rest(const struct kv_http_request *req, char *out, size_t cap)
{
	const char *t;
	size_t tl, n = 0;
	int over = 0;

	EACH_PROTO(req, t, tl, {
		if (!is_key_proto(t, tl)) {
			if (n + tl + 3 > cap) {
				over = 1;
			} else {
				if (n > 0) {
					memcpy(out + n, ", ", 2);
					n += 2;
				}
				memcpy(out + n, t, tl);
				n += tl;
			}
		}
	});
	if (cap > 0)
		out[n < cap ? n : cap - 1] = '\0';
	return over ? -1 : (int)n;
}

int
kv_ws_header_passes(const struct kv_http_header *h)
{
	if (h->name_len == 24 && kv_http_lit_eq(h->name, "sec-websocket-extensions", 24))
		return 0;
	return !(h->name_len == 22 && kv_http_lit_eq(h->name, "sec-websocket-protocol", 22));
}

int
kv_ws_accept_ok(const struct kv_http_response *res)
{
	const struct kv_http_header *up;

	up = kv_http_find(res->headers, res->nheaders, "upgrade");
	return res->status == 101 && up != NULL && list_has(up->value, up->value_len, "websocket") &&
	    kv_http_find(res->headers, res->nheaders, "sec-websocket-accept") != NULL &&
	    kv_http_find(res->headers, res->nheaders, "sec-websocket-extensions") == NULL;
}

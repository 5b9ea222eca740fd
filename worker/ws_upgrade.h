/* The WebSocket upgrade of a request head (RFC 6455 4.1): whether a GET
 * asks for one on a path kilovolt meters as WebSocket turns, the kilovolt
 * key a browser client puts in its subprotocols, and which of the
 * handshake's headers go upstream. Pure: no I/O, no allocation. */
#ifndef KV_WS_UPGRADE_H
#define KV_WS_UPGRADE_H

#include <stddef.h>

#include "common/http.h"

enum kv_ws_kind_path {
	KV_WSK_NONE,
	KV_WSK_RESPONSES,	/* /v1/responses: the Responses API's WebSocket mode */
	KV_WSK_REALTIME,	/* /v1/realtime: the Realtime API */
};

/* The subprotocol OpenAI's browser clients carry their key in:
 * Sec-WebSocket-Protocol: realtime, openai-insecure-api-key.KEY, ... */
#define KV_WS_KEY_PROTO		"openai-insecure-api-key."
#define KV_WS_KEY_PROTO_LEN	(sizeof(KV_WS_KEY_PROTO) - 1)

/* What REQ (target TARGET, query included) asks for: KV_WSK_NONE when it
 * asks for no upgrade to websocket (another protocol is declined: the
 * header is not relayed); else, for a GET of a path ending in
 * /v1/responses or /v1/realtime with Upgrade: websocket, Connection
 * naming upgrade, one Sec-WebSocket-Key and Sec-WebSocket-Version 13, the
 * kind; -1 with a static reason in *WHY for any other WebSocket upgrade. */
int	kv_ws_upgrade_kind(const struct kv_http_request *req, const char *target,
	    const char **why);

/* The key in REQ's Sec-WebSocket-Protocol entry openai-insecure-api-key.KEY:
 * *LEN bytes at the result, or NULL when there is none. */
const char *kv_ws_proto_key(const struct kv_http_request *req, size_t *len);

/* Whether the client's header H of an upgrade goes upstream as it is.
 * Not: Sec-WebSocket-Extensions (permessage-deflate is declined: frames
 * are scanned as they come), Sec-WebSocket-Protocol (rebuilt without the
 * key, kv_ws_proto_rest). The caller writes Upgrade and Connection. */
int	kv_ws_header_passes(const struct kv_http_header *h);

/* REQ's Sec-WebSocket-Protocol entries other than the key's, joined by
 * ", " into OUT (CAP bytes, terminated): their length, 0 when none is
 * left, -1 when they do not fit. */
int	kv_ws_proto_rest(const struct kv_http_request *req, char *out, size_t cap);

/* Whether the provider's 101 response RES may go to the client: it
 * switches to websocket and agreed to no extension (none was offered). */
int	kv_ws_accept_ok(const struct kv_http_response *res);

#endif

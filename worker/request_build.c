/* The build phase: the upstream request in obuf, its head rebuilt from
 * the client's (our own framing and credential, usage asked for in a
 * streamed chat body), and rewritten for another target on a retry
 * (upstream_rewrite.c). */
#include "worker/request_build.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/fmt.h"
#include "common/log.h"
#include "worker/aws_sign.h"
#include "worker/jwt_auth.h"
#include "worker/request_tags.h"
#include "worker/reply.h"
#include "worker/spool.h"
#include "worker/upstream_rewrite.h"
#include "worker/azure_cred.h"
#include "worker/vertex_req.h"
#include "worker/ws_upgrade.h"

/* Whether the client's header H goes upstream: not a hop-by-hop one, not
 * one kilovolt writes itself (Host, Content-Length), not Expect or
 * Accept-Encoding, and under virtual keys (api_key set) none of
 * request_cred_headers, whose names the lengths 7, 9, 13 and 14 pick. */
static int
want_header(const struct kv_conn *c, const struct kv_http_header *h)
{
	const char *n = h->name;
	int vk = c->rt->cf->api_key != NULL || c->rt->cf->provider == KV_PROVIDER_VERTEX ||
	    c->rt->cf->tenant[0] != '\0';

	if (h->hop || kv_jwt_auth_header(c, n, h->name_len) ||
	    kv_request_tags_header(c, n, h->name_len))
		return 0;
	/* a WebSocket upgrade: no extension offered; the subprotocols
	 * rebuilt without the client's key (ws_lines) */
	if (c->req.ws && !kv_ws_header_passes(h))
		return 0;
	/* A Bedrock upstream gets our credential (SigV4 or its API key), never
	 * the client's nor a client's own signature. */
	if (c->rt->cf->provider == KV_PROVIDER_BEDROCK && kv_aws_drop_header(n, h->name_len))
		return 0;
	switch (h->name_len) {
	case 4:
		return !kv_http_lit_eq(n, "host", 4);
	case 6:
		return !kv_http_lit_eq(n, "expect", 6);
	case 7:
		return !vk || !kv_http_lit_eq(n, "api-key", 7);
	case 9:
		return !vk || !kv_http_lit_eq(n, "x-api-key", 9);
	case 13:
		return !vk || !kv_http_lit_eq(n, "authorization", 13);
	case 14:
		return !kv_http_lit_eq(n, "content-length", 14) &&
		    (!vk || !kv_http_lit_eq(n, "x-goog-api-key", 14));
	case 15:
		return !kv_http_lit_eq(n, "accept-encoding", 15);
	default:
		return 1;
	}
}

/* N bytes of T over the body at OFF, in the window or in the spool. */
static int
overwrite_body(struct kv_conn *c, const char *t, size_t n, uint64_t off, const char **msg)
{
	if (c->req.spfd == -1) {
		memcpy(c->req.ibuf + off, t, n);
		return 0;
	}
	if (pwrite(c->req.spfd, t, n, (off_t)off) != (ssize_t)n) {
		kv_log_warn("KV0547", "writing the request spool");
		*msg = "the gateway cannot write the spooled request body";
		return 503;
	}
	return 0;
}

/* The client's include_usage false/null becomes true, without changing
 * the body's length. */
static int
overwrite_iu(struct kv_conn *c, const char **msg)
{
	return overwrite_body(c, c->req.ri.so_iu_len == 5 ? "true " : "true",
	    (size_t)c->req.ri.so_iu_len, c->req.ri.so_iu_off, msg);
}

/* Usage is always asked for (issue 11): a streamed chat or legacy
 * completion goes upstream with stream_options.include_usage true, and
 * with one stream_options member (issue 20): a first-wins parser would
 * read the client's, a serde server refuses a duplicate. Without one the
 * member is added before the top-level '}'; into the client's object,
 * "include_usage":true goes last, before its '}'; the client's own
 * include_usage false (or null) is overwritten in place by "true " (or
 * "true"), the same length. A null stream_options is absent, as the
 * providers read it (issue 33): "null" becomes "{}  ", the same length,
 * and the member goes into that object. Two stream_options, or two
 * include_usage, cannot be merged: refused, naming why. */
static int
build_inject(struct kv_conn *c, const char **msg)
{
	static const char member[] = "\"stream_options\":{\"include_usage\":true}",
	    iu[] = ",\"include_usage\":true";
	const struct kv_request_info *ri = &c->req.ri;
	int merge = ri->has_stream_options, first, s;
	size_t at = 0;

	if (ri->so_count > 1 || ri->so_has_iu > 1) {
		*msg = ri->so_count > 1 ? "stream_options appears more than once" :
		    "stream_options.include_usage appears more than once";
		return 400;
	}
	if (merge && ri->so_start == 0 && ri->so_null_off > 0) {
		if ((s = overwrite_body(c, "{}  ", 4, ri->so_null_off, msg)) != 0)
			return s;
		c->req.ri.so_start = ri->so_null_off;
		c->req.ri.so_end = ri->so_null_off + 1;
		c->req.ri.so_members = 0;
	}
	if (merge && ri->so_start == 0) {
		*msg = "a streamed request needs usage to be metered: send stream_options "
		    "as an object, or leave it out";
		return 400;
	}
	if (merge && ri->so_has_iu)
		return overwrite_iu(c, msg);
	first = merge && ri->so_members == 0;
	c->req.injlen = merge ? sizeof(iu) - 1 - (size_t)first : (ri->members > 0) + sizeof(member) - 1;
	if ((c->req.inj = malloc(c->req.injlen)) == NULL) {
		*msg = "out of memory";
		return 503;
	}
	if (merge) {
		memcpy(c->req.inj, iu + first, c->req.injlen);
		c->req.inj_at = (int64_t)ri->so_end;
		return 0;
	}
	if (ri->members > 0)
		c->req.inj[at++] = ',';
	memcpy(c->req.inj + at, member, sizeof(member) - 1);
	c->req.inj_at = (int64_t)ri->obj_end;
	return 0;
}

/* A WebSocket upgrade's own lines (room within the client's head, which
 * had them): the switch, and the subprotocols less the one carrying the
 * kilovolt key when the upstream has a key of its own (else the client's
 * key is the provider's, and goes as it came). */
static void
ws_lines(struct kv_conn *c, const struct kv_http_request *req)
{
	const struct kv_http_header *h;
	char rest[1024];
	int n;

	CONN_OBUF_LIT(c, "Upgrade: websocket\r\nConnection: Upgrade\r\n");
	h = kv_http_find(req->headers, req->nheaders, "sec-websocket-protocol");
	if (h == NULL)
		return;
	if (c->rt->cf->api_key == NULL) {
		conn_obuf_add_header(c, h);
		return;
	}
	if ((n = kv_ws_proto_rest(req, rest, sizeof(rest))) <= 0)
		return;
	CONN_OBUF_LIT(c, "Sec-WebSocket-Protocol: ");
	conn_obuf_add(c, rest, (size_t)n);
	CONN_OBUF_LIT(c, "\r\n");
}

/* The lines the head gets from us, into room reserved by build_request:
 * the upstream's own credential (kl bytes), the framing of the body that
 * was read whole, and the end of the head. */
static void
own_lines(struct kv_conn *c, const struct kv_http_request *req, const char *key, size_t kl)
{
	const struct kv_upstream *up = c->rt->cf;

	if (key != NULL) {
		/* Bedrock's API key and Vertex's token are bearer tokens
		 * whatever the client sent; Azure's key goes in its own header,
		 * and so does a Gemini API key. */
		if (up->provider == KV_PROVIDER_AZURE && up->api_key != NULL)
			CONN_OBUF_LIT(c, "api-key: ");
		else if (up->provider == KV_PROVIDER_GEMINI)
			CONN_OBUF_LIT(c, "x-goog-api-key: ");
		else if (c->req.auth_x_api_key && up->provider != KV_PROVIDER_BEDROCK &&
		    up->provider != KV_PROVIDER_VERTEX)
			CONN_OBUF_LIT(c, "x-api-key: ");
		else
			CONN_OBUF_LIT(c, "Authorization: Bearer ");
		conn_obuf_add(c, key, kl);
		CONN_OBUF_LIT(c, "\r\n");
	}
	/* The whole body was read: always our own Content-Length framing. */
	if (c->req.body_bytes > 0 || c->req.chunked ||
	    kv_http_find(req->headers, req->nheaders, "content-length") != NULL) {
		CONN_OBUF_LIT(c, "Content-Length: ");
		c->olen += kv_fmt_i64(c->obuf + c->olen, c->req.body_bytes + (int64_t)c->req.injlen);
		CONN_OBUF_LIT(c, "\r\n");
	}
	if (c->req.ws)
		ws_lines(c, req);
	else
		CONN_OBUF_LIT(c, "Connection: keep-alive\r\n");
	CONN_OBUF_LIT(c, "\r\n");
}

/* The body's SHA-256, as it goes: from the window (with the member added
 * at inj_at) or from the spool. */
static int
body_hash(const struct kv_conn *c, char hex[65])
{
	const void *p[3];
	size_t len[3];
	size_t at = c->req.inj != NULL ? (size_t)c->req.inj_at : c->req.ilen;

	if (c->req.spfd != -1)
		return kv_aws_hash_spool(c->req.spfd, c->req.body_bytes, c->req.inj, c->req.injlen,
		    c->req.inj_at, hex);
	p[0] = c->req.ibuf;
	len[0] = at;
	p[1] = c->req.inj;
	len[1] = c->req.inj != NULL ? c->req.injlen : 0;
	p[2] = c->req.ibuf + at;
	len[2] = c->req.ilen - at;
	return kv_aws_hash_parts(p, len, 3, hex);
}

/* A Bedrock upstream without api_key: the SigV4 lines of the request
 * whose target (TLEN bytes) is at obuf[TAT]. 0, or -1 with *MSG. */
static int
sign_lines(struct kv_conn *c, size_t tat, size_t tlen, const char **msg)
{
	char hex[65];
	int n;

	if (body_hash(c, hex) == -1) {
		kv_log_warn("KV0478", "hashing the request body for SigV4");
		*msg = "the gateway cannot read the request body to sign it";
		return -1;
	}
	if ((n = kv_aws_sign_lines(c->rt->cf, c->req.method, c->obuf + tat, tlen, hex,
	    c->obuf + c->olen, msg)) == -1)
		return -1;
	c->olen += (size_t)n;
	return 0;
}

/* Into obuf: the upstream request's head (and the body when in memory).
 * -1 when it cannot be built; -2 when it cannot be signed (*MSG). */
static int
build_request(struct kv_conn *c, const char **msg)
{
	const struct kv_upstream *up = c->rt->cf;
	struct kv_http_request *req = &c->w->req;
	const char *reason, *key = up->api_key;
	size_t i, need, ml, bl, tl, hl, kl = 0, tat;
	int status, sigv4 = up->provider == KV_PROVIDER_BEDROCK && up->api_key == NULL;

	/* The head is still in cbuf. w->req still holds its parse when nothing
	 * was parsed into it since (a small request: head, body and this in
	 * one turn); else it is parsed again rather than keep 4 KB of header
	 * pointers per connection. */
	if (c->head_parse == 0 || c->head_parse != c->w->req_parse) {
		if (kv_http_parse_request(c->cbuf, c->head_len, req, &status, &reason) <= 0)
			return -1;
		c->head_parse = ++c->w->req_parse;
	}
	ml = strlen(c->req.method);
	bl = strlen(up->base_path);
	tl = strlen(c->req.target);
	hl = strlen(up->host_header);
	if (up->provider == KV_PROVIDER_VERTEX &&
	    (key = kv_vertex_bearer(up, &kl)) == NULL) {
		*msg = "the gateway has no Google access token yet for this upstream";
		return -2;
	} else if (kv_azure_entra(up) && (key = kv_azure_bearer(&kl)) == NULL) {
		*msg = "the gateway has no Entra ID token yet for this upstream";
		return -2;
	} else if (key != NULL && up->provider != KV_PROVIDER_VERTEX)
		kl = strlen(key);
	/* Room for the whole head, written without a check per piece: each
	 * forwarded line takes at most one byte more than in the client's
	 * head (": "), and 256 covers the request line's and our own lines. */
	need = c->head_len + req->nheaders + bl + hl + kl + 256 + (sigv4 ? KV_AWS_SIGN_ROOM : 0) +
	    (c->req.ws ? 64 : 0);
	if (c->req.spfd == -1)
		need += c->req.ilen + c->req.injlen;
	if (conn_obuf_reserve(c, need) == -1)
		return -1;
	conn_obuf_add(c, c->req.method, ml);
	CONN_OBUF_LIT(c, " ");
	tat = c->olen;
	conn_obuf_add(c, up->base_path, bl);
	conn_obuf_add(c, c->req.target, tl);
	CONN_OBUF_LIT(c, " HTTP/1.1\r\nHost: ");
	conn_obuf_add(c, up->host_header, hl);
	CONN_OBUF_LIT(c, "\r\n");
	for (i = 0; i < req->nheaders; i++)
		if (want_header(c, &req->headers[i]))
			conn_obuf_add_header(c, &req->headers[i]);
	if (sigv4 && sign_lines(c, tat, bl + tl, msg) == -1)
		return -2;
	own_lines(c, req, key, kl);
	if (c->req.spfd != -1)
		return 0;	/* the body follows from the spool */
	if (c->req.inj != NULL)
		return conn_obuf_put(c, c->req.ibuf, (size_t)c->req.inj_at) == -1 ||
		    conn_obuf_put(c, c->req.inj, c->req.injlen) == -1 ||
		    conn_obuf_put(c, c->req.ibuf + c->req.inj_at, c->req.ilen - (size_t)c->req.inj_at) == -1 ? -1 : 0;
	return conn_obuf_put(c, c->req.ibuf, c->req.ilen);
}

/* Requests in flight in this worker up to which a request keeps its whole
 * output buffer while it waits for the response (at most 16 x 4 KB): the
 * shrink here and the growth back for the response head were two reallocs
 * a request (~460 instructions, callgrind), for memory that matters only
 * when many requests wait at once. */
#define OBUF_KEEP_INFLIGHT	16

/* The first attempt's request, built whole into obuf. */
static enum kv_rc
build_first(struct kv_conn *c)
{
	const char *msg;
	int s;

	if (c->req.force_usage && (s = build_inject(c, &msg)) != 0)
		return reply_error(c, s, msg);
	if ((s = build_request(c, &msg)) < 0)
		return s == -2 ? reply_error(c, 503, msg) :
		    reply_error(c, 502, "cannot build the upstream request");
	/* Kept until the response head, to go to another target if this one
	 * provably gets nothing: all of the request is in obuf, or its head
	 * (and the body stays in the spool). */
	c->keep_obuf = 1;
	if (c->ocap > c->olen + 256 &&
	    atomic_load(&c->w->slot->active_streams) > OBUF_KEEP_INFLIGHT) {
		/* Kept until the response head: 1,000 streams waiting for their
		 * first token keep their request, not a 4 KB buffer each. */
		char *nb = realloc(c->obuf, c->olen);
		if (nb != NULL) {
			c->obuf = nb;
			c->ocap = c->olen;
		}
	}
	free(c->req.ibuf);
	c->req.ibuf = NULL;
	c->req.ilen = c->req.icap = 0;
	if (c->cpos == c->clen) {
		/* The head was rebuilt into obuf: a stream waiting for its
		 * upstream connection must not hold the 20 KB head buffer too. */
		free(c->cbuf);
		c->cbuf = NULL;
		c->cpos = c->clen = 0;
		c->head_parse = 0;	/* w->req points into the freed head */
	}
	return KV_NEXT;
}

enum kv_rc
request_build(struct kv_conn *c)
{
	const struct kv_upstream *from = c->rebuild_from;

	if (from == NULL)
		return build_first(c);
	c->rebuild_from = NULL;
	if (kv_upset_rewrite(c, from) == -1)
		return reply_error(c, 502, "cannot build the upstream request");
	return KV_NEXT;
}

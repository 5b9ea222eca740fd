/* The request head: read it, parse it, refuse a target or credential a
 * provider might read differently from us, find the one key the request
 * carries and hash it, then set up body intake (request_body.c). */
#include "worker/request_head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <openssl/crypto.h>

#include "common/bedrock_path.h"
#include "common/gemini_path.h"
#include "common/log.h"
#include "worker/credential.h"
#include "worker/endpoints.h"
#include "worker/jwt_auth.h"
#include "worker/request_tags.h"
#include "worker/reply.h"
#include "worker/vertex_req.h"
#include "worker/ws_upgrade.h"

/* A client of the Anthropic API names its version or sends x-api-key; on a
 * path both providers serve it is routed, and answered, as Anthropic. */
static void
note_anthropic_client(struct kv_conn *c, const struct kv_http_request *req)
{
	size_t i;

	c->req.anthropic_client = c->req.auth_x_api_key;
	for (i = 0; i < req->nheaders && !c->req.anthropic_client; i++)
		c->req.anthropic_client = req->headers[i].name_len == 17 &&
		    kv_http_lit_eq(req->headers[i].name, "anthropic-version", 17);
	if (c->req.anthropic_client && kv_config_shared_path(c->req.target))
		c->req.anthropic = 1;
}

/* A Bedrock path (bedrock_path.h): answered in Bedrock's error shape
 * (this first, so that the target check's refusal has it too),
 * routed to a bedrock upstream only (config_route.c); a runtime path's
 * model id decoded once, for routing and pricing, while the path goes on
 * as sent (the signature covers it encoded). The body's "stream" means
 * nothing there: the path says whether the answer is an event stream.
 * -1 with *WHY for a model id kilovolt cannot read. */
static int
bedrock_head(struct kv_conn *c, const struct kv_http_request *req, const char **why)
{
	enum kv_br_kind k;
	size_t off, n;

	_Static_assert(sizeof(c->req.path_model) == KV_BR_MODEL_MAX, "a model id fits");
	k = kv_br_path(req->target, req->target_len, &off, &n);
	if (k == KV_BR_NONE)
		return 0;
	c->req.bedrock = 1;
	c->req.aws_stream = kv_br_streams(k);
	/* InvokeModel's body is Anthropic's, and so is its usage */
	c->req.anthropic = c->req.api == KV_API_ANTHROPIC_MESSAGES;
	if (k == KV_BR_CONTROL)
		return 0;
	return kv_br_model(req->target + off, n, c->req.path_model, sizeof(c->req.path_model),
	    why);
}

/* A Gemini API path (gemini_path.h): answered in Google's error shape
 * (this first, so that the target check's refusal has it too), routed to
 * a gemini upstream only (config_route.c); its model named by the path,
 * and whether it streams by its method, whatever the body says. */
static void
gemini_head(struct kv_conn *c, const struct kv_http_request *req)
{
	enum kv_gm_kind k;
	size_t off, n;

	_Static_assert(sizeof(c->req.path_model) == KV_GM_MODEL_MAX, "a model name fits");
	k = kv_gm_path(req->target, req->target_len, &off, &n);
	if (k == KV_GM_NONE)
		return;
	c->req.google = 1;
	c->req.gm_stream = k == KV_GM_STREAM;
	memcpy(c->req.path_model, req->target + off, n);
	c->req.path_model[n] = '\0';
}

/* Google's ?key= on a Gemini path: taken out of the target once the key
 * is hashed, so that it is neither forwarded nor logged (the upstream's
 * own key goes in x-goog-api-key; a pass-through upstream is refused it
 * in admission.c). Elsewhere the query stays as sent. */
static int
gemini_query_key(struct kv_conn *c, const char **why)
{
	int n;

	if (!c->req.google || (n = kv_cred_strip_query_key(c->req.target)) == 0)
		return 0;
	c->req.query_key = 1;
	if (n > 1) {
		*why = "key= appears more than once in the query";
		return -1;
	}
	return 0;
}

/* A metered body is scanned, and a scanner cannot read a coded body. */
static int
coded_body(const struct kv_http_request *req)
{
	const struct kv_http_header *h;

	h = kv_http_find(req->headers, req->nheaders, "content-encoding");
	return h != NULL && !(h->value_len == 8 && kv_http_lit_eq(h->value, "identity", 8));
}

/* SHA-256 of the key, remembered for the last key this worker saw: the
 * hash was 3 k of a small request's 54 k instructions (callgrind), and a
 * worker's requests mostly carry the key of the one before. The key is
 * compared in constant time, so a guess learns nothing from the timing. */
#define KEY_MEMO_MAX	256

static void
key_hash(const char *key, size_t len, uint8_t hash[32])
{
	static struct {
		size_t	 len;		/* 0: empty */
		char	 key[KEY_MEMO_MAX];
		uint8_t	 hash[32];
	} memo;

	if (len > 0 && len == memo.len && CRYPTO_memcmp(key, memo.key, len) == 0) {
		memcpy(hash, memo.hash, 32);
		return;
	}
	kv_key_hash(key, len, hash);
	if (len > 0 && len <= KEY_MEMO_MAX) {
		memcpy(memo.key, key, len);
		memcpy(memo.hash, hash, 32);
		memo.len = len;
	}
}

/* A body follows: its scan (a metered one, uncoded), the 100 Continue a
 * client waits for, and the window it is read into (request_body.c). */
static enum kv_rc
body_intake(struct kv_conn *c, const struct kv_http_request *req)
{
	if (c->req.api != KV_API_OTHER && coded_body(req))
		return reply_error(c, 415, "a Content-Encoding other than identity: send the body "
		    "uncompressed, kilovolt reads it to admit the request");
	if (c->req.api != KV_API_OTHER) {
		if ((c->req.rs = malloc(sizeof(*c->req.rs))) == NULL)
			return reply_error(c, 503, "out of memory");
		kv_reqscan_init(c->req.rs, c->req.api);
		/* the body names no model there: one in it is refused */
		if (c->req.path_model[0] != '\0' && kv_reqscan_model(c->req.rs,
		    c->req.path_model, strlen(c->req.path_model)) == -1)
			return reply_error(c, 400, c->req.rs->err);
	}
	if (req->expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		/* A fresh socket takes 25 bytes; if not, the client sends anyway. */
		(void)send(c->cfd, cont, sizeof(cont) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	kv_chunked_init(&c->req.dec);
	c->req.icap = c->req.chunked || c->req.body_left > KV_BODY_WINDOW ? KV_BODY_WINDOW :
	    (size_t)c->req.body_left;
	return KV_NEXT;
}
/* A WebSocket upgrade (ws_upgrade.h): its kind, and the key a browser
 * client sends as the subprotocol openai-insecure-api-key.KEY, which
 * must be the key any header carries. -1 with *WHY to refuse (400). */
static int
ws_head(struct kv_conn *c, const struct kv_http_request *req, int *r, const char **key,
    size_t *klen, const char **why)
{
	const char *pk;
	size_t pl;

	if ((c->req.ws = kv_ws_upgrade_kind(req, c->req.target, why)) <= 0)
		return c->req.ws;
	if ((pk = kv_ws_proto_key(req, &pl)) == NULL)
		return 0;
	if (*r == 0 && (pl != *klen || memcmp(pk, *key, pl) != 0)) {
		*why = "two credentials (Authorization and the openai-insecure-api-key "
		    "subprotocol) carry different keys";
		return -1;
	}
	*key = pk;
	*klen = pl;
	*r = 0;
	return 0;
}

/* A key in Azure's header alone is taken on an azure upstream's paths
 * only (azure_admit.c), one in Google's on a gemini or vertex upstream's
 * (admission.c); beside the same key in another, stripped. */
static void
lone_provider_key(struct kv_conn *c, const struct kv_http_request *req)
{
	int other = kv_http_find(req->headers, req->nheaders, "authorization") != NULL ||
	    kv_http_find(req->headers, req->nheaders, "x-api-key") != NULL;

	c->req.auth_api_key = !other &&
	    kv_http_find(req->headers, req->nheaders, "api-key") != NULL;
	c->req.auth_goog_key = !other &&
	    kv_http_find(req->headers, req->nheaders, "x-goog-api-key") != NULL;
}

/* The request line and framing the phases read, copied off the parser. */
static int
copy_line(struct kv_conn *c, const struct kv_http_request *req)
{
	/* the parser bounds a method to KV_HTTP_MAX_METHOD bytes, c->req.method's
	 * size less its NUL; a copy, not a format, on every request */
	_Static_assert(sizeof(c->req.method) == KV_HTTP_MAX_METHOD + 1, "a method fits");
	memcpy(c->req.method, req->method, req->method_len);
	c->req.method[req->method_len] = '\0';
	if ((c->req.target = strndup(req->target, req->target_len)) == NULL)
		return -1;
	c->req.minor = req->minor;
	c->req.keep_alive = req->keep_alive;
	c->req.is_head = strcmp(c->req.method, "HEAD") == 0;
	c->req.api = kv_endpoint_api(c->req.method, req->target, req->target_len);
	c->req.anthropic = kv_endpoint_anthropic(req->target, req->target_len);
	c->req.chunked = req->chunked;
	c->req.body_left = req->chunked ? 0 : (req->content_length > 0 ? req->content_length : 0);
	c->req.body_done = !req->chunked && c->req.body_left == 0;
	return 0;
}

static enum kv_rc
on_head(struct kv_conn *c, size_t hl)
{
	const struct kv_http_request *req = &c->w->req;
	const struct kv_config *cf = c->w->cf;
	const char *key, *why = NULL;
	size_t klen;
	int r, j;

	c->t_start_ms = c->w->now_ms;
	c->head_len = hl;
	c->cpos = hl;
	if (copy_line(c, req) == -1)
		return reply_error(c, 503, "out of memory");
	/* Before anything else: a target a provider might read differently
	 * from how we classify it is never forwarded. */
	gemini_head(c, req);
	if (bedrock_head(c, req, &why) == -1 ||
	    kv_vertex_head(c, req->target, req->target_len, &why) == -1 ||
	    kv_target_check(req->target, req->target_len, &why) == -1)
		return reply_error(c, 400, why);
	/* CORS: a preflight is answered here, before any credential. */
	kv_cors_origin(cf->cors_origins, req, c->req.cors_origin);
	if (kv_cors_is_preflight(c->req.method, req))
		return reply_preflight(c, req);
	if (c->req.bedrock && kv_cred_sigv4(req, c->req.target))
		return reply_error(c, 401, "this request is signed with AWS SigV4, and kilovolt "
		    "takes no AWS credentials from clients (it signs for Bedrock itself): use "
		    "your kilovolt key as a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK=KEY, "
		    "sent as Authorization: Bearer KEY) or send it in x-api-key");
	if ((r = kv_cred_find(req, c->req.target, &key, &klen, &c->req.auth_x_api_key, &why)) == -2 ||
	    ws_head(c, req, &r, &key, &klen, &why) == -1)
		return reply_error(c, 400, why);
	lone_provider_key(c, req);
	/* a JWT, when [auth jwt] is on: its user node is the account */
	if ((j = kv_jwt_auth(c, req, key, klen, &why)) == -1)
		return reply_error(c, 401, why);
	if (r == -1 && j == 0)
		return reply_error(c, 401, "missing API key: send Authorization: Bearer KEY or x-api-key: KEY");
	if (j == 0)
		key_hash(key, klen, c->req.keyhash);
	if (gemini_query_key(c, &why) == -1)
		return reply_error(c, 400, why);
	kv_key_id(c->req.keyhash, c->req.keyid);
	if (kv_request_tags(c, req, &why) == -1)
		return reply_error(c, 400, why);
	note_anthropic_client(c, req);
	if (cf->max_body > 0 && req->content_length > (int64_t)cf->max_body)
		return reply_error(c, 413, "request body exceeds max_body");
	if (c->req.body_done)
		return KV_NEXT;
	return body_intake(c, req);
}

enum kv_rc
request_head(struct kv_conn *c)
{
	const char *reason;
	ssize_t n;
	int r, status;

	if (c->cbuf == NULL && (c->cbuf = malloc(KV_CBUF_SIZE)) == NULL)
		return KV_CLOSE;
	for (;;) {
		if (c->clen > 0) {
			r = kv_http_parse_request(c->cbuf, c->clen, &c->w->req, &status, &reason);
			c->head_parse = ++c->w->req_parse;
			/* an unfinished head is memory a client can make us hold */
			if (conn_head_held(c, r == 0) == -1)
				return KV_CLOSE;	/* shed: the slowest head */
			if (r > 0)
				return on_head(c, (size_t)r);
			if (r < 0) {
				kv_log_debug("bad request: %s", reason);
				if (status == 505)
					kv_log_warnx("KV0804", "a client spoke HTTP/2 (prior "
					    "knowledge): HTTP/1.1 is required; answered 505");
				c->t_start_ms = c->w->now_ms;
				snprintf(c->req.method, sizeof(c->req.method), "-");
				return reply_error(c, status, reason);
			}
			if (c->clen >= KV_CBUF_SIZE)
				return reply_error(c, 431, "request head too large");
		}
		/* 8 KB a read: the head's first read must not fill all of
		 * cbuf with body bytes (a large upload would touch 20 KB). */
		n = conn_client_read(c, c->cbuf + c->clen, KV_CBUF_SIZE - c->clen < KV_BODY_WINDOW ?
		    KV_CBUF_SIZE - c->clen : KV_BODY_WINDOW, 1);
		if (n == KV_IO_AGAIN) {
			if (c->clen == 0) {
				/* A connection waiting for its request holds no buffer. */
				free(c->cbuf);
				c->cbuf = NULL;
			}
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return KV_AGAIN;
		}
		if (n <= 0)
			return KV_CLOSE;
		c->clen += (size_t)n;
	}
}

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

#include "common/log.h"
#include "worker/endpoints.h"

ssize_t
request_client_read(struct kv_conn *c, char *buf, size_t len)
{
	struct kv_stream cs = { .fd = c->cfd };
	ssize_t n = kv_stream_read(&cs, buf, len);

	if (n > 0) {
		c->bytes_in += (uint64_t)n;
		/* A head must arrive whole within header_timeout of its first
		 * byte, or of the connection for its first request
		 * (slow-loris); a body only must not stall client_timeout. */
		if (c->state != CS_HEAD)
			conn_set_deadline(c, 0);
		else if (c->clen == 0 && c->served)
			conn_head_deadline(c);
	}
	return n;
}

/* The bearer token of an Authorization value, or NULL. */
static const char *
bearer(const struct kv_http_header *h, size_t *len)
{
	const char *k;
	size_t n;

	if (h->value_len <= 7 || !kv_http_lit_eq(h->value, "bearer ", 7))
		return NULL;
	k = h->value + 7;
	n = h->value_len - 7;
	while (n > 0 && *k == ' ') {
		k++;
		n--;
	}
	*len = n;
	return n > 0 ? k : NULL;
}

/* H is named name[0..len) (lower case), case aside: the length first (most
 * headers stop there), a literal's length from sizeof (IS_NAME), not
 * strlen. */
static int
is_name(const struct kv_http_header *h, const char *name, size_t len)
{
	return h->name_len == len && kv_http_lit_eq(h->name, name, len);
}
#define IS_NAME(h, lit)	is_name((h), (lit), sizeof(lit) - 1)

/* A client of the Anthropic API names its version or sends x-api-key; on a
 * path both providers serve it is routed, and answered, as Anthropic. */
static void
note_anthropic_client(struct kv_conn *c, const struct kv_http_request *req)
{
	size_t i;

	c->anthropic_client = c->auth_x_api_key;
	for (i = 0; i < req->nheaders && !c->anthropic_client; i++)
		c->anthropic_client = IS_NAME(&req->headers[i], "anthropic-version");
	if (c->anthropic_client && kv_config_shared_path(c->target))
		c->anthropic = 1;
}

/* Does a Connection header list a header kilovolt reads? Such a header
 * would be hop-by-hop to an intermediary and end-to-end to us. */
static int
connection_names_ours(const struct kv_http_header *h)
{
#define OURS(lit)	{ lit, sizeof(lit) - 1 }
	static const struct { const char *name; size_t len; } ours[] = {
	    OURS("authorization"), OURS("x-api-key"), OURS("api-key"),
	    OURS("x-goog-api-key"), OURS("content-length"),
	    OURS("transfer-encoding"), OURS("content-encoding"), OURS("host") };
#undef OURS
	const char *p = h->value, *end = h->value + h->value_len, *t;
	size_t o;

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		for (t = p; p < end && *p != ',' && *p != ' ' && *p != '\t'; p++)
			;
		for (o = 0; o < sizeof(ours) / sizeof(ours[0]) && p > t; o++)
			if ((size_t)(p - t) == ours[o].len &&
			    strncasecmp(t, ours[o].name, ours[o].len) == 0)
				return 1;
	}
	return 0;
}

/* Every header a provider reads a key from (OpenAI, Anthropic, Azure,
 * Google): kilovolt reads the same ones, or a throw-away key in one of them
 * would be charged while the provider bills the real one in another. */
const char *const request_cred_headers[] = { "authorization", "x-api-key", "api-key",
    "x-goog-api-key", NULL };

/* The value of the query parameter key= in TARGET (Google's ?key=), or NULL. */
const char *
request_query_key(const char *target, size_t *len)
{
	const char *q = strchr(target, '?');

	while (q != NULL) {
		q++;
		if (strncmp(q, "key=", 4) == 0) {
			*len = strcspn(q + 4, "&#");
			return q + 4;
		}
		q = strchr(q, '&');
	}
	return NULL;
}

/* One credential seen: the first is the key; any other that differs is
 * refused. */
static int
cred_take(const char *v, size_t n, const char **key, size_t *len, const char **why)
{
	if (n == 0)
		return 0;	/* an empty header carries no key */
	if (*key == NULL) {
		*key = v;
		*len = n;
		return 0;
	}
	if (n != *len || memcmp(v, *key, n) != 0) {
		*why = "two credentials (Authorization, x-api-key, api-key, x-goog-api-key "
		    "or ?key=) carry different keys";
		return -2;
	}
	return 0;
}

#define NO_HDR	((size_t)-1)

/* Where the credential headers are, in one pass over the head: the first
 * two of each of request_cred_headers (by index into it: authorization,
 * x-api-key, api-key, x-goog-api-key; picked by length) and the first
 * Connection header naming a header kilovolt reads. */
struct cred_seen {
	size_t	 first[4], second[4], conn;
};

static void
cred_scan(const struct kv_http_request *req, struct cred_seen *cs)
{
	size_t i;
	int k;

	for (k = 0; k < 4; k++)
		cs->first[k] = cs->second[k] = NO_HDR;
	cs->conn = NO_HDR;
	for (i = 0; i < req->nheaders; i++) {
		const struct kv_http_header *h = &req->headers[i];

		switch (h->name_len) {
		case 13: k = IS_NAME(h, "authorization") ? 0 : -1; break;
		case 9: k = IS_NAME(h, "x-api-key") ? 1 : -1; break;
		case 7: k = IS_NAME(h, "api-key") ? 2 : -1; break;
		case 14: k = IS_NAME(h, "x-goog-api-key") ? 3 : -1; break;
		case 10:
			if (cs->conn == NO_HDR && IS_NAME(h, "connection") &&
			    connection_names_ours(h))
				cs->conn = i;
			k = -1;
			break;
		default: k = -1;
		}
		if (k >= 0 && cs->first[k] == NO_HDR)
			cs->first[k] = i;
		else if (k >= 0 && cs->second[k] == NO_HDR)
			cs->second[k] = i;
	}
}

/* The one credential the request carries, in any header of request_cred_headers
 * (Authorization as Bearer K) or ?key=. The account charged must be the
 * key the provider sees, so two that differ, a repeated header, or a
 * Connection header naming one are refused (*why set, -2); -1 when there
 * is none. The checks are made in the order of a walk over the headers
 * once per name of request_cred_headers (the Connection check in the
 * first walk), so the reason given is the one that walk meets first. */
static int
find_credential(struct kv_conn *c, const struct kv_http_request *req,
    const char **key, size_t *len, const char **why)
{
	struct cred_seen cs;
	const char *v;
	size_t vl;
	int k, other = 0;

	*key = NULL;
	*len = 0;
	cred_scan(req, &cs);
	if (cs.conn != NO_HDR && cs.conn < cs.second[0]) {
		*why = "a Connection header names a header kilovolt reads";
		return -2;
	}
	for (k = 0; k < 4; k++) {
		const struct kv_http_header *h;

		if (cs.first[k] == NO_HDR)
			continue;
		h = &req->headers[cs.first[k]];
		v = k == 0 ? bearer(h, &vl) : h->value;
		if (k != 0)
			vl = h->value_len;
		if (v == NULL)		/* Authorization, not Bearer: no key of ours */
			other = 1;
		else if (cred_take(v, vl, key, len, why) == -2)
			return -2;
		else if (*key == v && k == 1)
			c->auth_x_api_key = 1;
		if (cs.second[k] != NO_HDR) {
			*why = "the credential header is repeated";
			return -2;
		}
	}
	if ((v = request_query_key(c->target, &vl)) != NULL && cred_take(v, vl, key, len, why) == -2)
		return -2;
	if (*key != NULL && other) {
		*why = "two credentials (Authorization, x-api-key, api-key, x-goog-api-key "
		    "or ?key=) carry different keys";
		return -2;
	}
	return *key != NULL ? 0 : -1;
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

static enum step
on_head(struct kv_conn *c, size_t hl)
{
	const struct kv_http_request *req = &c->w->req;
	const struct kv_config *cf = c->w->cf;
	const char *key, *why = NULL;
	size_t klen;
	int r;

	c->t_start_ms = c->w->now_ms;
	c->head_len = hl;
	c->cpos = hl;
	/* the parser bounds a method to KV_HTTP_MAX_METHOD bytes, c->method's
	 * size less its NUL; a copy, not a format, on every request */
	_Static_assert(sizeof(c->method) == KV_HTTP_MAX_METHOD + 1, "a method fits");
	memcpy(c->method, req->method, req->method_len);
	c->method[req->method_len] = '\0';
	if ((c->target = strndup(req->target, req->target_len)) == NULL)
		return conn_fail(c, 503, "out of memory");
	c->minor = req->minor;
	c->keep_alive = req->keep_alive;
	c->is_head = strcmp(c->method, "HEAD") == 0;
	c->api = kv_endpoint_api(c->method, req->target, req->target_len);
	c->anthropic = kv_endpoint_anthropic(req->target, req->target_len);
	c->chunked_req = req->chunked;
	c->body_left = req->chunked ? 0 : (req->content_length > 0 ? req->content_length : 0);
	c->body_done = !req->chunked && c->body_left == 0;
	/* Before anything else: a target a provider might read differently
	 * from how we classify it is never forwarded. */
	if (kv_target_check(req->target, req->target_len, &why) == -1)
		return conn_fail(c, 400, why);
	/* CORS: a preflight is answered here, before any credential. */
	kv_cors_origin(cf->cors_origins, req, c->cors_origin);
	if (kv_cors_is_preflight(c->method, req))
		return (enum step)kv_cors_answer_preflight(c, req);
	if ((r = find_credential(c, req, &key, &klen, &why)) == -2)
		return conn_fail(c, 400, why);
	if (r == -1)
		return conn_fail(c, 401, "missing API key: send Authorization: Bearer KEY or x-api-key: KEY");
	key_hash(key, klen, c->keyhash);
	kv_key_id(c->keyhash, c->keyid);
	note_anthropic_client(c, req);
	if (cf->max_body > 0 && req->content_length > (int64_t)cf->max_body)
		return conn_fail(c, 413, "request body exceeds max_body");
	if (c->body_done) {
		c->state = CS_BODY_IN;
		return STEP_CONT;
	}
	if (c->api != KV_API_OTHER && coded_body(req))
		return conn_fail(c, 415, "a Content-Encoding other than identity: send the body "
		    "uncompressed, kilovolt reads it to admit the request");
	if (c->api != KV_API_OTHER) {
		if ((c->rs = malloc(sizeof(*c->rs))) == NULL)
			return conn_fail(c, 503, "out of memory");
		kv_reqscan_init(c->rs, c->api);
	}
	if (req->expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		/* A fresh socket takes 25 bytes; if not, the client sends anyway. */
		(void)send(c->cfd, cont, sizeof(cont) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	kv_chunked_init(&c->req_dec);
	c->icap = c->chunked_req || c->body_left > KV_BODY_WINDOW ? KV_BODY_WINDOW :
	    (size_t)c->body_left;
	c->state = CS_BODY_IN;
	return STEP_CONT;
}

enum step
request_head(struct kv_conn *c)
{
	const char *reason;
	ssize_t n;
	int r, status;

	if (c->cbuf == NULL && (c->cbuf = malloc(KV_CBUF_SIZE)) == NULL) {
		conn_close(c);
		return STEP_CLOSED;
	}
	for (;;) {
		if (c->clen > 0) {
			r = kv_http_parse_request(c->cbuf, c->clen, &c->w->req, &status, &reason);
			c->head_parse = ++c->w->req_parse;
			/* an unfinished head is memory a client can make us hold */
			if (conn_head_held(c, r == 0) == -1)
				return STEP_CLOSED;
			if (r > 0)
				return on_head(c, (size_t)r);
			if (r < 0) {
				kv_log_debug("bad request: %s", reason);
				if (status == 505)
					kv_log_warnx("KV0804", "a client spoke HTTP/2 (prior "
					    "knowledge): HTTP/1.1 is required; answered 505");
				c->t_start_ms = c->w->now_ms;
				snprintf(c->method, sizeof(c->method), "-");
				return conn_fail(c, status, reason);
			}
			if (c->clen >= KV_CBUF_SIZE)
				return conn_fail(c, 431, "request head too large");
		}
		/* 8 KB a read: the head's first read must not fill all of
		 * cbuf with body bytes (a large upload would touch 20 KB). */
		n = request_client_read(c, c->cbuf + c->clen, KV_CBUF_SIZE - c->clen < KV_BODY_WINDOW ?
		    KV_CBUF_SIZE - c->clen : KV_BODY_WINDOW);
		if (n == KV_IO_AGAIN) {
			if (c->clen == 0) {
				/* A connection waiting for its request holds no buffer. */
				free(c->cbuf);
				c->cbuf = NULL;
			}
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return STEP_WAIT;
		}
		if (n <= 0) {
			conn_close(c);
			return STEP_CLOSED;
		}
		c->clen += (size_t)n;
	}
}

/* The request leg: head, the whole body read and scanned (spooled past a
 * small window), admission (account, route and budget), the upstream
 * request, and sending a spooled body from its file. */
#include "worker/conn-t.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdarg.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/log.h"
#include "worker/upstream_set.h"
#include "common/fmt.h"
#include "common/money.h"
#include "worker/endpoints.h"
#include "worker/leasewait.h"
#include "worker/spool.h"

static ssize_t
client_read(struct kv_conn *c, char *buf, size_t len)
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

	if (h->value_len <= 7 || strncasecmp(h->value, "Bearer ", 7) != 0)
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

static int
is_name(const struct kv_http_header *h, const char *name)
{
	return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* A client of the Anthropic API names its version or sends x-api-key; on a
 * path both providers serve it is routed, and answered, as Anthropic. */
static void
note_anthropic_client(struct kv_conn *c, const struct kv_http_request *req)
{
	size_t i;

	c->anthropic_client = c->auth_x_api_key;
	for (i = 0; i < req->nheaders && !c->anthropic_client; i++)
		c->anthropic_client = is_name(&req->headers[i], "anthropic-version");
	if (c->anthropic_client && kv_config_shared_path(c->target))
		c->anthropic = 1;
}

/* Does a Connection header list a header kilovolt reads? Such a header
 * would be hop-by-hop to an intermediary and end-to-end to us. */
static int
connection_names_ours(const struct kv_http_header *h)
{
	static const char *const ours[] = { "authorization", "x-api-key", "api-key",
	    "x-goog-api-key", "content-length",
	    "transfer-encoding", "content-encoding", "host", NULL };
	const char *p = h->value, *end = h->value + h->value_len, *t;
	const char *const *o;

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		for (t = p; p < end && *p != ',' && *p != ' ' && *p != '\t'; p++)
			;
		for (o = ours; *o != NULL && p > t; o++)
			if ((size_t)(p - t) == strlen(*o) && strncasecmp(t, *o, (size_t)(p - t)) == 0)
				return 1;
	}
	return 0;
}

/* Every header a provider reads a key from (OpenAI, Anthropic, Azure,
 * Google): kilovolt reads the same ones, or a throw-away key in one of them
 * would be charged while the provider bills the real one in another. */
static const char *const cred_headers[] = { "authorization", "x-api-key", "api-key",
    "x-goog-api-key", NULL };

/* The value of the query parameter key= in TARGET (Google's ?key=), or NULL. */
static const char *
query_key(const char *target, size_t *len)
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

/* The one credential the request carries, in any header of cred_headers
 * (Authorization as Bearer K) or ?key=. The account charged must be the
 * key the provider sees, so two that differ, a repeated header, or a
 * Connection header naming one are refused (*why set, -2); -1 when there
 * is none. */
static int
find_credential(struct kv_conn *c, const struct kv_http_request *req,
    const char **key, size_t *len, const char **why)
{
	const char *const *n;
	const char *v;
	size_t i, vl;
	int seen, other = 0;

	*key = NULL;
	*len = 0;
	for (n = cred_headers; *n != NULL; n++) {
		for (seen = 0, i = 0; i < req->nheaders; i++) {
			const struct kv_http_header *h = &req->headers[i];

			if (n == cred_headers && is_name(h, "connection") && connection_names_ours(h)) {
				*why = "a Connection header names a header kilovolt reads";
				return -2;
			}
			if (!is_name(h, *n))
				continue;
			if (seen++) {
				*why = "the credential header is repeated";
				return -2;
			}
			v = n == cred_headers ? bearer(h, &vl) : h->value;
			if (n != cred_headers)
				vl = h->value_len;
			if (v == NULL) {	/* Authorization, not Bearer: no key of ours */
				other = 1;
				continue;
			}
			if (cred_take(v, vl, key, len, why) == -2)
				return -2;
			if (*key == v && n == cred_headers + 1)
				c->auth_x_api_key = 1;
		}
	}
	if ((v = query_key(c->target, &vl)) != NULL && cred_take(v, vl, key, len, why) == -2)
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
	return h != NULL && !(h->value_len == 8 && strncasecmp(h->value, "identity", 8) == 0);
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
	snprintf(c->method, sizeof(c->method), "%.*s", (int)req->method_len, req->method);
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
		n = client_read(c, c->cbuf + c->clen, KV_CBUF_SIZE - c->clen < KV_BODY_WINDOW ?
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

/* ---- body intake: every byte scanned, small bodies in memory, the rest
 * spooled to an unlinked file, nothing forwarded before admission ---- */

/* Charge n more spooled bytes to the worker's spool_max. */
static int
spool_charge(struct kv_conn *c, int64_t n)
{
	struct kv_worker *w = c->w;

	if (w->spool_bytes + (uint64_t)n > w->cf->spool_max)
		return -1;
	w->spool_bytes += (uint64_t)n;
	c->sp_charged += n;
	return 0;
}

/* Past the window: move what memory holds to a new spool file. A
 * Content-Length body is charged whole at once, so a body that cannot fit
 * is refused before it is read. */
static int
spool_start(struct kv_conn *c, const char **msg)
{
	int64_t want = c->chunked_req ? (int64_t)c->ilen : c->body_bytes + c->body_left;

	*msg = "the gateway's request spool is full, retry later";
	if (spool_charge(c, want) == -1)
		return -1;
	if ((c->spfd = kv_spool_open(c->w->cf)) == -1) {
		kv_log_warn("KV0504", "cannot create a request spool file");
		*msg = "the gateway cannot spool the request body, retry later";
		return -1;
	}
	if (c->ilen > 0 && kv_spool_append(c->spfd, c->ibuf, c->ilen) == -1) {
		kv_log_warn("KV0505", "writing the request spool");
		*msg = "the gateway cannot spool the request body, retry later";
		return -1;
	}
	free(c->ibuf);
	c->ibuf = NULL;
	return 0;
}

/* Take n decoded body bytes: scan them, then keep them in the window or
 * the spool. Returns 0, or the status to refuse with (*msg why). */
static int
body_take(struct kv_conn *c, const char *p, size_t n, const char **msg)
{
	const struct kv_config *cf = c->w->cf;

	if (n == 0)
		return 0;
	c->body_bytes += (int64_t)n;
	if (cf->max_body > 0 && c->body_bytes > (int64_t)cf->max_body) {
		*msg = "request body exceeds max_body";
		return 413;
	}
	if (c->rs != NULL && kv_reqscan_feed(c->rs, p, n) == -1) {
		*msg = c->rs->err;
		return 400;
	}
	if (c->spfd == -1 && c->ilen + n <= c->icap) {
		if (c->ibuf == NULL && (c->ibuf = malloc(c->icap)) == NULL) {
			*msg = "out of memory";
			return 503;
		}
		memcpy(c->ibuf + c->ilen, p, n);
		c->ilen += n;
		return 0;
	}
	if (c->spfd == -1 && spool_start(c, msg) == -1)
		return 503;
	if (c->chunked_req && spool_charge(c, (int64_t)n) == -1) {
		*msg = "the gateway's request spool is full, retry later";
		return 503;
	}
	if (kv_spool_append(c->spfd, p, n) == -1) {
		kv_log_warn("KV0505", "writing the request spool");
		*msg = "the gateway cannot spool the request body, retry later";
		return 503;
	}
	return 0;
}

/* Decode the body bytes read into cbuf. Returns 0, or a status (*msg). */
static int
body_consume(struct kv_conn *c, const char **msg)
{
	const char *data;
	size_t dlen;
	ssize_t n;
	int st;

	while (c->cpos < c->clen && !c->body_done) {
		if (!c->chunked_req) {
			n = (ssize_t)(c->clen - c->cpos);
			if ((int64_t)n > c->body_left)
				n = (ssize_t)c->body_left;
			data = c->cbuf + c->cpos;
			dlen = (size_t)n;
			c->body_left -= n;
			c->body_done = c->body_left == 0;
		} else {
			n = kv_chunked_feed(&c->req_dec, c->cbuf + c->cpos, c->clen - c->cpos,
			    &data, &dlen);
			if (n == -1) {
				*msg = "malformed chunked request body";
				return 400;
			}
			c->body_done = c->req_dec.done;
		}
		c->cpos += (size_t)n;
		if ((st = body_take(c, data, dlen, msg)) != 0)
			return st;
	}
	return 0;
}

static enum step admit(struct kv_conn *c);
static enum step admitted(struct kv_conn *c);

/* Where the next body read goes. A spooled Content-Length body is read
 * KV_SPOOL_IO bytes at a time into the worker's one buffer, scanned and
 * written to the file before the loop serves anyone else: 8 times fewer
 * read and write calls than through cbuf's window (bench scenario 6), and
 * no memory per connection. Returns 1 for that buffer (the bytes are
 * taken at once), 0 for cbuf (decoded by body_consume). */
static int
body_read_into(struct kv_conn *c, char **buf, size_t *want)
{
	struct kv_worker *w = c->w;

	if (c->spfd != -1 && !c->chunked_req && c->cpos == c->clen &&
	    (w->spool_io != NULL || (w->spool_io = malloc(KV_SPOOL_IO)) != NULL)) {
		*buf = w->spool_io;
		*want = c->body_left < KV_SPOOL_IO ? (size_t)c->body_left : KV_SPOOL_IO;
		return 1;
	}
	if (c->cpos == c->clen)		/* keep the head, reuse the rest */
		c->cpos = c->clen = c->head_len;
	/* Reads stay within the window's size past the head: a large
	 * upload touches no more of cbuf than a small one does. */
	*want = c->head_len + KV_BODY_WINDOW > c->clen ?
	    c->head_len + KV_BODY_WINDOW - c->clen : 0;
	if (*want == 0 || *want > KV_CBUF_SIZE - c->clen)
		*want = KV_CBUF_SIZE - c->clen;
	if (!c->chunked_req && (int64_t)*want > c->body_left)
		*want = (size_t)c->body_left;
	*buf = c->cbuf + c->clen;
	return 0;
}

static enum step
body_refuse(struct kv_conn *c, int st, const char *msg)
{
	c->retry_after = st == 503 ? 5 : 0;
	return conn_fail(c, st, msg);
}

enum step
request_body_in(struct kv_conn *c)
{
	const char *msg;
	char *buf;
	size_t want;
	ssize_t n;
	int st, direct;

	for (;;) {
		if ((st = body_consume(c, &msg)) != 0)
			return body_refuse(c, st, msg);
		if (c->body_done)
			return admit(c);
		direct = body_read_into(c, &buf, &want);
		n = client_read(c, buf, want);
		if (n == KV_IO_AGAIN) {
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return STEP_WAIT;
		}
		if (n <= 0) {
			conn_close(c);
			return STEP_CLOSED;
		}
		if (!direct) {
			c->clen += (size_t)n;
			continue;
		}
		c->body_left -= n;
		c->body_done = c->body_left == 0;
		if ((st = body_take(c, buf, (size_t)n, &msg)) != 0)
			return body_refuse(c, st, msg);
	}
}

/* ---- admission ---- */

/* Inline images bill by their size, not their bytes (media_bound.h): the
 * rule of the model's family, or the dearest rule for a model it does not
 * know (an upstream's model_map can send any name). */
static int64_t
image_tokens(const struct kv_conn *c, const struct kv_price *p)
{
	int rule, i;
	int64_t t = 0;

	if (c->ri.images == 0)
		return 0;
	rule = kv_media_rule_for(c->ri.model[0] ? c->ri.model : p->model,
	    c->api == KV_API_ANTHROPIC_MESSAGES);
	if (rule >= 0)
		return c->ri.img_tok[rule];
	for (i = 0; i < KV_IMG_NRULES; i++)
		if (c->ri.img_tok[i] > t)
			t = c->ri.img_tok[i];
	return t;
}

/* Sampling turns a server-tool loop may take: the first, and one after
 * each call its tools allow (max_uses, else [budget] max_tool_turns; a
 * Responses max_tool_calls caps them all). */
static int64_t
tool_turns(const struct kv_conn *c)
{
	const struct kv_request_info *ri = &c->ri;
	int64_t calls = ri->tool_uses + ri->tools_unbounded * c->w->cf->max_tool_turns;

	if (ri->max_tool_calls >= 0 && calls > ri->max_tool_calls)
		calls = ri->max_tool_calls;
	return 1 + calls;
}

/* The worst case the provider can bill for this request (DESIGN 9):
 * input: every body byte (a token is at least one byte), or the model's
 * context window when the provider fetches or recalls content the body
 * does not show; output: max(n, best_of, 1) x the largest output limit the
 * request names, else the model's max_output, else reserve_output_tokens. */
static int64_t
estimate_nusd(struct kv_conn *c, const struct kv_price *p)
{
	const struct kv_config *cf = c->w->cf;
	struct kv_usage est = { 0 };
	int64_t cost, lim, turns;

	if (p == NULL || c->api == KV_API_OTHER)
		return 0;
	est.input = c->body_bytes + image_tokens(c, p) + c->ri.hidden;
	if (c->ri.fetches[0] != '\0' && p->context_window > est.input)
		est.input = p->context_window;
	/* A server-tool loop bills each internal turn's input, up to a
	 * context window each, and each call's fee (issue 20). */
	turns = tool_turns(c);
	if (turns > 1 && p->context_window > 0)
		est.input = p->context_window * turns;
	est.web_search = c->ri.ws_uses + c->ri.ws_unbounded * cf->max_tool_turns;
	est.web_fetch = c->ri.wf_uses + c->ri.wf_unbounded * cf->max_tool_turns;
	lim = c->ri.max_output >= 0 ? c->ri.max_output :
	    p->max_output > 0 ? p->max_output : cf->reserve_output_tokens;
	est.output = c->api == KV_API_OPENAI_EMBEDDINGS ? 0 : c->ri.mult * lim;
	c->out_bound = est.output;
	/* the response may say it ran on any tier the section prices (the
	 * client asks for one in the body): reserve for the dearest */
	if (p->priority_input >= 0 || p->flex_input >= 0)
		est.tier = KV_TIER_OTHER;
	if (kv_cost(p, &est, &cost) == -1)
		return INT64_MAX / 4;
	return cost;
}

/* A request whose input the body does not bound needs the model's context
 * window to be reserved; without one it cannot be admitted safely. */
static enum step
refuse_unbounded(struct kv_conn *c, const struct kv_price *p)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "this request makes the provider fetch or recall "
	    "content (%s) that its body does not bound; set context_window in [price %s] "
	    "so that kilovolt can reserve for it", c->ri.fetches,
	    p != NULL ? p->model : c->ri.model[0] ? c->ri.model : "MODEL");
	return conn_fail(c, 400, msg);
}

/* Prices fail closed: a metered request for a model no [price] section
 * matches is refused, never relayed at $0 (unknown_models = deny, or no
 * [price default]). */
static enum step
refuse_unpriced(struct kv_conn *c)
{
	char msg[384];

	if (c->ri.model[0] == '\0')
		return conn_fail(c, 400, "the request names no model, and kilovolt "
		    "cannot price it");
	snprintf(msg, sizeof(msg), "model '%s' has no price in kilovolt: add a "
	    "[price %s] section, or set [budget] unknown_models = default to charge "
	    "it at [price default]", c->ri.model, c->ri.model);
	return conn_fail(c, 400, msg);
}

static enum step
reserve(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	struct kv_ledger *l = c->w->ledger;
	const struct kv_price *p;
	char msg[256], rem[32], need[32];
	int64_t amount;
	enum step st;
	int deny;

	/* The master's policy, not this worker's config: an old generation
	 * still draining applies a reload's unknown_keys at once. */
	deny = (atomic_load(&l->hdr->policy) & KV_POLICY_DENY) != 0;
	/* Virtual keys fail closed: an upstream that spends the operator's
	 * provider key (api_key) admits only the configured keys, whatever
	 * unknown_keys says, or any invented bearer string would spend it. */
	if (c->rt != NULL && c->rt->cf->api_key != NULL)
		deny = 1;
	c->acct = kv_ledger_account(l, c->keyhash, !deny, NULL,
	    cf->default_budget_nusd);
	if (c->acct == NULL) {
		if (errno == EAGAIN)	/* another worker is creating it this instant */
			return conn_fail(c, 503, "key account is being created; retry");
		if (deny)
			return conn_fail(c, 401, "unknown API key");
		kv_log_warnx("KV0410", "account table full (max_keys %u): refusing new key %s",
		    l->hdr->max_keys, c->keyid);
		/* The master gives back strangers' never-charged slots. */
		atomic_store(&l->hdr->reclaim_wanted, 1);
		c->no_retry = 1;
		return conn_fail(c, 503, "gateway key table is full");
	}
	/* Under deny only the running config's keys: a key removed or rotated
	 * out by a reload loses KV_AF_CONFIG at once (master apply_keys). */
	if (deny && !(atomic_load(&c->acct->aflags) & KV_AF_CONFIG)) {
		c->acct = NULL;
		return conn_fail(c, 401, "unknown API key");
	}
	kv_ledger_period_roll(l, c->acct, cf->period, (int64_t)time(NULL));
	p = kv_config_price(cf, c->ri.model);
	if (c->api != KV_API_OTHER && p == NULL)
		return refuse_unpriced(c);
	if (c->api != KV_API_OTHER && c->ri.fetches[0] != '\0' &&
	    (p == NULL || p->context_window <= 0))
		return refuse_unbounded(c, p);
	if (c->api != KV_API_OTHER && c->ri.tools_unbounded > 0 && cf->max_tool_turns == 0 &&
	    c->ri.max_tool_calls < 0)
		return conn_fail(c, 400, "a server tool without max_uses makes the provider "
		    "loop without a bound kilovolt can reserve: set max_uses on the tool "
		    "(or max_tool_calls), or [budget] max_tool_turns");
	amount = estimate_nusd(c, p);
	c->resv = kv_ledger_reserve(l, c->w->slot, c->acct, amount, &c->remaining);
	if (c->resv == -1) {
		atomic_fetch_add(&l->hdr->counters.budget_refusals_total, 1);
		kv_format_dollars(c->remaining, rem, sizeof(rem));
		kv_format_dollars(amount, need, sizeof(need));
		snprintf(msg, sizeof(msg), "budget exceeded for key %s: %s remaining, "
		    "this request may cost up to %s", c->keyid, rem, need);
		c->resv = -1;
		return conn_fail(c, 402, msg);
	}
	if (c->resv == -3) {
		/* The key has budget, but not in this host's lease yet: wait
		 * while the master asks Redis (docs/cluster.md). */
		c->resv = -1;
		return conn_lease_park(c);
	}
	if (c->resv == -4) {
		/* Retired by the master (never charged, idle) a moment ago. */
		c->resv = -1;
		c->retry_after = 1;
		return conn_fail(c, 503, "key account was being recycled; retry");
	}
	if (c->resv < 0) {
		c->resv = -1;
		return conn_fail(c, 503, "too many requests in flight");
	}
	if (conn_rate_admit(c, &st) == -1)
		return st;
	atomic_fetch_add(&c->w->slot->active_streams, 1);
	c->counted_stream = 1;
	return STEP_CONT;
}

/* ---- the upstream request ---- */

static int
want_header(const struct kv_conn *c, const struct kv_http_header *h)
{
	static const char *const drop[] = { "host", "content-length", "expect",
	    "accept-encoding", NULL };
	const char *const *d;

	if (h->hop)
		return 0;
	for (d = drop; *d != NULL; d++)
		if (h->name_len == strlen(*d) && strncasecmp(h->name, *d, h->name_len) == 0)
			return 0;
	/* Virtual keys: the client's kilovolt key never reaches the provider. */
	if (c->rt->cf->api_key != NULL)
		for (d = cred_headers; *d != NULL; d++)
			if (h->name_len == strlen(*d) && strncasecmp(h->name, *d, h->name_len) == 0)
				return 0;
	return 1;
}

/* The client's include_usage false/null becomes true, in the window or
 * in the spool, without changing the body's length. */
static int
overwrite_iu(struct kv_conn *c, const char **msg)
{
	const char *t = c->ri.so_iu_len == 5 ? "true " : "true";
	size_t n = (size_t)c->ri.so_iu_len;

	if (c->spfd == -1) {
		memcpy(c->ibuf + c->ri.so_iu_off, t, n);
		return 0;
	}
	if (pwrite(c->spfd, t, n, (off_t)c->ri.so_iu_off) != (ssize_t)n) {
		kv_log_warn("KV0547", "writing the request spool");
		*msg = "the gateway cannot write the spooled request body";
		return 503;
	}
	return 0;
}

/* Usage is always asked for (issue 11): a streamed chat or legacy
 * completion goes upstream with stream_options.include_usage true, and
 * with one stream_options member (issue 20): a first-wins parser would
 * read the client's, a serde server refuses a duplicate. Without one the
 * member is added before the top-level '}'; into the client's object,
 * "include_usage":true goes last, before its '}'; the client's own
 * include_usage false (or null) is overwritten in place by "true " (or
 * "true"), the same length. A null stream_options, or two of them, or two
 * include_usage, cannot be merged: refused, naming why. */
static int
build_inject(struct kv_conn *c, const char **msg)
{
	static const char member[] = "\"stream_options\":{\"include_usage\":true}",
	    iu[] = ",\"include_usage\":true";
	const struct kv_request_info *ri = &c->ri;
	int merge = ri->has_stream_options, first;
	size_t at = 0;

	if (ri->so_count > 1 || ri->so_has_iu > 1) {
		*msg = ri->so_count > 1 ? "stream_options appears more than once" :
		    "stream_options.include_usage appears more than once";
		return 400;
	}
	if (merge && ri->so_start == 0) {
		*msg = "a streamed request needs usage to be metered: send stream_options "
		    "as an object, or leave it out";
		return 400;
	}
	if (merge && ri->so_has_iu)
		return overwrite_iu(c, msg);
	first = merge && ri->so_members == 0;
	c->injlen = merge ? sizeof(iu) - 1 - (size_t)first : (ri->members > 0) + sizeof(member) - 1;
	if ((c->inj = malloc(c->injlen)) == NULL) {
		*msg = "out of memory";
		return 503;
	}
	if (merge) {
		memcpy(c->inj, iu + first, c->injlen);
		c->inj_at = (int64_t)ri->so_end;
		return 0;
	}
	if (ri->members > 0)
		c->inj[at++] = ',';
	memcpy(c->inj + at, member, sizeof(member) - 1);
	c->inj_at = (int64_t)ri->obj_end;
	return 0;
}

static int
build_request(struct kv_conn *c)
{
	const struct kv_upstream *up = c->rt->cf;
	struct kv_http_request *req = &c->w->req;
	const char *reason;
	char cl[24];
	size_t i, need;
	int status;

	/* The head is still in cbuf: parse it again rather than keep 4 KB of
	 * header pointers per connection. */
	if (kv_http_parse_request(c->cbuf, c->head_len, req, &status, &reason) <= 0)
		return -1;
	need = c->head_len + strlen(up->base_path) + strlen(up->host_header) + 256 +
	    (up->api_key ? strlen(up->api_key) : 0);
	if (c->spfd == -1)
		need += c->ilen + c->injlen;
	if (conn_obuf_reserve(c, need) == -1 ||
	    conn_obuf_cat(c, c->method, " ", up->base_path, c->target, " HTTP/1.1\r\nHost: ",
	    up->host_header, "\r\n", (char *)NULL) == -1)
		return -1;
	for (i = 0; i < req->nheaders; i++) {
		const struct kv_http_header *h = &req->headers[i];
		if (want_header(c, h) && conn_obuf_header(c, h) == -1)
			return -1;
	}
	if (up->api_key != NULL && conn_obuf_cat(c, c->auth_x_api_key ? "x-api-key: " :
	    "Authorization: Bearer ", up->api_key, "\r\n", (char *)NULL) == -1)
		return -1;
	/* The whole body was read: always our own Content-Length framing. */
	cl[kv_fmt_i64(cl, c->body_bytes + (int64_t)c->injlen)] = '\0';
	if ((c->body_bytes > 0 || c->chunked_req ||
	    kv_http_find(req->headers, req->nheaders, "content-length") != NULL) &&
	    conn_obuf_cat(c, "Content-Length: ", cl, "\r\n", (char *)NULL) == -1)
		return -1;
	if (conn_obuf_cat(c, "Connection: keep-alive\r\n\r\n", (char *)NULL) == -1)
		return -1;
	if (c->spfd != -1)
		return 0;	/* the body follows from the spool */
	if (c->inj != NULL)
		return conn_obuf_put(c, c->ibuf, (size_t)c->inj_at) == -1 ||
		    conn_obuf_put(c, c->inj, c->injlen) == -1 ||
		    conn_obuf_put(c, c->ibuf + c->inj_at, c->ilen - (size_t)c->inj_at) == -1 ? -1 : 0;
	return conn_obuf_put(c, c->ibuf, c->ilen);
}

/* The body was read whole: what it says, or a refusal. */
static int
scan_done(struct kv_conn *c, const char **msg)
{
	memset(&c->ri, 0, sizeof(c->ri));
	c->ri.max_output = -1;
	c->ri.mult = 1;
	if (c->rs == NULL)
		return 0;
	if (kv_reqscan_finish(c->rs) == -1) {
		*msg = c->rs->err;
		return 400;
	}
	c->ri = c->rs->ri;
	free(c->rs);
	c->rs = NULL;
	return 0;
}

/* The endpoint policy: metered, free, or refused before anything is
 * reserved or sent. */
static enum step
admit_endpoint(struct kv_conn *c, const struct kv_upstream *up)
{
	struct kv_endpoint ep;

	kv_endpoint_classify(c->method, c->target, strlen(c->target), up, &ep);
	if (ep.kind == KV_EP_REFUSED)
		return conn_fail(c, ep.status, ep.msg);
	c->free_ep = ep.kind == KV_EP_FREE;
	/* A background response is billed later, on a GET kilovolt would
	 * have to meter per response id; refused rather than left unpaid. */
	if (c->api == KV_API_OPENAI_RESPONSES && c->ri.background)
		return conn_fail(c, 400, "background responses are not supported by "
		    "kilovolt: their usage is only reported on a later GET, which it "
		    "cannot charge to this request; send the request without "
		    "\"background\": true");
	return STEP_CONT;
}

static enum step
admit(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	const struct kv_upstream *up;
	const char *msg;
	char msg404[256];
	enum step st;
	size_t qlen;
	int s;

	if ((s = scan_done(c, &msg)) != 0)
		return conn_fail(c, s, msg);
	up = kv_config_route_client(cf, c->target, c->ri.model[0] ? c->ri.model : NULL,
	    c->anthropic_client);
	if (up == NULL) {
		snprintf(msg404, sizeof(msg404), "no upstream is configured for the path %.*s",
		    (int)strcspn(c->target, "?") < 200 ? (int)strcspn(c->target, "?") : 200, c->target);
		return conn_fail(c, 404, msg404);
	}
	c->rt = kv_upstreams_find(c->w->ups, cf->nupstreams, up);
	c->upstream_name = up->name;
	/* Virtual keys strip every credential; one in the query cannot be. */
	if (up->api_key != NULL && query_key(c->target, &qlen) != NULL)
		return conn_fail(c, 400, "this upstream uses its own provider key: send the "
		    "kilovolt key in a header (Authorization: Bearer KEY), not as ?key=");
	if ((st = admit_endpoint(c, up)) != STEP_CONT || c->state == CS_ERRWRITE)
		return st;
	/* A client that asked for usage itself is sent as it is; for any
	 * other, usage is added, and its event dropped on the way back. */
	c->force_usage = (c->api == KV_API_OPENAI_CHAT || c->api == KV_API_OPENAI_COMPLETIONS) &&
	    c->ri.stream && !c->ri.include_usage && c->body_bytes > 0;
	c->inject = c->force_usage;
	/* Past the memory budget: refuse before anything is reserved or sent. */
	if (kv_memguard_full(&c->w->mem, c->w->now_ms) && (c->retry_after = KV_MEMGUARD_RETRY_S))
		return conn_fail(c, 503, "the gateway is at its memory limit; retry shortly");
	/* conn_fail() answers STEP_CONT too (to run CS_ERRWRITE): a refusal
	 * (401, 402, 503) is told apart by the state it leaves. */
	if ((st = reserve(c)) != STEP_CONT || c->state == CS_ERRWRITE)
		return st;
	return admitted(c);
}

enum step
request_lease_retry(struct kv_conn *c)
{
	enum step st = reserve(c);

	if (st == STEP_WAIT && c->state == CS_LEASEWAIT)
		return st;
	conn_lease_unpark(c);
	if (st != STEP_CONT || c->state == CS_ERRWRITE)
		return st;
	return admitted(c);
}

/* Reserved: the upstream request is built and sent. */
static enum step
admitted(struct kv_conn *c)
{
	const struct kv_upstream *up = c->rt->cf;
	const char *msg;
	int s;

	conn_upset_pick(c, up);
	if (c->force_usage && (s = build_inject(c, &msg)) != 0)
		return conn_fail(c, s, msg);
	if (build_request(c) == -1)
		return conn_fail(c, 502, "cannot build the upstream request");
	/* Kept until the response head, to go to another target if this one
	 * provably gets nothing: all of the request is in obuf, or its head
	 * (and the body stays in the spool). */
	c->keep_obuf = 1;
	if (c->ocap > c->olen + 256) {
		/* Kept until the response head: 1,000 streams waiting for their
		 * first token keep their request, not a 4 KB buffer each. */
		char *nb = realloc(c->obuf, c->olen);
		if (nb != NULL) {
			c->obuf = nb;
			c->ocap = c->olen;
		}
	}
	free(c->ibuf);
	c->ibuf = NULL;
	c->ilen = c->icap = 0;
	if (c->cpos == c->clen) {
		/* The head was rebuilt into obuf: a stream waiting for its
		 * upstream connection must not hold the 20 KB head buffer too. */
		free(c->cbuf);
		c->cbuf = NULL;
		c->cpos = c->clen = 0;
	}
	return request_connect(c);
}

enum step
request_connect(struct kv_conn *c)
{
	char err[256] = "";

	if (kv_upstream_gate(c->rt, &c->upwait)) {
		/* woken by the upstream; the client's leaving still counts */
		if (c->state != CS_UPWAIT) {
			c->state = CS_UPWAIT;
			c->ticket_waited = 0;
			conn_watch_client(c, EPOLLRDHUP);
			conn_set_deadline(c, 1);
		}
		return STEP_WAIT;
	}
	if (!c->retried && (c->uc = kv_upconn_take_idle(c->rt, (int64_t)time(NULL))) != NULL) {
		c->uc->ev.ptr = c;	/* it may still be in the epoll set */
		c->state = CS_SEND_REQ;
		return STEP_CONT;
	}
	if ((c->uc = kv_upconn_connect(c->rt, err, sizeof(err))) == NULL) {
		kv_log_warnx("KV0420", "%s", err);
		return conn_failover(c, 502, "upstream unreachable", 1);
	}
	c->state = CS_CONNECT;
	conn_watch_client(c, EPOLLRDHUP);
	conn_watch_upstream(c, EPOLLOUT);
	conn_set_deadline(c, 1);
	return STEP_WAIT;
}

enum step
request_connect_done(struct kv_conn *c)
{
	char err[256] = "";

	if (kv_upconn_connected(c->uc, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0421", "%s", err);
		return conn_failover(c, 502, "upstream unreachable", 1);
	}
	c->state = c->uc->s.ssl != NULL ? CS_HANDSHAKE : CS_SEND_REQ;
	return STEP_CONT;
}

enum step
request_handshake(struct kv_conn *c)
{
	char err[256] = "";
	int r;

	r = kv_stream_handshake(&c->uc->s, err, sizeof(err));
	if (r == 1) {
		c->state = CS_SEND_REQ;
		return STEP_CONT;
	}
	if (r == KV_IO_AGAIN) {
		conn_watch_upstream(c, (uint32_t)c->uc->s.want);
		return STEP_WAIT;
	}
	kv_log_warnx("KV0422", "upstream %s: %s", c->rt->cf->name, err);
	return conn_failover(c, 502, "TLS to the upstream failed", 1);
}

/* A pooled connection the server closed under us before any byte of the
 * request was written to it: one fresh try, when the whole request is
 * still in obuf. A request goes upstream at most once. */
enum step
request_retry(struct kv_conn *c)
{
	/* Once any byte of the request was written, the provider may have
	 * read it all and bill it: sending it again could bill it twice --
	 * unless it was never all written (a provider does not process a
	 * request whose body it did not get whole), or nothing was
	 * acknowledged. */
	if (!c->uc->reused || c->retried || !c->keep_obuf || c->opos > 0 || c->req_sent)
		return conn_failover(c, 502, "upstream closed the connection",
		    c->opos == 0 || c->state == CS_SEND_REQ || conn_upset_unacked(c));
	kv_upconn_close(c->uc, 0);	/* close() also leaves epoll */
	c->uc = NULL;
	c->retried = 1;
	c->opos = 0;
	free(c->ubuf);
	c->ubuf = NULL;
	c->ulen = c->upos = 0;
	return request_connect(c);
}

enum step
request_send(struct kv_conn *c)
{
	ssize_t n;

	while (c->opos < c->olen) {
		n = kv_stream_write(&c->uc->s, c->obuf + c->opos, c->olen - c->opos);
		if (n == KV_IO_AGAIN) {
			conn_quiet_client(c);
			conn_watch_upstream(c, (uint32_t)c->uc->s.want);
			conn_set_deadline(c, 1);
			return STEP_WAIT;
		}
		if (n < 0)
			return request_retry(c);
		c->opos += (size_t)n;
	}
	if (!c->keep_obuf) {
		c->olen = c->opos = 0;
	}
	c->state = c->spfd != -1 ? CS_SEND_BODY : CS_RESP_HEAD;
	if (c->cpos == c->clen) {
		free(c->cbuf);		/* nothing pipelined: no need to hold it */
		c->cbuf = NULL;
		c->cpos = c->clen = 0;
	}
	return STEP_CONT;
}

/* The spool is sent: the staging buffer goes, so a request waiting for
 * its response head holds its connection state, its head and the spool's
 * descriptor, which stays (with its share of spool_max) until the response
 * head: a target that provably got nothing has it sent to the next one
 * (relay.c lets it go). */
static enum step
spool_sent(struct kv_conn *c)
{
	free(c->sbuf);
	c->sbuf = NULL;
	c->slen = c->spos = 0;
	c->state = CS_RESP_HEAD;
	return STEP_CONT;
}

/* The next piece of the spooled body, as the upstream sees it: the file up
 * to inj_at, the injected member, the file's rest. Plaintext goes with
 * sendfile(); TLS (or a sendfile that cannot) is staged through sbuf.
 * Returns 1 sent some, 0 wait for EPOLLOUT, -1 error. */
static int
spool_piece(struct kv_conn *c)
{
	int64_t total = c->body_bytes + (int64_t)c->injlen, at = c->inj != NULL ? c->inj_at : total;
	int64_t fpos, end;
	size_t want;
	ssize_t n;

	if (c->inj != NULL && c->sp_off >= at && c->sp_off < at + (int64_t)c->injlen) {
		want = (size_t)(at + (int64_t)c->injlen - c->sp_off);
		memcpy(c->sbuf, c->inj + (c->sp_off - at), want);
		c->slen = want;
		c->spos = 0;
		c->sp_off += (int64_t)want;
		return 1;
	}
	fpos = c->sp_off < at ? c->sp_off : c->sp_off - (int64_t)c->injlen;
	end = c->sp_off < at ? at : c->body_bytes;
	if (!kv_stream_tls(&c->uc->s) && c->w->splice_ok) {
		off_t o = (off_t)fpos;

		n = sendfile(c->uc->s.fd, c->spfd, &o, (size_t)(end - fpos < (1 << 20) ?
		    end - fpos : (1 << 20)));
		if (n > 0) {
			c->sp_off += n;
			return 1;
		}
		if (n == -1 && errno == EAGAIN)
			return 0;
		if (n == -1 && (errno == EINVAL || errno == ENOSYS))
			c->w->splice_ok = 0;	/* then stage it below */
		else
			return -1;
	}
	want = (size_t)(end - fpos < KV_SPOOL_STAGE ? end - fpos : KV_SPOOL_STAGE);
	if ((n = kv_spool_pread(c->spfd, c->sbuf, want, fpos)) != (ssize_t)want) {
		kv_log_warn("KV0507", "reading the request spool");
		return -1;
	}
	c->slen = want;
	c->spos = 0;
	c->sp_off += (int64_t)want;
	return 1;
}

enum step
request_send_body(struct kv_conn *c)
{
	ssize_t n;
	int r;

	if (c->sbuf == NULL && (c->sbuf = malloc(KV_SPOOL_STAGE)) == NULL)
		return conn_fail(c, 503, "out of memory");
	for (;;) {
		if (c->spos < c->slen) {
			n = kv_stream_write(&c->uc->s, c->sbuf + c->spos, c->slen - c->spos);
			if (n == KV_IO_AGAIN) {
				conn_quiet_client(c);
				conn_watch_upstream(c, (uint32_t)c->uc->s.want);
				conn_set_deadline(c, 1);
				return STEP_WAIT;
			}
			if (n < 0)	/* it never got the whole request: nothing billed */
				return conn_failover(c, 502, "upstream closed while receiving "
				    "the body", 1);
			c->spos += (size_t)n;
			continue;
		}
		c->slen = c->spos = 0;
		if (c->sp_off == c->body_bytes + (int64_t)c->injlen)
			return spool_sent(c);
		if ((r = spool_piece(c)) == 0) {
			conn_quiet_client(c);
			conn_watch_upstream(c, EPOLLOUT);
			conn_set_deadline(c, 1);
			return STEP_WAIT;
		}
		if (r == -1)
			return conn_failover(c, 502, "upstream closed while receiving the body", 1);
	}
}

void
kv_request_release(struct kv_conn *c)
{
	if (c->spfd != -1) {
		close(c->spfd);
		c->spfd = -1;
	}
	c->w->spool_bytes -= (uint64_t)c->sp_charged;
	c->sp_charged = 0;
	free(c->sbuf);
	c->sbuf = NULL;
	c->slen = c->spos = 0;
	free(c->rs);
	c->rs = NULL;
	free(c->inj);
	c->inj = NULL;
	c->injlen = 0;
}

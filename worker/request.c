/* The request leg: head, inspected body prefix, admission (account and
 * budget), the upstream request, and streaming the rest of the body. */
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
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/money.h"

static const char inject_text[] = "\"stream_options\":{\"include_usage\":true},";

static ssize_t
client_read(struct kv_conn *c, char *buf, size_t len)
{
	struct kv_stream cs = { .fd = c->cfd };
	ssize_t n = kv_stream_read(&cs, buf, len);

	if (n > 0) {
		c->bytes_in += (uint64_t)n;
		/* A head must arrive whole within client_timeout of its first
		 * byte (slow-loris); a body only must not stall that long. */
		if (c->state != CS_HEAD || c->clen == 0)
			conn_set_deadline(c, 0);
	}
	return n;
}

/* The credential: Authorization: Bearer K, or x-api-key: K. */
static int
find_credential(struct kv_conn *c, const struct kv_http_request *req,
    const char **key, size_t *len)
{
	const struct kv_http_header *h;

	h = kv_http_find(req->headers, req->nheaders, "authorization");
	if (h != NULL && h->value_len > 7 && strncasecmp(h->value, "Bearer ", 7) == 0) {
		*key = h->value + 7;
		*len = h->value_len - 7;
		while (*len > 0 && **key == ' ') {
			(*key)++;
			(*len)--;
		}
		if (*len > 0)
			return 0;
	}
	h = kv_http_find(req->headers, req->nheaders, "x-api-key");
	if (h != NULL && h->value_len > 0) {
		*key = h->value;
		*len = h->value_len;
		c->auth_x_api_key = 1;
		return 0;
	}
	return -1;
}

static enum step
on_head(struct kv_conn *c, size_t hl)
{
	const struct kv_http_request *req = &c->w->req;
	const struct kv_config *cf = c->w->cf;
	const char *key;
	size_t klen;

	c->t_start_ms = c->w->now_ms;
	c->head_len = hl;
	c->cpos = hl;
	snprintf(c->method, sizeof(c->method), "%.*s", (int)req->method_len, req->method);
	if ((c->target = strndup(req->target, req->target_len)) == NULL)
		return conn_fail(c, 503, "out of memory");
	c->minor = req->minor;
	c->keep_alive = req->keep_alive;
	c->is_head = strcmp(c->method, "HEAD") == 0;
	c->api = kv_api_from_path(req->target, req->target_len);
	c->anthropic = c->api == KV_API_ANTHROPIC_MESSAGES;
	c->chunked_req = req->chunked;
	c->body_left = req->chunked ? 0 : (req->content_length > 0 ? req->content_length : 0);
	c->body_done = !req->chunked && c->body_left == 0;
	if (find_credential(c, req, &key, &klen) == -1)
		return conn_fail(c, 401, "missing API key: send Authorization: Bearer KEY or x-api-key: KEY");
	kv_key_hash(key, klen, c->keyhash);
	kv_key_id(c->keyhash, c->keyid);
	if (cf->max_body > 0 && req->content_length > (int64_t)cf->max_body)
		return conn_fail(c, 413, "request body exceeds max_body");
	if (c->body_done) {
		c->state = CS_BODY_IN;
		return STEP_CONT;
	}
	if (req->expect_continue) {
		static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
		/* A fresh socket takes 25 bytes; if not, the client sends anyway. */
		(void)send(c->cfd, cont, sizeof(cont) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	kv_chunked_init(&c->req_dec);
	c->icap = c->chunked_req ? KV_INSPECT_MAX :
	    (size_t)(c->body_left < KV_INSPECT_MAX ? c->body_left : KV_INSPECT_MAX);
	/* The per-worker cap: past it, bodies stream uninspected. */
	if (c->w->held_bytes + c->icap > KV_WORKER_HOLD_CAP ||
	    (c->ibuf = malloc(c->icap)) == NULL)
		c->icap = 0;
	c->w->held_bytes += c->icap;
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
			if (r > 0)
				return on_head(c, (size_t)r);
			if (r < 0) {
				kv_log_debug("bad request: %s", reason);
				c->t_start_ms = c->w->now_ms;
				snprintf(c->method, sizeof(c->method), "-");
				return conn_fail(c, status, reason);
			}
			if (c->clen >= KV_CBUF_SIZE)
				return conn_fail(c, 431, "request head too large");
		}
		n = client_read(c, c->cbuf + c->clen, KV_CBUF_SIZE - c->clen);
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

/* Move body bytes already read from cbuf into the inspection buffer.
 * Returns 1 when inspection is over, 0 for more input, -1 bad framing. */
static int
inspect_consume(struct kv_conn *c)
{
	const char *data;
	size_t dlen, avail, room;
	ssize_t n;

	while (c->cpos < c->clen && c->ilen < c->icap && !c->body_done) {
		avail = c->clen - c->cpos;
		room = c->icap - c->ilen;
		if (!c->chunked_req) {
			n = (ssize_t)(avail < room ? avail : room);
			if ((int64_t)n > c->body_left)
				n = (ssize_t)c->body_left;
			memcpy(c->ibuf + c->ilen, c->cbuf + c->cpos, (size_t)n);
			c->body_left -= n;
			c->body_done = c->body_left == 0;
			dlen = (size_t)n;
		} else {
			/* Never feed more than fits, so a payload run always fits. */
			n = kv_chunked_feed(&c->req_dec, c->cbuf + c->cpos,
			    avail < room ? avail : room, &data, &dlen);
			if (n == -1)
				return -1;
			if (dlen > 0)	/* a size line yields no data (NULL) */
				memcpy(c->ibuf + c->ilen, data, dlen);
			c->body_done = c->req_dec.done;
		}
		c->ilen += dlen;
		c->body_bytes += (int64_t)dlen;
		c->cpos += (size_t)n;
	}
	return c->body_done || c->ilen == c->icap;
}

static enum step admit(struct kv_conn *c);

enum step
request_body_in(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	size_t want;
	ssize_t n;
	int r;

	for (;;) {
		if ((r = inspect_consume(c)) == -1)
			return conn_fail(c, 400, "malformed chunked request body");
		if (cf->max_body > 0 && c->body_bytes > (int64_t)cf->max_body)
			return conn_fail(c, 413, "request body exceeds max_body");
		if (r == 1)
			return admit(c);
		if (c->cpos == c->clen)		/* keep the head, reuse the rest */
			c->cpos = c->clen = c->head_len;
		want = KV_CBUF_SIZE - c->clen;
		if (!c->chunked_req && (int64_t)want > c->body_left)
			want = (size_t)c->body_left;
		n = client_read(c, c->cbuf + c->clen, want);
		if (n == KV_IO_AGAIN) {
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

/* Reserve the request's worst case: every body byte an input token (a
 * token is at least one byte, so this bounds the input) plus the output
 * limit it names, else reserve_output_tokens. */
static int64_t
estimate_nusd(struct kv_conn *c, const struct kv_price *p)
{
	const struct kv_config *cf = c->w->cf;
	struct kv_usage est = { 0 };
	int64_t cost;

	if (p == NULL || c->api == KV_API_OTHER)
		return 0;
	est.input = c->body_done ? c->body_bytes :
	    (c->chunked_req ? c->body_bytes : c->body_bytes + c->body_left);
	est.output = c->ri.max_output >= 0 ? c->ri.max_output : cf->reserve_output_tokens;
	if (c->api == KV_API_OPENAI_EMBEDDINGS)
		est.output = 0;
	if (kv_cost(p, &est, &cost) == -1)
		return INT64_MAX / 4;
	return cost;
}

static enum step
reserve(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	struct kv_ledger *l = c->w->ledger;
	char msg[256], rem[32], need[32];
	int64_t amount;

	c->acct = kv_ledger_account(l, c->keyhash, !cf->unknown_keys_deny, NULL,
	    cf->default_budget_nusd);
	if (c->acct == NULL) {
		if (errno == EAGAIN)	/* another worker is creating it this instant */
			return conn_fail(c, 503, "key account is being created; retry");
		if (cf->unknown_keys_deny)
			return conn_fail(c, 401, "unknown API key");
		kv_log_warnx("KV0410", "account table full (max_keys %u): refusing new key %s",
		    l->hdr->max_keys, c->keyid);
		return conn_fail(c, 503, "gateway key table is full");
	}
	kv_ledger_period_roll(c->acct, cf->period, (int64_t)time(NULL));
	amount = estimate_nusd(c, kv_config_price(cf, c->ri.model));
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
	if (c->resv < 0) {
		c->resv = -1;
		return conn_fail(c, 503, "too many requests in flight");
	}
	atomic_fetch_add(&c->w->slot->active_streams, 1);
	c->counted_stream = 1;
	return STEP_CONT;
}

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
	if (c->rt->cf->api_key != NULL &&
	    ((h->name_len == 13 && strncasecmp(h->name, "authorization", 13) == 0) ||
	    (h->name_len == 9 && strncasecmp(h->name, "x-api-key", 9) == 0)))
		return 0;
	return 1;
}

/* The body part that was inspected, with include_usage injected. */
static int
build_body(struct kv_conn *c)
{
	size_t at = c->ri.object_start;

	if (c->body_done) {
		if (c->inject)
			return conn_obuf_put(c, c->ibuf, at) == -1 ||
			    conn_obuf_put(c, inject_text, sizeof(inject_text) - 1) == -1 ||
			    conn_obuf_put(c, c->ibuf + at, c->ilen - at) == -1 ? -1 : 0;
		return conn_obuf_put(c, c->ibuf, c->ilen);
	}
	if (c->chunked_req && c->ilen > 0)
		return conn_obuf_reserve(c, c->ilen + 32) == -1 ||
		    conn_obuf_printf(c, "%zx\r\n", c->ilen) == -1 ||
		    conn_obuf_put(c, c->ibuf, c->ilen) == -1 || conn_obuf_put(c, "\r\n", 2) == -1 ? -1 : 0;
	return conn_obuf_put(c, c->ibuf, c->ilen);
}

static int
build_request(struct kv_conn *c)
{
	const struct kv_upstream *up = c->rt->cf;
	struct kv_http_request *req = &c->w->req;
	const char *reason;
	size_t i, need;
	int status;

	/* The head is still in cbuf: parse it again rather than keep 4 KB of
	 * header pointers per connection. */
	if (kv_http_parse_request(c->cbuf, c->head_len, req, &status, &reason) <= 0)
		return -1;
	need = c->head_len + strlen(up->base_path) + strlen(up->host_header) + 256 +
	    (up->api_key ? strlen(up->api_key) : 0);
	if (conn_obuf_reserve(c, need) == -1 ||
	    conn_obuf_printf(c, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", c->method, up->base_path,
	    c->target, up->host_header) == -1)
		return -1;
	for (i = 0; i < req->nheaders; i++) {
		const struct kv_http_header *h = &req->headers[i];
		if (want_header(c, h) && conn_obuf_header(c, h) == -1)
			return -1;
	}
	if (up->api_key != NULL && conn_obuf_printf(c, c->auth_x_api_key ? "x-api-key: %s\r\n" :
	    "Authorization: Bearer %s\r\n", up->api_key) == -1)
		return -1;
	if (c->body_done && (c->ilen > 0 || c->chunked_req || kv_http_find(req->headers,
	    req->nheaders, "content-length") != NULL)) {
		if (conn_obuf_printf(c, "Content-Length: %zu\r\n", c->ilen +
		    (c->inject ? sizeof(inject_text) - 1 : 0)) == -1)
			return -1;
	} else if (!c->body_done && c->chunked_req) {
		if (conn_obuf_printf(c, "Transfer-Encoding: chunked\r\n") == -1)
			return -1;
	} else if (!c->body_done &&
	    conn_obuf_printf(c, "Content-Length: %lld\r\n", (long long)(c->ilen + c->body_left)) == -1)
		return -1;
	if (conn_obuf_printf(c, "Connection: keep-alive\r\n\r\n") == -1)
		return -1;
	return build_body(c);
}

static enum step
admit(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	const struct kv_upstream *up;
	enum step st;

	if (c->ilen > 0)
		kv_request_scan(c->ibuf, c->ilen, &c->ri);
	else {
		memset(&c->ri, 0, sizeof(c->ri));
		c->ri.max_output = -1;
	}
	up = kv_config_route(cf, c->target, c->ri.model[0] ? c->ri.model : NULL);
	if (up == NULL)
		return conn_fail(c, 404, "no upstream is configured for this path");
	c->rt = kv_upstreams_find(c->w->ups, cf->nupstreams, up);
	c->upstream_name = up->name;
	/* Only a streamed chat completion that did not ask for usage gets it
	 * injected, and only when the whole body was seen. */
	c->inject = c->api == KV_API_OPENAI_CHAT && c->ri.stream && !c->ri.has_stream_options &&
	    c->body_done && c->ri.complete && c->ri.valid && c->ri.object_start > 0;
	/* conn_fail() answers STEP_CONT too (to run CS_ERRWRITE): a refusal
	 * (401, 402, 503) is told apart by the state it leaves. */
	if ((st = reserve(c)) != STEP_CONT || c->state == CS_ERRWRITE)
		return st;
	if (build_request(c) == -1)
		return conn_fail(c, 502, "cannot build the upstream request");
	c->keep_obuf = c->body_done;	/* all of it is in obuf: retryable */
	if (c->keep_obuf && c->ocap > c->olen + 256) {
		/* Kept until the response head: 1,000 streams waiting for their
		 * first token keep their request, not a 4 KB buffer each. */
		char *nb = realloc(c->obuf, c->olen);
		if (nb != NULL) {
			c->obuf = nb;
			c->ocap = c->olen;
		}
	}
	if (c->ibuf != NULL) {
		c->w->held_bytes -= c->icap;
		free(c->ibuf);
		c->ibuf = NULL;
		c->icap = 0;
	}
	if (c->body_done && c->cpos == c->clen) {
		/* The request is all in obuf: a stream waiting for its upstream
		 * connection must not hold the 20 KB head buffer too. */
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
			conn_watch_client(c, EPOLLRDHUP);
			conn_set_deadline(c, 1);
		}
		return STEP_WAIT;
	}
	if (!c->retried && (c->uc = kv_upconn_take_idle(c->rt, (int64_t)time(NULL))) != NULL) {
		c->state = CS_SEND_REQ;
		return STEP_CONT;
	}
	if ((c->uc = kv_upconn_connect(c->rt, err, sizeof(err))) == NULL) {
		kv_log_warnx("KV0420", "%s", err);
		return conn_fail(c, 502, "upstream unreachable");
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
		return conn_fail(c, 502, "upstream unreachable");
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
	return conn_fail(c, 502, "TLS to the upstream failed");
}

/* A pooled connection the server closed under us: one fresh try, when the
 * whole request is still in obuf. */
enum step
request_retry(struct kv_conn *c)
{
	if (!c->uc->reused || c->retried || !c->keep_obuf)
		return conn_fail(c, 502, "upstream closed the connection");
	kv_upconn_close(c->uc, 0);
	if (c->uregistered) {
		/* close() already removed the fd from epoll */
		c->uregistered = 0;
		c->uwatch = 0;
	}
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
	c->state = c->body_done ? CS_RESP_HEAD : CS_SEND_BODY;
	if (c->body_done && c->cpos == c->clen) {
		free(c->cbuf);		/* nothing pipelined: no need to hold it */
		c->cbuf = NULL;
		c->cpos = c->clen = 0;
	}
	return STEP_CONT;
}

/* Stream the rest of a body to the upstream: Content-Length bodies as they
 * are, chunked bodies re-framed from the decoded payload (so framing the
 * upstream sees is always our own). */
static int
body_fill(struct kv_conn *c)
{
	const char *data;
	size_t dlen;
	ssize_t n;

	c->olen = c->opos = 0;
	if (conn_obuf_reserve(c, KV_CBUF_SIZE + 64) == -1)
		return -1;
	while (c->cpos < c->clen && !c->body_done) {
		if (!c->chunked_req) {
			n = (ssize_t)(c->clen - c->cpos);
			if ((int64_t)n > c->body_left)
				n = (ssize_t)c->body_left;
			memcpy(c->obuf + c->olen, c->cbuf + c->cpos, (size_t)n);
			c->olen += (size_t)n;
			c->body_left -= n;
			c->body_done = c->body_left == 0;
			dlen = (size_t)n;
		} else {
			n = kv_chunked_feed(&c->req_dec, c->cbuf + c->cpos, c->clen - c->cpos,
			    &data, &dlen);
			if (n == -1)
				return -1;
			if (dlen > 0) {
				c->olen += (size_t)sprintf(c->obuf + c->olen, "%zx\r\n", dlen);
				memcpy(c->obuf + c->olen, data, dlen);
				c->olen += dlen;
				memcpy(c->obuf + c->olen, "\r\n", 2);
				c->olen += 2;
			}
			if ((c->body_done = c->req_dec.done))
				c->olen += (size_t)sprintf(c->obuf + c->olen, "0\r\n\r\n");
		}
		c->body_bytes += (int64_t)dlen;
		c->cpos += (size_t)n;
		if (c->olen > KV_CBUF_SIZE - 64)
			break;
	}
	return 0;
}

/* Zero-copy client -> pipe -> upstream for the rest of a Content-Length
 * body bound for a plaintext upstream: nothing in it needs inspection. */
static enum step
body_splice(struct kv_conn *c)
{
	ssize_t n;

	if (c->pipefd[0] == -1 && pipe2(c->pipefd, O_NONBLOCK | O_CLOEXEC) == -1) {
		c->pipefd[0] = c->pipefd[1] = -1;
		c->w->splice_ok = 0;
		return STEP_CONT;
	}
	for (;;) {
		if (c->pipe_len > 0) {
			n = splice(c->pipefd[0], NULL, c->uc->s.fd, NULL, c->pipe_len,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				c->pipe_len -= (size_t)n;
				continue;
			}
			if (n == -1 && errno == EAGAIN) {
				conn_watch_client(c, EPOLLRDHUP);
				conn_watch_upstream(c, EPOLLOUT);
				conn_set_deadline(c, 1);
				return STEP_WAIT;
			}
			return conn_fail(c, 502, "upstream closed while receiving the body");
		}
		if (c->body_left == 0) {
			c->body_done = 1;
			c->state = CS_RESP_HEAD;
			return STEP_CONT;
		}
		n = splice(c->cfd, NULL, c->pipefd[1], NULL,
		    c->body_left < 65536 ? (size_t)c->body_left : 65536,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			c->pipe_len += (size_t)n;
			c->body_left -= n;
			c->body_bytes += n;
			c->bytes_in += (uint64_t)n;
			conn_set_deadline(c, 0);
			continue;
		}
		/* The pipe is empty here, so EAGAIN means the socket is. */
		if (n == -1 && errno == EAGAIN) {
			conn_watch_upstream(c, 0);
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return STEP_WAIT;
		}
		if (n == -1 && (errno == EINVAL || errno == ENOSYS)) {
			c->w->splice_ok = 0;
			return STEP_CONT;
		}
		c->cut = 1;
		conn_close(c);
		return STEP_CLOSED;
	}
}

enum step
request_send_body(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;
	ssize_t n;

	for (;;) {
		if (c->opos < c->olen) {
			n = kv_stream_write(&c->uc->s, c->obuf + c->opos, c->olen - c->opos);
			if (n == KV_IO_AGAIN) {
				conn_watch_client(c, EPOLLRDHUP);
				conn_watch_upstream(c, (uint32_t)c->uc->s.want);
				conn_set_deadline(c, 1);
				return STEP_WAIT;
			}
			if (n < 0)
				return conn_fail(c, 502, "upstream closed while receiving the body");
			c->opos += (size_t)n;
			continue;
		}
		if (c->body_done) {
			c->olen = c->opos = 0;
			c->state = CS_RESP_HEAD;
			return STEP_CONT;
		}
		if (c->cpos < c->clen) {
			if (body_fill(c) == -1)
				return conn_fail(c, 400, "malformed chunked request body");
			if (cf->max_body > 0 && c->body_bytes > (int64_t)cf->max_body)
				return conn_fail(c, 413, "request body exceeds max_body");
			continue;
		}
		c->cpos = c->clen = 0;	/* the head went out long ago */
		/* Bytes in the pipe leave through it, whatever splice_ok says now. */
		if (c->pipe_len > 0 || (!c->chunked_req && c->uc->s.ssl == NULL &&
		    c->w->splice_ok && cf->max_body == 0))
			return body_splice(c);
		n = client_read(c, c->cbuf, !c->chunked_req && c->body_left < KV_CBUF_SIZE ?
		    (size_t)c->body_left : KV_CBUF_SIZE);
		if (n == KV_IO_AGAIN) {
			conn_watch_upstream(c, 0);
			conn_watch_client(c, EPOLLIN | EPOLLRDHUP);
			return STEP_WAIT;
		}
		if (n <= 0) {
			c->cut = 1;
			conn_close(c);
			return STEP_CLOSED;
		}
		c->clen = (size_t)n;
	}
}

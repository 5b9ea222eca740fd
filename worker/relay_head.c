/* The response head: read and parsed (interim responses skipped, a
 * refusal the target set may fail over), its framing decided, the client's
 * head built with kilovolt's own headers; and what happens when the client
 * leaves while the response is on its way. */
#include "worker/relay_head.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>

#include "common/fmt.h"
#include "common/log.h"
#include "common/money.h"
#include "worker/budget_shown.h"
#include "worker/errors.h"
#include "worker/relay.h"
#include "worker/request_send.h"
#include "worker/settle.h"
#include "worker/sse_filter.h"
#include "worker/upstream_set.h"

/* Content-Type: text/event-stream (a parameter may follow). The first
 * Content-Type, as kv_http_find found it, by its length first. */
static int
is_sse(const struct kv_http_response *res)
{
	size_t i;

	for (i = 0; i < res->nheaders; i++) {
		const struct kv_http_header *h = &res->headers[i];

		if (h->name_len == 12 && kv_http_lit_eq(h->name, "content-type", 12))
			return h->value_len >= 17 &&
			    kv_http_lit_eq(h->value, "text/event-stream", 17);
	}
	return 0;
}

static void
resp_framing(struct kv_conn *c, const struct kv_http_response *res)
{
	int sse;

	c->status = res->status;
	c->resp_left = -1;
	if (res->no_body || c->is_head) {
		c->resp_left = 0;
		c->resp_done = 1;
	} else if (res->chunked) {
		c->resp_chunked = 1;
		kv_chunked_init(&c->resp_dec);
	} else if (res->content_length >= 0) {
		c->resp_left = res->content_length;
		c->resp_done = c->resp_left == 0;
	} else
		c->resp_close = 1;
	c->up_keepalive = res->keep_alive && !c->resp_close;
	c->scan_on = c->status >= 200 && c->status < 300 && c->api != KV_API_OTHER && !c->resp_done;
	sse = c->scan_on && is_sse(res);
	if (c->scan_on)
		kv_usage_init(&c->scan, c->api, sse);
	/* We rewrite the framing when we drop the injected usage event, and
	 * for HTTP/1.0 clients, which cannot read chunked. */
	c->reframe = (c->inject && sse) || (c->minor == 0 && c->resp_chunked);
	kv_sse_filter_init(&c->sse, relay_sse_out, c);
	c->out_chunked = c->reframe && c->minor == 1;
	c->client_keep = c->keep_alive && !c->drain && !c->w->draining &&
	    !(c->resp_close && !c->out_chunked) && !(c->reframe && !c->out_chunked);
}

/* Whether the client gets the provider's header H. */
static int
pass_header(const struct kv_conn *c, const struct kv_http_header *h)
{
	if (h->hop || (c->reframe && h->name_len == 14 &&
	    kv_http_lit_eq(h->name, "content-length", 14)))
		return 0;
	/* Ours replace the provider's: two Allow-Origin values fail in a browser. */
	return !(c->cors_origin[0] != '\0' && h->name_len > 15 &&
	    kv_http_lit_eq(h->name, "access-control-", 15));
}

/* The client's head, written once into room reserved up front: every
 * piece's length is known (no strlen and growth check per piece). */
static int
build_client_head(struct kv_conn *c, const struct kv_http_response *res)
{
	const char *reason = kv_http_reason(res->status), *id = conn_request_id(c);
	size_t i, rl = strlen(reason), kl = strlen(c->keyid), il = strlen(id), ml;
	char rem[32];
	int n = 0;

	kv_format_usd(kv_budget_shown(c), rem, sizeof(rem));
	ml = strlen(rem);
	c->olen = c->opos = 0;
	/* the provider's lines, each given one more byte (": "), and ours */
	if (conn_obuf_reserve(c, res->head_len + res->nheaders + rl + kl + il + ml + 256) == -1)
		return -1;
	CONN_OBUF_LIT(c, "HTTP/1.1 ");
	c->olen += (size_t)kv_fmt_i64(c->obuf + c->olen, res->status);
	CONN_OBUF_LIT(c, " ");
	conn_obuf_add(c, reason, rl);
	CONN_OBUF_LIT(c, "\r\n");
	for (i = 0; i < res->nheaders; i++)
		if (pass_header(c, &res->headers[i]))
			conn_obuf_add_header(c, &res->headers[i]);
	CONN_OBUF_LIT(c, "x-kilovolt-key: ");
	conn_obuf_add(c, c->keyid, kl);
	CONN_OBUF_LIT(c, "\r\nx-kilovolt-budget-remaining: ");
	conn_obuf_add(c, rem, ml);
	CONN_OBUF_LIT(c, "\r\nx-kilovolt-request-id: ");
	conn_obuf_add(c, id, il);
	CONN_OBUF_LIT(c, "\r\n");
	if (c->cors_origin[0] != '\0' && (conn_obuf_reserve(c, 512) == -1 ||
	    (n = kv_cors_response_headers(c->obuf + c->olen, c->ocap - c->olen,
	    c->cors_origin)) == -1))
		return -1;
	if (c->cors_origin[0] != '\0')
		c->olen += (size_t)n;
	if (conn_traffic_headers(c) == -1 || conn_obuf_reserve(c, 64) == -1)
		return -1;
	if ((!c->reframe && c->resp_chunked) || c->out_chunked)
		CONN_OBUF_LIT(c, "Transfer-Encoding: chunked\r\n");
	if (!c->client_keep)
		CONN_OBUF_LIT(c, "Connection: close\r\n");
	if (c->client_keep && c->minor == 0)
		CONN_OBUF_LIT(c, "Connection: keep-alive\r\n");
	CONN_OBUF_LIT(c, "\r\n");
	return 0;
}

static enum step
on_resp_head(struct kv_conn *c, size_t hl)
{
	const struct kv_http_response *res = &c->w->res;
	ssize_t n;

	c->t_first_ms = c->w->now_ms;
	c->keep_obuf = 0;
	if (c->spfd != -1)
		kv_request_release(c);	/* answered: the spooled body has gone for good */
	resp_framing(c, res);
	if (c->client_gone)
		c->client_keep = 0;
	if (build_client_head(c, res) == -1)
		return conn_fail(c, 502, "upstream response head too large");
	if (res->status >= 500)	/* the provider's own error, passed on */
		atomic_fetch_add(&c->w->ledger->hdr->counters.responses_5xx_relayed_total, 1);
	c->upos = hl;
	if (c->ulen > hl) {
		if ((n = relay_consume(c, c->ubuf + hl, c->ulen - hl)) == -1)
			return conn_fail(c, 502, "malformed upstream response body");
		c->ulen = c->reframe ? hl : hl + (size_t)n;
	}
	c->state = CS_RELAY;
	return STEP_CONT;
}

/* The client left while a metered, non-streamed response is on its way:
 * the provider generates (and bills) all of it anyway, so it is read to its
 * end (up to upstream_timeout) and charged by its usage; the bytes go
 * nowhere. A stream is read on the same way under on_cut = drain, for at
 * most drain_timeout and drain_max (the client's buffers are dropped as
 * for any client gone). Returns 1 when the connection goes on without its
 * client. */
int
relay_client_left(struct kv_conn *c)
{
	const struct kv_config *cf = c->w->cf;

	if (c->client_gone)
		return 1;
	if (c->api == KV_API_OTHER || (c->ri.stream && !cf->on_cut_drain) || !c->req_sent ||
	    (c->state != CS_RESP_HEAD && c->state != CS_RELAY) || c->pipe_len > 0)
		return 0;
	if (c->ri.stream) {
		/* on_cut = drain: read on to the usage, within bounds (README
		 * "What a request is charged"); past them, a cut */
		c->drain_until_ms = c->w->now_ms + (int64_t)cf->drain_timeout * 1000;
		c->drain_left = cf->drain_max;
	}
	if (epoll_ctl(c->w->epfd, EPOLL_CTL_DEL, c->cfd, NULL) == -1) {
		kv_log_warn("KV0550", "epoll_ctl del client");
		return 0;
	}
	atomic_fetch_add(&c->w->ledger->hdr->counters.client_aborts_total, 1);
	c->client_gone = 1;
	c->client_keep = 0;
	c->drain = 1;
	c->cwatch = 0;
	return 1;
}

enum step
relay_head(struct kv_conn *c)
{
	const char *reason;
	ssize_t n;
	int r;

	if (!c->req_sent) {
		settle_mark_sent(c);
		if (!kv_stream_tls(&c->uc->s)) {
			/* The answer is an event: a read now finds nothing (a
			 * model takes longer than a syscall): one recv(2) a request. */
			conn_quiet_client(c);
			conn_watch_upstream(c, EPOLLIN);
			conn_set_deadline(c, 1);
			return STEP_WAIT;
		}
	}
	if (c->ubuf == NULL) {
		if ((c->ubuf = conn_ubuf_take()) == NULL)
			return conn_fail(c, 503, "out of memory");
		c->ucap = KV_UBUF_SIZE;
	}
	for (;;) {
		if (c->ulen > 0) {
			r = kv_http_parse_response(c->ubuf, c->ulen, &c->w->res, &reason);
			if (r > 0 && c->w->res.status < 200) {
				/* interim response: not for the client (we sent no Expect) */
				memmove(c->ubuf, c->ubuf + r, c->ulen - (size_t)r);
				c->ulen -= (size_t)r;
				continue;
			}
			if (r > 0 && conn_upset_answer(c, &c->w->res))
				return conn_failover(c, 502, "upstream refused the request", 1);
			if (r > 0)
				return on_resp_head(c, (size_t)r);
			if (r < 0) {
				kv_log_warnx("KV0430", "upstream %s: malformed response: %s",
				    c->upstream_name, reason);
				return conn_fail(c, 502, "malformed upstream response");
			}
			if (c->ulen == KV_UBUF_SIZE)
				return conn_fail(c, 502, "upstream response head too large");
		}
		n = kv_stream_read(&c->uc->s, c->ubuf + c->ulen, KV_UBUF_SIZE - c->ulen);
		if (n == KV_IO_AGAIN) {
			if (c->ulen == 0) {
				/* Waiting for the first byte (a model thinking) holds
				 * no buffer: 1,000 such streams would pin 16 MB. */
				free(c->ubuf);
				c->ubuf = NULL;
			}
			conn_quiet_client(c);
			conn_watch_upstream(c, (uint32_t)c->uc->s.want);
			conn_set_deadline(c, 1);
			return STEP_WAIT;
		}
		if (n <= 0) {
			if (c->ulen == 0)
				return request_retry(c);
			return conn_fail(c, 502, "upstream closed during the response head");
		}
		c->ulen += (size_t)n;
	}
}

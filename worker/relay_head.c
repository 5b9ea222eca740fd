/* The response head phase: read and parsed (interim responses skipped, a
 * refusal the target set fails over), its framing decided
 * (resp_filter.c), the client's head built with kilovolt's own headers. */
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
#include "worker/peer.h"
#include "worker/ratelimit_headers.h"
#include "worker/reply.h"
#include "worker/resp_filter.h"
#include "worker/settle.h"
#include "worker/ws_upgrade.h"

/* This response's x-kilovolt-upstream and x-ratelimit-* lines (when the
 * key has a limit), into obuf. Returns 0 or -1. */
static int
traffic_headers(struct kv_conn *c)
{
	int n, up = c->ugroup != NULL && c->tlabel != NULL;
	size_t tl = up ? strlen(c->tlabel) : 0;

	/* the label's line, and 640 bytes for the rate-limit headers after it */
	if (conn_obuf_reserve(c, 640 + tl + 23) == -1)
		return -1;
	if (up) {
		CONN_OBUF_LIT(c, "x-kilovolt-upstream: ");
		conn_obuf_add(c, c->tlabel, tl);
		CONN_OBUF_LIT(c, "\r\n");
	}
	if (!c->adm.rl_on)
		return 0;
	if ((n = kv_ratelimit_headers(&c->adm.rl, c->obuf + c->olen, c->ocap - c->olen)) == -1)
		return -1;
	c->olen += (size_t)n;
	return 0;
}

/* Whether the client gets the provider's header H. */
static int
pass_header(const struct kv_conn *c, const struct kv_http_header *h)
{
	if (h->hop || (c->resp.reframe && h->name_len == 14 &&
	    kv_http_lit_eq(h->name, "content-length", 14)))
		return 0;
	/* Ours replace the provider's: two Allow-Origin values fail in a browser. */
	return !(c->req.cors_origin[0] != '\0' && h->name_len > 15 &&
	    kv_http_lit_eq(h->name, "access-control-", 15));
}

/* The client's head, written once into room reserved up front: every
 * piece's length is known (no strlen and growth check per piece). */
static int
build_client_head(struct kv_conn *c, const struct kv_http_response *res)
{
	const char *reason = kv_http_reason(res->status), *id = conn_request_id(c);
	size_t i, rl = strlen(reason), kl = strlen(c->req.keyid), il = strlen(id), ml;
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
	conn_obuf_add(c, c->req.keyid, kl);
	CONN_OBUF_LIT(c, "\r\nx-kilovolt-budget-remaining: ");
	conn_obuf_add(c, rem, ml);
	CONN_OBUF_LIT(c, "\r\nx-kilovolt-request-id: ");
	conn_obuf_add(c, id, il);
	CONN_OBUF_LIT(c, "\r\n");
	if (c->req.cors_origin[0] != '\0' && (conn_obuf_reserve(c, 512) == -1 ||
	    (n = kv_cors_response_headers(c->obuf + c->olen, c->ocap - c->olen,
	    c->req.cors_origin)) == -1))
		return -1;
	if (c->req.cors_origin[0] != '\0')
		c->olen += (size_t)n;
	if (traffic_headers(c) == -1 || conn_obuf_reserve(c, 64) == -1)
		return -1;
	if ((!c->resp.reframe && c->resp.chunked) || c->resp.out_chunked)
		CONN_OBUF_LIT(c, "Transfer-Encoding: chunked\r\n");
	if (c->resp.ws_open)
		CONN_OBUF_LIT(c, "Upgrade: websocket\r\nConnection: Upgrade\r\n");
	else if (!c->client_keep)
		CONN_OBUF_LIT(c, "Connection: close\r\n");
	if (c->client_keep && c->req.minor == 0)
		CONN_OBUF_LIT(c, "Connection: keep-alive\r\n");
	CONN_OBUF_LIT(c, "\r\n");
	return 0;
}

static enum kv_rc
on_resp_head(struct kv_conn *c, size_t hl)
{
	const struct kv_http_response *res = &c->w->res;
	ssize_t n;

	c->t_first_ms = c->w->now_ms;
	c->keep_obuf = 0;
	if (c->req.spfd != -1)
		conn_request_release(c);	/* answered: the spooled body has gone for good */
	resp_filter_start(c, res);
	if (c->client_gone)
		c->client_keep = 0;
	if (c->req.ws && res->status == 101) {
		/* a WebSocket session from here (ws_session.c): no extension,
		 * and the frames that came with the head are the session's */
		if (!kv_ws_accept_ok(res))
			return reply_error(c, 502, "upstream WebSocket handshake not acceptable "
			    "(no Sec-WebSocket-Accept, or an extension kilovolt did not offer)");
		c->resp.ws_open = 1;
		c->client_keep = 0;
	}
	if (build_client_head(c, res) == -1)
		return reply_error(c, 502, "upstream response head too large");
	if (res->status >= 500)	/* the provider's own error, passed on */
		atomic_fetch_add(&c->w->ledger->hdr->counters.responses_5xx_relayed_total, 1);
	c->att.upos = hl;
	if (c->att.ulen > hl && !c->resp.ws_open) {
		if ((n = resp_filter_consume(c, c->att.ubuf + hl, c->att.ulen - hl)) == -1)
			return reply_error(c, 502, "malformed upstream response body");
		c->att.ulen = c->resp.reframe ? hl : hl + (size_t)n;
	}
	return KV_NEXT;
}

/* Parse what ubuf holds: KV_AGAIN for more bytes (an interim response
 * dropped), else what the whole head means. */
static enum kv_rc
parse_head(struct kv_conn *c)
{
	const char *reason;
	int r;

	while (c->att.ulen > 0) {
		r = kv_http_parse_response(c->att.ubuf, c->att.ulen, &c->w->res, &reason);
		if (r > 0 && c->w->res.status < 200 && !(c->req.ws && c->w->res.status == 101)) {
			/* interim response: not for the client (we sent no Expect) */
			memmove(c->att.ubuf, c->att.ubuf + r, c->att.ulen - (size_t)r);
			c->att.ulen -= (size_t)r;
			continue;
		}
		if (r > 0 && peer_answer(c, &c->w->res))
			return peer_fail(c, 502, "upstream refused the request", 1);
		if (r > 0)
			return on_resp_head(c, (size_t)r);
		if (r < 0) {
			kv_log_warnx("KV0430", "upstream %s: malformed response: %s",
			    c->upstream_name, reason);
			return reply_error(c, 502, "malformed upstream response");
		}
		if (c->att.ulen == KV_UBUF_SIZE)
			return reply_error(c, 502, "upstream response head too large");
		break;
	}
	return KV_AGAIN;
}

enum kv_rc
relay_head(struct kv_conn *c)
{
	enum kv_rc rc;
	ssize_t n;

	if (!c->req_sent) {
		settle_mark_sent(c);
		if (!kv_stream_tls(&c->att.uc->s)) {
			/* The answer is an event: a read now finds nothing (a
			 * model takes longer than a syscall): one recv(2) a request. */
			return conn_wait_upstream(c, EPOLLIN);
		}
	}
	if (c->att.ubuf == NULL) {
		if ((c->att.ubuf = conn_ubuf_take()) == NULL)
			return reply_error(c, 503, "out of memory");
		c->att.ucap = KV_UBUF_SIZE;
	}
	while ((rc = parse_head(c)) == KV_AGAIN) {
		n = kv_stream_read(&c->att.uc->s, c->att.ubuf + c->att.ulen, KV_UBUF_SIZE - c->att.ulen);
		if (n == KV_IO_AGAIN) {
			if (c->att.ulen == 0) {
				/* Waiting for the first byte (a model thinking) holds
				 * no buffer: 1,000 such streams would pin 16 MB. */
				free(c->att.ubuf);
				c->att.ubuf = NULL;
			}
			return conn_wait_upstream(c, (uint32_t)c->att.uc->s.want);
		}
		if (n <= 0) {
			/* nothing answered: a pooled connection the server had
			 * closed, or a target that reset without reading it */
			if (c->att.ulen == 0)
				return peer_closed(c, c->opos == 0 || peer_unacked(c));
			return reply_error(c, 502, "upstream closed during the response head");
		}
		c->att.ulen += (size_t)n;
	}
	return rc;
}

/* The answers the gateway makes itself, below the phases: an error in the
 * provider's own shape (worker/errors.c) with the headers that tell a
 * client whether and when to retry, and a CORS preflight's answer. */
#include "worker/reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/conn-t.h"
#include "worker/errors.h"
#include "worker/ratelimit_headers.h"

/* The retry headers of our own error STATUS (x-ratelimit-*, retry-after,
 * x-should-retry; a budget's 402, or a node's 429, also names the node that refused) into BUF; returns the length or -1. */
static int
error_headers(struct kv_conn *c, int status, char *buf, size_t len)
{
	int n = 0, k = 0;

	if (c->adm.rl_on && (n = kv_ratelimit_headers(&c->adm.rl, buf, len)) == -1)
		return -1;
	if (status == 429 && c->adm.rl.retry_after_s > 0)
		k = snprintf(buf + n, len - (size_t)n,
		    "retry-after: %lld\r\nx-should-retry: true\r\n%s%s%s",
		    (long long)c->adm.rl.retry_after_s,
		    c->adm.refused_node != NULL ? "x-kilovolt-budget-node: " : "",
		    c->adm.refused_node != NULL ? c->adm.refused_node : "",
		    c->adm.refused_node != NULL ? "\r\n" : "");
	else if (status == 402 && c->adm.refused_node != NULL)
		k = snprintf(buf + n, len - (size_t)n,
		    "x-kilovolt-budget-node: %s\r\nx-should-retry: false\r\n", c->adm.refused_node);
	else if (status == 402 && c->adm.refused_key)
		k = snprintf(buf + n, len - (size_t)n,
		    "x-kilovolt-budget-node: key/%s\r\nx-should-retry: false\r\n", c->req.keyid);
	else if (status == 402 || c->adm.no_retry || status == 429)
		k = snprintf(buf + n, len - (size_t)n, "x-should-retry: false\r\n");
	else if (status == 502 || status == 503 || status == 504)
		/* Worth another try: an upstream or a resource of ours may be
		 * back in a moment. */
		k = snprintf(buf + n, len - (size_t)n, "retry-after: %d\r\n",
		    c->retry_after > 0 ? c->retry_after : 1);
	if (k < 0 || (size_t)k >= len - (size_t)n)
		return -1;
	return n + k;
}

enum kv_rc
reply_error(struct kv_conn *c, int status, const char *msg)
{
	char extra[1024] = "";
	size_t xl;
	int n, keep, k;

	if (c->sent_any)
		return KV_CUT;
	/* Keep the connection only when the whole request was read. */
	keep = c->req.keep_alive && !c->drain && c->req.body_done &&
	    status != 400 && status != 414 && status != 431 && status != 501 &&
	    status != 505;
	if (c->req.keyid[0] != '\0')
		snprintf(extra, sizeof(extra), "x-kilovolt-key: %s\r\n", c->req.keyid);
	k = (int)strlen(extra);
	if (error_headers(c, status, extra + k, sizeof(extra) - (size_t)k) == -1)
		extra[k] = '\0';
	xl = strlen(extra);
	snprintf(extra + xl, sizeof(extra) - xl, "x-kilovolt-request-id: %s\r\n",
	    conn_request_id(c));
	xl = strlen(extra);
	if (c->req.cors_origin[0] != '\0')	/* so a browser app can read the error */
		(void)kv_cors_response_headers(extra + xl, sizeof(extra) - xl, c->req.cors_origin);
	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	if (conn_obuf_reserve(c, 2048) == -1 ||
	    (n = kv_error_response_typed(c->obuf, c->ocap, c->req.google ? KV_ERR_GOOGLE : c->req.bedrock ? KV_ERR_BEDROCK :
	    c->req.anthropic ? KV_ERR_ANTHROPIC : KV_ERR_OPENAI, status,
	    status == 429 && c->adm.rl.refused_by == 't' ? "tokens" : NULL, msg,
	    keep, extra)) == -1)
		return KV_CLOSE;
	c->olen = (size_t)n;
	c->status = status;
	c->client_keep = keep;
	if (status >= 500 && status != 501)
		atomic_fetch_add(&c->w->ledger->hdr->counters.upstream_errors_total,
		    status == 502 || status == 504);
	return KV_REPLY;
}

enum kv_rc
reply_preflight(struct kv_conn *c, const struct kv_http_request *req)
{
	int n, keep = c->req.keep_alive && !c->drain && c->req.body_done;

	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	if (conn_obuf_reserve(c, 2048) == -1 ||
	    (n = kv_cors_preflight_response(c->obuf, c->ocap, c->req.cors_origin, req, keep,
	    conn_request_id(c))) == -1) {
		return KV_CLOSE;
	}
	c->olen = (size_t)n;
	c->status = c->req.cors_origin[0] != '\0' ? 204 : 403;
	c->client_keep = keep;
	return KV_REPLY;
}

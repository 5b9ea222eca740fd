/* The response's filter chain, below the phases: the framing read off the
 * response head, then every body byte through de-chunk -> usage scan ->
 * SSE filter (drops the usage event we injected) -> re-chunk, into obuf
 * for the client. A new framing joins here as one more filter. */
#include "worker/resp_filter.h"

#include <string.h>

#include "worker/sse_filter.h"

/* Write "LEN-in-hex\r\n" at p; returns its length. sprintf cost ~300
 * instructions per SSE event, as much as relaying a short event's bytes. */
static size_t
chunk_line(char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[2 * sizeof(size_t)];
	size_t n = 0, i;

	do
		tmp[n++] = hex[len & 15];
	while ((len >>= 4) != 0);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	p[n] = '\r';
	p[n + 1] = '\n';
	return n + 2;
}

/* Emit payload bytes a then b to the client, framed as one chunk when we
 * re-frame (b lets an event go out with a piece cut from its middle). */
static int
emit2(struct kv_conn *c, const char *a, size_t alen, const char *b, size_t blen)
{
	size_t len = alen + blen;

	if (len == 0)
		return 0;
	if (conn_obuf_reserve(c, len + 24) == -1)
		return -1;
	if (c->resp.out_chunked)
		c->olen += chunk_line(c->obuf + c->olen, len);
	if (alen > 0)
		memcpy(c->obuf + c->olen, a, alen);
	if (blen > 0)
		memcpy(c->obuf + c->olen + alen, b, blen);
	c->olen += len;
	if (c->resp.out_chunked) {
		memcpy(c->obuf + c->olen, "\r\n", 2);
		c->olen += 2;
	}
	return 0;
}

static int
emit(struct kv_conn *c, const char *p, size_t len)
{
	return emit2(c, p, len, NULL, 0);
}

/* The SSE filter's output (sse_filter.h) goes to the client as emit2's. */
static int
sse_out(void *arg, const char *a, size_t alen, const char *b, size_t blen)
{
	return emit2(arg, a, alen, b, blen);
}


static int
payload(struct kv_conn *c, const char *p, size_t len)
{
	if (c->resp.scan_on)
		kv_usage_feed(&c->resp.scan, p, len);
	if (!c->resp.reframe)
		return 0;
	return c->req.inject && c->resp.scan_on ? kv_sse_filter_feed(&c->resp.sse, p, len) : emit(c, p, len);
}

ssize_t
resp_filter_consume(struct kv_conn *c, const char *p, size_t len)
{
	const char *data;
	size_t dlen, used = 0;
	ssize_t n;

	if (c->resp.chunked) {
		while (used < len && !c->resp.dec.done) {
			n = kv_chunked_feed(&c->resp.dec, p + used, len - used, &data, &dlen);
			if (n == -1 || payload(c, data, dlen) == -1)
				return -1;
			used += (size_t)n;
		}
		c->resp.done = c->resp.dec.done;
	} else {
		used = len;
		if (c->resp.left >= 0 && (int64_t)used > c->resp.left)
			used = (size_t)c->resp.left;
		if (payload(c, p, used) == -1)
			return -1;
		if (c->resp.left >= 0) {
			c->resp.left -= (int64_t)used;
			c->resp.done = c->resp.left == 0;
		}
	}
	if (used < len)
		c->resp.up_keepalive = 0;	/* bytes past the response: do not reuse */
	if (c->resp.done && c->resp.reframe) {
		if (kv_sse_filter_flush(&c->resp.sse) == -1)
			return -1;
		if (c->resp.out_chunked && conn_obuf_reserve(c, 5) == 0) {
			memcpy(c->obuf + c->olen, "0\r\n\r\n", 5);
			c->olen += 5;
		}
	}
	return (ssize_t)used;
}

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

void
resp_filter_start(struct kv_conn *c, const struct kv_http_response *res)
{
	int sse;

	c->status = res->status;
	c->resp.left = -1;
	if (res->no_body || c->req.is_head) {
		c->resp.left = 0;
		c->resp.done = 1;
	} else if (res->chunked) {
		c->resp.chunked = 1;
		kv_chunked_init(&c->resp.dec);
	} else if (res->content_length >= 0) {
		c->resp.left = res->content_length;
		c->resp.done = c->resp.left == 0;
	} else
		c->resp.until_close = 1;
	c->resp.up_keepalive = res->keep_alive && !c->resp.until_close;
	c->resp.scan_on = c->status >= 200 && c->status < 300 && c->req.api != KV_API_OTHER && !c->resp.done;
	sse = c->resp.scan_on && is_sse(res);
	if (c->resp.scan_on)
		kv_usage_init(&c->resp.scan, c->req.api, sse);
	/* We rewrite the framing when we drop the injected usage event, and
	 * for HTTP/1.0 clients, which cannot read chunked. */
	c->resp.reframe = (c->req.inject && sse) || (c->req.minor == 0 && c->resp.chunked);
	kv_sse_filter_init(&c->resp.sse, sse_out, c);
	c->resp.out_chunked = c->resp.reframe && c->req.minor == 1;
	c->client_keep = c->req.keep_alive && !c->drain && !c->w->draining &&
	    !(c->resp.until_close && !c->resp.out_chunked) && !(c->resp.reframe && !c->resp.out_chunked);
}

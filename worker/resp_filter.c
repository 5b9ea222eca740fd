/* The response's filter chain, below the phases: the framing read off the
 * response head, then every body byte through de-chunk -> usage scan ->
 * SSE filter (drops the usage event we injected) -> re-chunk, into obuf
 * for the client. A new framing joins here as one more filter. */
#include "worker/resp_filter.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/aws_stream_filter.h"
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


/* An AWS event stream broke off (aws_stream_filter.h): said once. */
static void
aws_cut_note(struct kv_conn *c)
{
	const struct kv_aws_stream *a = c->resp.aws;

	kv_log_warnx("KV0436", "upstream %s: event stream cut by %s%s%s: charged as a cut",
	    c->upstream_name ? c->upstream_name : "-", kv_aws_stream_why(a),
	    a->exception[0] ? " " : "", a->exception);
}

static void
aws_feed(struct kv_conn *c, const char *p, size_t len)
{
	int was = c->resp.aws->cut;

	kv_aws_stream_feed(c->resp.aws, p, len);
	if (was == KV_AWS_OK && c->resp.aws->cut != KV_AWS_OK)
		aws_cut_note(c);
}

static void
aws_end(struct kv_conn *c)
{
	int was = c->resp.aws->cut;

	kv_aws_stream_end(c->resp.aws);
	if (was == KV_AWS_OK && c->resp.aws->cut != KV_AWS_OK)
		aws_cut_note(c);
}

static int
payload(struct kv_conn *c, const char *p, size_t len)
{
	if (c->resp.aws != NULL)
		aws_feed(c, p, len);
	else if (c->resp.scan_on)
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
	if (c->resp.done && c->resp.aws != NULL)
		aws_end(c);
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

/* Content-Type: TYPE (TLEN bytes; a parameter may follow). The first
 * Content-Type, as kv_http_find found it, by its length first. */
static int
content_type_is(const struct kv_http_response *res, const char *type, size_t tlen)
{
	size_t i;

	for (i = 0; i < res->nheaders; i++) {
		const struct kv_http_header *h = &res->headers[i];

		if (h->name_len == 12 && kv_http_lit_eq(h->name, "content-type", 12))
			return h->value_len >= tlen && kv_http_lit_eq(h->value, type, tlen);
	}
	return 0;
}

#define CT_IS(res, lit)	content_type_is(res, lit, sizeof(lit) - 1)

/* A count header's value: digits only, else -1. */
static int64_t
count_value(const struct kv_http_header *h)
{
	int64_t v = 0;
	size_t i;

	if (h->value_len == 0 || h->value_len > 18)
		return -1;
	for (i = 0; i < h->value_len; i++) {
		if (h->value[i] < '0' || h->value[i] > '9')
			return -1;
		v = v * 10 + (h->value[i] - '0');
	}
	return v;
}

/* A Bedrock InvokeModel or Converse answer's X-Amzn-Bedrock-*-Token-Count
 * headers: AWS's own count of what it bills (kv_usage_bedrock_counts). */
static void
bedrock_counts(struct kv_conn *c, const struct kv_http_response *res)
{
	static const char *const names[4] = {
		"x-amzn-bedrock-input-token-count", "x-amzn-bedrock-output-token-count",
		"x-amzn-bedrock-cache-read-input-token-count",
		"x-amzn-bedrock-cache-write-input-token-count",
	};
	int64_t counts[4] = { -1, -1, -1, -1 };
	size_t i, k;

	for (i = 0; i < res->nheaders; i++) {
		const struct kv_http_header *h = &res->headers[i];

		for (k = 0; k < 4; k++)
			if (h->name_len == strlen(names[k]) &&
			    kv_http_lit_eq(h->name, names[k], h->name_len))
				counts[k] = count_value(h);
	}
	kv_usage_bedrock_counts(&c->resp.scan, counts);
}

/* The usage scanner for a metered 2xx body: an AWS event stream's goes
 * behind its decoder (aws_stream_filter.h), allocated for it alone; a
 * Bedrock body's head may carry AWS's counts. Returns 1 for SSE. */
static int
scan_start(struct kv_conn *c, const struct kv_http_response *res)
{
	int sse = CT_IS(res, "text/event-stream");
	int aws = c->req.aws_stream && CT_IS(res, "application/vnd.amazon.eventstream");

	kv_usage_init(&c->resp.scan, c->req.api, sse || aws);
	kv_aws_stream_free(c->resp.aws);
	c->resp.aws = NULL;
	if (aws && (c->resp.aws = kv_aws_stream_new(&c->resp.scan)) == NULL)
		c->resp.scan_on = 0;	/* no memory: charged as a cut, by estimate */
	else if (c->req.bedrock && !aws)
		bedrock_counts(c, res);
	return sse;
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
	sse = c->resp.scan_on && scan_start(c, res);
	/* We rewrite the framing when we drop the injected usage event, and
	 * for HTTP/1.0 clients, which cannot read chunked. */
	c->resp.reframe = (c->req.inject && sse) || (c->req.minor == 0 && c->resp.chunked);
	kv_sse_filter_init(&c->resp.sse, sse_out, c);
	c->resp.out_chunked = c->resp.reframe && c->req.minor == 1;
	c->client_keep = c->req.keep_alive && !c->drain && !c->w->draining &&
	    !(c->resp.until_close && !c->resp.out_chunked) && !(c->resp.reframe && !c->resp.out_chunked);
}

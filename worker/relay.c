/* The response leg: read the upstream head, relay the body as it arrives
 * (splice for plaintext bytes nobody needs to see), scan it for usage,
 * filter the usage event we injected, and settle the charge. */
#include "worker/conn-t.h"
#include "worker/upstream_set.h"
#include "common/fmt.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/money.h"
#include "worker/errors.h"
#include "worker/charge_rules.h"

#define RELAY_READS_PER_TURN 2

static int
is_sse(const struct kv_http_response *res)
{
	const struct kv_http_header *h = kv_http_find(res->headers, res->nheaders, "content-type");

	return h != NULL && h->value_len >= 17 && strncasecmp(h->value, "text/event-stream", 17) == 0;
}

static void
resp_framing(struct kv_conn *c, const struct kv_http_response *res)
{
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
	if (c->scan_on)
		kv_usage_init(&c->scan, c->api, is_sse(res));
	/* We rewrite the framing when we drop the injected usage event, and
	 * for HTTP/1.0 clients, which cannot read chunked. */
	c->reframe = (c->inject && c->scan_on && is_sse(res)) || (c->minor == 0 && c->resp_chunked);
	c->out_chunked = c->reframe && c->minor == 1;
	c->client_keep = c->keep_alive && !c->drain && !c->w->draining &&
	    !(c->resp_close && !c->out_chunked) && !(c->reframe && !c->out_chunked);
}

static int
build_client_head(struct kv_conn *c, const struct kv_http_response *res)
{
	char rem[32], st[24];
	size_t i;
	int n = 0;

	c->olen = c->opos = 0;
	if (conn_obuf_reserve(c, res->head_len + 256) == -1)
		return -1;
	st[kv_fmt_i64(st, res->status)] = '\0';
	if (conn_obuf_cat(c, "HTTP/1.1 ", st, " ", kv_http_reason(res->status), "\r\n",
	    (char *)NULL) == -1)
		return -1;
	for (i = 0; i < res->nheaders; i++) {
		const struct kv_http_header *h = &res->headers[i];
		if (h->hop || (c->reframe && h->name_len == 14 &&
		    strncasecmp(h->name, "content-length", 14) == 0))
			continue;
		/* Ours replace the provider's: two Allow-Origin values fail in a browser. */
		if (c->cors_origin[0] != '\0' && h->name_len > 15 &&
		    strncasecmp(h->name, "access-control-", 15) == 0)
			continue;
		if (conn_obuf_header(c, h) == -1)
			return -1;
	}
	kv_format_usd(c->remaining, rem, sizeof(rem));
	if (conn_obuf_cat(c, "x-kilovolt-key: ", c->keyid, "\r\nx-kilovolt-budget-remaining: ",
	    rem, "\r\nx-kilovolt-request-id: ", conn_request_id(c), "\r\n", (char *)NULL) == -1)
		return -1;
	if (c->cors_origin[0] != '\0' && (conn_obuf_reserve(c, 512) == -1 ||
	    (n = kv_cors_response_headers(c->obuf + c->olen, c->ocap - c->olen,
	    c->cors_origin)) == -1))
		return -1;
	if (c->cors_origin[0] != '\0')
		c->olen += (size_t)n;
	if (conn_traffic_headers(c) == -1)
		return -1;
	if (((!c->reframe && c->resp_chunked) || c->out_chunked) &&
	    conn_obuf_cat(c, "Transfer-Encoding: chunked\r\n", (char *)NULL) == -1)
		return -1;
	if (!c->client_keep && conn_obuf_cat(c, "Connection: close\r\n", (char *)NULL) == -1)
		return -1;
	if (c->client_keep && c->minor == 0 &&
	    conn_obuf_cat(c, "Connection: keep-alive\r\n", (char *)NULL) == -1)
		return -1;
	return conn_obuf_put(c, "\r\n", 2);
}

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
	if (c->out_chunked)
		c->olen += chunk_line(c->obuf + c->olen, len);
	if (alen > 0)
		memcpy(c->obuf + c->olen, a, alen);
	if (blen > 0)
		memcpy(c->obuf + c->olen + alen, b, blen);
	c->olen += len;
	if (c->out_chunked) {
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

/* End of the event starting at e[0]: offset past its blank line, or 0. */
static size_t
event_end(const char *e, size_t len)
{
	const char *p = e, *end, *nl;

	if (len < 2)
		return 0;
	end = e + len;
	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL && nl + 1 < end) {
		if (nl[1] == '\n')
			return (size_t)(nl + 2 - e);
		if (nl[1] == '\r' && nl + 2 < end && nl[2] == '\n')
			return (size_t)(nl + 3 - e);
		p = nl + 1;
	}
	return 0;
}

static const char *
json_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Where the key "usage" occurs in an event, in one pass: *obj when one has
 * an object value (it may be the usage event), *strip at the first
 * ,"usage":null (what include_usage adds to every chunk). A quote inside a
 * JSON string is escaped, so "usage" only occurs as a key or a whole
 * string value. Most events hold neither, and are never parsed. */
static void
usage_marks(const char *e, size_t len, int *obj, const char **strip)
{
	const char *p = e, *end = e + len, *k, *v;

	*obj = 0;
	*strip = NULL;
	while ((k = memmem(p, (size_t)(end - p), "\"usage\"", 7)) != NULL) {
		p = k + 7;
		if (*strip == NULL && k > e && k[-1] == ',' && end - p >= 5 &&
		    memcmp(p, ":null", 5) == 0) {
			*strip = k - 1;
			continue;
		}
		v = json_ws(p, end);
		if (v < end && *v == ':' && (v = json_ws(v + 1, end)) < end && *v == '{')
			*obj = 1;
	}
}

/* The JSON of an event's data line, for the usage-only check. */
static int
event_drop(const char *e, size_t len)
{
	const char *p = e, *end = e + len, *nl;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (nl - p >= 5 && memcmp(p, "data:", 5) == 0) {
			p += 5;
			if (p < nl && *p == ' ')
				p++;
			return kv_sse_is_usage_only(p, (size_t)(nl - p - (nl > p && nl[-1] == '\r')));
		}
		p = nl + 1;
	}
	return 0;
}

/* End of an event whose first part (ending in tail[0..tlen)) came in an
 * earlier read: offset in p past its blank line, or 0. The blank line may
 * begin in the tail, so its last two bytes are searched with p's first two. */
static size_t
event_end_after(const char *tail, size_t tlen, const char *p, size_t len)
{
	char join[4];
	size_t k = tlen < 2 ? tlen : 2, m = len < 2 ? len : 2, e;

	memcpy(join, tail + tlen - k, k);
	memcpy(join + k, p, m);
	if ((e = event_end(join, k + m)) > k)
		return e - k;
	return event_end(p, len);
}

/* Emit an event without the ,"usage":null the provider adds to every chunk
 * when include_usage is on, so the client sees the chunk it would have seen. */
static int
emit_cut(struct kv_conn *c, const char *e, size_t len, const char *strip)
{
	const size_t plen = sizeof(",\"usage\":null") - 1;

	if (strip == NULL)
		return emit(c, e, len);
	return emit2(c, e, (size_t)(strip - e), strip + plen, len - (size_t)(strip - e) - plen);
}

static int
emit_stripped(struct kv_conn *c, const char *e, size_t len)
{
	const char *strip;
	int obj;

	usage_marks(e, len, &obj, &strip);
	return emit_cut(c, e, len, strip);
}

/* Pass one whole event on, unless it is the usage event the client never
 * asked for. */
static int
event_out(struct kv_conn *c, const char *e, size_t len)
{
	int whole = !c->eoverflow, obj;
	const char *strip;

	c->eoverflow = 0;
	usage_marks(e, len, &obj, &strip);
	if (whole && obj && event_drop(e, len))
		return 0;
	return emit_cut(c, e, len, strip);
}

/* Bytes of a flushed event kept back: the start of the blank line that
 * ends it, or of a "usage":null, may be among them. */
#define EVENT_KEEP 16

/* Keep the start of an event for the next read, in a buffer as large as
 * it (a stream waiting for its next token holds a few hundred bytes, not
 * KV_EBUF_SIZE). An event past KV_EBUF_SIZE is too big to be the small
 * usage event: its first part goes out as soon as the buffer is full. */
static int
ebuf_append(struct kv_conn *c, const char *p, size_t len)
{
	size_t take;
	char *nb;

	while (len > 0) {
		if (c->elen == KV_EBUF_SIZE) {
			if (emit_stripped(c, c->ebuf, c->elen - EVENT_KEEP) == -1)
				return -1;
			memmove(c->ebuf, c->ebuf + c->elen - EVENT_KEEP, EVENT_KEEP);
			c->elen = EVENT_KEEP;
			c->eoverflow = 1;
		}
		take = KV_EBUF_SIZE - c->elen < len ? KV_EBUF_SIZE - c->elen : len;
		if ((nb = realloc(c->ebuf, c->elen + take)) == NULL)
			return -1;
		c->ebuf = nb;
		memcpy(c->ebuf + c->elen, p, take);
		c->elen += take;
		p += take;
		len -= take;
	}
	return 0;
}

/* Hold each SSE event until it is whole, then pass it on (event_out).
 * Whole events go out straight from the read; only an event cut by the
 * end of a read is copied, to wait for the rest. */
static int
sse_filter(struct kv_conn *c, const char *p, size_t len)
{
	size_t end;

	if (len == 0)
		return 0;	/* a chunk-size line: no data, and p may be NULL */
	if (c->elen > 0) {
		end = event_end_after(c->ebuf, c->elen, p, len);
		if (ebuf_append(c, p, end > 0 ? end : len) == -1)
			return -1;
		if (end == 0)
			return 0;
		p += end;
		len -= end;
		if (event_out(c, c->ebuf, c->elen) == -1)
			return -1;
		free(c->ebuf);
		c->ebuf = NULL;
		c->elen = 0;
	}
	while ((end = event_end(p, len)) > 0) {
		if (event_out(c, p, end) == -1)
			return -1;
		p += end;
		len -= end;
	}
	return ebuf_append(c, p, len);
}

static int
payload(struct kv_conn *c, const char *p, size_t len)
{
	if (c->scan_on)
		kv_usage_feed(&c->scan, p, len);
	if (!c->reframe)
		return 0;
	return c->inject && c->scan_on ? sse_filter(c, p, len) : emit(c, p, len);
}

/* Account for bytes read from the upstream: returns how many belong to
 * this response (the rest is discarded), or -1 for broken framing. */
static ssize_t
consume(struct kv_conn *c, const char *p, size_t len)
{
	const char *data;
	size_t dlen, used = 0;
	ssize_t n;

	if (c->resp_chunked) {
		while (used < len && !c->resp_dec.done) {
			n = kv_chunked_feed(&c->resp_dec, p + used, len - used, &data, &dlen);
			if (n == -1 || payload(c, data, dlen) == -1)
				return -1;
			used += (size_t)n;
		}
		c->resp_done = c->resp_dec.done;
	} else {
		used = len;
		if (c->resp_left >= 0 && (int64_t)used > c->resp_left)
			used = (size_t)c->resp_left;
		if (payload(c, p, used) == -1)
			return -1;
		if (c->resp_left >= 0) {
			c->resp_left -= (int64_t)used;
			c->resp_done = c->resp_left == 0;
		}
	}
	if (used < len)
		c->up_keepalive = 0;	/* bytes past the response: do not reuse */
	if (c->resp_done && c->reframe) {
		if (c->elen > 0 && emit(c, c->ebuf, c->elen) == -1)
			return -1;
		c->elen = 0;
		if (c->out_chunked && conn_obuf_reserve(c, 5) == 0) {
			memcpy(c->obuf + c->olen, "0\r\n\r\n", 5);
			c->olen += 5;
		}
	}
	return (ssize_t)used;
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
	c->upos = hl;
	if (c->ulen > hl) {
		if ((n = consume(c, c->ubuf + hl, c->ulen - hl)) == -1)
			return conn_fail(c, 502, "malformed upstream response body");
		c->ulen = c->reframe ? hl : hl + (size_t)n;
	}
	c->state = CS_RELAY;
	return STEP_CONT;
}

/* What a request the provider got whole costs when nothing more is ever
 * known (charge_usage): body bytes / 4 input tokens and the reservation's
 * output, at the price of the model asked for. */
static int64_t
sent_estimate_nusd(struct kv_conn *c)
{
	const struct kv_price *p = kv_config_price(c->w->cf, c->ri.model);
	struct kv_usage u = { .input = c->body_bytes / 4,
	    .output = kv_charge_cut_output(c->out_bound, 0) };
	int64_t cost;

	if (p == NULL || c->api == KV_API_OTHER || kv_cost(p, &u, &cost) == -1)
		return 0;
	return cost;
}

/* The whole request reached the provider, which may bill it from now on:
 * a timeout or a cancel is charged at least its input, and so is a worker
 * death (the master charges what the reservation records). */
static void
mark_sent(struct kv_conn *c)
{
	c->req_sent = 1;
	if (c->resv >= 0 && c->api != KV_API_OTHER)
		kv_ledger_resv_sent(c->w->slot, c->resv, sent_estimate_nusd(c));
	if (c->api != KV_API_OTHER)
		conn_traffic_sent(c);
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
		mark_sent(c);
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
		if ((c->ubuf = malloc(KV_UBUF_SIZE)) == NULL)
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

static enum step
cut(struct kv_conn *c)
{
	c->cut = 1;
	conn_close(c);
	return STEP_CLOSED;
}

static enum step
wait_client(struct kv_conn *c)
{
	if (c->upos >= c->ulen) {
		/* Nothing of the read is pending (it went to obuf, or out):
		 * a stream held up by a slow client keeps only its output. */
		free(c->ubuf);
		c->ubuf = NULL;
		c->ulen = c->upos = 0;
	}
	c->read_big = 0;
	kv_stream_idle(&c->uc->s);
	conn_watch_upstream(c, 0);
	conn_watch_client(c, EPOLLOUT | EPOLLRDHUP);
	conn_set_deadline(c, 0);
	return STEP_WAIT;
}

static enum step
wait_upstream(struct kv_conn *c, uint32_t ev)
{
	conn_quiet_client(c);
	conn_watch_upstream(c, ev);
	conn_set_deadline(c, 1);
	return STEP_WAIT;
}

/* A stream waiting for its next token holds no buffer: memory follows the
 * streams that are moving bytes right now, not the streams that are open. */
static void
idle_buffers(struct kv_conn *c)
{
	if (c->uc != NULL)
		kv_stream_idle(&c->uc->s);	/* OpenSSL's record buffers too */
	free(c->ubuf);
	c->ubuf = NULL;
	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	if (c->elen == 0) {
		free(c->ebuf);
		c->ebuf = NULL;
	}
}

/* Account for n bytes the client took from obuf, then from ubuf. */
static void
sent(struct kv_conn *c, size_t n)
{
	size_t o = c->olen - c->opos < n ? c->olen - c->opos : n;

	c->opos += o;
	c->upos += n - o;
	c->bytes_out += (uint64_t)n;
	c->sent_any = 1;
}

/* Write what waits for the client: obuf, then (unless we re-frame) the
 * bytes read into ubuf, in one sendmsg, so a JSON response's head and body
 * leave in one segment and one syscall. The client leg is plaintext.
 * 1 all written, 0 would block, -1 error. */
static int
flush_client(struct kv_conn *c)
{
	struct iovec iov[2];
	struct msghdr m = { .msg_iov = iov };
	ssize_t n;

	if (c->client_gone) {
		/* nobody to send to: the bytes were scanned, that is all */
		c->upos = c->ulen;
		c->olen = c->opos = 0;
		return 1;
	}
	for (;;) {
		m.msg_iovlen = 0;
		if (c->opos < c->olen)
			iov[m.msg_iovlen++] = (struct iovec){ c->obuf + c->opos, c->olen - c->opos };
		if (!c->reframe && c->upos < c->ulen)
			iov[m.msg_iovlen++] = (struct iovec){ c->ubuf + c->upos, c->ulen - c->upos };
		if (m.msg_iovlen == 0)
			break;
		n = sendmsg(c->cfd, &m, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		sent(c, (size_t)n);
	}
	c->olen = c->opos = 0;
	return 1;
}

static int
splice_eligible(const struct kv_conn *c)
{
	/* Bytes in the pipe leave through it, even when the upstream is done
	 * with this response: read on, and they would wait there forever. */
	if (c->pipe_len > 0)
		return 1;
	return c->w->splice_ok && !c->reframe && !c->scan_on && !kv_stream_tls(&c->uc->s) &&
	    !c->resp_chunked && !c->resp_done && (c->resp_left > 0 || c->resp_close);
}

/* Zero-copy upstream → pipe → client for bytes nobody needs to see. */
static enum step
relay_splice(struct kv_conn *c)
{
	size_t want;
	ssize_t n;

	if (c->pipefd[0] == -1 && pipe2(c->pipefd, O_NONBLOCK | O_CLOEXEC) == -1) {
		c->pipefd[0] = c->pipefd[1] = -1;
		c->w->splice_ok = 0;
		return STEP_CONT;
	}
	for (;;) {
		if (c->pipe_len > 0) {
			n = splice(c->pipefd[0], NULL, c->cfd, NULL, c->pipe_len,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				c->pipe_len -= (size_t)n;
				c->bytes_out += (uint64_t)n;
				c->sent_any = 1;
				continue;
			}
			if (n == -1 && errno == EAGAIN)
				return wait_client(c);
			return cut(c);
		}
		if (c->resp_done)
			return STEP_CONT;
		want = 65536;
		if (!c->resp_close && c->resp_left < (int64_t)want)
			want = (size_t)c->resp_left;
		n = splice(c->uc->s.fd, NULL, c->pipefd[1], NULL, want,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n > 0) {
			c->pipe_len += (size_t)n;
			if (!c->resp_close) {
				c->resp_left -= n;
				c->resp_done = c->resp_left == 0;
			}
			conn_set_deadline(c, 1);
			continue;
		}
		if (n == 0) {
			if (!c->resp_close)
				return cut(c);
			c->resp_done = 1;
			c->up_keepalive = 0;
			continue;
		}
		/* The pipe is empty here, so EAGAIN means the socket is. */
		if (errno == EAGAIN)
			return wait_upstream(c, EPOLLIN);
		if (errno == EINVAL || errno == ENOSYS) {
			c->w->splice_ok = 0;
			return STEP_CONT;
		}
		return cut(c);
	}
}

/* An empty ubuf sized for the next read: 64 KB while the upstream fills
 * what we read and the client takes it all (a quarter of the reads and
 * writes of 16 KB: the benchmark's 256 full-speed streams took 1.7 CPU
 * seconds instead of 2.55), else 16 KB: a paced stream's read is one event,
 * and a stream held up by its client keeps little. Returns the size, or -1. */
static ssize_t
read_buffer(struct kv_conn *c)
{
	size_t want = c->read_big ? KV_UBUF_FAST : KV_UBUF_SIZE;

	if (c->ubuf != NULL && c->ucap != want) {
		free(c->ubuf);
		c->ubuf = NULL;
	}
	if (c->ubuf == NULL) {
		if ((c->ubuf = malloc(want)) == NULL)
			return -1;
		c->ucap = want;
	}
	return (ssize_t)want;
}

/* A stream drained for its usage took N more bytes: 1 when that passes
 * drain_max or the drain deadline (then it is cut and charged as one). */
static int
drain_spent(struct kv_conn *c, size_t n)
{
	if (n > c->drain_left || c->w->now_ms >= c->drain_until_ms)
		return 1;
	c->drain_left -= n;
	return 0;
}

enum step
relay_body(struct kv_conn *c)
{
	ssize_t n;
	int i, r;

	for (i = 0;; i++) {
		if ((r = flush_client(c)) == -1 && relay_client_left(c))
			r = flush_client(c);
		if (r != 1)
			return r == 0 ? wait_client(c) : cut(c);
		if (c->resp_done && c->pipe_len == 0) {
			relay_finish(c);
			if (!c->client_keep) {
				conn_close(c);
				return STEP_CLOSED;
			}
			return conn_next_request(c);
		}
		if (i == RELAY_READS_PER_TURN) {
			/* Everything read went out: a stream waiting for its next
			 * turn holds no buffer (256 streams at full speed held
			 * 34 KB each here). */
			idle_buffers(c);
			conn_ready(c);	/* TLS may hold decrypted bytes epoll cannot see */
			return STEP_WAIT;
		}
		if (splice_eligible(c))
			return relay_splice(c);
		c->ulen = c->upos = 0;
		if ((n = read_buffer(c)) == -1)
			return cut(c);
		n = kv_stream_read(&c->uc->s, c->ubuf, (size_t)n);
		if (n == KV_IO_AGAIN) {
			idle_buffers(c);
			return wait_upstream(c, (uint32_t)c->uc->s.want);
		}
		if (n == 0 && c->resp_close) {
			c->resp_done = 1;
			if (consume(c, "", 0) == -1)
				return cut(c);
			continue;
		}
		if (n <= 0)
			return cut(c);	/* the upstream broke off: the client must see it */
		c->read_big = (size_t)n == c->ucap;	/* wait_client resets it */
		if (c->drain_until_ms > 0 && drain_spent(c, (size_t)n))
			return cut(c);
		conn_set_deadline(c, 1);
		/* Re-framed output is the read plus a chunk line per event: make
		 * room at once, not one realloc per event (a ladder of freed sizes
		 * that fragments the heap under many streams). */
		if (c->reframe && conn_obuf_reserve(c, (size_t)n + (size_t)n / 16 + 64) == -1)
			return cut(c);
		if ((n = consume(c, c->ubuf, (size_t)n)) == -1)
			return cut(c);
		c->ulen = c->reframe ? 0 : (size_t)n;
	}
}

/* The counts a request is charged for (SPEC "Money", README "How cuts are
 * charged"): the provider's usage when it is final, even when the client
 * left after it; for a cut stream the exact opening figures it gave (input
 * and cache fields) plus the output relayed so far (the stream's own
 * cumulative count when larger); for a request the provider got whole but
 * never answered (timeout, cancel, broken connection) the input estimate.
 * Anything but usage read whole is marked estimated. Returns 0 when
 * nothing is charged. */
static int
charge_usage(struct kv_conn *c, struct kv_usage *u)
{
	const struct kv_usage *found = c->scan_on ? kv_usage_result(&c->scan) : NULL;
	int64_t out;

	memset(u, 0, sizeof(*u));
	if (c->api == KV_API_OTHER)
		return 0;
	if (c->t_first_ms == 0) {
		/* no response head: ours (504, 502, 499) or nothing; the
		 * provider got it whole and may have generated it all */
		if (!c->req_sent)
			return 0;
		u->input = c->body_bytes / 4;
		u->output = kv_charge_cut_output(c->out_bound, 0);
		u->estimated = 1;
		return 1;
	}
	if (c->req_sent && (c->status == 502 || c->status == 504)) {
		/* The provider's own gateway gave up after the whole request
		 * reached it: the backend may have read it all and generated to
		 * the limit (and billed it) before that. Charged as reserved:
		 * the input estimate and all the output it may have made. */
		u->input = c->body_bytes / 4;
		u->output = c->out_bound;
		u->estimated = 1;
		return 1;
	}
	if (c->status < 200 || c->status >= 300)
		return 0;
	if (found != NULL && found->found && c->scan.final) {
		*u = *found;
		return 1;
	}
	if (found != NULL && found->found)
		*u = *found;	/* exact input and cache fields, output so far */
	else
		u->input = c->body_bytes / 4;
	/* cut before the final usage (client gone, upstream broken off, an
	 * Anthropic error event): hidden tokens may have been billed */
	out = c->scan_on ? kv_usage_output_estimate(&c->scan) : 0;
	if (u->output < out)
		u->output = out;
	u->output = kv_charge_cut_output(c->out_bound, u->output);
	u->found = 0;
	u->estimated = 1;
	return 1;
}

/* What kv_charge_cost marked, in the log (README "What a request is
 * charged"). */
static void
charge_notes(struct kv_conn *c, const char *model, int flags, const struct kv_price *p)
{
	char esc[512], asked[512];

	kv_log_escape(model, (size_t)-1, esc, sizeof(esc));
	if (flags & KV_CHARGE_NO_PRICE)
		kv_log_warnx("KV0440", "no price for model '%s' and no [price default]: charged 0",
		    esc);
	if (flags & KV_CHARGE_OVERFLOW)
		kv_log_warnx("KV0441", "cost overflow for key %s model %s", c->keyid, esc);
	if (flags & KV_CHARGE_RESP_UNPRICED) {
		c->unpriced_model = 1;
		kv_log_warnx("KV0445", "key %s: the response's model '%s' (asked for '%s') has "
		    "no [price] section: charged the dearer of [price default] and the asked "
		    "model's price", c->keyid, esc,
		    kv_log_escape(c->ri.model, (size_t)-1, asked, sizeof(asked)));
	}
	if ((flags & KV_CHARGE_FEES_UNPRICED) && p != NULL)
		kv_log_warnx("KV0446", "key %s model %s: the response reports server-tool calls "
		    "(web search or fetch, code execution) that [price %s] sets no fee for: "
		    "charged 0 for them", c->keyid, esc, p->model);
}

static int64_t
charge(struct kv_conn *c, struct kv_usage *u, const char **model)
{
	const struct kv_price *p;
	int64_t cost;
	int flags;

	*model = c->scan_on && c->scan.model[0] ? c->scan.model : c->ri.model;
	if (!charge_usage(c, u))
		return 0;
	kv_charge_implied_calls(c->api, *model, u);
	cost = kv_charge_cost(c->w->cf, c->ri.model, *model, u, &flags, &p);
	if (flags != 0)
		charge_notes(c, *model, flags, p);
	return cost;
}

static void
count(struct kv_conn *c, const struct kv_usage *u, int64_t cost)
{
	struct kv_ledger_header *h = c->w->ledger->hdr;
	struct kv_counters *k = &h->counters;

	atomic_fetch_add(&k->requests_total, 1);
	if (c->status >= 200 && c->status < 300)
		atomic_fetch_add(&k->responses_2xx_total, 1);
	else if (c->status >= 400 && c->status < 500)
		atomic_fetch_add(&k->responses_4xx_total, 1);
	else if (c->status >= 500)
		atomic_fetch_add(&k->responses_5xx_total, 1);
	atomic_fetch_add(&k->received_bytes_total, c->bytes_in);
	atomic_fetch_add(&k->sent_bytes_total, c->bytes_out);
	atomic_fetch_add(&k->input_tokens_total, (uint64_t)u->input);
	atomic_fetch_add(&k->output_tokens_total, (uint64_t)u->output);
	atomic_fetch_add(&k->cached_input_tokens_total, (uint64_t)u->cached_input);
	atomic_fetch_add(&k->cost_nusd_total, (uint64_t)cost);
	atomic_fetch_add(&k->estimated_requests_total, (uint64_t)u->estimated);
	if (c->free_ep && c->t_first_ms > 0)
		atomic_fetch_add(&k->free_requests_total, 1);
	atomic_fetch_add(&c->w->slot->requests, 1);
	if (c->t_first_ms > 0)
		kv_histogram_observe(&h->ttfb, (uint64_t)(c->t_first_ms - c->t_start_ms) * 1000);
	kv_histogram_observe(&h->duration, (uint64_t)(c->w->now_ms - c->t_start_ms) * 1000);
}

static int64_t
wall_ms(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts) == -1)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One line in the request log ([server] request_log). */
static void
log_request(struct kv_conn *c, const struct kv_usage *u, const char *model,
    int64_t cost)
{
	char label[KV_LABEL_MAX] = "", path[600];
	int64_t dur = c->w->now_ms - c->t_start_ms;
	struct kv_reqlog_rec r;

	if (!kv_reqlog_enabled())
		return;
	if (c->acct != NULL) {
		memcpy(label, c->acct->label, sizeof(label));
		label[sizeof(label) - 1] = '\0';
	}
	/* The query string may carry secrets (?key=): the path only. */
	snprintf(path, sizeof(path), "%.*s", c->target ? (int)strcspn(c->target, "?") : 0,
	    c->target ? c->target : "");
	memset(&r, 0, sizeof(r));
	r.time_ms = wall_ms() - dur;
	r.request_id = conn_request_id(c);
	r.key_id = c->keyid;
	r.label = label;
	r.method = strcmp(c->method, "-") == 0 ? "" : c->method;
	r.path = path;
	r.model = model;
	r.upstream = c->upstream_name;
	r.status = c->status;
	r.input_tokens = u->input;
	r.output_tokens = u->output;
	r.cached_input_tokens = u->cached_input;
	r.cost_nusd = cost;
	r.estimated = u->estimated;
	r.cut = c->cut;
	r.price_default = c->unpriced_model;
	r.ttfb_ms = c->t_first_ms ? c->t_first_ms - c->t_start_ms : -1;
	r.duration_ms = dur;
	r.bytes_in = c->bytes_in;
	r.bytes_out = c->bytes_out;
	kv_reqlog_write(&r);
}

/* The per-model row a request counts in: only models with a [price]
 * section of their own get one; every other name (made-up ones included)
 * adds to the single "other" row, so strangers cannot fill the table. */
static const char *
model_row(const struct kv_conn *c, const char *model)
{
	const struct kv_price *p;

	if (model == NULL || model[0] == '\0')
		return model;
	p = kv_config_price(c->w->cf, model);
	if (p == NULL || p == &c->w->cf->default_price)	/* priced as asked? (charge) */
		p = c->ri.model[0] != '\0' ? kv_config_price(c->w->cf, c->ri.model) : NULL;
	return p != NULL && p != &c->w->cf->default_price ? model : "other";
}

/* "key=K METHOD PATH model=M upstream=U status=N in=N out=N ttfb_ms=N ms=N
 * tokens=N/N cost=$USD[ estimated][ cut]", built without vsnprintf: the
 * printf form cost 8 k instructions a request (callgrind). */
static void
access_line(const struct kv_conn *c, const struct kv_usage *u, const char *mesc,
    const char *tesc, const char *oesc, const char *usd)
{
	char buf[2048];
	struct kv_sb b = { buf, 0, sizeof(buf) };

	kv_sb_str(&b, "key=");
	kv_sb_str(&b, c->keyid[0] ? c->keyid : "-");
	kv_sb_put(&b, " ", 1);
	kv_sb_str(&b, mesc);
	kv_sb_put(&b, " ", 1);
	kv_sb_str(&b, tesc);
	kv_sb_str(&b, " model=");
	kv_sb_str(&b, oesc);
	kv_sb_str(&b, " upstream=");
	kv_sb_str(&b, c->upstream_name ? c->upstream_name : "-");
	kv_sb_str(&b, " status=");
	kv_sb_i64(&b, c->status);
	kv_sb_str(&b, " in=");
	kv_sb_u64(&b, c->bytes_in);
	kv_sb_str(&b, " out=");
	kv_sb_u64(&b, c->bytes_out);
	kv_sb_str(&b, " ttfb_ms=");
	kv_sb_i64(&b, c->t_first_ms ? c->t_first_ms - c->t_start_ms : -1);
	kv_sb_str(&b, " ms=");
	kv_sb_i64(&b, c->w->now_ms - c->t_start_ms);
	kv_sb_str(&b, " tokens=");
	kv_sb_i64(&b, u->input);
	kv_sb_put(&b, "/", 1);
	kv_sb_i64(&b, u->output);
	kv_sb_str(&b, " cost=$");
	kv_sb_str(&b, usd);
	if (u->estimated)
		kv_sb_str(&b, " estimated");
	if (c->cut)
		kv_sb_str(&b, " cut");
	kv_log_access_text(buf, b.len);
}

void
relay_finish(struct kv_conn *c)
{
	struct kv_usage u;
	const char *model;
	char usd[32], mesc[4 * KV_HTTP_MAX_METHOD + 4], tesc[1024], oesc[512];
	int64_t cost;

	if (c->logged)
		return;
	c->logged = 1;
	cost = charge(c, &u, &model);
	conn_traffic_settle(c, &u);
	if (c->resv >= 0) {
		kv_ledger_settle(c->w->ledger, c->w->slot, c->resv, cost,
		    u.input || u.output ? &u : NULL, model_row(c, model));
		c->resv = -1;
	}
	/* A key the provider accepted is kept even when it cost nothing; one
	 * never charged nor answered 2xx may be reclaimed (shm/repair.h). */
	if (c->acct != NULL && c->status >= 200 && c->status < 300)
		atomic_fetch_or(&c->acct->aflags, KV_AF_KEPT);
	/* Per key: how many charges were estimates, how many relayed free. */
	if (c->acct != NULL && u.estimated)
		atomic_fetch_add(&c->acct->estimated_requests, 1);
	if (c->acct != NULL && c->free_ep && c->t_first_ms > 0)
		atomic_fetch_add(&c->acct->free_requests, 1);
	if (c->counted_stream) {
		atomic_fetch_sub(&c->w->slot->active_streams, 1);
		c->counted_stream = 0;
	}
	count(c, &u, cost);
	kv_format_usd(cost, usd, sizeof(usd));
	/* Method, path and model come from the client: escaped, so that no
	 * request can forge a field, a line or a terminal escape. */
	kv_log_escape(c->method[0] ? c->method : "-", (size_t)-1, mesc, sizeof(mesc));
	kv_log_escape(c->target ? c->target : "-", c->target ? strcspn(c->target, "?") : 1,
	    tesc, sizeof(tesc));
	kv_log_escape(model[0] ? model : "-", (size_t)-1, oesc, sizeof(oesc));
	access_line(c, &u, mesc, tesc, oesc, usd);
	log_request(c, &u, model, cost);
}

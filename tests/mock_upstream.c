/* mock_upstream: a fake OpenAI and Anthropic for the integration tests.
 *
 * It speaks both providers' wire formats (JSON with Content-Length, SSE over
 * chunked transfer encoding, keep-alive) and can be told through request
 * headers to misbehave, so tests can drive the gateway through every path a
 * real provider takes it down. One thread per connection keeps the code
 * straight-line; the mock is never what is being measured.
 *
 * Usage: mock_upstream -p PORT [-t CERT KEY] [-l LOGFILE] [-P PORTFILE]
 *        mock_upstream --free-port      print a currently free TCP port
 *        mock_upstream --hold-ports N FILE   bind N ports and never listen
 * --hold-ports writes the N ports to FILE, a line each, and sleeps until a
 * signal: a connection to one is refused, and no other process can take it
 * (no SO_REUSEADDR), so a test's "nothing listens here" target stays so.
 * Listens on 127.0.0.1 only; -p 0 takes an ephemeral port and writes it to
 * PORTFILE; -t serves TLS with CERT (a chain file) and KEY; -2 caps it at
 * TLS 1.2 (a server that never speaks TLS 1.3).
 *
 * Endpoints (errors in the provider's shape for the path):
 *   POST /v1/chat/completions, /v1/completions   JSON, or SSE with "stream":true;
 *        usage chunk (choices []) only with stream_options.include_usage,
 *        then every chunk carries "usage":null, as OpenAI does; data: [DONE]
 *   POST /v1/embeddings                          float or base64 vector
 *   POST /v1/responses                           JSON, or SSE ending in response.completed
 *   POST /v1/messages                            Anthropic JSON or SSE (max_tokens required)
 *   GET  /v1/models, /v1/models/{id}; POST /v1/messages/count_tokens
 *   POST /v1/responses with "background": true   queued, "usage": null; then
 *        GET /v1/responses/{id} completed with the usage; DELETE deletes
 *   GET  /v1/chat/completions (stored completions), /v1/batches[/{id}],
 *        POST /v1/batches, /v1/messages/batches, /v1/images/generations
 *   POST /model/{id}/invoke                      Bedrock InvokeModel: Anthropic JSON,
 *        the model the path's id as sent
 *   GET  /inference-profiles, /foundation-models[/{id}]   Bedrock's control plane
 *   POST /sink           reads the body streaming: {"bytes":N,"sha256":"hex"}
 *   GET  /blob?bytes=N&seed=S[&chunked=1|&close=1]   N deterministic bytes,
 *        header x-body-sha256 holds their digest
 *   POST /model/{id}/invoke-with-response-stream, /model/{id}/converse-stream
 *        Bedrock's event stream: the bytes of the file x-mock-eventstream
 *        names (tests/data/bedrock_*.bin), chunked in pieces of 97 bytes, as
 *        application/vnd.amazon.eventstream; x-mock-eventstream-cut N ends
 *        the body (cleanly) after N of them; x-mock-delay-ms N after each piece
 *   POST /v1beta/models/{m}:generateContent, :streamGenerateContent (alt=sse,
 *        or a JSON array), :countTokens, :embedContent, :batchEmbedContents
 *        (and under /v1/): the Gemini API (tests/mock_gemini.c); the auth
 *        logged is x-goog-api-key's when neither of the others is sent
 *   GET  /health         under -H FILE: the status FILE holds (see -H below)
 *   GET  /mock/stats     {"open_connections","requests","aborted_streams",
 *        "last_abort_ms","tls_full","tls_resumed"}: an abort is a peer
 *        leaving while a response (or a stall before one) is in progress;
 *        last_abort_ms is epoch ms; tls_* count TLS handshakes by kind;
 *        "tls13" the handshakes that chose TLS 1.3, "key_updates_sent" the
 *        KeyUpdates x-mock-key-update sent, "key_updates_seen" those the
 *        peer sent us, "tickets_sent" x-mock-tickets' extra tickets
 *
 * Usage numbers: input = request body bytes / 4; output = x-mock-tokens
 * (default 5), cut to max_tokens / max_completion_tokens / max_output_tokens
 * (finish_reason "length", stop_reason "max_tokens"; x-mock-ignore-max-tokens 1
 * generates past it, as a lenient server might), times max(n, best_of) in an
 * OpenAI chat or completions usage (the text shows one choice). Models: gpt-4o-mini
 * answers as gpt-4o-mini-2024-07-18, claude-sonnet-4 as
 * claude-sonnet-4-20250514, any other name as sent.
 *
 * Request headers that steer it:
 *   x-mock-tokens N, x-mock-token-bytes N (each token "tok<i>" padded with x
 *   to N bytes, default 5), x-mock-delay-ms N (after each SSE event),
 *   x-mock-first-delay-ms N (before the head), x-mock-cached N (cached /
 *   cache-read tokens), x-mock-cache-write N, x-mock-two-deltas 1 (two
 *   cumulative message_delta events), x-mock-status 4xx|5xx (that error),
 *   x-mock-service-tier NAME ("service_tier" of chat completions, JSON and
 *   stream chunks, and of a Responses object; without it an OpenAI body's
 *   "service_tier" of "flex" or "priority" is answered as run on that tier,
 *   as OpenAI does), x-mock-cache-1h N (Anthropic usage.cache_creation: N of
 *   the cache writes are 1-hour ones),
 *   x-mock-hold-ms N (pause before a stream's last event: [DONE],
 *   message_stop, response.completed),
 *   x-mock-key-update N (TLS 1.3: a KeyUpdate after every Nth SSE event,
 *   update_requested on every other one), x-mock-tickets N (TLS 1.3: a
 *   NewSessionTicket after every Nth SSE event),
 *   x-mock-fail reset|garbage|hang|close (RST after half the events / non-HTTP
 *   bytes / never answer / close unanswered), x-mock-silent-close 1 (answer
 *   as keep-alive, then close the connection anyway).
 * Billing rules of issue 20 (each response's bill goes to LOGFILE.bills):
 *   x-mock-reasoning N   N hidden reasoning tokens, billed before the first
 *                        visible chunk (in output_tokens / completion_tokens
 *                        and their reasoning_tokens detail)
 *   x-mock-web-search N  N web searches: Anthropic usage.server_tool_use.
 *                        web_search_requests (JSON; a stream's final
 *                        message_delta), Responses web_search_call output items
 *                        (JSON; stream output_item.added/done); a chat model
 *                        named *-search-preview bills one search per request
 *   x-mock-web-fetch N   Anthropic server_tool_use.web_fetch_requests
 *   x-mock-audio-in N    OpenAI prompt_tokens_details.audio_tokens (N of the
 *                        prompt tokens are audio); -out N likewise among
 *                        completion_tokens
 *   x-mock-model NAME    the response's "model" (an Azure deployment answers
 *                        with its own model, whatever the body says)
 *   x-mock-error-after N an Anthropic stream sends N text deltas, then
 *                        "event: error" (overloaded_error) and ends
 * Billing rules of issue 33:
 *   a body's "speed": "fast" / "inference_geo": "us" (Anthropic fast mode,
 *                        US-only inference) bill at their multipliers and
 *                        are reported as usage.speed / usage.inference_geo
 *   x-mock-region 1      the project processes in a data-residency region
 *                        (OpenAI regional processing uplift)
 *   x-mock-cache-write N on OpenAI: prompt_tokens_details.cache_write_tokens
 *   x-mock-audio-recall N  an assistant message's {"audio":{"id":...}} reads
 *                        the earlier spoken answer again: N audio input
 *                        tokens (default 1000)
 * A bill line: "bill model=M input=N cached=N cache_write=N output=N
 * reasoning=N web_search=N web_fetch=N audio_in=N audio_out=N speed=S geo=G
 * region=0|1 nusd=N tier=NAME" where tier is the service tier the response
 * says it ran on ("default" when it names none), output counts the reasoning
 * and the text the provider generated (for a stream its client left: the
 * deltas sent plus the one in flight), and nusd is the bill in nano-dollars
 * by the published prices (tests/mock_bill.c; 0 for a model it lacks).
 *
 * -l LOGFILE gets one line per request:
 *   METHOD TARGET host=H auth=ID include_usage=0|1 stream_options=N (members)
 *   body_bytes=N model=M max_tokens=N n=N so_keys=K1,K2|- headers=Name1,Name2,...
 * where ID is the first 12 hex digits of SHA-256 of the Bearer token or
 * x-api-key value (the gateway's key id for the same key), "-" without one.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "tests/mock_bill.h"
#include "tests/mock_gemini.h"

#define HEAD_MAX	65536		/* request head limit, as the gateway's */
#define SCAN_MAX	(8 << 20)	/* body prefix kept for the JSON scan (pages
					   are touched only as a body fills them) */
#define MAX_HEADERS	100
#define WBUF_SIZE	16384
#define PIECE_MAX	8192		/* JSON around the generated text */
#define TOKEN_BYTES_MAX	(1 << 20)
#define IO_TIMEOUT_S	300		/* no thread outlives a silent peer by more */
#define HANG_MAX_MS	600000

/* Whole-process behaviour (upstream targets of one upstream, issue 13):
 * -R answers each request, closes its side with the answer and then resets
 * the connection (a keep-alive client finds the pooled connection dead before
 * its next request); -S STATUS
 * and -D MS are the defaults of x-mock-status and x-mock-first-delay-ms;
 * -H FILE answers GET /health with the status number FILE holds, read again
 * for each request (200 while FILE is missing), whatever -S says, so a test
 * flips a target's health check by writing the file. -B: an error answer
 * (-S or x-mock-status) comes after the request was processed and billed,
 * as a provider whose own gateway times out (504) does: the log gets a
 * line "BILLED input=N output=M" (the usage a 200 would have reported)
 * before the error goes out. */
static int mock_reset_all, mock_bill_errors, mock_tls12;
static long mock_def_status, mock_def_first_delay;
static const char *mock_health_file;

struct mock {
	SSL_CTX		*tls;
	FILE		*log;
	FILE		*bills;		/* LOGFILE.bills: what each response billed */
	pthread_mutex_t	 log_lock;
	atomic_long	 open_conns;
	atomic_long	 requests;
	atomic_long	 aborted;
	atomic_llong	 last_abort_ms;
	atomic_long	 tls_full;
	atomic_long	 tls_resumed;
	atomic_long	 tls13;
	atomic_long	 key_updates_sent;
	atomic_long	 key_updates_seen;
	atomic_long	 tickets_sent;
};

struct header {
	char	*name;
	char	*value;
};

enum fail { FAIL_NONE, FAIL_RESET, FAIL_GARBAGE, FAIL_HANG, FAIL_CLOSE };

/* What the request asks of the mock: scanned from the body and the x-mock-* headers. */
struct req {
	char		 method[16];
	char		 target[4096];
	char		 path[4096];
	const char	*query;
	int		 http_minor;
	int		 keepalive;
	char		 head[HEAD_MAX + 1];
	struct header	 h[MAX_HEADERS];
	int		 nh;

	long long	 body_len;
	char		*body;		/* first SCAN_MAX bytes, NUL-terminated */
	size_t		 body_kept;
	unsigned char	 sha[32];

	char		 model[256];
	int		 has_model;
	int		 stream;
	int		 has_stream_options;
	int		 include_usage;
	long long	 max_tokens;	/* -1: none given */
	long		 n;		/* max(n, best_of, 1): choices generated */
	char		 so_keys[128];	/* member names of the last stream_options */
	int		 b64;		/* embeddings encoding_format=base64 */
	int		 ignore_max;	/* x-mock-ignore-max-tokens: generate past the limit */
	int		 background;	/* Responses "background": true */
	char		 tier[32];	/* x-mock-service-tier, "" unset */
	char		 body_tier[32];	/* the body's "service_tier", "" none */
	long		 cache_1h;	/* x-mock-cache-1h: 1-hour writes among cache_write */
	long		 hold_ms;	/* x-mock-hold-ms: pause before a stream's last event */
	long		 reasoning;	/* x-mock-reasoning: hidden tokens billed first */
	long		 audio_in, audio_out;	/* x-mock-audio-in/-out: among the tokens */
	long		 web_search;	/* x-mock-web-search: searches billed */
	long		 web_fetch;	/* x-mock-web-fetch */
	int		 fast;		/* the body's "speed": "fast" (Anthropic) */
	int		 geo_us;	/* the body's "inference_geo": "us" (Anthropic) */
	int		 region;	/* x-mock-region: the project processes in a region */
	long		 recall;	/* x-mock-audio-recall: audio tokens an audio.id recalls */
	char		 resp_model[128];	/* x-mock-model: the response's model */
	long		 error_after;	/* x-mock-error-after: deltas before event: error */
	int		 billable;	/* a provider response began: it is billed */
	int		 errored;	/* the stream ended in event: error */

	long		 tokens;
	size_t		 token_bytes;
	long		 delay_ms;
	long		 key_update_every;	/* x-mock-key-update */
	long		 ticket_every;		/* x-mock-tickets */
	long		 first_delay_ms;
	long		 cached;
	long		 cache_write;
	int		 two_deltas;
	int		 status;
	enum fail	 fail;
};

struct conn {
	struct mock	*m;
	int		 fd;
	SSL		*ssl;
	char		 rbuf[HEAD_MAX];
	size_t		 rpos, rlen;
	char		 wbuf[WBUF_SIZE];
	size_t		 wlen;
	int		 in_response;	/* a peer leaving now is an abort */
	long		 events;	/* SSE events sent in this response */
	long		 text_sent;	/* text deltas sent in this response */
	long		 reset_after;	/* FAIL_RESET: events before the RST */
	char		 tok[64];
	char		*tokbuf;	/* one token's text when it is long */
	struct req	 rq;
};

/* The generated completion text: tokens [from, to), each `tb` bytes. */
struct text {
	long	from, to;
	size_t	tb;
};

/* A small string builder for the JSON around the generated text. */
struct sb {
	char	buf[PIECE_MAX];
	size_t	len;
	int	overflow;
};

static const struct text no_text = { 0, 0, 0 };

static void sb_printf(struct sb *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
sb_printf(struct sb *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(s->buf + s->len, sizeof(s->buf) - s->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(s->buf) - s->len) {
		s->overflow = 1;
		return;
	}
	s->len += (size_t)n;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
sha_hex(const unsigned char *sha, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[sha[i] >> 4];
		out[2 * i + 1] = hex[sha[i] & 15];
	}
	out[2 * n] = '\0';
}

/* ---- socket I/O, plain or TLS ------------------------------------------ */

static ssize_t
conn_recv(struct conn *c, void *buf, size_t n)
{
	ssize_t r;
	int rc;

	if (c->ssl == NULL) {
		do
			r = read(c->fd, buf, n);
		while (r == -1 && errno == EINTR);
		return r;
	}
	rc = SSL_read(c->ssl, buf, (int)(n > INT_MAX ? INT_MAX : n));
	if (rc > 0)
		return rc;
	return SSL_get_error(c->ssl, rc) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}

static int
conn_send_raw(struct conn *c, const char *p, size_t n)
{
	ssize_t w;
	int rc;

	while (n > 0) {
		if (c->ssl != NULL) {
			rc = SSL_write(c->ssl, p, (int)(n > INT_MAX ? INT_MAX : n));
			if (rc <= 0)
				return -1;
			w = rc;
		} else {
			w = send(c->fd, p, n, MSG_NOSIGNAL);
			if (w == -1 && errno == EINTR)
				continue;
			if (w == -1)
				return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The peer went away while we owed it bytes: what the abort test watches. */
static void
note_abort(struct conn *c)
{
	if (!c->in_response)
		return;
	c->in_response = 0;
	atomic_fetch_add(&c->m->aborted, 1);
	atomic_store(&c->m->last_abort_ms, now_ms());
}

static int
out_flush(struct conn *c)
{
	if (c->wlen == 0)
		return 0;
	if (conn_send_raw(c, c->wbuf, c->wlen) == -1) {
		note_abort(c);
		return -1;
	}
	c->wlen = 0;
	return 0;
}

static int
out_put(struct conn *c, const char *p, size_t n)
{
	size_t k;

	while (n > 0) {
		if (c->wlen == sizeof(c->wbuf) && out_flush(c) == -1)
			return -1;
		k = sizeof(c->wbuf) - c->wlen;
		if (k > n)
			k = n;
		memcpy(c->wbuf + c->wlen, p, k);
		c->wlen += k;
		p += k;
		n -= k;
	}
	return 0;
}

static int
out_str(struct conn *c, const char *s)
{
	return out_put(c, s, strlen(s));
}

/* Wait MS milliseconds unless the peer closes first (-1 then). Only
 * POLLRDHUP is asked for, so pipelined bytes from the peer do not wake us. */
static int
wait_peer(struct conn *c, long ms)
{
	long long deadline = now_ms() + ms, left;
	struct pollfd pfd;
	int n;

	while ((left = deadline - now_ms()) > 0) {
		pfd.fd = c->fd;
		pfd.events = POLLRDHUP;
		pfd.revents = 0;
		n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n == -1 && errno != EINTR)
			return -1;
		if (n > 0) {
			note_abort(c);
			return -1;
		}
	}
	return 0;
}

/* An abortive close: SO_LINGER 0 makes close() send RST. */
static void
conn_reset(struct conn *c)
{
	struct linger lg = { 1, 0 };

	if (setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == -1)
		perror("mock_upstream: SO_LINGER");
}

/* ---- generated text ----------------------------------------------------- */

/* Token i is "tok<i> " stretched with 'x' (or cut) to exactly tb bytes:
 * only letters, digits and spaces, so it needs no JSON escaping. */
static const char *
token(struct conn *c, long i, size_t tb)
{
	char *p = tb <= sizeof(c->tok) ? c->tok : c->tokbuf;
	char base[32];
	int n;

	n = snprintf(base, sizeof(base), "tok%ld ", i);
	if ((size_t)n >= tb) {
		memcpy(p, base, tb);
		return p;
	}
	memcpy(p, base, (size_t)n - 1);
	memset(p + n - 1, 'x', tb - (size_t)n);
	p[tb - 1] = ' ';
	return p;
}

static size_t
text_len(const struct text *t)
{
	return t->to > t->from ? (size_t)(t->to - t->from) * t->tb : 0;
}

static int
put_text(struct conn *c, const struct text *t)
{
	long i;

	for (i = t->from; i < t->to; i++)
		if (out_put(c, token(c, i + 1, t->tb), t->tb) == -1)
			return -1;
	return 0;
}

static struct text
all_text(const struct req *rq)
{
	struct text t = { 0, rq->tokens, rq->token_bytes };

	return t;
}

/* ---- request reading ---------------------------------------------------- */

static int
fill(struct conn *c)
{
	ssize_t r;

	if (c->rpos > 0) {
		memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
		c->rlen -= c->rpos;
		c->rpos = 0;
	}
	if (c->rlen == sizeof(c->rbuf))
		return -1;
	r = conn_recv(c, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
	if (r <= 0)
		return -1;
	c->rlen += (size_t)r;
	return 0;
}

static const char *
hdr(const struct req *rq, const char *name)
{
	int i;

	for (i = 0; i < rq->nh; i++)
		if (strcasecmp(rq->h[i].name, name) == 0)
			return rq->h[i].value;
	return NULL;
}

static long
hdr_long(const struct req *rq, const char *name, long dflt, long max)
{
	const char *v = hdr(rq, name);
	char *end;
	long n;

	if (v == NULL)
		return dflt;
	errno = 0;
	n = strtol(v, &end, 10);
	if (errno != 0 || end == v || n < 0)
		return dflt;
	return n > max ? max : n;
}

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

static int
parse_request_line(struct req *rq, char *line)
{
	char *sp1, *sp2, *q;

	sp1 = strchr(line, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (sp2 == NULL || (size_t)(sp1 - line) >= sizeof(rq->method) ||
	    (size_t)(sp2 - sp1 - 1) >= sizeof(rq->target) ||
	    strncmp(sp2 + 1, "HTTP/1.", 7) != 0)
		return -1;
	memcpy(rq->method, line, (size_t)(sp1 - line));
	rq->method[sp1 - line] = '\0';
	memcpy(rq->target, sp1 + 1, (size_t)(sp2 - sp1 - 1));
	rq->target[sp2 - sp1 - 1] = '\0';
	rq->http_minor = sp2[8] == '1' ? 1 : 0;
	memcpy(rq->path, rq->target, sizeof(rq->path));
	q = strchr(rq->path, '?');
	if (q != NULL)
		*q++ = '\0';
	rq->query = q;
	return 0;
}

/* Split rq->head (NUL-terminated, CRLF lines) into the request line and headers. */
static int
parse_head(struct req *rq)
{
	char *line, *next, *colon;

	line = rq->head;
	next = strstr(line, "\r\n");
	if (next == NULL)
		return -1;
	*next = '\0';
	if (parse_request_line(rq, line) == -1)
		return -1;
	for (line = next + 2; *line != '\0'; line = next + 2) {
		next = strstr(line, "\r\n");
		if (next == NULL || rq->nh == MAX_HEADERS)
			return -1;
		*next = '\0';
		colon = strchr(line, ':');
		if (colon == NULL)
			return -1;
		*colon = '\0';
		rq->h[rq->nh].name = line;
		rq->h[rq->nh].value = trim(colon + 1);
		rq->nh++;
	}
	return 0;
}

/* Read one request head into c->rq. 0 ok, 1 clean EOF, -1 error. */
static int
read_head(struct conn *c)
{
	char *end;
	size_t n;

	for (;;) {
		end = memmem(c->rbuf + c->rpos, c->rlen - c->rpos, "\r\n\r\n", 4);
		if (end != NULL)
			break;
		if (fill(c) == -1)
			return c->rlen == c->rpos ? 1 : -1;
	}
	n = (size_t)(end - (c->rbuf + c->rpos)) + 2;
	memcpy(c->rq.head, c->rbuf + c->rpos, n);
	c->rq.head[n] = '\0';
	c->rpos += n + 2;
	return parse_head(&c->rq);
}

static void
body_take(struct req *rq, EVP_MD_CTX *md, const char *p, size_t n)
{
	size_t k;

	EVP_DigestUpdate(md, p, n);
	rq->body_len += (long long)n;
	k = SCAN_MAX - rq->body_kept;
	if (k > n)
		k = n;
	memcpy(rq->body + rq->body_kept, p, k);
	rq->body_kept += k;
	rq->body[rq->body_kept] = '\0';
}

/* Consume exactly LEN body bytes from the connection. */
static int
read_fixed(struct conn *c, EVP_MD_CTX *md, long long len)
{
	size_t k;

	while (len > 0) {
		if (c->rpos == c->rlen && fill(c) == -1)
			return -1;
		k = c->rlen - c->rpos;
		if ((long long)k > len)
			k = (size_t)len;
		body_take(&c->rq, md, c->rbuf + c->rpos, k);
		c->rpos += k;
		len -= (long long)k;
	}
	return 0;
}

/* One CRLF-terminated line (chunk size or trailer) into buf. */
static int
read_line(struct conn *c, char *buf, size_t size)
{
	char *eol;
	size_t n;

	while ((eol = memmem(c->rbuf + c->rpos, c->rlen - c->rpos, "\r\n", 2)) == NULL)
		if (fill(c) == -1)
			return -1;
	n = (size_t)(eol - (c->rbuf + c->rpos));
	if (n >= size)
		return -1;
	memcpy(buf, c->rbuf + c->rpos, n);
	buf[n] = '\0';
	c->rpos += n + 2;
	return 0;
}

static int
read_chunked(struct conn *c, EVP_MD_CTX *md)
{
	char line[1024], *end;
	unsigned long long size;

	for (;;) {
		if (read_line(c, line, sizeof(line)) == -1)
			return -1;
		errno = 0;
		size = strtoull(line, &end, 16);
		if (end == line || errno != 0 || size > (1ULL << 40))
			return -1;
		if (size == 0)
			break;
		if (read_fixed(c, md, (long long)size) == -1 ||
		    read_line(c, line, sizeof(line)) == -1 || line[0] != '\0')
			return -1;
	}
	do {	/* trailers, up to the empty line */
		if (read_line(c, line, sizeof(line)) == -1)
			return -1;
	} while (line[0] != '\0');
	return 0;
}

static int
read_body(struct conn *c)
{
	struct req *rq = &c->rq;
	const char *te = hdr(rq, "transfer-encoding");
	const char *cl = hdr(rq, "content-length");
	const char *expect = hdr(rq, "expect");
	EVP_MD_CTX *md;
	int rc = 0;

	if (expect != NULL && strcasecmp(expect, "100-continue") == 0 &&
	    conn_send_raw(c, "HTTP/1.1 100 Continue\r\n\r\n", 25) == -1)
		return -1;
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md);
		return -1;
	}
	if (te != NULL && strcasecmp(te, "chunked") == 0)
		rc = read_chunked(c, md);
	else if (cl != NULL)
		rc = read_fixed(c, md, strtoll(cl, NULL, 10));
	if (rc == 0 && EVP_DigestFinal_ex(md, rq->sha, NULL) != 1)
		rc = -1;
	EVP_MD_CTX_free(md);
	return rc;
}

/* ---- a tiny scan of the request JSON's top level ------------------------- */

static const char *
skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	return p;
}

/* Past one JSON value; NULL on malformed or truncated input. */
static const char *
skip_value(const char *p)
{
	int depth = 0;

	p = skip_ws(p);
	do {
		if (*p == '\0')
			return NULL;
		if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (*p == '\0')
					return NULL;
				if (*p == '\\' && *++p == '\0')
					return NULL;
			}
			p++;
		} else if (*p == '{' || *p == '[') {
			depth++, p++;
		} else if (*p == '}' || *p == ']') {
			depth--, p++;
		} else if (depth == 0) {
			while (*p != '\0' && *p != ',' && *p != '}' && *p != ']' &&
			    *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t')
				p++;
		} else {
			p++;
		}
	} while (depth > 0);
	return p;
}

/* Copy a JSON string into out up to its end or first escape: the mock only
 * needs model names, and echoing an escape cut in half would break its JSON. */
static void
copy_string(const char *p, char *out, size_t size)
{
	size_t n = 0;

	if (*p++ != '"')
		return;
	while (*p != '"' && *p != '\\' && *p != '\0' && n + 1 < size)
		out[n++] = *p++;
	out[n] = '\0';
}

static int
is_true(const char *p)
{
	return strncmp(p, "true", 4) == 0;
}

/* Walk an object's members, calling fn(key, keylen, value) for each. */
static void
scan_object(const char *p, struct req *rq,
    void (*fn)(struct req *, const char *, size_t, const char *))
{
	const char *key, *kend;

	p = skip_ws(p);
	if (*p++ != '{')
		return;
	for (;;) {
		p = skip_ws(p);
		if (*p != '"')
			return;
		key = p + 1;
		kend = skip_value(p);
		if (kend == NULL)
			return;
		p = skip_ws(kend);
		if (*p++ != ':')
			return;
		p = skip_ws(p);
		fn(rq, key, (size_t)(kend - 1 - key), p);
		p = skip_value(p);
		if (p == NULL)
			return;
		p = skip_ws(p);
		if (*p++ != ',')
			return;
	}
}

#define KEY_IS(k, n, lit) ((n) == sizeof(lit) - 1 && memcmp((k), (lit), (n)) == 0)

static void
scan_stream_options(struct req *rq, const char *k, size_t n, const char *v)
{
	size_t used = strlen(rq->so_keys);

	if (used + n + 2 < sizeof(rq->so_keys))
		snprintf(rq->so_keys + used, sizeof(rq->so_keys) - used, "%s%.*s",
		    used ? "," : "", (int)n, k);
	if (KEY_IS(k, n, "include_usage"))
		rq->include_usage = is_true(v);
}

static void
scan_top(struct req *rq, const char *k, size_t n, const char *v)
{
	if (KEY_IS(k, n, "model") && *v == '"') {
		copy_string(v, rq->model, sizeof(rq->model));
		rq->has_model = 1;
	} else if (KEY_IS(k, n, "stream")) {
		rq->stream = is_true(v);
	} else if (KEY_IS(k, n, "stream_options")) {
		rq->has_stream_options++;	/* how many: one is what a provider reads */
		rq->so_keys[0] = '\0';
		scan_object(v, rq, scan_stream_options);
	} else if (KEY_IS(k, n, "max_tokens") || KEY_IS(k, n, "max_completion_tokens") ||
	    KEY_IS(k, n, "max_output_tokens")) {
		/* as pydantic reads it: 8192, 8192.0 and 8.192e3 are 8192 */
		if (*v >= '0' && *v <= '9' && !rq->ignore_max)
			rq->max_tokens = (long long)strtod(v, NULL);
	} else if ((KEY_IS(k, n, "n") || KEY_IS(k, n, "best_of")) && *v >= '1' && *v <= '9') {
		if (strtol(v, NULL, 10) > rq->n)
			rq->n = strtol(v, NULL, 10);
	} else if (KEY_IS(k, n, "encoding_format")) {
		rq->b64 = strncmp(v, "\"base64\"", 8) == 0;
	} else if (KEY_IS(k, n, "background")) {
		rq->background = is_true(v);
	} else if (KEY_IS(k, n, "service_tier") && *v == '"') {
		copy_string(v, rq->body_tier, sizeof(rq->body_tier));
	} else if (KEY_IS(k, n, "speed")) {
		rq->fast = strncmp(v, "\"fast\"", 6) == 0;
	} else if (KEY_IS(k, n, "inference_geo")) {
		rq->geo_us = strncmp(v, "\"us\"", 4) == 0;
	}
}

static int is_anthropic(const struct req *rq);

static void
scan_controls(struct req *rq)
{
	const char *fail = hdr(rq, "x-mock-fail");

	rq->max_tokens = -1;
	rq->n = 1;
	rq->so_keys[0] = '\0';
	rq->body_tier[0] = '\0';
	rq->ignore_max = hdr_long(rq, "x-mock-ignore-max-tokens", 0, 1) == 1;
	scan_object(rq->body, rq, scan_top);
	rq->tokens = hdr_long(rq, "x-mock-tokens", 5, 100000000L);
	rq->token_bytes = (size_t)hdr_long(rq, "x-mock-token-bytes", 5, TOKEN_BYTES_MAX);
	if (rq->token_bytes == 0)
		rq->token_bytes = 1;
	rq->delay_ms = hdr_long(rq, "x-mock-delay-ms", 0, 60000);
	rq->key_update_every = hdr_long(rq, "x-mock-key-update", 0, 1000000);
	rq->ticket_every = hdr_long(rq, "x-mock-tickets", 0, 1000000);
	rq->first_delay_ms = hdr_long(rq, "x-mock-first-delay-ms", mock_def_first_delay,
	    HANG_MAX_MS);
	rq->cached = hdr_long(rq, "x-mock-cached", 0, LONG_MAX);
	rq->cache_write = hdr_long(rq, "x-mock-cache-write", 0, LONG_MAX);
	rq->two_deltas = hdr_long(rq, "x-mock-two-deltas", 0, 1) == 1;
	rq->status = (int)hdr_long(rq, "x-mock-status", mock_def_status, 599);
	rq->cache_1h = hdr_long(rq, "x-mock-cache-1h", 0, LONG_MAX);
	rq->hold_ms = hdr_long(rq, "x-mock-hold-ms", 0, HANG_MAX_MS);
	rq->reasoning = hdr_long(rq, "x-mock-reasoning", 0, 100000000L);
	rq->audio_in = hdr_long(rq, "x-mock-audio-in", 0, 100000000L);
	rq->audio_out = hdr_long(rq, "x-mock-audio-out", 0, 100000000L);
	rq->web_search = hdr_long(rq, "x-mock-web-search", 0, 1000);
	rq->web_fetch = hdr_long(rq, "x-mock-web-fetch", 0, 1000);
	rq->region = hdr_long(rq, "x-mock-region", 0, 1) == 1;
	/* an assistant message's {"audio":{"id":...}} makes OpenAI read the
	 * earlier spoken answer again, as audio input */
	rq->recall = rq->body != NULL && strstr(rq->body, "\"audio\":{\"id\"") != NULL ?
	    hdr_long(rq, "x-mock-audio-recall", 1000, 100000000L) : 0;
	rq->audio_in += rq->recall;
	rq->error_after = hdr_long(rq, "x-mock-error-after", -1, 100000000L);
	if (hdr(rq, "x-mock-model") != NULL)
		snprintf(rq->resp_model, sizeof(rq->resp_model), "%s", hdr(rq, "x-mock-model"));
	rq->tier[0] = '\0';
	if (hdr(rq, "x-mock-service-tier") != NULL)
		snprintf(rq->tier, sizeof(rq->tier), "%s", hdr(rq, "x-mock-service-tier"));
	else if (!is_anthropic(rq) && (strcmp(rq->body_tier, "flex") == 0 ||
	    strcmp(rq->body_tier, "priority") == 0))
		snprintf(rq->tier, sizeof(rq->tier), "%s", rq->body_tier);
	rq->fail = FAIL_NONE;
	if (fail != NULL && strcasecmp(fail, "reset") == 0)
		rq->fail = FAIL_RESET;
	else if (fail != NULL && strcasecmp(fail, "garbage") == 0)
		rq->fail = FAIL_GARBAGE;
	else if (fail != NULL && strcasecmp(fail, "hang") == 0)
		rq->fail = FAIL_HANG;
	else if (fail != NULL && strcasecmp(fail, "close") == 0)
		rq->fail = FAIL_CLOSE;
}

/* Providers answer with a dated model name for an alias. */
static const char *
echo_model(const struct req *rq)
{
	if (rq->resp_model[0] != '\0')
		return rq->resp_model;
	if (strcmp(rq->model, "gpt-4o-mini") == 0)
		return "gpt-4o-mini-2024-07-18";
	if (strcmp(rq->model, "claude-sonnet-4") == 0)
		return "claude-sonnet-4-20250514";
	return rq->model;
}

/* ---- the access log tests read ------------------------------------------ */

static void
auth_id(const struct req *rq, char *out)
{
	const char *v = hdr(rq, "authorization");
	unsigned char sha[32];

	if (v == NULL)
		v = hdr(rq, "x-api-key");
	if (v == NULL)
		v = hdr(rq, "x-goog-api-key");
	else if (strncasecmp(v, "Bearer ", 7) == 0)
		v += 7 + strspn(v + 7, " ");
	if (v == NULL) {
		strcpy(out, "-");
		return;
	}
	EVP_Digest(v, strlen(v), sha, NULL, EVP_sha256(), NULL);
	sha_hex(sha, 6, out);
}

static void
log_request(struct conn *c)
{
	struct req *rq = &c->rq;
	const char *host = hdr(rq, "host");
	char auth[16];
	int i;

	if (c->m->log == NULL)
		return;
	auth_id(rq, auth);
	pthread_mutex_lock(&c->m->log_lock);
	fprintf(c->m->log, "%s %s host=%s auth=%s include_usage=%d stream_options=%d "
	    "body_bytes=%lld model=%s max_tokens=%lld n=%ld so_keys=%s headers=", rq->method,
	    rq->target, host ? host : "-", auth, rq->include_usage, rq->has_stream_options,
	    rq->body_len, rq->has_model ? rq->model : "-", rq->max_tokens, rq->n,
	    rq->so_keys[0] ? rq->so_keys : "-");
	for (i = 0; i < rq->nh; i++)
		fprintf(c->m->log, "%s%s", i ? "," : "", rq->h[i].name);
	fputc('\n', c->m->log);
	fflush(c->m->log);
	pthread_mutex_unlock(&c->m->log_lock);
}

/* -B: the usage this request is billed for though it gets an error. */
static long prompt_tokens(const struct req *rq);
static long prompt_count(const struct req *rq);

static void
log_billed(struct conn *c)
{
	struct req *rq = &c->rq;
	long out = rq->tokens;

	if (c->m->log == NULL)
		return;
	if (rq->max_tokens >= 0 && out > rq->max_tokens)
		out = (long)rq->max_tokens;
	pthread_mutex_lock(&c->m->log_lock);
	fprintf(c->m->log, "BILLED input=%ld output=%ld\n", prompt_tokens(rq),
	    out * (rq->n > 0 ? rq->n : 1) * prompt_count(rq));
	fflush(c->m->log);
	pthread_mutex_unlock(&c->m->log_lock);
}

/* ---- responses ----------------------------------------------------------- */

static const char *
reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 404: return "Not Found";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 529: return "Overloaded";
	default: return "Error";
	}
}

/* Status line and headers; len -1 means chunked. */
static int
send_head(struct conn *c, int status, const char *ctype, long long len)
{
	struct sb s = { .len = 0 };

	sb_printf(&s, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n", status, reason(status), ctype);
	if (len >= 0)
		sb_printf(&s, "Content-Length: %lld\r\n", len);
	else
		sb_printf(&s, "Transfer-Encoding: chunked\r\nCache-Control: no-cache\r\n");
	sb_printf(&s, "x-request-id: req_mock\r\n%s\r\n",
	    c->rq.keepalive ? "" : "Connection: close\r\n");
	c->in_response = 1;
	return out_put(c, s.buf, s.len);
}

/* A whole JSON body: PRE, the generated TEXT, POST, with Content-Length. */
static int
send_json(struct conn *c, int status, const struct sb *pre, const struct text *t,
    const char *post)
{
	long long len = (long long)(pre->len + text_len(t) + strlen(post));

	if (send_head(c, status, "application/json", len) == -1 ||
	    out_put(c, pre->buf, pre->len) == -1)
		return -1;
	if (c->rq.fail == FAIL_RESET) {	/* half a body, then RST */
		out_flush(c);
		c->in_response = 0;	/* our own doing, not the peer's abort */
		conn_reset(c);
		return -1;
	}
	if (put_text(c, t) == -1 || out_str(c, post) == -1 || out_flush(c) == -1)
		return -1;
	c->in_response = 0;
	return 0;
}

static int
send_simple(struct conn *c, int status, const char *json)
{
	struct sb s = { .len = 0 };

	sb_printf(&s, "%s", json);
	return send_json(c, status, &s, &no_text, "");
}

static int
is_anthropic(const struct req *rq)
{
	return strcmp(rq->path, "/v1/messages") == 0;
}

static int
send_error(struct conn *c, int status, const char *type, const char *msg)
{
	struct sb s = { .len = 0 };
	const char *code;

	if (is_anthropic(&c->rq)) {
		sb_printf(&s, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"%s\"}}",
		    type, msg);
	} else {
		code = status == 429 ? "\"rate_limit_exceeded\"" : "null";
		sb_printf(&s, "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"param\":null,"
		    "\"code\":%s}}", msg, type, code);
	}
	return send_json(c, status, &s, &no_text, "");
}

/* x-mock-status: the error each provider sends for that status. */
static int
send_mock_error(struct conn *c)
{
	int st = c->rq.status, a = is_anthropic(&c->rq);

	if (st == 429)
		return send_error(c, st, a ? "rate_limit_error" : "requests",
		    "Rate limit reached (mock)");
	if (st >= 500)
		return send_error(c, st, a ? (st == 529 ? "overloaded_error" : "api_error") :
		    "server_error", "The server had an error (mock)");
	if (st == 401)
		return send_error(c, st, a ? "authentication_error" : "invalid_request_error",
		    "Incorrect API key provided (mock)");
	return send_error(c, st, "invalid_request_error", "Invalid request (mock)");
}

/* Output is cut at the request's own limit, as a provider does. */
static const char *
limit_tokens(struct req *rq, const char *stop, const char *length)
{
	if (rq->max_tokens >= 0 && rq->tokens > rq->max_tokens) {
		rq->tokens = rq->max_tokens;
		return length;
	}
	return stop;
}

/* ---- the providers' published bills for what bytes do not show ---- */

/* The base64 value at p decoded into out (at most n bytes). */
static size_t
b64_prefix(const char *p, unsigned char *out, size_t n)
{
	static const char al[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned acc = 0;
	int bits = 0;
	size_t k = 0;
	const char *q;

	for (; *p && *p != '"' && k < n; p++) {
		if ((q = strchr(al, *p)) == NULL || *p == '\0')
			break;
		acc = acc << 6 | (unsigned)(q - al);
		if ((bits += 6) >= 8) {
			bits -= 8;
			out[k++] = (unsigned char)(acc >> bits);
		}
	}
	return k;
}

/* OpenAI's tile rule (gpt-4o: 85 + 170 a tile; gpt-4o-mini: 2833 + 5667)
 * and Anthropic's (w * h) / 750, for a PNG's IHDR size. */
static long
image_bill(const struct req *rq, const unsigned char *h, size_t n)
{
	double w, ht, s;
	long tiles, base = 85, tile = 170;

	if (n < 24 || memcmp(h, "\x89PNG", 4) != 0)
		return is_anthropic(rq) ? 1600 : 2833 + 8 * 5667;
	w = (double)((unsigned long)h[16] << 24 | (unsigned long)h[17] << 16 | h[18] << 8 | h[19]);
	ht = (double)((unsigned long)h[20] << 24 | (unsigned long)h[21] << 16 | h[22] << 8 | h[23]);
	if (is_anthropic(rq))
		return (long)(w * ht / 750) > 1600 ? 1600 : (long)(w * ht / 750);
	if (strncmp(rq->model, "gpt-4o-mini", 11) == 0)
		base = 2833, tile = 5667;
	if (w > 2048 || ht > 2048) {
		s = 2048 / (w > ht ? w : ht);
		w *= s, ht *= s;
	}
	if ((w < ht ? w : ht) > 768) {
		s = 768 / (w < ht ? w : ht);
		w *= s, ht *= s;
	}
	tiles = (long)((w + 511) / 512) * (long)((ht + 511) / 512);
	return base + tile * tiles;
}

/* Anthropic's tool-use system prompt (346 with tool_choice auto) and the
 * computer-use tools' hidden prompts (computer 735 + the 499-token
 * computer-use system prompt, bash 245, text_editor 700). */
static long
tool_prompt_bill(const struct req *rq)
{
	long t = 0;

	if (!is_anthropic(rq) || strstr(rq->body, "\"tools\"") == NULL)
		return 0;
	t = 346;
	if (strstr(rq->body, "\"computer_2") != NULL)
		t += 735 + 499;
	if (strstr(rq->body, "\"bash_2") != NULL)
		t += 245;
	if (strstr(rq->body, "\"text_editor_2") != NULL)
		t += 700;
	return t;
}

/* Input tokens as the provider bills them: the text (a token per 4 bytes
 * here), each inline image by its rule, the hidden tool prompts. */
static long
prompt_tokens(const struct req *rq)
{
	unsigned char h[32];
	const char *p;
	long t = (long)(rq->body_len / 4);

	if (rq->body == NULL)
		return t;
	for (p = rq->body; (p = strstr(p, "base64,")) != NULL; p += 7)
		t += image_bill(rq, h, b64_prefix(p + 7, h, sizeof(h)));
	for (p = rq->body; (p = strstr(p, "\"data\":\"")) != NULL; p += 8)
		t += image_bill(rq, h, b64_prefix(p + 8, h, sizeof(h)));
	return t + tool_prompt_bill(rq) + rq->recall;
}

/* Output multiplies by the legacy completions prompt array. */
static long
prompt_count(const struct req *rq)
{
	const char *p = rq->body != NULL ? strstr(rq->body, "\"prompt\":[\"") : NULL;
	long k = 1;

	if (p == NULL)
		return 1;
	for (p += 10; *p && *p != ']'; p++)
		if (*p == '"' && p[-1] != '\\' && p[1] == ',' )
			k++;
	return k;
}

static void
openai_usage(struct sb *s, const struct req *rq)
{
	long p = prompt_tokens(rq);

	long out = rq->tokens * rq->n + rq->reasoning;

	/* x-mock-audio-in/-out: that many of the prompt's and the answer's
	 * tokens are audio (gpt-4o-audio-preview), as OpenAI details them */
	sb_printf(s, "{\"prompt_tokens\":%ld,\"completion_tokens\":%ld,\"total_tokens\":%ld,"
	    "\"prompt_tokens_details\":{\"cached_tokens\":%ld,\"audio_tokens\":%ld",
	    p, out, p + out, rq->cached, rq->audio_in);
	/* x-mock-cache-write: OpenAI's cache writes, among the prompt tokens */
	if (rq->cache_write > 0)
		sb_printf(s, ",\"cache_write_tokens\":%ld", rq->cache_write);
	sb_printf(s, "},\"completion_tokens_details\":{\"reasoning_tokens\":%ld,"
	    "\"audio_tokens\":%ld,\"accepted_prediction_tokens\":0,"
	    "\"rejected_prediction_tokens\":0}}", rq->reasoning, rq->audio_out);
}

static int
chat_json(struct conn *c, const char *finish)
{
	struct req *rq = &c->rq;
	struct text t = all_text(rq);
	struct sb pre = { .len = 0 }, post = { .len = 0 };

	sb_printf(&pre, "{\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion\","
	    "\"created\":%lld,\"model\":\"%s\",\"choices\":[{\"index\":0,\"message\":"
	    "{\"role\":\"assistant\",\"content\":\"", now_ms() / 1000, echo_model(rq));
	sb_printf(&post, "\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":\"%s\"}],"
	    "\"usage\":", finish);
	openai_usage(&post, rq);
	sb_printf(&post, ",\"service_tier\":\"%s\",\"system_fingerprint\":\"fp_mock\"}",
	    rq->tier[0] ? rq->tier : "default");
	return send_json(c, 200, &pre, &t, post.buf);
}

static int
completions_json(struct conn *c, const char *finish)
{
	struct req *rq = &c->rq;
	struct text t = all_text(rq);
	struct sb pre = { .len = 0 }, post = { .len = 0 };
	long p = prompt_tokens(rq);

	sb_printf(&pre, "{\"id\":\"cmpl-mock\",\"object\":\"text_completion\",\"created\":%lld,"
	    "\"model\":\"%s\",\"choices\":[{\"text\":\"", now_ms() / 1000, echo_model(rq));
	sb_printf(&post, "\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"%s\"}],"
	    "\"usage\":{\"prompt_tokens\":%ld,\"completion_tokens\":%ld,\"total_tokens\":%ld}}",
	    finish, p, rq->tokens * rq->n * prompt_count(rq),
	    p + rq->tokens * rq->n * prompt_count(rq));
	return send_json(c, 200, &pre, &t, post.buf);
}

static int
embeddings(struct conn *c)
{
	static const float vec[8] = { 0.0023064255f, -0.009327292f, 0.015797347f,
	    -0.0077780345f, -0.0046922187f, 0.012345678f, -0.0187654f, 0.0044444f };
	struct req *rq = &c->rq;
	struct sb s = { .len = 0 };
	unsigned char b64[64];
	long p = prompt_tokens(rq);
	size_t i;

	sb_printf(&s, "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
	    "\"embedding\":");
	if (rq->b64) {	/* little-endian float32, what the SDK asks for by default */
		EVP_EncodeBlock(b64, (const unsigned char *)vec, (int)sizeof(vec));
		sb_printf(&s, "\"%s\"", b64);
	} else {
		for (i = 0; i < 8; i++)
			sb_printf(&s, "%c%.10g", i ? ',' : '[', (double)vec[i]);
		sb_printf(&s, "]");
	}
	sb_printf(&s, "}],\"model\":\"%s\",\"usage\":{\"prompt_tokens\":%ld,"
	    "\"total_tokens\":%ld}}", echo_model(rq), p, p);
	return send_json(c, 200, &s, &no_text, "");
}

static int
models(struct conn *c)
{
	return send_simple(c, 200, "{\"object\":\"list\",\"data\":["
	    "{\"id\":\"gpt-4o-mini\",\"object\":\"model\",\"created\":1721172741,\"owned_by\":\"system\"},"
	    "{\"id\":\"gpt-4o\",\"object\":\"model\",\"created\":1715367049,\"owned_by\":\"system\"},"
	    "{\"id\":\"text-embedding-3-small\",\"object\":\"model\",\"created\":1705948997,"
	    "\"owned_by\":\"system\"}]}");
}

/* A Responses web_search_call output item, as OpenAI sends it. */
static void
web_search_item(struct sb *s, long i, const char *status)
{
	sb_printf(s, "{\"type\":\"web_search_call\",\"id\":\"ws_mock_%ld\",\"status\":\"%s\","
	    "\"action\":{\"type\":\"search\",\"query\":\"mock query %ld\"}}", i, status, i);
}

static void
web_search_items(struct sb *s, long n)
{
	long i;

	for (i = 0; i < n; i++) {
		web_search_item(s, i, "completed");
		sb_printf(s, ",");
	}
}

/* The Responses API object; TEXT goes between pre and post when with_output. */
static void
response_object(struct conn *c, struct sb *pre, struct sb *post, const char *status,
    int with_output)
{
	struct req *rq = &c->rq;
	long p = prompt_tokens(rq);

	sb_printf(pre, "{\"id\":\"resp_mock\",\"object\":\"response\",\"created_at\":%lld,"
	    "\"status\":\"%s\",\"error\":null,\"incomplete_details\":null,\"instructions\":null,"
	    "\"max_output_tokens\":null,\"model\":\"%s\",\"output\":[", now_ms() / 1000,
	    status, echo_model(rq));
	if (with_output) {
		web_search_items(pre, rq->web_search);
		sb_printf(pre, "{\"type\":\"message\",\"id\":\"msg_mock\",\"status\":\"completed\","
		    "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
		    "\"annotations\":[],\"text\":\"");
		sb_printf(post, "\"}]}");
	}
	sb_printf(post, "],\"parallel_tool_calls\":true,\"previous_response_id\":null,"
	    "\"reasoning\":{\"effort\":null,\"summary\":null},\"store\":true,\"temperature\":1.0,"
	    "\"text\":{\"format\":{\"type\":\"text\"}},\"tool_choice\":\"auto\",\"tools\":[],"
	    "\"top_p\":1.0,\"truncation\":\"disabled\",");
	if (rq->tier[0])
		sb_printf(post, "\"service_tier\":\"%s\",", rq->tier);
	sb_printf(post, "\"usage\":");
	if (with_output)
		sb_printf(post, "{\"input_tokens\":%ld,\"input_tokens_details\":{\"cached_tokens\":%ld},"
		    "\"output_tokens\":%ld,\"output_tokens_details\":{\"reasoning_tokens\":%ld},"
		    "\"total_tokens\":%ld}", p, rq->cached, rq->tokens + rq->reasoning,
		    rq->reasoning, p + rq->tokens + rq->reasoning);
	else
		sb_printf(post, "null");
	sb_printf(post, ",\"user\":null,\"metadata\":{}}");
}

static int
responses_json(struct conn *c)
{
	struct sb pre = { .len = 0 }, post = { .len = 0 };
	struct text t = all_text(&c->rq);

	response_object(c, &pre, &post, "completed", 1);
	return send_json(c, 200, &pre, &t, post.buf);
}

static void
server_tool_use(struct sb *s, const struct req *rq)
{
	sb_printf(s, ",\"server_tool_use\":{\"web_search_requests\":%ld,"
	    "\"web_fetch_requests\":%ld}", rq->web_search, rq->web_fetch);
}

static void
anthropic_usage(struct sb *s, const struct req *rq, long output)
{
	sb_printf(s, "{\"input_tokens\":%ld,\"cache_creation_input_tokens\":%ld,"
	    "\"cache_read_input_tokens\":%ld,\"output_tokens\":%ld",
	    prompt_tokens(rq), rq->cache_write, rq->cached, output + rq->reasoning);
	if (rq->web_search > 0 || rq->web_fetch > 0)
		server_tool_use(s, rq);
	if (rq->cache_1h > 0)
		sb_printf(s, ",\"cache_creation\":{\"ephemeral_5m_input_tokens\":%ld,"
		    "\"ephemeral_1h_input_tokens\":%ld}", rq->cache_write - rq->cache_1h,
		    rq->cache_1h);
	/* the speed and the inference geography the tokens were billed at,
	 * for a request that asked for either */
	if (rq->fast || rq->geo_us)
		sb_printf(s, ",\"speed\":\"%s\",\"inference_geo\":\"%s\"",
		    rq->fast ? "fast" : "standard", rq->geo_us ? "us" : "global");
	sb_printf(s, "}");
}

static int
messages_json(struct conn *c, const char *stop)
{
	struct req *rq = &c->rq;
	struct text t = all_text(rq);
	struct sb pre = { .len = 0 }, post = { .len = 0 };

	sb_printf(&pre, "{\"id\":\"msg_mock\",\"type\":\"message\",\"role\":\"assistant\","
	    "\"model\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"", echo_model(rq));
	sb_printf(&post, "\"}],\"stop_reason\":\"%s\",\"stop_sequence\":null,\"usage\":", stop);
	anthropic_usage(&post, rq, rq->tokens);
	sb_printf(&post, "}");
	return send_json(c, 200, &pre, &t, post.buf);
}

/* ---- test helpers: /sink, /blob, /mock/stats ----------------------------- */

static int
sink(struct conn *c)
{
	char hex[65], json[128];

	sha_hex(c->rq.sha, 32, hex);
	snprintf(json, sizeof(json), "{\"bytes\":%lld,\"sha256\":\"%s\"}", c->rq.body_len, hex);
	return send_simple(c, 200, json);
}

static long long
query_ll(const struct req *rq, const char *name, long long dflt)
{
	const char *q = rq->query;
	size_t n = strlen(name);

	while (q != NULL && *q != '\0') {
		if (strncmp(q, name, n) == 0 && q[n] == '=')
			return strtoll(q + n + 1, NULL, 10);
		q = strchr(q, '&');
		if (q != NULL)
			q++;
	}
	return dflt;
}

/* xorshift64*: the same bytes for the same seed, cheaply. */
static uint64_t
blob_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

/* splitmix64 spreads any seed, 0 included, into a nonzero xorshift state. */
static uint64_t
blob_seed(uint64_t s)
{
	s += 0x9e3779b97f4a7c15ULL;
	s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9ULL;
	s = (s ^ (s >> 27)) * 0x94d049bb133111ebULL;
	s ^= s >> 31;
	return s != 0 ? s : 1;
}

static void
blob_fill(uint64_t *state, unsigned char *buf, size_t n)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < n; i += 8) {
		v = blob_next(state);
		memcpy(buf + i, &v, n - i < 8 ? n - i : 8);
	}
}

static int
blob_checksum(long long bytes, uint64_t seed, char *hex)
{
	unsigned char buf[WBUF_SIZE], sha[32];
	uint64_t st = seed;
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	size_t k;

	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md);
		return -1;
	}
	for (; bytes > 0; bytes -= (long long)k) {
		k = bytes < (long long)sizeof(buf) ? (size_t)bytes : sizeof(buf);
		blob_fill(&st, buf, k);
		EVP_DigestUpdate(md, buf, k);
	}
	EVP_DigestFinal_ex(md, sha, NULL);
	EVP_MD_CTX_free(md);
	sha_hex(sha, 32, hex);
	return 0;
}

/* GET /blob?bytes=N&seed=S[&chunked=1][&close=1]: N deterministic bytes,
 * with x-body-sha256 computed up front so one fetch can be checked. */
static int
blob(struct conn *c)
{
	struct req *rq = &c->rq;
	long long bytes = query_ll(rq, "bytes", 0), left;
	uint64_t seed = blob_seed((uint64_t)query_ll(rq, "seed", 1));
	int chunked = query_ll(rq, "chunked", 0) == 1, closed = query_ll(rq, "close", 0) == 1;
	unsigned char buf[WBUF_SIZE];
	char hex[65], head[512], sz[32], framing[64];
	size_t k;

	if (bytes < 0 || blob_checksum(bytes, seed, hex) == -1)
		return send_error(c, 400, "invalid_request_error", "bad bytes");
	if (closed) {
		rq->keepalive = 0;
		chunked = 0;
		snprintf(framing, sizeof(framing), "Connection: close\r\n");
	} else if (chunked) {
		snprintf(framing, sizeof(framing), "Transfer-Encoding: chunked\r\n");
	} else {
		snprintf(framing, sizeof(framing), "Content-Length: %lld\r\n", bytes);
	}
	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
	    "x-body-sha256: %s\r\n%s\r\n", hex, framing);
	c->in_response = 1;
	if (out_str(c, head) == -1)
		return -1;
	for (left = bytes; left > 0; left -= (long long)k) {
		k = left < (long long)sizeof(buf) ? (size_t)left : sizeof(buf);
		blob_fill(&seed, buf, k);
		if (chunked) {
			snprintf(sz, sizeof(sz), "%zx\r\n", k);
			if (out_str(c, sz) == -1)
				return -1;
		}
		if (out_put(c, (char *)buf, k) == -1 || (chunked && out_str(c, "\r\n") == -1))
			return -1;
	}
	if (chunked && out_str(c, "0\r\n\r\n") == -1)
		return -1;
	if (out_flush(c) == -1)
		return -1;
	c->in_response = 0;
	return 0;
}

/* A Bedrock streaming path: /model/{id}/invoke-with-response-stream or
 * /model/{id}/converse-stream. */
static int
bedrock_stream_path(const char *path)
{
	size_t n = strlen(path);

	return strncmp(path, "/model/", 7) == 0 &&
	    ((n > 35 && strcmp(path + n - 28, "/invoke-with-response-stream") == 0) ||
	    (n > 23 && strcmp(path + n - 16, "/converse-stream") == 0));
}

/* The file x-mock-eventstream names, as Bedrock sends an event stream:
 * chunked, in pieces of 97 bytes (a read of kilovolt's cuts messages
 * anywhere), the first x-mock-eventstream-cut bytes of it when given. */
static int
eventstream(struct conn *c)
{
	const char *path = hdr(&c->rq, "x-mock-eventstream");
	long cut = hdr_long(&c->rq, "x-mock-eventstream-cut", -1, LONG_MAX);
	char buf[97], sz[24];
	FILE *f;
	size_t k;
	long sent = 0;

	if (path == NULL || (f = fopen(path, "rb")) == NULL)
		return send_error(c, 400, "ValidationException", "x-mock-eventstream: no such file");
	c->in_response = 1;
	if (out_str(c, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.amazon.eventstream\r\n"
	    "x-amzn-requestid: 5f7c1d1e-mock\r\nTransfer-Encoding: chunked\r\n\r\n") == -1)
		goto fail;
	while ((k = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (cut >= 0 && sent + (long)k > cut)
			k = (size_t)(cut - sent);
		if (k == 0)
			break;
		snprintf(sz, sizeof(sz), "%zx\r\n", k);
		if (out_str(c, sz) == -1 || out_put(c, buf, k) == -1 || out_str(c, "\r\n") == -1 ||
		    out_flush(c) == -1 || (c->rq.delay_ms > 0 && wait_peer(c, c->rq.delay_ms) == -1))
			goto fail;
		sent += (long)k;
	}
	fclose(f);
	if (out_str(c, "0\r\n\r\n") == -1 || out_flush(c) == -1)
		return -1;
	c->in_response = 0;
	return 0;
fail:
	fclose(f);
	return -1;
}

static int
stats(struct conn *c)
{
	struct mock *m = c->m;
	char json[512];

	snprintf(json, sizeof(json), "{\"open_connections\":%ld,\"requests\":%ld,"
	    "\"aborted_streams\":%ld,\"last_abort_ms\":%lld,\"tls_full\":%ld,"
	    "\"tls_resumed\":%ld,\"tls13\":%ld,\"key_updates_sent\":%ld,"
	    "\"key_updates_seen\":%ld,\"tickets_sent\":%ld}",
	    atomic_load(&m->open_conns), atomic_load(&m->requests),
	    atomic_load(&m->aborted), atomic_load(&m->last_abort_ms),
	    atomic_load(&m->tls_full), atomic_load(&m->tls_resumed),
	    atomic_load(&m->tls13), atomic_load(&m->key_updates_sent),
	    atomic_load(&m->key_updates_seen), atomic_load(&m->tickets_sent));
	return send_simple(c, 200, json);
}

/* ---- stored objects, batches, background responses ------------------------ */

/* A background response is queued with "usage": null; its usage comes on a
 * later GET /v1/responses/{id}. The id carries the numbers, so the mock
 * keeps no state: resp_bg_<input>_<output>. */
static int
background_response(struct conn *c)
{
	struct req *rq = &c->rq;
	char json[512];

	snprintf(json, sizeof(json), "{\"id\":\"resp_bg_%ld_%ld\",\"object\":\"response\","
	    "\"created_at\":%lld,\"status\":\"queued\",\"background\":true,\"model\":\"%s\","
	    "\"output\":[],\"usage\":null}", prompt_tokens(rq), rq->tokens, now_ms() / 1000,
	    echo_model(rq));
	return send_simple(c, 200, json);
}

static int
stored_response(struct conn *c, const char *id, int get)
{
	long in = 0, out = 0;
	char json[768];

	if (!get) {
		snprintf(json, sizeof(json), "{\"id\":\"%.64s\",\"object\":\"response\","
		    "\"deleted\":true}", id);
		return send_simple(c, 200, json);
	}
	if (sscanf(id, "resp_bg_%ld_%ld", &in, &out) != 2)
		in = out = 7;
	snprintf(json, sizeof(json), "{\"id\":\"%.64s\",\"object\":\"response\","
	    "\"status\":\"completed\",\"model\":\"gpt-4o-mini-2024-07-18\",\"output\":[],"
	    "\"usage\":{\"input_tokens\":%ld,\"input_tokens_details\":{\"cached_tokens\":0},"
	    "\"output_tokens\":%ld,\"total_tokens\":%ld}}", id, in, out, in + out);
	return send_simple(c, 200, json);
}

static int
batch(struct conn *c, int anthropic)
{
	if (anthropic)
		return send_simple(c, 200, "{\"id\":\"msgbatch_mock\",\"type\":\"message_batch\","
		    "\"processing_status\":\"in_progress\",\"request_counts\":{\"processing\":2,"
		    "\"succeeded\":0,\"errored\":0,\"canceled\":0,\"expired\":0}}");
	return send_simple(c, 200, "{\"id\":\"batch_mock\",\"object\":\"batch\","
	    "\"endpoint\":\"/v1/chat/completions\",\"status\":\"validating\","
	    "\"request_counts\":{\"total\":0,\"completed\":0,\"failed\":0}}");
}

static int
prefixed(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Endpoints the gateway meters nothing on: 1 when PATH is not one. */
static int
objects(struct conn *c, int *rc)
{
	struct req *rq = &c->rq;
	int get = strcmp(rq->method, "GET") == 0, post = strcmp(rq->method, "POST") == 0;
	int del = strcmp(rq->method, "DELETE") == 0;
	char json[512];

	if (post && strcmp(rq->path, "/v1/responses") == 0 && rq->background)
		*rc = background_response(c);
	else if ((get || del) && strncmp(rq->path, "/v1/responses/", 14) == 0)
		*rc = stored_response(c, rq->path + 14, get);
	else if (get && strcmp(rq->path, "/v1/chat/completions") == 0)
		*rc = send_simple(c, 200, "{\"object\":\"list\",\"data\":[{\"id\":"
		    "\"chatcmpl-stored\",\"object\":\"chat.completion\",\"model\":\"gpt-4o-mini\"}],"
		    "\"has_more\":false}");
	else if (prefixed(rq->path, "/v1/batches"))
		*rc = batch(c, 0);
	else if (prefixed(rq->path, "/v1/messages/batches"))
		*rc = batch(c, 1);
	else if (post && strcmp(rq->path, "/v1/messages/count_tokens") == 0) {
		snprintf(json, sizeof(json), "{\"input_tokens\":%ld}", prompt_tokens(rq));
		*rc = send_simple(c, 200, json);
	} else if (get && strncmp(rq->path, "/v1/models/", 11) == 0) {
		snprintf(json, sizeof(json), "{\"id\":\"%.64s\",\"object\":\"model\","
		    "\"created\":1721172741,\"owned_by\":\"system\"}", rq->path + 11);
		*rc = send_simple(c, 200, json);
	} else if (post && strcmp(rq->path, "/v1/images/generations") == 0)
		*rc = send_simple(c, 200, "{\"created\":1721172741,\"data\":[]}");
	else
		return 1;
	return 0;
}

/* ---- dispatch ------------------------------------------------------------ */

static int stream_dispatch(struct conn *c);

static int
need_model(struct conn *c)
{
	struct req *rq = &c->rq;

	if (!rq->has_model)
		return send_error(c, 400, "invalid_request_error",
		    is_anthropic(rq) ? "model: Field required" :
		    "you must provide a model parameter") == 0 ? 1 : -1;
	if (is_anthropic(rq) && rq->max_tokens < 0)
		return send_error(c, 400, "invalid_request_error",
		    "max_tokens: Field required") == 0 ? 1 : -1;
	return 0;
}

static int
provider(struct conn *c)
{
	struct req *rq = &c->rq;
	int rc;

	if ((rc = need_model(c)) != 0)
		return rc == 1 ? 0 : -1;
	rq->billable = 1;
	if (strcmp(rq->path, "/v1/chat/completions") == 0 && strstr(rq->model, "-search-preview"))
		rq->web_search = 1;	/* OpenAI's search models: a fee per request */
	if (rq->stream)
		return stream_dispatch(c);
	if (strcmp(rq->path, "/v1/chat/completions") == 0)
		return chat_json(c, limit_tokens(rq, "stop", "length"));
	if (strcmp(rq->path, "/v1/completions") == 0)
		return completions_json(c, limit_tokens(rq, "stop", "length"));
	if (strcmp(rq->path, "/v1/embeddings") == 0)
		return embeddings(c);
	if (strcmp(rq->path, "/v1/responses") == 0) {
		limit_tokens(rq, "", "");
		return responses_json(c);
	}
	return messages_json(c, limit_tokens(rq, "end_turn", "max_tokens"));
}

static int
is_provider_path(const char *path)
{
	return strcmp(path, "/v1/chat/completions") == 0 || strcmp(path, "/v1/completions") == 0 ||
	    strcmp(path, "/v1/embeddings") == 0 || strcmp(path, "/v1/responses") == 0 ||
	    strcmp(path, "/v1/messages") == 0;
}

/* GET /health under -H: the status the file names. */
static int
health(struct conn *c)
{
	FILE *f = fopen(mock_health_file, "r");
	long st = 200;

	if (f != NULL) {
		if (fscanf(f, "%ld", &st) != 1 || st < 200 || st > 599)
			st = 500;
		fclose(f);
	}
	return send_simple(c, (int)st, st < 300 ? "{\"status\":\"ok\"}" : "{\"status\":\"down\"}");
}

/* Bedrock (issue 35), as little as the gateway's routing tests need:
 * POST /model/{id}/invoke answers Anthropic's Messages JSON, the model
 * named by the path's id as sent (Bedrock's body has none); GET
 * /inference-profiles and /foundation-models[/{id}] a short list. */
static int
bedrock(struct conn *c, int *rc)
{
	struct req *rq = &c->rq;
	const char *id = rq->path + 7, *end;

	if (strcmp(rq->method, "GET") == 0 && (prefixed(rq->path, "/inference-profiles") ||
	    prefixed(rq->path, "/foundation-models"))) {
		*rc = send_simple(c, 200, "{\"inferenceProfileSummaries\":[{\"inferenceProfileId\":"
		    "\"us.anthropic.claude-sonnet-4-20250514-v1:0\",\"type\":\"SYSTEM_DEFINED\","
		    "\"status\":\"ACTIVE\"}]}");
		return 0;
	}
	if (strcmp(rq->method, "POST") != 0 || strncmp(rq->path, "/model/", 7) != 0 ||
	    (end = strchr(id, '/')) == NULL || strcmp(end, "/invoke") != 0 ||
	    (size_t)(end - id) >= sizeof(rq->model))
		return 1;
	memcpy(rq->model, id, (size_t)(end - id));
	rq->model[end - id] = '\0';
	rq->has_model = 1;
	if (rq->max_tokens < 0) {
		*rc = send_error(c, 400, "invalid_request_error", "max_tokens: Field required");
		return 0;
	}
	rq->billable = 1;
	*rc = messages_json(c, limit_tokens(rq, "end_turn", "max_tokens"));
	return 0;
}

/* The Gemini API's model methods (tests/mock_gemini.c): x-mock-tokens,
 * x-mock-reasoning (thoughtsTokenCount), x-mock-cached; a stream's pieces
 * a chunk each, x-mock-delay-ms after each. Returns 1 for another path. */
static int
gemini(struct conn *c, int *rc)
{
	struct req *rq = &c->rq;
	struct mock_gm_in in = { rq->tokens, rq->reasoning, rq->cached };
	struct mock_gm_out *o;
	char sz[24];
	size_t i, k;

	if ((o = malloc(sizeof(*o))) == NULL)
		return 1;
	if (mock_gemini(rq->method, rq->path, rq->query, rq->body ? rq->body : "",
	    (size_t)rq->body_len, &in, o) == -1) {
		free(o);
		return 1;
	}
	rq->billable = 1;
	*rc = send_head(c, o->status, o->ctype, o->chunked ? -1 :
	    (long long)o->off[o->npieces]);
	for (i = 0; *rc == 0 && i < o->npieces; i++) {
		k = o->off[i + 1] - o->off[i];
		snprintf(sz, sizeof(sz), "%zx\r\n", k);
		if ((o->chunked && out_str(c, sz) == -1) || out_put(c, o->buf + o->off[i], k) == -1 ||
		    (o->chunked && (out_str(c, "\r\n") == -1 || out_flush(c) == -1 ||
		    (rq->delay_ms > 0 && wait_peer(c, rq->delay_ms) == -1))))
			*rc = -1;
	}
	if (*rc == 0 && ((o->chunked && out_str(c, "0\r\n\r\n") == -1) || out_flush(c) == -1))
		*rc = -1;
	if (*rc == 0)
		c->in_response = 0;
	free(o->buf);
	free(o);
	return 0;
}

static int
route(struct conn *c)
{
	struct req *rq = &c->rq;
	int get = strcmp(rq->method, "GET") == 0, post = strcmp(rq->method, "POST") == 0;
	int rc;

	if (get && mock_health_file != NULL && strcmp(rq->path, "/health") == 0)
		return health(c);
	if (rq->status >= 400) {
		if (mock_bill_errors)
			log_billed(c);
		return send_mock_error(c);
	}
	if (objects(c, &rc) == 0 || bedrock(c, &rc) == 0 || gemini(c, &rc) == 0)
		return rc;
	if (post && is_provider_path(rq->path))
		return provider(c);
	if (get && strcmp(rq->path, "/v1/models") == 0)
		return models(c);
	if (post && strcmp(rq->path, "/sink") == 0)
		return sink(c);
	if (get && strcmp(rq->path, "/blob") == 0)
		return blob(c);
	if (post && bedrock_stream_path(rq->path))
		return eventstream(c);
	if (get && strcmp(rq->path, "/mock/stats") == 0)
		return stats(c);
	return send_error(c, 404, is_anthropic(rq) ? "not_found_error" : "invalid_request_error",
	    "Unknown request URL (mock)");
}

/* x-mock-fail and x-mock-first-delay-ms act before any response byte. */
static int
misbehave(struct conn *c)
{
	struct req *rq = &c->rq;

	c->in_response = 1;	/* a peer leaving while we stall is an abort */
	switch (rq->fail) {
	case FAIL_GARBAGE:
		out_str(c, "\x16\x03\x01 this is not HTTP at all \x01\x02\r\n\r\n");
		out_flush(c);
		return -1;
	case FAIL_HANG:
		wait_peer(c, HANG_MAX_MS);
		return -1;
	case FAIL_CLOSE:
		c->in_response = 0;
		return -1;
	default:
		break;
	}
	if (rq->first_delay_ms > 0 && wait_peer(c, rq->first_delay_ms) == -1)
		return -1;
	return 0;
}

/* What the provider bills for the response just given (or cut): the
 * reasoning was billed before any visible byte; of the text, what was
 * generated: all of it for a whole response, else the deltas sent and the
 * one in flight. */
static void
write_bill(struct conn *c, int whole)
{
	struct req *rq = &c->rq;
	struct mock_bill_in b;
	long gen = rq->tokens;

	if (c->m->bills == NULL || !rq->billable)
		return;
	if (!whole && rq->stream && c->text_sent + (rq->errored ? 0 : 1) < gen)
		gen = c->text_sent + (rq->errored ? 0 : 1);
	if (strcmp(rq->path, "/v1/embeddings") == 0)
		gen = 0;
	b.model = echo_model(rq);
	b.tier = rq->tier[0] ? rq->tier : "default";
	b.input = prompt_tokens(rq) + (is_anthropic(rq) ? rq->cached + rq->cache_write : 0);
	b.cached = rq->cached;
	b.cache_write = rq->cache_write;
	b.cache_1h = rq->cache_1h;
	b.audio_in = is_anthropic(rq) ? 0 : rq->audio_in;
	b.output = gen * rq->n + rq->reasoning;
	b.audio_out = rq->audio_out < b.output ? rq->audio_out : b.output;
	b.web_search = rq->web_search;
	b.fast = rq->fast;
	b.geo_us = rq->geo_us;
	b.region = rq->region;
	pthread_mutex_lock(&c->m->log_lock);
	fprintf(c->m->bills, "bill model=%s input=%ld cached=%ld cache_write=%ld output=%ld "
	    "reasoning=%ld web_search=%ld web_fetch=%ld audio_in=%ld audio_out=%ld "
	    "speed=%s geo=%s region=%d nusd=%" PRId64 " tier=%s\n", echo_model(rq),
	    prompt_tokens(rq), rq->cached, rq->cache_write, gen * rq->n + rq->reasoning,
	    rq->reasoning, rq->web_search, rq->web_fetch, b.audio_in, b.audio_out,
	    rq->fast ? "fast" : "standard", rq->geo_us ? "us" : "global", rq->region,
	    mock_bill_nusd(&b), b.tier);
	fflush(c->m->bills);
	pthread_mutex_unlock(&c->m->log_lock);
}

static int
keepalive(const struct req *rq)
{
	const char *v = hdr(rq, "connection");

	if (v != NULL && strcasecmp(v, "close") == 0)
		return 0;
	if (rq->http_minor == 0)
		return v != NULL && strcasecmp(v, "keep-alive") == 0;
	return 1;
}

/* One request/response exchange. 0: go on with the next, 1: EOF, -1: drop. */
static int
serve_one(struct conn *c)
{
	struct req *rq = &c->rq;
	char *body = rq->body;
	int rc;

	memset(rq, 0, sizeof(*rq));
	rq->body = body;
	rq->body[0] = '\0';
	rc = read_head(c);
	if (rc != 0)
		return rc;
	if (read_body(c) == -1)
		return -1;
	atomic_fetch_add(&c->m->requests, 1);
	scan_controls(rq);
	rq->keepalive = keepalive(rq);
	log_request(c);
	c->events = 0;
	c->text_sent = 0;
	if (misbehave(c) == -1)
		return -1;
	rc = route(c);
	write_bill(c, rc == 0 && !rq->errored);
	if (rc == -1)
		return -1;
	c->in_response = 0;
	if (hdr(rq, "x-mock-silent-close") != NULL || mock_reset_all)
		return 1;
	return rq->keepalive ? 0 : 1;
}

static void
serve(struct conn *c)
{
	if (c->m->tls != NULL) {
		c->ssl = SSL_new(c->m->tls);
		if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 || SSL_accept(c->ssl) != 1)
			return;
		atomic_fetch_add(SSL_session_reused(c->ssl) ? &c->m->tls_resumed : &c->m->tls_full, 1);
		if (SSL_version(c->ssl) == TLS1_3_VERSION)
			atomic_fetch_add(&c->m->tls13, 1);
	}
	while (serve_one(c) == 0)
		;
	if (c->ssl != NULL && !c->in_response)
		SSL_shutdown(c->ssl);
}

static void *
conn_thread(void *arg)
{
	struct conn *c = arg;
	struct mock *m = c->m;

	c->rq.body = malloc(SCAN_MAX + 1);
	c->tokbuf = malloc(TOKEN_BYTES_MAX);
	if (mock_reset_all) {
		/* Corked, the answer's last bytes leave with the FIN below, so a
		 * client never holds a complete answer on a connection that
		 * still looks open: a real server that resets right after its
		 * answer races the client's next request, and such a request
		 * may have been read, so a gateway rightly never resends it. */
		int one = 1;

		(void)setsockopt(c->fd, IPPROTO_TCP, TCP_CORK, &one, sizeof(one));
	}
	if (c->rq.body != NULL && c->tokbuf != NULL)
		serve(c);
	SSL_free(c->ssl);
	if (mock_reset_all) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };

		/* FIN with the answer, then the reset once the client has
		 * seen it (it closes) or after a second. */
		(void)shutdown(c->fd, SHUT_WR);
		(void)poll(&pfd, 1, 1000);
		(void)setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(c->fd);
	free(c->rq.body);
	free(c->tokbuf);
	free(c);
	atomic_fetch_sub(&m->open_conns, 1);
	return NULL;
}

/* ---- SSE streams ----------------------------------------------------------- */

/* What a TLS 1.3 server may send between records of a stream: a KeyUpdate
 * (every other one asking for the peer's) and NewSessionTickets, each sent
 * at once (SSL_do_handshake) so it lands between two events. */
static int
tls13_extras(struct conn *c)
{
	long ku = c->rq.key_update_every, tk = c->rq.ticket_every;

	if (c->ssl == NULL || SSL_version(c->ssl) != TLS1_3_VERSION)
		return 0;
	if (ku > 0 && c->events % ku == 0) {
		int kind = (c->events / ku) % 2 ? SSL_KEY_UPDATE_REQUESTED :
		    SSL_KEY_UPDATE_NOT_REQUESTED;
		if (SSL_key_update(c->ssl, kind) != 1 || SSL_do_handshake(c->ssl) != 1)
			return -1;
		atomic_fetch_add(&c->m->key_updates_sent, 1);
	}
	if (tk > 0 && c->events % tk == 0) {
		if (SSL_new_session_ticket(c->ssl) != 1 || SSL_do_handshake(c->ssl) != 1)
			return -1;
		atomic_fetch_add(&c->m->tickets_sent, 1);
	}
	return 0;
}

/* One SSE event as one HTTP chunk: [event: NAME\n]data: PRE TEXT POST\n\n,
 * flushed at once, then the x-mock-delay-ms pause. */
static int
sse_event(struct conn *c, const char *name, const struct sb *pre, const struct text *t,
    const char *post)
{
	char line[128];
	size_t len;

	if (c->rq.fail == FAIL_RESET && c->events >= c->reset_after) {
		out_flush(c);
		c->in_response = 0;	/* our own doing, not the peer's abort */
		conn_reset(c);
		return -1;
	}
	len = (name ? strlen(name) + 8 : 0) + 6 + pre->len + text_len(t) + strlen(post) + 2;
	snprintf(line, sizeof(line), "%zx\r\n", len);
	if (out_str(c, line) == -1)
		return -1;
	if (name != NULL && (out_str(c, "event: ") == -1 || out_str(c, name) == -1 ||
	    out_str(c, "\n") == -1))
		return -1;
	if (out_str(c, "data: ") == -1 || out_put(c, pre->buf, pre->len) == -1 ||
	    put_text(c, t) == -1 || out_str(c, post) == -1 || out_str(c, "\n\n\r\n") == -1 ||
	    out_flush(c) == -1)
		return -1;
	c->events++;
	if (tls13_extras(c) == -1)
		return -1;
	if (c->rq.delay_ms > 0 && wait_peer(c, c->rq.delay_ms) == -1)
		return -1;
	return 0;
}

static int
sse_plain(struct conn *c, const char *name, const char *data)
{
	struct sb s = { .len = 0 };

	sb_printf(&s, "%s", data);
	return sse_event(c, name, &s, &no_text, "");
}

static int
sse_end(struct conn *c)
{
	if (out_str(c, "0\r\n\r\n") == -1 || out_flush(c) == -1)
		return -1;
	c->in_response = 0;
	return 0;
}

static int
sse_begin(struct conn *c, long events)
{
	c->reset_after = events / 2 > 0 ? events / 2 : 1;
	return send_head(c, 200, "text/event-stream; charset=utf-8", -1);
}

/* Chat and legacy completions share one shape of stream. */
struct oai_stream {
	const char	*prefix;	/* JSON up to "choices" */
	const char	*delta_pre;	/* choice JSON before the token text */
	const char	*delta_post;
	const char	*finish_fmt;	/* choice JSON with finish_reason %s */
	const char	*first;		/* an opening choice, or NULL */
};

static int
oai_chunk(struct conn *c, const struct oai_stream *os, const char *choice,
    const struct text *t, const char *after)
{
	struct sb pre = { .len = 0 }, post = { .len = 0 };

	sb_printf(&pre, "%s[%s", os->prefix, choice);
	sb_printf(&post, "%s]%s}", after, c->rq.include_usage ? ",\"usage\":null" : "");
	return sse_event(c, NULL, &pre, t, post.buf);
}

static int
oai_stream(struct conn *c, const struct oai_stream *os, const char *finish)
{
	struct req *rq = &c->rq;
	struct sb fin = { .len = 0 }, use = { .len = 0 };
	struct text t = { 0, 0, rq->token_bytes };

	if (sse_begin(c, rq->tokens + 3) == -1)
		return -1;
	if (os->first != NULL && oai_chunk(c, os, os->first, &no_text, "") == -1)
		return -1;
	for (t.from = 0; t.from < rq->tokens; t.from++) {
		t.to = t.from + 1;
		if (oai_chunk(c, os, os->delta_pre, &t, os->delta_post) == -1)
			return -1;
		c->text_sent++;
	}
	sb_printf(&fin, os->finish_fmt, finish);
	if (oai_chunk(c, os, fin.buf, &no_text, "") == -1)
		return -1;
	if (rq->include_usage) {
		sb_printf(&use, "%s[],\"usage\":", os->prefix);
		openai_usage(&use, rq);
		sb_printf(&use, "}");
		if (use.overflow || sse_event(c, NULL, &use, &no_text, "") == -1)
			return -1;
	}
	if ((rq->hold_ms > 0 && wait_peer(c, rq->hold_ms) == -1) ||
	    sse_plain(c, NULL, "[DONE]") == -1)
		return -1;
	return sse_end(c);
}

static int
chat_stream(struct conn *c, const char *finish)
{
	char prefix[512];
	struct oai_stream os = {
		prefix,
		"{\"index\":0,\"delta\":{\"content\":\"",
		"\"},\"logprobs\":null,\"finish_reason\":null}",
		"{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"%s\"}",
		"{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},"
		    "\"logprobs\":null,\"finish_reason\":null}",
	};

	snprintf(prefix, sizeof(prefix), "{\"id\":\"chatcmpl-mock\",\"object\":"
	    "\"chat.completion.chunk\",\"created\":%lld,\"model\":\"%s\",%s%s%s"
	    "\"system_fingerprint\":\"fp_mock\",\"choices\":", now_ms() / 1000,
	    echo_model(&c->rq), c->rq.tier[0] ? "\"service_tier\":\"" : "", c->rq.tier,
	    c->rq.tier[0] ? "\"," : "");
	return oai_stream(c, &os, finish);
}

static int
completions_stream(struct conn *c, const char *finish)
{
	char prefix[512];
	struct oai_stream os = {
		prefix,
		"{\"text\":\"",
		"\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}",
		"{\"text\":\"\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"%s\"}",
		NULL,
	};

	snprintf(prefix, sizeof(prefix), "{\"id\":\"cmpl-mock\",\"object\":\"text_completion\","
	    "\"created\":%lld,\"model\":\"%s\",\"system_fingerprint\":\"fp_mock\",\"choices\":",
	    now_ms() / 1000, echo_model(&c->rq));
	return oai_stream(c, &os, finish);
}

/* A Responses API event whose payload is {"type":NAME,"sequence_number":N,BODY}. */
static int
resp_event(struct conn *c, const char *name, const char *body, const struct text *t,
    const char *post)
{
	struct sb pre = { .len = 0 };

	sb_printf(&pre, "{\"type\":\"%s\",\"sequence_number\":%ld,%s", name, c->events, body);
	return sse_event(c, name, &pre, t, post);
}

static int
resp_whole(struct conn *c, const char *name, const char *status, int with_output)
{
	struct sb pre = { .len = 0 }, post = { .len = 0 };
	struct text t = all_text(&c->rq);

	sb_printf(&pre, "{\"type\":\"%s\",\"sequence_number\":%ld,\"response\":", name, c->events);
	response_object(c, &pre, &post, status, with_output);
	sb_printf(&post, "}");
	return sse_event(c, name, &pre, with_output ? &t : &no_text, post.buf);
}

#define RESP_ITEM "\"output_index\":0,\"item\":{\"id\":\"msg_mock\",\"type\":\"message\"," \
	"\"role\":\"assistant\",\"status\":"
#define RESP_PART "\"item_id\":\"msg_mock\",\"output_index\":0,\"content_index\":0,"

/* Each search is an output item of its own, added then done. */
static int
resp_search_events(struct conn *c)
{
	struct sb body = { .len = 0 };
	long i;

	for (i = 0; i < c->rq.web_search; i++) {
		body.len = 0;
		sb_printf(&body, "\"output_index\":%ld,\"item\":", i);
		web_search_item(&body, i, "in_progress");
		sb_printf(&body, "}");
		if (resp_event(c, "response.output_item.added", body.buf, &no_text, "") == -1)
			return -1;
		body.len = 0;
		sb_printf(&body, "\"output_index\":%ld,\"item\":", i);
		web_search_item(&body, i, "completed");
		sb_printf(&body, "}");
		if (resp_event(c, "response.output_item.done", body.buf, &no_text, "") == -1)
			return -1;
	}
	return 0;
}

static int
responses_stream(struct conn *c)
{
	struct req *rq = &c->rq;
	struct text t = { 0, 0, rq->token_bytes }, all = all_text(rq);

	if (sse_begin(c, rq->tokens + 8) == -1 ||
	    resp_whole(c, "response.created", "in_progress", 0) == -1 ||
	    resp_whole(c, "response.in_progress", "in_progress", 0) == -1 ||
	    resp_search_events(c) == -1 ||
	    resp_event(c, "response.output_item.added", RESP_ITEM "\"in_progress\","
	    "\"content\":[]}}", &no_text, "") == -1 ||
	    resp_event(c, "response.content_part.added", RESP_PART "\"part\":{\"type\":"
	    "\"output_text\",\"annotations\":[],\"text\":\"\"}}", &no_text, "") == -1)
		return -1;
	for (t.from = 0; t.from < rq->tokens; t.from++) {
		t.to = t.from + 1;
		if (resp_event(c, "response.output_text.delta", RESP_PART "\"delta\":\"", &t,
		    "\"}") == -1)
			return -1;
		c->text_sent++;
	}
	if (resp_event(c, "response.output_text.done", RESP_PART "\"text\":\"", &all,
	    "\"}") == -1 ||
	    resp_event(c, "response.content_part.done", RESP_PART "\"part\":{\"type\":"
	    "\"output_text\",\"annotations\":[],\"text\":\"", &all, "\"}}") == -1 ||
	    resp_event(c, "response.output_item.done", RESP_ITEM "\"completed\",\"content\":"
	    "[{\"type\":\"output_text\",\"annotations\":[],\"text\":\"", &all, "\"}]}}") == -1 ||
	    (rq->hold_ms > 0 && wait_peer(c, rq->hold_ms) == -1) ||
	    resp_whole(c, "response.completed", "completed", 1) == -1)
		return -1;
	return sse_end(c);
}

static int
anthropic_delta(struct conn *c, const char *stop, long output)
{
	struct sb s = { .len = 0 };

	if (stop != NULL) {
		sb_printf(&s, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"%s\","
		    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":%ld", stop,
		    output + c->rq.reasoning);
		if (c->rq.web_search > 0 || c->rq.web_fetch > 0)
			server_tool_use(&s, &c->rq);
		sb_printf(&s, "}}");
	}
	else
		sb_printf(&s, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":null,"
		    "\"stop_sequence\":null},\"usage\":{\"output_tokens\":%ld}}", output);
	return sse_event(c, "message_delta", &s, &no_text, "");
}

/* Anthropic's mid-stream failure: a 200 stream that ends in an error event. */
static int
anthropic_error_end(struct conn *c)
{
	c->rq.errored = 1;
	if (sse_plain(c, "error", "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"overloaded_error\",\"message\":\"Overloaded\"}}") == -1)
		return -1;
	return sse_end(c);
}

static int
messages_stream(struct conn *c, const char *stop)
{
	struct req *rq = &c->rq;
	struct sb start = { .len = 0 }, delta = { .len = 0 };
	struct text t = { 0, 0, rq->token_bytes };

	sb_printf(&start, "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_mock\","
	    "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"%s\",\"content\":[],"
	    "\"stop_reason\":null,\"stop_sequence\":null,\"usage\":", echo_model(rq));
	{
		long ws = rq->web_search, wf = rq->web_fetch, r = rq->reasoning;

		/* the opening usage has neither searches nor reasoning yet */
		rq->web_search = rq->web_fetch = rq->reasoning = 0;
		anthropic_usage(&start, rq, 1);
		rq->web_search = ws;
		rq->web_fetch = wf;
		rq->reasoning = r;
	}
	sb_printf(&start, "}}");
	sb_printf(&delta, "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
	    "{\"type\":\"text_delta\",\"text\":\"");
	if (sse_begin(c, rq->tokens + 6) == -1 ||
	    sse_event(c, "message_start", &start, &no_text, "") == -1 ||
	    sse_plain(c, "content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
	    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}") == -1 ||
	    sse_plain(c, "ping", "{\"type\": \"ping\"}") == -1)
		return -1;
	for (t.from = 0; t.from < rq->tokens; t.from++) {
		t.to = t.from + 1;
		if (rq->error_after >= 0 && t.from >= rq->error_after)
			return anthropic_error_end(c);
		if (sse_event(c, "content_block_delta", &delta, &t, "\"}}") == -1)
			return -1;
		c->text_sent++;
	}
	if (sse_plain(c, "content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}") == -1 ||
	    (rq->two_deltas && anthropic_delta(c, NULL, rq->tokens / 2) == -1) ||
	    anthropic_delta(c, stop, rq->tokens) == -1 ||
	    (rq->hold_ms > 0 && wait_peer(c, rq->hold_ms) == -1) ||
	    sse_plain(c, "message_stop", "{\"type\":\"message_stop\"}") == -1)
		return -1;
	return sse_end(c);
}

static int
stream_dispatch(struct conn *c)
{
	struct req *rq = &c->rq;

	if (strcmp(rq->path, "/v1/chat/completions") == 0)
		return chat_stream(c, limit_tokens(rq, "stop", "length"));
	if (strcmp(rq->path, "/v1/completions") == 0)
		return completions_stream(c, limit_tokens(rq, "stop", "length"));
	if (strcmp(rq->path, "/v1/responses") == 0) {
		limit_tokens(rq, "", "");
		return responses_stream(c);
	}
	if (strcmp(rq->path, "/v1/messages") == 0)
		return messages_stream(c, limit_tokens(rq, "end_turn", "max_tokens"));
	return send_error(c, 400, "invalid_request_error", "stream is not supported here");
}

/* ---- start-up ------------------------------------------------------------ */

/* A TCP socket bound to 127.0.0.1:PORT (0: the kernel's choice, stored in
 * *BOUND), listening when LISTENING is set. A listener takes SO_REUSEADDR; a
 * socket held only to keep its port from others must not. */
static int
bind_loopback(const char *port, int listening, int *bound)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd, one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)atoi(port));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if ((listening && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1) ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    (listening && listen(fd, 4096) == -1) ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1) {
		close(fd);
		return -1;
	}
	*bound = ntohs(sin.sin_port);
	return fd;
}

/* Counts the KeyUpdates the peer sends (arg: the mock). */
static void
tls_msg(int write_p, int version, int type, const void *buf, size_t len, SSL *ssl, void *arg)
{
	struct mock *m = arg;

	(void)version, (void)ssl;
	if (!write_p && type == SSL3_RT_HANDSHAKE && len > 0 && ((const unsigned char *)buf)[0] == 24)
		atomic_fetch_add(&m->key_updates_seen, 1);
}

static SSL_CTX *
tls_context(struct mock *m, const char *cert, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL)
		return NULL;
	if (mock_tls12)
		SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_msg_callback(ctx, tls_msg);
	SSL_CTX_set_msg_callback_arg(ctx, m);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		ERR_print_errors_fp(stderr);
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static int
write_portfile(const char *path, int port)
{
	char tmp[4096];
	FILE *f;

	/* written whole, then renamed, so a waiting harness never reads half */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp, path) == -1)
		return -1;
	return 0;
}

static void
set_timeouts(int fd)
{
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		perror("mock_upstream: setsockopt");
}

static void
accept_loop(struct mock *m, int lfd)
{
	pthread_attr_t attr;
	pthread_t tid;
	struct conn *c;
	int fd;

	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	/* 1 MB: sanitizer builds pad every 8 KB string builder on the stack */
	pthread_attr_setstacksize(&attr, 1024 * 1024);
	for (;;) {
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno != EINTR && errno != ECONNABORTED)
				sleep_ms(10);	/* EMFILE and friends: let threads finish */
			continue;
		}
		set_timeouts(fd);
		c = calloc(1, sizeof(*c));
		if (c == NULL) {
			close(fd);
			continue;
		}
		c->m = m;
		c->fd = fd;
		atomic_fetch_add(&m->open_conns, 1);
		if (pthread_create(&tid, &attr, conn_thread, c) != 0) {
			atomic_fetch_sub(&m->open_conns, 1);
			close(fd);
			free(c);
		}
	}
}

static int
free_port(void)
{
	int port, fd = bind_loopback("0", 1, &port);

	if (fd == -1) {
		perror("mock_upstream: bind");
		return 1;
	}
	close(fd);
	printf("%d\n", port);
	return 0;
}

static int
hold_ports(const char *count, const char *file)
{
	char tmp[PATH_MAX];
	int i, n = atoi(count), port;
	FILE *f;

	/* Written aside and renamed: a reader sees all N lines or no file. */
	if (n < 1 || n > 1000 || snprintf(tmp, sizeof(tmp), "%s.tmp", file) >= (int)sizeof(tmp) ||
	    (f = fopen(tmp, "w")) == NULL)
		return 2;
	for (i = 0; i < n; i++) {
		if (bind_loopback("0", 0, &port) == -1) {
			perror("mock_upstream: hold-ports");
			return 1;
		}
		fprintf(f, "%d\n", port);	/* its socket stays open: the port stays held */
	}
	if (fclose(f) != 0 || rename(tmp, file) == -1) {
		perror("mock_upstream: hold-ports");
		return 1;
	}
	for (;;)
		pause();
}

static void
usage(void)
{
	fprintf(stderr, "usage: mock_upstream -p PORT [-t CERT KEY [-2]] [-l LOGFILE] [-P PORTFILE]\n"
	    "       [-R] [-B] [-S STATUS] [-D FIRST-DELAY-MS] [-H HEALTH-STATUS-FILE]\n"
	    "       mock_upstream --free-port\n"
	    "       mock_upstream --hold-ports N FILE\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct mock m;
	const char *port = NULL, *cert = NULL, *key = NULL, *logfile = NULL, *portfile = NULL;
	int ch, lfd, bound;

	if (argc == 2 && strcmp(argv[1], "--free-port") == 0)
		return free_port();
	if (argc == 4 && strcmp(argv[1], "--hold-ports") == 0)
		return hold_ports(argv[2], argv[3]);
	while ((ch = getopt(argc, argv, "p:t:l:P:RBS:D:H:2")) != -1) {
		switch (ch) {
		case 'p': port = optarg; break;
		case 't':
			if (optind >= argc)
				usage();
			cert = optarg;
			key = argv[optind++];
			break;
		case 'l': logfile = optarg; break;
		case 'P': portfile = optarg; break;
		case 'R': mock_reset_all = 1; break;
		case 'B': mock_bill_errors = 1; break;
		case 'S': mock_def_status = strtol(optarg, NULL, 10); break;
		case 'D': mock_def_first_delay = strtol(optarg, NULL, 10); break;
		case 'H': mock_health_file = optarg; break;
		case '2': mock_tls12 = 1; break;
		default: usage();
		}
	}
	if (port == NULL || optind != argc)
		usage();
	memset(&m, 0, sizeof(m));
	pthread_mutex_init(&m.log_lock, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (cert != NULL && (m.tls = tls_context(&m, cert, key)) == NULL)
		return 1;
	if (logfile != NULL && (m.log = fopen(logfile, "a")) == NULL) {
		perror(logfile);
		return 1;
	}
	if (logfile != NULL) {
		char bpath[PATH_MAX];

		snprintf(bpath, sizeof(bpath), "%s.bills", logfile);
		if ((m.bills = fopen(bpath, "a")) == NULL) {
			perror(bpath);
			return 1;
		}
	}
	if ((lfd = bind_loopback(port, 1, &bound)) == -1) {
		perror("mock_upstream: listen");
		return 1;
	}
	if (portfile != NULL && write_portfile(portfile, bound) == -1) {
		perror(portfile);
		return 1;
	}
	fprintf(stderr, "mock_upstream: listening on 127.0.0.1:%d%s\n", bound,
	    m.tls ? " (TLS)" : "");
	accept_loop(&m, lfd);
	return 0;
}

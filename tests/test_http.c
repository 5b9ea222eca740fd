/* Unit tests for the strict HTTP/1.1 parser and the chunked decoder. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tests/unit.h"
#include "common/http.h"

static struct kv_http_request req;
static struct kv_http_response res;

static int
parse_req(const char *s, size_t len, int *status)
{
	const char *reason = NULL;

	*status = 0;
	return kv_http_parse_request(s, len, &req, status, &reason);
}

/* Refusals are checked through a macro so a failure names the test line. */
#define REFUSE(s, want) do { \
	int st_; \
	CHECK_INT(parse_req((s), strlen(s), &st_), -1); \
	CHECK_INT(st_, (want)); \
} while (0)

#define ACCEPT(s) do { \
	int st_; \
	CHECK_INT(parse_req((s), strlen(s), &st_), (int)strlen(s)); \
} while (0)

static const char *
hval(const char *name)
{
	const struct kv_http_header *h;
	static char buf[256];

	h = kv_http_find(req.headers, req.nheaders, name);
	if (h == NULL || h->value_len >= sizeof(buf))
		return NULL;
	memcpy(buf, h->value, h->value_len);
	buf[h->value_len] = '\0';
	return buf;
}

static void
test_simple_get(void)
{
	const char *s = "GET /v1/models?x=1 HTTP/1.1\r\nHost: api.example\r\n"
	    "Accept: */*\r\n\r\n";
	int st;

	CHECK_INT(parse_req(s, strlen(s), &st), (int)strlen(s));
	CHECK_INT(req.method_len, 3);
	CHECK(memcmp(req.method, "GET", 3) == 0);
	CHECK_INT(req.target_len, strlen("/v1/models?x=1"));
	CHECK(memcmp(req.target, "/v1/models?x=1", req.target_len) == 0);
	CHECK_INT(req.minor, 1);
	CHECK_INT(req.nheaders, 2);
	CHECK_INT(req.content_length, -1);
	CHECK_INT(req.chunked, 0);
	CHECK_INT(req.keep_alive, 1);
	CHECK_INT(req.expect_continue, 0);
	CHECK_INT(req.head_len, strlen(s));
	CHECK_STR(hval("host"), "api.example");
	CHECK_STR(hval("ACCEPT"), "*/*");
	CHECK(hval("x-missing") == NULL);
}

/* Methods past KV_HTTP_MAX_METHOD are 501, never cut to fit. */
static void
test_long_method(void)
{
	const char *ok = "ABCDEFGHIJKLMNO / HTTP/1.1\r\nHost: x\r\n\r\n";
	const char *bad = "ABCDEFGHIJKLMNOP / HTTP/1.1\r\nHost: x\r\n\r\n";
	int st = 0;

	CHECK_INT(parse_req(ok, strlen(ok), &st), (int)strlen(ok));
	CHECK_INT(req.method_len, KV_HTTP_MAX_METHOD);
	CHECK_INT(parse_req(bad, strlen(bad), &st), -1);
	CHECK_INT(st, 501);
}

static void
test_post_with_body(void)
{
	const char *s = "POST /v1/chat/completions HTTP/1.1\r\nHost: h\r\n"
	    "Content-Length: 42\r\nContent-Type: application/json\r\n\r\n{\"a\":1}";
	int st;

	CHECK_INT(parse_req(s, strlen(s), &st), (int)(strlen(s) - 7));
	CHECK_INT(req.content_length, 42);
	CHECK_INT(req.head_len, strlen(s) - 7);
	CHECK_INT(req.chunked, 0);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
	CHECK_INT(req.content_length, 0);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 999999999999999\r\n\r\n");
	CHECK_INT(req.content_length, 999999999999999LL);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 007\r\n\r\n");
	CHECK_INT(req.content_length, 7);
}

static void
test_chunked_request(void)
{
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
	CHECK_INT(req.chunked, 1);
	CHECK_INT(req.content_length, -1);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n");
	CHECK_INT(req.chunked, 1);
	/* OWS around the value is trimmed: HTAB and spaces are fine */
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\tchunked\r\n\r\n");
	CHECK_INT(req.chunked, 1);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:   chunked \t\r\n\r\n");
	CHECK_INT(req.chunked, 1);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\ntransfer-encoding:chunked\r\n\r\n");
	CHECK_INT(req.chunked, 1);
}

static void
test_keep_alive(void)
{
	ACCEPT("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
	CHECK_INT(req.keep_alive, 1);
	ACCEPT("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
	CHECK_INT(req.keep_alive, 0);
	ACCEPT("GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n");
	CHECK_INT(req.keep_alive, 0);
	ACCEPT("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n");
	CHECK_INT(req.keep_alive, 1);
	ACCEPT("GET / HTTP/1.0\r\n\r\n");
	CHECK_INT(req.minor, 0);
	CHECK_INT(req.keep_alive, 0);
	ACCEPT("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
	CHECK_INT(req.keep_alive, 1);
	ACCEPT("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n");
	CHECK_INT(req.keep_alive, 0);
	ACCEPT("GET / HTTP/1.0\r\nConnection: keep-alivex\r\n\r\n");
	CHECK_INT(req.keep_alive, 0);
}

static void
test_expect(void)
{
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\n"
	    "Content-Length: 3\r\n\r\n");
	CHECK_INT(req.expect_continue, 1);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continuex\r\n\r\n");
	CHECK_INT(req.expect_continue, 0);
	/* RFC 9110 10.1.1: an HTTP/1.0 client's expectation is ignored */
	ACCEPT("POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
	CHECK_INT(req.expect_continue, 0);
}

static void
test_trimming(void)
{
	ACCEPT("GET / HTTP/1.1\r\nHost:h\r\nX-A:  a b  \r\nX-B:\t\r\nX-C: \t x\t\r\n"
	    "X-D: caf\xc3\xa9\r\n\r\n");
	CHECK_STR(hval("x-a"), "a b");
	CHECK_STR(hval("x-b"), "");
	CHECK_STR(hval("x-c"), "x");
	CHECK_STR(hval("x-d"), "caf\xc3\xa9");
	CHECK_STR(hval("host"), "h");
	CHECK_INT(req.nheaders, 5);
}

static int
hop_of(const char *name)
{
	const struct kv_http_header *h = kv_http_find(req.headers, req.nheaders,
	    name);

	return h == NULL ? -1 : h->hop;
}

static void
test_hop(void)
{
	ACCEPT("GET / HTTP/1.1\r\nX-Secret: 1\r\nHost: h\r\nConnection: x-secret, "
	    "keep-alive\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n"
	    "Proxy-Authorization: x\r\nUpgrade: h2c\r\nTrailer: x\r\n"
	    "Authorization: Bearer k\r\nX-Other: 2\r\n\r\n");
	CHECK_INT(hop_of("x-secret"), 1);
	CHECK_INT(hop_of("connection"), 1);
	CHECK_INT(hop_of("keep-alive"), 1);
	CHECK_INT(hop_of("te"), 1);
	CHECK_INT(hop_of("proxy-authorization"), 1);
	CHECK_INT(hop_of("upgrade"), 1);
	CHECK_INT(hop_of("trailer"), 1);
	CHECK_INT(hop_of("host"), 0);
	CHECK_INT(hop_of("authorization"), 0);
	CHECK_INT(hop_of("x-other"), 0);
	ACCEPT("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
	CHECK_INT(hop_of("transfer-encoding"), 1);
}

static void
test_empty(void)
{
	const char *reason = NULL;
	int st = -1;

	CHECK_INT(kv_http_parse_request(NULL, 0, &req, &st, &reason), 0);
	CHECK_INT(st, 0);
	CHECK(reason == NULL);
	CHECK_INT(kv_http_parse_response(NULL, 0, &res, NULL), 0);
	CHECK_INT(kv_http_parse_request("\r\n", 2, &req, &st, NULL), 0);
	CHECK_INT(kv_http_parse_request("GET / HTTP/1.1\r", 15, &req, &st, NULL), 0);
}

static void
test_leading_crlf(void)
{
	ACCEPT("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
	CHECK_INT(req.method_len, 3);
	REFUSE("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
}

/* Every proper prefix of a valid head needs more bytes; the whole head
 * parses to the same result wherever the reads happened to split it. */
static void
check_split_request(const char *s)
{
	size_t len = strlen(s), i;
	int st, r, bad = 0;
	char *copy;

	for (i = 0; i < len; i++) {
		copy = malloc(i + 1);	/* exact size: ASan sees overreads */
		memcpy(copy, s, i);
		r = kv_http_parse_request(copy, i, &req, &st, NULL);
		free(copy);
		if (r != 0) {
			fprintf(stderr, "prefix %zu of %s: %d\n", i, s, r);
			bad++;
		}
	}
	CHECK_INT(bad, 0);
}

static void
test_split_requests(void)
{
	const char *reqs[] = {
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		("\r\nPOST /v1/messages HTTP/1.1\r\nHost: a\r\nx-api-key: k\r\n"
		    "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"),
		"POST /x HTTP/1.0\r\nContent-Length: 12\r\nExpect: 100-continue\r\n\r\n",
	};
	struct kv_http_request whole;
	size_t i;
	int st;

	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		CHECK_INT(parse_req(reqs[i], strlen(reqs[i]), &st),
		    (int)strlen(reqs[i]));
		whole = req;
		check_split_request(reqs[i]);
		/* bytes of the next request after the head change nothing */
		{
			char buf[512];

			snprintf(buf, sizeof(buf), "%sGET / HTTP/1.1\r\n", reqs[i]);
			CHECK_INT(parse_req(buf, strlen(buf), &st),
			    (int)strlen(reqs[i]));
			CHECK_INT(req.content_length, whole.content_length);
			CHECK_INT(req.chunked, whole.chunked);
			CHECK_INT(req.keep_alive, whole.keep_alive);
			CHECK_INT(req.expect_continue, whole.expect_continue);
			CHECK_INT(req.nheaders, whole.nheaders);
			CHECK_INT(req.minor, whole.minor);
		}
	}
}

static void
test_smuggling_cl_te(void)
{
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 5\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 501);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 501);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked,\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", 400);
	/* odd whitespace: VT, FF, CR are not OWS */
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\x0b" "chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\x0c" "chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding : chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding\t: chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\n Transfer-Encoding: chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
}

static void
test_smuggling_cl(void)
{
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
	    "Content-Length: 5\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n"
	    "Content-Length: 6\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5 5\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x5\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5.0\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551621\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000000000\r\n\r\n", 400);
	REFUSE("POST / HTTP/1.1\r\nHost: h\r\nContent-Length : 5\r\n\r\n", 400);
}

static void
test_bad_bytes(void)
{
	static const char nul[] = "GET / HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n";
	int st;

	CHECK_INT(parse_req(nul, sizeof(nul) - 1, &st), -1);
	CHECK_INT(st, 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x7f\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x1b[0m\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n\tb\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nX(A): a\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\n: a\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nno colon\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\nX-\xc3\xa9: a\r\n\r\n", 400);
	/* bare LF anywhere, and bare CR as a line end */
	REFUSE("GET / HTTP/1.1\nHost: h\n\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\r\n\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: h\rX-A: b\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\rHost: h\r\n\r\n", 400);
}

static void
test_request_line(void)
{
	REFUSE("GET http://evil/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	/* A major version past 1 is 505 (RFC 9110 15.6.6), the HTTP/2
	 * preface of a client with prior knowledge included. */
	REFUSE("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505);
	REFUSE("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505);
	REFUSE("GET / HTTP/3.0\r\nHost: h\r\n\r\n", 505);
	REFUSE("GET / HTTP/2.x\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.2\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET / http/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400);
	REFUSE("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET /\tHTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET / a HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET /\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET /#frag HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE(" GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET\r\nHost: h\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\n\r\n", 400);	/* missing Host */
	REFUSE("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400);
	REFUSE("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
	ACCEPT("GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
	ACCEPT("GET / HTTP/1.1\r\nHost:\r\n\r\n");
	ACCEPT("M-SEARCH /a/b;c=d?e=f&g=%20 HTTP/1.1\r\nHost: h\r\n\r\n");
	/* every printable byte: refused in a Host exactly when RFC 3986's
	 * reg-name, IP-literal and port have no place for it */
	{
		char hreq[64];
		int ch;

		for (ch = 0x21; ch < 0x7f; ch++) {
			snprintf(hreq, sizeof(hreq), "GET / HTTP/1.1\r\nHost: a%cb\r\n\r\n", ch);
			if (strchr("/\\\"<>^`{|}#?@", ch) != NULL)
				REFUSE(hreq, 400);
			else
				ACCEPT(hreq);
		}
	}
}

/* A request of `n` bytes: a request line with a target of `target` bytes
 * and `nhdr` headers of `hlen` value bytes each, NUL-terminated. */
static char *
big_request(size_t target, size_t nhdr, size_t hlen, size_t *n)
{
	size_t cap = target + nhdr * (hlen + 32) + 128, off, i;
	char *s = malloc(cap);

	off = (size_t)sprintf(s, "GET /");
	memset(s + off, 'a', target);
	off += target;
	off += (size_t)sprintf(s + off, " HTTP/1.1\r\nHost: h\r\n");
	for (i = 0; i < nhdr; i++) {
		off += (size_t)sprintf(s + off, "X-%zu: ", i);
		memset(s + off, 'v', hlen);
		off += hlen;
		off += (size_t)sprintf(s + off, "\r\n");
	}
	off += (size_t)sprintf(s + off, "\r\n");
	*n = off;
	return s;
}

static void
check_big(size_t target, size_t nhdr, size_t hlen, int want_r, int want_st)
{
	size_t n;
	char *s = big_request(target, nhdr, hlen, &n);
	int st, r;

	r = parse_req(s, n, &st);
	CHECK_INT(r, want_r == 1 ? (int)n : want_r);
	if (want_r == -1)
		CHECK_INT(st, want_st);
	free(s);
}

static void
test_limits(void)
{
	size_t n;
	char *s;
	int st;

	check_big(10 * 1024, 0, 0, -1, 414);
	/* "GET /" target " HTTP/1.1" is target + 14 bytes */
	check_big(KV_HTTP_MAX_LINE - 14, 0, 0, 1, 0);	/* exactly at limit */
	check_big(KV_HTTP_MAX_LINE - 13, 0, 0, -1, 414);
	check_big(1, 1, 100 * 1024, -1, 431);
	check_big(1, 1000, 4, -1, 431);
	check_big(1, KV_HTTP_MAX_HEADERS - 1, 4, 1, 0);	/* + Host = 100 */
	check_big(1, KV_HTTP_MAX_HEADERS, 4, -1, 431);
	check_big(1, 1, KV_HTTP_MAX_HEAD, -1, 431);
	/* refusals come as soon as the buffered bytes pass the limit */
	s = big_request(10 * 1024, 0, 0, &n);
	CHECK_INT(parse_req(s, KV_HTTP_MAX_LINE + 100, &st), -1);
	CHECK_INT(st, 414);
	CHECK_INT(parse_req(s, KV_HTTP_MAX_LINE, &st), 0);
	free(s);
	s = big_request(1, 1, 100 * 1024, &n);
	CHECK_INT(parse_req(s, KV_HTTP_MAX_HEAD, &st), 0);
	CHECK_INT(parse_req(s, KV_HTTP_MAX_HEAD + 1, &st), -1);
	CHECK_INT(st, 431);
	free(s);
}

/* A head of exactly KV_HTTP_MAX_HEAD bytes is accepted, one more is not. */
static void
test_head_exact_limit(void)
{
	size_t n, pad;
	char *s = big_request(1, 1, 0, &n);
	int st;

	pad = KV_HTTP_MAX_HEAD - n;
	free(s);
	s = big_request(1, 1, pad, &n);
	CHECK_INT(n, KV_HTTP_MAX_HEAD);
	CHECK_INT(parse_req(s, n, &st), (int)n);
	free(s);
	s = big_request(1, 1, pad + 1, &n);
	CHECK_INT(parse_req(s, n, &st), -1);
	CHECK_INT(st, 431);
	free(s);
}

static int
parse_res(const char *s)
{
	return kv_http_parse_response(s, strlen(s), &res, NULL);
}

static void
test_response(void)
{
	const char *s = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	    "Transfer-Encoding: chunked\r\n\r\ndata: {}";
	size_t i;
	int bad = 0;

	CHECK_INT(parse_res(s), (int)strlen(s) - 8);
	CHECK_INT(res.status, 200);
	CHECK_INT(res.minor, 1);
	CHECK_INT(res.chunked, 1);
	CHECK_INT(res.keep_alive, 1);
	CHECK_INT(res.no_body, 0);
	CHECK_INT(res.nheaders, 2);
	for (i = 0; i < strlen(s) - 8; i++)
		if (kv_http_parse_response(s, i, &res, NULL) != 0)
			bad++;
	CHECK_INT(bad, 0);
	CHECK(parse_res("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n") > 0);
	CHECK_INT(res.content_length, 12);
	CHECK_INT(res.keep_alive, 1);
	CHECK(parse_res("HTTP/1.1 200 OK\r\n\r\n") > 0);
	CHECK_INT(res.keep_alive, 0);	/* body until close */
	CHECK(parse_res("HTTP/1.1 204 No Content\r\n\r\n") > 0);
	CHECK_INT(res.no_body, 1);
	CHECK_INT(res.keep_alive, 1);
	CHECK(parse_res("HTTP/1.1 304 Not Modified\r\n\r\n") > 0);
	CHECK_INT(res.no_body, 1);
	CHECK(parse_res("HTTP/1.1 100 Continue\r\n\r\n") > 0);
	CHECK_INT(res.status, 100);
	CHECK_INT(res.no_body, 1);
	CHECK(parse_res("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n") > 0);
	CHECK_INT(res.keep_alive, 0);
	CHECK(parse_res("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n"
	    "Connection: keep-alive\r\n\r\n") > 0);
	CHECK_INT(res.keep_alive, 1);
	CHECK(parse_res("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
	    "Connection: close\r\n\r\n") > 0);
	CHECK_INT(res.keep_alive, 0);
	CHECK(parse_res("HTTP/1.1 429\r\nContent-Length: 1\r\n\r\n") > 0);
	CHECK_INT(res.status, 429);
	CHECK(parse_res("HTTP/1.1 503 \x01weird\x80 reason\t!\r\n\r\n") > 0);
	CHECK_INT(res.status, 503);
}

static void
test_response_bad(void)
{
	CHECK_INT(parse_res("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
	    "Content-Length: 1\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), -1);
	{
		static const char nul[] = "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n";

		CHECK_INT(kv_http_parse_response(nul, sizeof(nul) - 1, &res,
		    NULL), -1);
	}
	CHECK_INT(parse_res("HTTP/1.1 200 OK\nX: a\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 20 OK\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 2000 OK\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 600 OK\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/2 200 OK\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 200 O\rK\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 200 OK\r\nX : a\r\n\r\n"), -1);
	CHECK_INT(parse_res("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"), -1);
	CHECK_INT(parse_res("ICY 200 OK\r\n\r\n"), -1);
}

/* ---- chunked ------------------------------------------------------------ */

#define check_chunked(s, payload, done, err) \
	check_chunked_n((s), strlen(s), (payload), (done), (err))

struct decoded {
	char	 out[4096];
	size_t	 outlen;
	int	 err;
	int	 done;
	size_t	 used;		/* input bytes consumed */
};

/* Feed s[0..len) in pieces of at most `step` bytes (0: all at once). */
static void
decode(const char *s, size_t len, size_t step, struct decoded *d)
{
	struct kv_chunked c;
	const char *data;
	size_t dlen, off = 0, piece;
	ssize_t n;

	memset(d, 0, sizeof(*d));
	kv_chunked_init(&c);
	while (off < len && !c.done) {
		piece = step == 0 || len - off < step ? len - off : step;
		while (piece > 0 && !c.done) {
			n = kv_chunked_feed(&c, s + off, piece, &data, &dlen);
			if (n <= 0) {
				d->err = 1;
				return;
			}
			if (dlen > 0 && d->outlen + dlen <= sizeof(d->out)) {
				memcpy(d->out + d->outlen, data, dlen);
				d->outlen += dlen;
			}
			off += (size_t)n;
			piece -= (size_t)n;
		}
	}
	d->done = c.done;
	d->used = off;
}

/* Decode whole, byte by byte and in 3-byte pieces: all must agree. */
static void
check_chunked_n(const char *s, size_t len, const char *payload, int done,
    int err)
{
	struct decoded a, b, c;

	decode(s, len, 0, &a);
	decode(s, len, 1, &b);
	decode(s, len, 3, &c);
	CHECK_INT(a.err, err);
	CHECK_INT(b.err, err);
	CHECK_INT(c.err, err);
	if (err)
		return;
	CHECK_INT(a.done, done);
	CHECK_INT(b.done, done);
	CHECK_INT(c.done, done);
	a.out[a.outlen] = b.out[b.outlen] = c.out[c.outlen] = '\0';
	CHECK_STR(a.out, payload);
	CHECK_STR(b.out, payload);
	CHECK_STR(c.out, payload);
}

static void
test_chunked_good(void)
{
	check_chunked("5\r\nhello\r\n0\r\n\r\n", "hello", 1, 0);
	check_chunked("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world", 1, 0);
	check_chunked("A\r\n0123456789\r\n0\r\n\r\n", "0123456789", 1, 0);
	check_chunked("a;ext=1;x=\"q s\"\r\n0123456789\r\n0;last\r\n\r\n",
	    "0123456789", 1, 0);
	check_chunked("3\r\nabc\r\n0\r\nX-Checksum: 1\r\nX-B:\r\n\r\n", "abc", 1, 0);
	check_chunked("000\r\n\r\n", "", 1, 0);
	check_chunked("5\r\nhel", "hel", 0, 0);
	check_chunked("5\r\nhello\r\n0\r\n", "hello", 0, 0);
}

static void
test_chunked_after_done(void)
{
	const char *s = "1\r\nx\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
	struct decoded d;
	struct kv_chunked c;
	const char *data;
	size_t dlen;

	decode(s, strlen(s), 0, &d);
	CHECK_INT(d.done, 1);
	CHECK_INT(d.used, strlen("1\r\nx\r\n0\r\n\r\n"));
	kv_chunked_init(&c);
	CHECK_INT(kv_chunked_feed(&c, "0\r\n\r\n", 5, &data, &dlen), 5);
	CHECK_INT(c.done, 1);
	CHECK_INT(kv_chunked_feed(&c, "0\r\n", 3, &data, &dlen), 0);
	CHECK_INT(dlen, 0);
}

static void
test_chunked_bad(void)
{
	char big[5000];

	check_chunked("-1\r\nx\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("+1\r\nx\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("0x10\r\n", "", 0, 1);
	check_chunked(" 5\r\nhello\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("5 \r\nhello\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("5\t\r\nhello\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("\r\nhello\r\n", "", 0, 1);
	check_chunked("fffffffffffffffff\r\n", "", 0, 1);	/* 17 digits */
	check_chunked("10000000001\r\n", "", 0, 1);		/* 2^40 + 1 */
	check_chunked("g\r\n", "", 0, 1);
	check_chunked("5\nhello\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("5\r\nhelloX\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("5\r\nhelloX\n0\r\n\r\n", "", 0, 1);
	check_chunked("5\r\nhello\r\r\n0\r\n\r\n", "", 0, 1);
	check_chunked("5\r\nhello\n0\r\n\r\n", "", 0, 1);
	check_chunked("5\r\nhello\r0\r\n\r\n", "", 0, 1);
	check_chunked("5\r\nhello\r\n0\r\n\n", "", 0, 1);
	check_chunked_n("5;a\0b\r\nhello\r\n", 11, "", 0, 1);
	check_chunked("5;a\rb\r\nhello\r\n", "", 0, 1);
	check_chunked("0\r\n bad: fold\r\n\r\n", "", 0, 1);
	check_chunked("0\r\nX : a\r\n\r\n", "", 0, 1);
	check_chunked("0\r\nX: a\nb\r\n\r\n", "", 0, 1);
	check_chunked("0\r\nX: a\x01\r\n\r\n", "", 0, 1);
	/* the largest size is accepted (payload not all present) */
	check_chunked("10000000000\r\nab", "ab", 0, 0);
	/* a chunk extension past 4 KB */
	memset(big, 'e', sizeof(big));
	memcpy(big, "1;", 2);
	memcpy(big + sizeof(big) - 7, "\r\nx\r\n", 6);
	check_chunked(big, "", 0, 1);
	memcpy(big + 4093, "\r\nx\r\n0\r\n\r\n", 11);	/* line of 4093 */
	check_chunked(big, "x", 1, 0);
}

static void
test_chunked_trailer_limits(void)
{
	char s[20000];
	size_t off, i;

	off = (size_t)sprintf(s, "0\r\nX: ");
	memset(s + off, 'a', 5000);
	sprintf(s + off + 5000, "\r\n\r\n");
	check_chunked(s, "", 0, 1);	/* one trailer line over 4 KB */
	off = (size_t)sprintf(s, "0\r\n");
	for (i = 0; i < 10; i++) {
		off += (size_t)sprintf(s + off, "X-%zu: ", i);
		memset(s + off, 'a', 1000);
		off += 1000;
		off += (size_t)sprintf(s + off, "\r\n");
	}
	sprintf(s + off, "\r\n");
	check_chunked(s, "", 0, 1);	/* 10 KB of trailers */
}

static void
test_chunked_error_sticks(void)
{
	struct kv_chunked c;
	const char *data;
	size_t dlen;

	kv_chunked_init(&c);
	CHECK_INT(kv_chunked_feed(&c, "z", 1, &data, &dlen), -1);
	CHECK_INT(kv_chunked_feed(&c, "0\r\n\r\n", 5, &data, &dlen), -1);
	CHECK_INT(c.done, 0);
}

/* kv_http_lit_eq, the word-at-a-time compare, against strncasecmp: every
 * name the workers compare, in each case pattern of its first 12 bytes and
 * with each byte changed to each printable or HTAB byte. */
static void
test_lit_eq(void)
{
	static const char *const lits[] = { "te", "host", "expect", "api-key",
	    "trailer", "bearer ", "identity", "x-api-key", "connection",
	    "keep-alive", "content-type", "authorization", "content-length",
	    "x-goog-api-key", "accept-encoding", "access-control-",
	    "anthropic-version", "transfer-encoding", "text/event-stream", "a" };
	char s[32];
	size_t i, j, n, bad = 0;
	unsigned mask, ch;

	for (i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		n = strlen(lits[i]);
		for (mask = 0; mask < (1u << (n < 12 ? n : 12)); mask++) {
			for (j = 0; j < n; j++)
				s[j] = j < 12 && (mask >> j & 1) && lits[i][j] >= 'a' &&
				    lits[i][j] <= 'z' ? (char)(lits[i][j] - 32) : lits[i][j];
			bad += !kv_http_lit_eq(s, lits[i], n);
		}
		for (j = 0; j < n; j++) {
			memcpy(s, lits[i], n);
			for (ch = 0x09; ch < 0x100; ch = ch == 0x09 ? 0x20 : ch + 1) {
				s[j] = (char)ch;
				bad += kv_http_lit_eq(s, lits[i], n) !=
				    (strncasecmp(s, lits[i], n) == 0);
			}
		}
	}
	CHECK_INT((int)bad, 0);
}

int
main(void)
{
	test_simple_get();
	test_lit_eq();
	test_long_method();
	test_post_with_body();
	test_chunked_request();
	test_keep_alive();
	test_expect();
	test_trimming();
	test_hop();
	test_empty();
	test_leading_crlf();
	test_split_requests();
	test_smuggling_cl_te();
	test_smuggling_cl();
	test_bad_bytes();
	test_request_line();
	test_limits();
	test_head_exact_limit();
	test_response();
	test_response_bad();
	test_chunked_good();
	test_chunked_after_done();
	test_chunked_bad();
	test_chunked_trailer_limits();
	test_chunked_error_sticks();
	return unit_done();
}

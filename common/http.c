/* Strict HTTP/1.1 head parser (RFC 9112); the chunked decoder is chunked.c.
 *
 * The parser works a line at a time over the caller's buffer and keeps no
 * state between calls: the caller re-parses the accumulated bytes, and only
 * complete lines are judged, so a prefix of a valid head always returns 0.
 * Limits are checked against what is already buffered so an attacker cannot
 * make us wait for a head we would refuse anyway. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <string.h>

#include "common/http.h"
#include "common/http_chars.h"

#define CL_MAX_DIGITS		15

/* IS_TCHAR's table (http_chars.h) */
const unsigned char kv_http_tchar[256] = {
	['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1,
	['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1,
	['`'] = 1, ['|'] = 1, ['~'] = 1,
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
	['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1,
	['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1,
	['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1,
	['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
	['Y'] = 1, ['Z'] = 1,
	['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
	['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1,
	['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
	['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
	['y'] = 1, ['z'] = 1,
};

enum { TE_NONE, TE_CHUNKED, TE_UNKNOWN };

/* What the header lines told us, before the message-level checks. */
struct http_fields {
	struct kv_http_header *hdr;
	size_t		 n;
	int64_t		 content_length;
	int		 ncl, nte, nhost, te;
	int		 nconn;		/* Connection headers: none, no names to mark */
	int		 conn_close, conn_keepalive, expect;
};

struct http_err {
	int		 status;
	const char	*reason;
};

static int
http_fail(struct http_err *e, int status, const char *reason)
{
	e->status = status;
	e->reason = reason;
	return -1;
}

/* ASCII case-insensitive equality of s[0..n) with a lower-case literal. */
static int
http_ieq(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (lit[i] == '\0')
			return 0;
		if (ch >= 'A' && ch <= 'Z')
			ch += 'a' - 'A';
		if (ch != (unsigned char)lit[i])
			return 0;
	}
	return lit[n] == '\0';
}

static int
http_ieq2(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i;

	if (alen != blen)
		return 0;
	for (i = 0; i < alen; i++) {
		unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];

		if (x >= 'A' && x <= 'Z')
			x += 'a' - 'A';
		if (y >= 'A' && y <= 'Z')
			y += 'a' - 'A';
		if (x != y)
			return 0;
	}
	return 1;
}

/* Find the end of the line starting at off within buf[0..lim).
 * Returns 1 with *cr at the CR of the CRLF, 0 when no LF yet, -1 for a bare
 * LF. A bare CR inside the line is left for the byte checks to refuse. */
static int
http_line(const char *buf, size_t lim, size_t off, size_t *cr)
{
	const char *lf;

	if (off >= lim)
		return 0;	/* nothing buffered (buf may even be NULL) */
	lf = memchr(buf + off, '\n', lim - off);
	if (lf == NULL)
		return 0;
	if (lf == buf + off || lf[-1] != '\r')
		return -1;
	*cr = (size_t)(lf - buf) - 1;
	return 1;
}

/* One element of a comma-separated list: skips OWS and commas-with-nothing
 * is left to the caller. Returns the end of the element (at ',' or end). */
static size_t
http_list_next(const char *v, size_t n, size_t off, size_t *start, size_t *len)
{
	size_t end;

	while (off < n && IS_OWS(v[off]))
		off++;
	*start = off;
	while (off < n && v[off] != ',')
		off++;
	end = off;
	while (end > *start && IS_OWS(v[end - 1]))
		end--;
	*len = end - *start;
	return off;
}

static int
http_is_token(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!IS_TCHAR(s[i]))
			return 0;
	return 1;
}

/* Classify a Transfer-Encoding value. Only exactly "chunked" is decoded;
 * "chunked" anywhere else (not last, twice, with other codings before it)
 * leaves the body length ambiguous and is refused as malformed (400), like
 * a list that is not a list of tokens; a well-formed list of codings we do
 * not implement is 501 (RFC 9112 6.1). */
static int
http_te(const char *v, size_t n, struct http_fields *f, struct http_err *e)
{
	size_t off = 0, s, l;
	int nelem = 0, nchunked = 0;

	for (;;) {
		off = http_list_next(v, n, off, &s, &l);
		if (!http_is_token(v + s, l))
			return http_fail(e, 400, "malformed Transfer-Encoding");
		nelem++;
		if (http_ieq(v + s, l, "chunked"))
			nchunked++;
		if (off >= n)
			break;
		off++;
	}
	if (nchunked == 1 && nelem == 1)
		f->te = TE_CHUNKED;
	else if (nchunked > 0)
		return http_fail(e, 400, "chunked not the only transfer coding");
	else
		f->te = TE_UNKNOWN;
	return 0;
}

static int
http_content_length(const char *v, size_t n, struct http_fields *f,
    struct http_err *e)
{
	int64_t cl = 0;
	size_t i;

	if (++f->ncl > 1)
		return http_fail(e, 400, "duplicate Content-Length");
	if (n == 0 || n > CL_MAX_DIGITS)
		return http_fail(e, 400, "bad Content-Length");
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return http_fail(e, 400, "bad Content-Length");
		cl = cl * 10 + (v[i] - '0');
	}
	f->content_length = cl;
	return 0;
}

static void
http_connection(const char *v, size_t n, struct http_fields *f)
{
	size_t off = 0, s, l;

	while (off < n) {
		off = http_list_next(v, n, off, &s, &l) + 1;
		if (http_ieq(v + s, l, "close"))
			f->conn_close = 1;
		else if (http_ieq(v + s, l, "keep-alive"))
			f->conn_keepalive = 1;
	}
}

/* The bytes a Host never holds: controls, space, bytes from 0x80 (DEL is
 * the field check's to refuse) and the printable ones RFC 3986's reg-name,
 * IP-literal and port leave out. A table, not a strchr per byte
 * of every request's Host. */
static const uint8_t host_bad[256] = {
	[0x00 ... 0x20] = 1, [0x80 ... 0xff] = 1,
	['/'] = 1, ['\\'] = 1, ['"'] = 1, ['<'] = 1, ['>'] = 1, ['^'] = 1, ['`'] = 1,
	['{'] = 1, ['|'] = 1, ['}'] = 1, ['#'] = 1, ['?'] = 1, ['@'] = 1,
};

/* Host per RFC 3986 reg-name / IP-literal / port; empty is allowed. */
static int
http_host_ok(const char *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (host_bad[(unsigned char)v[i]])
			return 0;
	return 1;
}

#define NAME_IS(n, lit)	kv_http_lit_eq((n), (lit), sizeof(lit) - 1)

/* Called for every header: the length picks the one or two candidates,
 * each compared a word at a time (names are tokens: kv_http_lit_eq). */
static int
http_hop_name(const char *n, size_t len)
{
	if (len > 6 && NAME_IS(n, "proxy-"))
		return 1;
	switch (len) {
	case 2:
		return NAME_IS(n, "te");
	case 7:
		return NAME_IS(n, "trailer") || NAME_IS(n, "upgrade");
	case 10:
		return NAME_IS(n, "connection") || NAME_IS(n, "keep-alive");
	case 17:
		return NAME_IS(n, "transfer-encoding");
	default:
		return 0;
	}
}

/* The headers whose meaning the proxy itself depends on. */
static int
http_field(const struct kv_http_header *h, struct http_fields *f,
    struct http_err *e)
{
	const char *n = h->name;

	switch (h->name_len) {
	case 14:
		if (NAME_IS(n, "content-length"))
			return http_content_length(h->value, h->value_len, f, e);
		return 0;
	case 17:
		if (!NAME_IS(n, "transfer-encoding"))
			return 0;
		if (++f->nte > 1)
			return http_fail(e, 400, "duplicate Transfer-Encoding");
		return http_te(h->value, h->value_len, f, e);
	case 4:
		if (!NAME_IS(n, "host"))
			return 0;
		if (++f->nhost > 1)
			return http_fail(e, 400, "duplicate Host");
		if (!http_host_ok(h->value, h->value_len))
			return http_fail(e, 400, "bad Host");
		return 0;
	case 10:
		if (NAME_IS(n, "connection")) {
			f->nconn++;
			http_connection(h->value, h->value_len, f);
		}
		return 0;
	case 6:
		if (NAME_IS(n, "expect"))
			f->expect = http_ieq(h->value, h->value_len, "100-continue");
		return 0;
	default:
		return 0;	/* not one of ours */
	}
}

/* Whether p[0..n) holds only field bytes. Eight bytes at a time first:
 * most values (keys, user agents) have no HTAB or control byte at all, and
 * this runs over every byte of every head. */
static int
http_field_ok(const char *p, size_t n)
{
	const uint64_t ones = 0x0101010101010101ULL;
	const uint64_t highs = 0x8080808080808080ULL;
	uint64_t w, del;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, sizeof(w));
		del = w ^ (ones * 0x7f);
		/* exact "some byte < 0x20" and "some byte == 0x7f" tests */
		if ((((w - ones * 0x20) & ~w) | ((del - ones) & ~del)) & highs)
			break;
	}
	for (; i < n; i++)
		if (!IS_FIELD(p[i]))
			return 0;
	return 1;
}

/* Split one field line p[0..n) (without CRLF) into name and trimmed value. */
static int
http_field_line(const char *p, size_t n, struct kv_http_header *h,
    struct http_err *e)
{
	size_t i = 0, vs, ve;

	if (IS_OWS(p[0]))
		return http_fail(e, 400, "obs-fold");
	while (i < n && IS_TCHAR(p[i]))
		i++;
	if (i == n || p[i] != ':')
		return http_fail(e, 400, i < n && IS_OWS(p[i]) ?
		    "whitespace before colon" : "bad header name");
	if (i == 0)
		return http_fail(e, 400, "empty header name");
	if (!http_field_ok(p + i + 1, n - i - 1))
		return http_fail(e, 400, "control byte in header value");
	vs = i + 1;
	while (vs < n && IS_OWS(p[vs]))
		vs++;
	ve = n;
	while (ve > vs && IS_OWS(p[ve - 1]))
		ve--;
	h->name = p;
	h->name_len = i;
	h->value = p + vs;
	h->value_len = ve - vs;
	h->hop = http_hop_name(p, i);
	return 0;
}

/* Mark headers named in any Connection header as hop-by-hop. */
static void
http_mark_hop(struct kv_http_header *hdr, size_t n)
{
	size_t i, j, off, s, l;

	for (i = 0; i < n; i++) {
		if (!http_ieq(hdr[i].name, hdr[i].name_len, "connection"))
			continue;
		for (off = 0; off < hdr[i].value_len; off++) {
			off = http_list_next(hdr[i].value, hdr[i].value_len,
			    off, &s, &l);
			for (j = 0; j < n && l > 0; j++)
				if (http_ieq2(hdr[j].name, hdr[j].name_len,
				    hdr[i].value + s, l))
					hdr[j].hop = 1;
		}
	}
}

/* When no complete head is buffered: refuse once the limit is passed. */
static int
http_incomplete(size_t len, struct http_err *e)
{
	if (len > KV_HTTP_MAX_HEAD)
		return http_fail(e, 431, "head too large");
	return 0;
}

/* Parse field lines from off up to and including the empty line.
 * Returns the head length, 0 for more, -1 on error. */
static int
http_fields(const char *buf, size_t len, size_t off, struct http_fields *f,
    struct http_err *e)
{
	size_t lim = len < KV_HTTP_MAX_HEAD ? len : KV_HTTP_MAX_HEAD, cr;
	int r;

	for (;;) {
		if ((r = http_line(buf, lim, off, &cr)) != 1)
			return r == 0 ? http_incomplete(len, e) :
			    http_fail(e, 400, "bare LF");
		if (cr == off)
			return (int)(cr + 2);
		if (f->n == KV_HTTP_MAX_HEADERS)
			return http_fail(e, 431, "too many headers");
		if (http_field_line(buf + off, cr - off, &f->hdr[f->n], e) == -1 ||
		    http_field(&f->hdr[f->n], f, e) == -1)
			return -1;
		f->n++;
		off = cr + 2;
	}
}

static void
http_fields_init(struct http_fields *f, struct kv_http_header *hdr)
{
	memset(f, 0, sizeof(*f));
	f->hdr = hdr;
	f->content_length = -1;
}

/* "HTTP/1.0" or "HTTP/1.1": the minor version, or -1. */
static int
http_version(const char *p, size_t n)
{
	if (n != 8 || memcmp(p, "HTTP/1.", 7) != 0)
		return -1;
	if (p[7] == '0' || p[7] == '1')
		return p[7] - '0';
	return -1;
}

/* The bytes a target never holds: controls, space, DEL and above, and '#'
 * (a fragment is the client's own). */
static const uint8_t target_bad[256] = {
	[0x00 ... 0x20] = 1, [0x7f ... 0xff] = 1, ['#'] = 1,
};

static int
http_target_ok(const char *p, size_t n)
{
	size_t i;

	if (n == 0 || p[0] != '/')
		return 0;
	for (i = 0; i < n; i++)
		if (target_bad[(unsigned char)p[i]])
			return 0;
	return 1;
}

/* method SP origin-form SP HTTP-version, p[0..n) without the CRLF. */
static int
http_request_line(const char *p, size_t n, struct kv_http_request *req,
    struct http_err *e)
{
	const char *sp1, *sp2;

	if (n > KV_HTTP_MAX_LINE)
		return http_fail(e, 414, "request line too long");
	sp1 = memchr(p, ' ', n);
	if (sp1 == NULL || !http_is_token(p, (size_t)(sp1 - p)))
		return http_fail(e, 400, "bad method");
	/* No method we relay is this long; cutting one would forward another. */
	if ((size_t)(sp1 - p) > KV_HTTP_MAX_METHOD)
		return http_fail(e, 501, "method not implemented (too long)");
	sp2 = memchr(sp1 + 1, ' ', n - (size_t)(sp1 + 1 - p));
	if (sp2 == NULL)
		return http_fail(e, 400, "bad request line");
	req->method = p;
	req->method_len = (size_t)(sp1 - p);
	req->target = sp1 + 1;
	req->target_len = (size_t)(sp2 - sp1 - 1);
	/* "PRI * HTTP/2.0" (the HTTP/2 preface of a client with prior
	 * knowledge) or any major version but 1: say so, not "bad target". */
	if (n - (size_t)(sp2 + 1 - p) == 8 && memcmp(sp2 + 1, "HTTP/", 5) == 0 &&
	    sp2[6] >= '2' && sp2[6] <= '9' && sp2[7] == '.' &&
	    sp2[8] >= '0' && sp2[8] <= '9')
		return http_fail(e, 505, "HTTP/2 is not supported: kilovolt speaks "
		    "HTTP/1.1 (do not use HTTP/2 prior knowledge)");
	if (!http_target_ok(req->target, req->target_len))
		return http_fail(e, 400, "target not in origin-form");
	req->minor = http_version(sp2 + 1, n - (size_t)(sp2 + 1 - p));
	if (req->minor == -1)
		return http_fail(e, 400, "bad HTTP version");
	return 0;
}

/* Message-level rules once every header is known (RFC 9112 6.1, 6.3). */
static int
http_request_check(struct kv_http_request *req, const struct http_fields *f,
    struct http_err *e)
{
	if (f->nhost == 0 && req->minor == 1)
		return http_fail(e, 400, "missing Host");
	if (f->nte > 0 && f->ncl > 0)
		return http_fail(e, 400, "Content-Length with Transfer-Encoding");
	if (f->nte > 0 && req->minor == 0)
		return http_fail(e, 400, "Transfer-Encoding in HTTP/1.0");
	if (f->te == TE_UNKNOWN)
		return http_fail(e, 501, "unknown transfer coding");
	req->nheaders = f->n;
	req->content_length = f->content_length;
	req->chunked = f->te == TE_CHUNKED;
	req->keep_alive = req->minor == 1 ? !f->conn_close :
	    f->conn_keepalive && !f->conn_close;
	/* RFC 9110 10.1.1: ignore 100-continue from an HTTP/1.0 client */
	req->expect_continue = f->expect && req->minor == 1;
	if (f->nconn > 0)
		http_mark_hop(req->headers, f->n);
	return 0;
}

/* Bytes of leading CRLFs, which RFC 9112 2.2 lets a server ignore (clients
 * sometimes send one after a POST body). */
static size_t
http_skip_crlf(const char *buf, size_t len)
{
	size_t off = 0;

	while (off + 1 < len && buf[off] == '\r' && buf[off + 1] == '\n' &&
	    off < KV_HTTP_MAX_HEAD)
		off += 2;
	return off;
}

static int
http_request(const char *buf, size_t len, struct kv_http_request *req,
    struct http_err *e)
{
	struct http_fields f;
	size_t lim = len < KV_HTTP_MAX_HEAD ? len : KV_HTTP_MAX_HEAD;
	size_t off = http_skip_crlf(buf, lim), cr;
	int r;

	if ((r = http_line(buf, lim, off, &cr)) == -1)
		return http_fail(e, 400, "bare LF");
	if (r == 0) {
		/* the CR of a line exactly at the limit may be buffered */
		if (lim - off > KV_HTTP_MAX_LINE + 1)
			return http_fail(e, 414, "request line too long");
		return http_incomplete(len, e);
	}
	if (http_request_line(buf + off, cr - off, req, e) == -1)
		return -1;
	http_fields_init(&f, req->headers);
	if ((r = http_fields(buf, len, cr + 2, &f, e)) <= 0)
		return r;
	if (http_request_check(req, &f, e) == -1)
		return -1;
	req->head_len = (size_t)r;
	return r;
}

int
kv_http_parse_request(const char *buf, size_t len,
    struct kv_http_request *req, int *status, const char **reason)
{
	struct http_err e = { 0, NULL };
	int r;

	memset(req, 0, offsetof(struct kv_http_request, headers));
	req->nheaders = 0;
	req->content_length = -1;
	req->head_len = 0;
	r = http_request(buf, len, req, &e);
	if (status != NULL)
		*status = e.status;
	if (reason != NULL)
		*reason = e.reason;
	return r;
}

/* HTTP/1.x SP 3DIGIT [SP reason]. The reason phrase is only logged, so
 * any byte but NUL is accepted there (CR and LF cannot reach it). */
static int
http_status_line(const char *p, size_t n, struct kv_http_response *res,
    struct http_err *e)
{
	size_t i;

	if (n > KV_HTTP_MAX_LINE)
		return http_fail(e, 502, "status line too long");
	if (n < 12 || (res->minor = http_version(p, 8)) == -1 || p[8] != ' ')
		return http_fail(e, 502, "bad status line");
	if (p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9')
		return http_fail(e, 502, "bad status code");
	res->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (n > 12 && p[12] != ' ')
		return http_fail(e, 502, "bad status line");
	for (i = 12; i < n; i++)
		if (p[i] == '\0' || p[i] == '\r')
			return http_fail(e, 502, "control byte in reason");
	return 0;
}

static int
http_response_check(struct kv_http_response *res, const struct http_fields *f,
    struct http_err *e)
{
	if (f->nte > 0 && f->ncl > 0)
		return http_fail(e, 502, "Content-Length with Transfer-Encoding");
	if (f->nte > 0 && f->te != TE_CHUNKED)
		return http_fail(e, 502, "unsupported transfer coding");
	res->nheaders = f->n;
	res->content_length = f->content_length;
	res->chunked = f->te == TE_CHUNKED;
	res->no_body = res->status < 200 || res->status == 204 ||
	    res->status == 304;
	res->keep_alive = res->minor == 1 ? !f->conn_close :
	    f->conn_keepalive && !f->conn_close;
	/* a body that ends at close leaves nothing to reuse */
	if (!res->no_body && !res->chunked && res->content_length == -1)
		res->keep_alive = 0;
	if (f->nconn > 0)
		http_mark_hop(res->headers, f->n);
	return 0;
}

static int
http_response(const char *buf, size_t len, struct kv_http_response *res,
    struct http_err *e)
{
	struct http_fields f;
	size_t lim = len < KV_HTTP_MAX_HEAD ? len : KV_HTTP_MAX_HEAD, cr;
	int r;

	if ((r = http_line(buf, lim, 0, &cr)) == -1)
		return http_fail(e, 502, "bare LF");
	if (r == 0) {
		if (lim > KV_HTTP_MAX_LINE + 1)
			return http_fail(e, 502, "status line too long");
		return http_incomplete(len, e);
	}
	if (http_status_line(buf, cr, res, e) == -1)
		return -1;
	http_fields_init(&f, res->headers);
	if ((r = http_fields(buf, len, cr + 2, &f, e)) <= 0)
		return r;
	if (http_response_check(res, &f, e) == -1)
		return -1;
	res->head_len = (size_t)r;
	return r;
}

int
kv_http_parse_response(const char *buf, size_t len,
    struct kv_http_response *res, const char **reason)
{
	struct http_err e = { 0, NULL };
	int r;

	memset(res, 0, offsetof(struct kv_http_response, headers));
	res->nheaders = 0;
	res->content_length = -1;
	res->head_len = 0;
	r = http_response(buf, len, res, &e);
	if (reason != NULL)
		*reason = e.reason;
	return r;
}

const struct kv_http_header *
kv_http_findn(const struct kv_http_header *h, size_t n, const char *name, size_t nl)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (h[i].name_len == nl && http_ieq2(h[i].name, nl, name, nl))
			return &h[i];
	return NULL;
}

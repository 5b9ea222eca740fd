/* The SigV4 canonical request: method, canonical URI (dot segments and
 * empty segments removed, every byte but unreserved ones and '/'
 * percent-encoded, the request's own escapes included), canonical query
 * (each parameter decoded, re-encoded, sorted by name then value),
 * canonical headers (lowercase names sorted, values with runs of blanks
 * folded), the signed-header list and the body hash: the text AWS's
 * signer hashes. Pure string work into caller buffers. */
#include "common/sigv4.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/hex.h"
#include "common/http_chars.h"

struct wbuf {
	char	*p;
	size_t	 cap, len;
	int	 over;
};

struct span {
	const char	*p;
	size_t		 n;
};

struct qparam {
	struct span	name, value;	/* encoded, in the scratch buffer */
};

struct hdr {
	const char	*name;
	size_t		 name_len;
	const char	*value;
	size_t		 value_len;
};

static void
put(struct wbuf *w, const char *s, size_t n)
{
	if (w->over || n > w->cap - w->len) {
		w->over = 1;
		return;
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void
puts_(struct wbuf *w, const char *s)
{
	put(w, s, strlen(s));
}

static int
unreserved(unsigned char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~';
}

/* S[0..N) URI-encoded as AWS's escapeUri does (RFC 3986 unreserved kept,
 * uppercase hex), '/' kept when SLASH. */
static void
put_enc(struct wbuf *w, const char *s, size_t n, int slash)
{
	static const char hex[] = "0123456789ABCDEF";
	char e[3] = { '%' };
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (unreserved(ch) || (slash && ch == '/')) {
			put(w, s + i, 1);
			continue;
		}
		e[1] = hex[ch >> 4];
		e[2] = hex[ch & 15];
		put(w, e, 3);
	}
}

static int
fail(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return -1;
}

/* The canonical URI of PATH[0..N): segments "" and "." dropped, ".." drops
 * the one before, as AWS's signer normalises before encoding. */
static int
canon_path(struct wbuf *w, const char *path, size_t n, char *err, size_t errlen)
{
	struct span seg[KV_SIGV4_SEGMENTS_MAX];
	size_t nseg = 0, i = 0, j, k;

	while (i <= n) {
		for (j = i; j < n && path[j] != '/'; j++)
			;
		if (j - i == 2 && path[i] == '.' && path[i + 1] == '.') {
			nseg -= nseg > 0;
		} else if (j > i && !(j - i == 1 && path[i] == '.')) {
			if (nseg == KV_SIGV4_SEGMENTS_MAX)
				return fail(err, errlen, "too many path segments");
			seg[nseg].p = path + i;
			seg[nseg++].n = j - i;
		}
		i = j + 1;
	}
	put(w, "/", n > 0 && path[0] == '/');
	for (k = 0; k < nseg; k++) {
		put(w, "/", k > 0);
		put_enc(w, seg[k].p, seg[k].n, 0);
	}
	put(w, "/", nseg > 0 && path[n - 1] == '/');
	return 0;
}

/* S[0..N) percent-decoded, then encoded into SCRATCH; the result in OUT. */
static int
reencode(struct wbuf *scratch, const char *s, size_t n, struct span *out)
{
	size_t i, start = scratch->len;
	char ch;
	int hi, lo;

	for (i = 0; i < n; i++) {
		ch = s[i];
		if (ch == '%') {
			if (n - i < 3 || (hi = kv_hexval((unsigned char)s[i + 1])) < 0 ||
			    (lo = kv_hexval((unsigned char)s[i + 2])) < 0)
				return -1;
			ch = (char)(hi << 4 | lo);
			i += 2;
		}
		put_enc(scratch, &ch, 1, 0);
	}
	out->p = scratch->p + start;
	out->n = scratch->len - start;
	return 0;
}

static int
span_cmp(const struct span *a, const struct span *b)
{
	int c = memcmp(a->p, b->p, a->n < b->n ? a->n : b->n);

	return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* 1 when the encoded name ENC is x-amz-signature, any case (AWS's
 * signer leaves that parameter out, for presigned URLs). */
static int
is_signature_param(const struct span *enc)
{
	return enc->n == 15 && strncasecmp(enc->p, "x-amz-signature", 15) == 0;
}

/* Split the query at '&' and '='; empty pieces are skipped, a piece
 * without '=' is a name with an empty value. */
static int
parse_query(const char *q, size_t n, struct wbuf *scratch, struct qparam *pv, size_t *np,
    char *err, size_t errlen)
{
	size_t i = 0, j, eq;

	*np = 0;
	while (i < n) {
		for (j = i; j < n && q[j] != '&'; j++)
			;
		if (j > i) {
			for (eq = i; eq < j && q[eq] != '='; eq++)
				;
			if (*np == KV_SIGV4_QUERY_MAX)
				return fail(err, errlen, "too many query parameters");
			if (reencode(scratch, q + i, eq - i, &pv[*np].name) == -1 ||
			    reencode(scratch, q + eq + (eq < j), j - eq - (eq < j), &pv[*np].value) == -1)
				return fail(err, errlen, "malformed percent-escape in the query");
			if (!is_signature_param(&pv[*np].name))
				(*np)++;
		}
		i = j + 1;
	}
	return scratch->over ? fail(err, errlen, "query too long") : 0;
}

static int
query_cmp(const struct qparam *a, const struct qparam *b)
{
	int c = span_cmp(&a->name, &b->name);

	return c ? c : span_cmp(&a->value, &b->value);
}

static int
canon_query(struct wbuf *w, const char *q, size_t n, char *err, size_t errlen)
{
	char sbuf[KV_SIGV4_CANON_MAX];
	struct wbuf scratch = { sbuf, sizeof(sbuf), 0, 0 };
	struct qparam pv[KV_SIGV4_QUERY_MAX], t;
	size_t np, i, j;

	if (parse_query(q, n, &scratch, pv, &np, err, errlen) == -1)
		return -1;
	for (i = 1; i < np; i++)	/* insertion sort: a handful at most */
		for (j = i; j > 0 && query_cmp(&pv[j - 1], &pv[j]) > 0; j--) {
			t = pv[j];
			pv[j] = pv[j - 1];
			pv[j - 1] = t;
		}
	for (i = 0; i < np; i++) {
		put(w, "&", i > 0);
		put(w, pv[i].name.p, pv[i].name.n);
		put(w, "=", 1);
		put(w, pv[i].value.p, pv[i].value.n);
	}
	return 0;
}

/* Case-insensitive order of header names, as AWS sorts lowercased names. */
static int
name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i;
	int ca, cb;

	for (i = 0; i < an && i < bn; i++) {
		ca = (a[i] >= 'A' && a[i] <= 'Z') ? a[i] | 0x20 : (unsigned char)a[i];
		cb = (b[i] >= 'A' && b[i] <= 'Z') ? b[i] | 0x20 : (unsigned char)b[i];
		if (ca != cb)
			return ca - cb;
	}
	return (an > bn) - (an < bn);
}

static int
name_is(const char *s, size_t n, const char *lower)
{
	return name_cmp(s, n, lower, strlen(lower)) == 0;
}

static int
name_has_prefix(const char *s, size_t n, const char *lower)
{
	size_t k = strlen(lower);

	return n >= k && name_cmp(s, k, lower, k) == 0;
}

/* Headers AWS's signer never signs (hop-by-hop, or changed on the way). */
static int
unsignable(const char *s, size_t n)
{
	static const char *const never[] = { "authorization", "cache-control", "connection",
		"expect", "from", "keep-alive", "max-forwards", "pragma", "referer", "te",
		"trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id" };
	size_t i;

	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (name_is(s, n, never[i]))
			return 1;
	return name_has_prefix(s, n, "proxy-") || name_has_prefix(s, n, "sec-");
}

/* Headers this signer writes itself. */
static int
own(const char *s, size_t n)
{
	return name_is(s, n, "host") || name_is(s, n, "authorization") ||
	    name_is(s, n, "x-amz-date") || name_is(s, n, "x-amz-security-token") ||
	    name_is(s, n, "x-amz-content-sha256");
}

static int
value_ok(const char *s, size_t n)
{
	return memchr(s, '\r', n) == NULL && memchr(s, '\n', n) == NULL &&
	    memchr(s, '\0', n) == NULL;
}

static void
add(struct hdr *h, size_t *nh, const char *name, const char *value, size_t value_len)
{
	h[*nh].name = name;
	h[*nh].name_len = strlen(name);
	h[*nh].value = value;
	h[*nh].value_len = value_len;
	(*nh)++;
}

/* The headers to sign: the caller's signable ones and the signer's own,
 * sorted by lowercase name (stable: repeated names keep their order). */
static int
collect_headers(const struct kv_sigv4_request *r, const char *amz_date, const char *token,
    struct hdr *h, size_t *nh, char *err, size_t errlen)
{
	const struct kv_sigv4_header *in;
	struct hdr t;
	size_t i, j, k;

	*nh = 0;
	if (r->nheaders > KV_SIGV4_HEADERS_MAX)
		return fail(err, errlen, "too many headers to sign");
	for (i = 0; i < r->nheaders; i++) {
		in = &r->headers[i];
		if (in->name_len == 0 || !value_ok(in->value, in->value_len))
			return fail(err, errlen, "malformed header");
		for (k = 0; k < in->name_len; k++)
			if (!IS_TCHAR(in->name[k]))
				return fail(err, errlen, "malformed header name");
		if (own(in->name, in->name_len))
			return fail(err, errlen, "a header the signer writes was given");
		if (unsignable(in->name, in->name_len))
			continue;
		h[(*nh)++] = (struct hdr){ in->name, in->name_len, in->value, in->value_len };
	}
	add(h, nh, "host", r->host, strlen(r->host));
	add(h, nh, "x-amz-date", amz_date, strlen(amz_date));
	if (token != NULL && token[0] != '\0' && !value_ok(token, strlen(token)))
		return fail(err, errlen, "malformed session token");
	if (token != NULL && token[0] != '\0')
		add(h, nh, "x-amz-security-token", token, strlen(token));
	if (r->content_sha256)
		add(h, nh, "x-amz-content-sha256", r->body_sha256, strlen(r->body_sha256));
	for (i = 1; i < *nh; i++)
		for (j = i; j > 0 && name_cmp(h[j - 1].name, h[j - 1].name_len,
		    h[j].name, h[j].name_len) > 0; j--) {
			t = h[j];
			h[j] = h[j - 1];
			h[j - 1] = t;
		}
	return 0;
}

static void
put_lower(struct wbuf *w, const char *s, size_t n)
{
	size_t i;
	char ch;

	for (i = 0; i < n; i++) {
		ch = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] | 0x20) : s[i];
		put(w, &ch, 1);
	}
}

/* A value with leading and trailing blanks cut, inner runs one space. */
static void
put_value(struct wbuf *w, const char *s, size_t n)
{
	size_t i, b = 0, e = n;

	while (b < e && (s[b] == ' ' || s[b] == '\t'))
		b++;
	while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t'))
		e--;
	for (i = b; i < e; i++) {
		if (s[i] == ' ' || s[i] == '\t') {
			if (s[i - 1] != ' ' && s[i - 1] != '\t')
				put(w, " ", 1);
			continue;
		}
		put(w, s + i, 1);
	}
}

/* "name:value\n" per name (a repeated name's values joined by ','), and
 * the names joined by ';' into SIGNED. */
static void
canon_headers(struct wbuf *w, struct wbuf *signed_w, const struct hdr *h, size_t nh)
{
	size_t i;

	for (i = 0; i < nh; i++) {
		if (i > 0 && name_cmp(h[i - 1].name, h[i - 1].name_len, h[i].name, h[i].name_len) == 0) {
			put(w, ",", 1);
		} else {
			if (i > 0) {
				put(w, "\n", 1);
				put(signed_w, ";", 1);
			}
			put_lower(w, h[i].name, h[i].name_len);
			put_lower(signed_w, h[i].name, h[i].name_len);
			put(w, ":", 1);
		}
		put_value(w, h[i].value, h[i].value_len);
	}
	put(w, "\n", 1);
}

static int
request_ok(const struct kv_sigv4_request *r, char *err, size_t errlen)
{
	size_t i;

	if (r->method == NULL || r->method[0] == '\0')
		return fail(err, errlen, "no method");
	for (i = 0; r->method[i] != '\0'; i++)
		if (!IS_TCHAR(r->method[i]))
			return fail(err, errlen, "malformed method");
	if (r->target_len == 0 || r->target[0] != '/')
		return fail(err, errlen, "the target is not an absolute path");
	for (i = 0; i < r->target_len; i++)
		if ((unsigned char)r->target[i] <= ' ' || r->target[i] == 0x7f || r->target[i] == '#')
			return fail(err, errlen, "malformed target");
	if (r->host == NULL || r->host[0] == '\0' || !value_ok(r->host, strlen(r->host)))
		return fail(err, errlen, "no host, or a malformed one");
	if (r->body_sha256 == NULL || strlen(r->body_sha256) != 64 ||
	    strspn(r->body_sha256, "0123456789abcdef") != 64)
		return fail(err, errlen, "the body hash is not 64 lowercase hex digits");
	return 0;
}

long
kv_sigv4_canonical(const struct kv_sigv4_request *r, const char *amz_date, const char *token,
    char *buf, size_t cap, char *signed_hdrs, size_t signed_cap, char *err, size_t errlen)
{
	struct wbuf w = { buf, cap ? cap - 1 : 0, 0, cap == 0 };
	struct wbuf sw = { signed_hdrs, signed_cap ? signed_cap - 1 : 0, 0, signed_cap == 0 };
	struct hdr h[KV_SIGV4_HEADERS_MAX + 4];
	const char *q;
	size_t nh, plen;

	if (request_ok(r, err, errlen) == -1)
		return -1;
	q = memchr(r->target, '?', r->target_len);
	plen = q ? (size_t)(q - r->target) : r->target_len;
	puts_(&w, r->method);
	put(&w, "\n", 1);
	if (canon_path(&w, r->target, plen, err, errlen) == -1)
		return -1;
	put(&w, "\n", 1);
	if (q && canon_query(&w, q + 1, r->target_len - plen - 1, err, errlen) == -1)
		return -1;
	put(&w, "\n", 1);
	if (collect_headers(r, amz_date, token, h, &nh, err, errlen) == -1)
		return -1;
	canon_headers(&w, &sw, h, nh);
	put(&w, "\n", 1);
	put(&w, sw.p, sw.len);
	put(&w, "\n", 1);
	puts_(&w, r->body_sha256);
	if (w.over || sw.over)
		return fail(err, errlen, "canonical request too long");
	buf[w.len] = '\0';
	signed_hdrs[sw.len] = '\0';
	return (long)w.len;
}

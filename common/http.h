/* A strict HTTP/1.1 parser: pure functions over caller-owned bytes, no I/O,
 * no allocation. It rejects what nginx and HAProxy reject, so that nothing a
 * proxy behind us could read differently is ever forwarded. In common/:
 * the workers parse requests and responses with it, the master's health
 * checks their answers. */
#ifndef KV_HTTP_H
#define KV_HTTP_H

#include <stddef.h>
#include <string.h>
#include <stdint.h>
#include <sys/types.h>

#define KV_HTTP_MAX_HEADERS	100
#define KV_HTTP_MAX_HEAD	16384	/* whole request head; 431 beyond */
#define KV_HTTP_MAX_LINE	8192	/* request line; 414 beyond */
#define KV_HTTP_MAX_METHOD	15	/* method bytes; 501 beyond, never cut */

struct kv_http_header {
	const char	*name;
	size_t		 name_len;
	const char	*value;		/* leading/trailing OWS trimmed */
	size_t		 value_len;
	int		 hop;		/* hop-by-hop: Connection, Keep-Alive,
					   Proxy-*, TE, Trailer, Transfer-Encoding,
					   Upgrade, and any name listed in Connection */
};

struct kv_http_request {
	const char	*method;
	size_t		 method_len;
	const char	*target;	/* origin-form only: starts with '/' */
	size_t		 target_len;
	int		 minor;		/* HTTP/1.<minor>, 0 or 1 */
	struct kv_http_header headers[KV_HTTP_MAX_HEADERS];
	size_t		 nheaders;
	int64_t		 content_length;	/* -1 when absent */
	int		 chunked;	/* Transfer-Encoding: chunked (exactly) */
	int		 keep_alive;	/* after this request */
	int		 expect_continue;
	size_t		 head_len;	/* bytes up to and including the empty line */
};

struct kv_http_response {
	int		 status;
	int		 minor;
	struct kv_http_header headers[KV_HTTP_MAX_HEADERS];
	size_t		 nheaders;
	int64_t		 content_length;	/* -1 when absent */
	int		 chunked;
	int		 keep_alive;	/* connection reusable after the body */
	int		 no_body;	/* 1xx, 204, 304 (HEAD is the caller's job) */
	size_t		 head_len;
};

/* Parse a request head from buf[0..len).
 * Returns head_len (> 0) when complete, 0 when more bytes are needed
 * (and len is still under the limits), or -1 for a request to refuse:
 * *status is 400, 414 (request line too long), 431 (head too large or too
 * many headers), 501 (a transfer coding other than chunked) or 505 (an HTTP
 * major version past 1, such as HTTP/2's preface), and *reason
 * a short static text for the log. Smuggling shapes refused with 400:
 * CL with TE, duplicate (even equal) or non-digit CL or one over 15 digits,
 * a TE that is not a list of tokens, "chunked" with any other coding or
 * twice, a second TE header, TE in HTTP/1.0, whitespace before ':', obs-fold,
 * bare CR, NUL or other control bytes, bare LF line endings, absolute-form
 * or asterisk-form targets, missing Host on HTTP/1.1, duplicate Host.
 * A well-formed TE naming only codings other than chunked ("gzip",
 * "identity", "xchunked") is 501. Leading CRLFs before the request line are
 * skipped (RFC 9112 2.2) and counted in head_len. */
int	kv_http_parse_request(const char *buf, size_t len,
	    struct kv_http_request *req, int *status, const char **reason);

/* Parse an upstream response head; same return convention (-1 means the
 * upstream response is malformed: the caller answers 502). Same field rules
 * as requests; CL with TE, or a TE other than exactly "chunked", is
 * malformed. keep_alive is 0 when the body runs to the connection's close. */
int	kv_http_parse_response(const char *buf, size_t len,
	    struct kv_http_response *res, const char **reason);

/* Case-insensitive lookup of the header name[0..nl); the first match or
 * NULL. */
const struct kv_http_header *kv_http_findn(const struct kv_http_header *h,
	    size_t n, const char *name, size_t nl);

/* The same for a NUL-terminated name: inline, so a literal's strlen is
 * folded at compile time. */
static inline const struct kv_http_header *
kv_http_find(const struct kv_http_header *h, size_t n, const char *name)
{
	return kv_http_findn(h, n, name, strlen(name));
}

/* Whether s[0..n) equals lit[0..n), ASCII case aside, for a header name or
 * value as the parser hands them out (no control byte but HTAB) and LIT in
 * lower case letters, digits, '-', '/' and ' ' only: then OR-ing 0x20 into
 * s folds exactly its upper-case letters, eight bytes at a time. The
 * caller has compared the lengths (n is both). */
static inline int
kv_http_lit_eq(const char *s, const char *lit, size_t n)
{
	const uint64_t m8 = 0x2020202020202020ULL;
	const uint32_t m4 = 0x20202020U;
	uint64_t a, b;
	uint32_t x, y;
	size_t i;

	if (n >= 8) {
		for (i = 0; i + 8 < n; i += 8) {
			memcpy(&a, s + i, 8);
			memcpy(&b, lit + i, 8);
			if ((a | m8) != b)
				return 0;
		}
		memcpy(&a, s + n - 8, 8);	/* the last 8, overlapping */
		memcpy(&b, lit + n - 8, 8);
		return (a | m8) == b;
	}
	if (n >= 4) {
		memcpy(&x, s, 4);
		memcpy(&y, lit, 4);
		if ((x | m4) != y)
			return 0;
		memcpy(&x, s + n - 4, 4);
		memcpy(&y, lit + n - 4, 4);
		return (x | m4) == y;
	}
	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] | 0x20) != (unsigned char)lit[i])
			return 0;
	return 1;
}

/* Streaming chunked-body decoder (chunked.c). It validates the framing (hex size with no
 * sign/space/overflow, size at most 2^40, extensions at most 4 KB, CRLF
 * after data, trailers bounded) and reports the payload bytes. */
struct kv_chunked {
	int		 state;
	uint64_t	 remaining;	/* data bytes left in the current chunk */
	size_t		 linelen;	/* bytes of the current size/ext/trailer line */
	int		 done;		/* the terminating chunk and trailers were read */
};

void	kv_chunked_init(struct kv_chunked *c);

/* Consume in[0..len). For each run of payload bytes, *data and *data_len point
 * into `in` and the function returns how many input bytes it consumed up to
 * and including that run, so the caller loops:
 *
 *	while (len > 0) {
 *		n = kv_chunked_feed(&c, in, len, &data, &dlen);
 *		if (n == -1) -> framing error
 *		if (dlen) -> use data[0..dlen)
 *		in += n; len -= n;
 *		if (c.done) break;
 *	}
 *
 * Returns bytes consumed (> 0 when len > 0 and not yet done) or -1 on a
 * framing error (and -1 on every later call). After c->done, bytes left in
 * `in` belong to the next message and further calls consume nothing. */
ssize_t	kv_chunked_feed(struct kv_chunked *c, const char *in, size_t len,
	    const char **data, size_t *data_len);

#endif

/* libFuzzer target: the input as a request head and as a response head.
 * Beyond "no crash", it checks the properties the relay relies on: a
 * complete head lies inside the input, parses the same on its own, and
 * every proper prefix of it only asks for more bytes (the relay re-parses
 * its growing buffer after each read). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Parse an exact-size copy so ASan catches any read past `len`. */
static int
req_prefix(const uint8_t *data, size_t len, struct kv_http_request *req)
{
	char *copy = malloc(len ? len : 1);
	int st, r;

	if (copy == NULL)
		abort();
	memcpy(copy, data, len);
	r = kv_http_parse_request(copy, len, req, &st, NULL);
	free(copy);
	return r;
}

static int
res_prefix(const uint8_t *data, size_t len, struct kv_http_response *res)
{
	char *copy = malloc(len ? len : 1);
	int r;

	if (copy == NULL)
		abort();
	memcpy(copy, data, len);
	r = kv_http_parse_response(copy, len, res, NULL);
	free(copy);
	return r;
}

static void
check_headers(const struct kv_http_header *h, size_t n, const char *buf,
    size_t head_len)
{
	size_t i;

	if (n > KV_HTTP_MAX_HEADERS)
		abort();
	for (i = 0; i < n; i++) {
		if (h[i].name < buf || h[i].name + h[i].name_len > buf + head_len ||
		    h[i].value < buf || h[i].value + h[i].value_len > buf + head_len ||
		    h[i].name_len == 0)
			abort();
		if (h[i].value_len > 0 && (h[i].value[0] == ' ' ||
		    h[i].value[h[i].value_len - 1] == '\t'))
			abort();	/* OWS must be trimmed */
	}
}

static size_t
put(char *out, size_t off, const char *s, size_t n)
{
	memcpy(out + off, s, n);
	return off + n;
}

/* Rebuild the head canonically ("name: value", no leading CRLFs): it must
 * parse to the same fields, which checks trimming and that no header's
 * meaning depends on the bytes the parser dropped. */
static void
check_roundtrip(const struct kv_http_request *req)
{
	static struct kv_http_request again;
	size_t cap = req->head_len + 2 * req->nheaders + 32, off = 0, i;
	char *out = malloc(cap);
	int st;

	if (out == NULL)
		abort();
	off = put(out, off, req->method, req->method_len);
	off = put(out, off, " ", 1);
	off = put(out, off, req->target, req->target_len);
	off = put(out, off, req->minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n", 11);
	for (i = 0; i < req->nheaders; i++) {
		off = put(out, off, req->headers[i].name, req->headers[i].name_len);
		off = put(out, off, ": ", 2);
		off = put(out, off, req->headers[i].value, req->headers[i].value_len);
		off = put(out, off, "\r\n", 2);
	}
	off = put(out, off, "\r\n", 2);
	if (off <= KV_HTTP_MAX_HEAD) {
		if (kv_http_parse_request(out, off, &again, &st, NULL) != (int)off ||
		    again.nheaders != req->nheaders ||
		    again.content_length != req->content_length ||
		    again.chunked != req->chunked ||
		    again.keep_alive != req->keep_alive ||
		    again.expect_continue != req->expect_continue)
			abort();
		for (i = 0; i < req->nheaders; i++)
			if (again.headers[i].value_len != req->headers[i].value_len ||
			    again.headers[i].hop != req->headers[i].hop ||
			    memcmp(again.headers[i].value, req->headers[i].value,
			    req->headers[i].value_len) != 0)
				abort();
	}
	free(out);
}

static void
check_request(const uint8_t *data, size_t size)
{
	static struct kv_http_request req, again;
	const char *buf = (const char *)data, *reason = NULL;
	int st = 0, r;

	r = kv_http_parse_request(buf, size, &req, &st, &reason);
	if (r == -1) {
		if ((st != 400 && st != 414 && st != 431 && st != 501 && st != 505) ||
		    reason == NULL)
			abort();
		return;
	}
	if (r == 0) {
		if (size > KV_HTTP_MAX_HEAD || req_prefix(data, size / 2, &again) != 0)
			abort();
		return;
	}
	if ((size_t)r != req.head_len || req.head_len > size ||
	    req.head_len > KV_HTTP_MAX_HEAD || req.target_len == 0 ||
	    req.target[0] != '/' || (req.chunked && req.content_length != -1) ||
	    (req.minor != 0 && req.minor != 1))
		abort();
	check_headers(req.headers, req.nheaders, buf, req.head_len);
	if (req_prefix(data, (size_t)r, &again) != r ||
	    again.nheaders != req.nheaders || again.chunked != req.chunked ||
	    again.content_length != req.content_length ||
	    again.keep_alive != req.keep_alive)
		abort();
	if (req_prefix(data, (size_t)r - 1, &again) != 0 ||
	    req_prefix(data, (size_t)r / 2, &again) != 0)
		abort();
	check_roundtrip(&req);
}

static void
check_response(const uint8_t *data, size_t size)
{
	static struct kv_http_response res, again;
	const char *buf = (const char *)data;
	int r;

	r = kv_http_parse_response(buf, size, &res, NULL);
	if (r == -1)
		return;
	if (r == 0) {
		if (size > KV_HTTP_MAX_HEAD || res_prefix(data, size / 2, &again) != 0)
			abort();
		return;
	}
	if ((size_t)r != res.head_len || res.head_len > size ||
	    res.status < 100 || res.status > 599 ||
	    (res.chunked && res.content_length != -1))
		abort();
	check_headers(res.headers, res.nheaders, buf, res.head_len);
	if (res_prefix(data, (size_t)r, &again) != r ||
	    again.status != res.status || again.keep_alive != res.keep_alive ||
	    res_prefix(data, (size_t)r - 1, &again) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_http_request req;

	check_request(data, size);
	check_response(data, size);
	/* a lookup must never match past a header's own bytes */
	if (kv_http_parse_request((const char *)data, size, &req, NULL, NULL) > 0)
		(void)kv_http_find(req.headers, req.nheaders, "content-length");
	return 0;
}

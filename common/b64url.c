/* base64url, unpadded; decoding strict (b64url.h). */
#include "common/b64url.h"

#include "common/base64.h"

/* The URL-safe alphabet: '-' and '_' where the standard one has '+', '/'. */
static int
b64url_val(unsigned char c)
{
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return c == '+' || c == '/' ? -1 : kv_b64val(c);
}

size_t
kv_b64url_encode(const unsigned char *in, size_t n, char *out)
{
	static const char d[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t i, o = 0;
	unsigned long v;

	for (i = 0; i < n; i += 3) {
		v = (unsigned long)in[i] << 16 | (i + 1 < n ? (unsigned long)in[i + 1] << 8 : 0) |
		    (i + 2 < n ? in[i + 2] : 0);
		out[o++] = d[v >> 18 & 63];
		out[o++] = d[v >> 12 & 63];
		if (i + 1 < n)
			out[o++] = d[v >> 6 & 63];
		if (i + 2 < n)
			out[o++] = d[v & 63];
	}
	out[o] = '\0';
	return o;
}

long
kv_b64url_decode(const char *s, size_t len, unsigned char *out, size_t cap)
{
	unsigned long acc = 0;
	size_t i, n = 0;
	int bits = 0, v;

	if (len % 4 == 1 || kv_b64url_decoded_len(len) > cap)
		return -1;
	for (i = 0; i < len; i++) {
		if ((v = b64url_val((unsigned char)s[i])) < 0)
			return -1;
		acc = (acc << 6 | (unsigned long)v) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
		}
	}
	/* the 2 or 4 bits left over must be zero (canonical form) */
	if (bits > 0 && (acc & ((1ul << bits) - 1)) != 0)
		return -1;
	return (long)n;
}

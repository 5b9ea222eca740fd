/* base64url decoding, strict (b64url.h). */
#include "common/b64url.h"

static int
b64url_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	return c == '_' ? 63 : -1;
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

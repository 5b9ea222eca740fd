/* Hex digits, shared by every parser that decodes escapes (JSON \u,
 * percent-encoding) and by what prints a hash. */
#ifndef KV_HEX_H
#define KV_HEX_H

#include <stddef.h>

/* The value of the hex digit C (either case), or -1 when C is not one. */
static inline int
kv_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* B[0..N) as 2N lowercase hex digits into OUT, NUL-terminated (OUT holds
 * 2N + 1 bytes). */
static inline void
kv_hex_encode(const unsigned char *b, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

#endif

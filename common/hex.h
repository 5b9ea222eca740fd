/* Hex digits, shared by every parser that decodes escapes (JSON \u,
 * percent-encoding). */
#ifndef KV_HEX_H
#define KV_HEX_H

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

#endif

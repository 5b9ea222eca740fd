/* Base64 digits, shared by every decoder that reads them (a data: URL's
 * image header, an AWS event stream's chunk bytes). */
#ifndef KV_BASE64_H
#define KV_BASE64_H

/* The sextet of base64 digit C (RFC 4648's standard alphabet), or -1. */
static inline int
kv_b64val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	return c == '/' ? 63 : -1;
}

#endif

/* base64url (RFC 4648 section 5) as JOSE writes it: no padding, no
 * blanks. Used by the JWKS reader and the JWT verifier. */
#ifndef KV_B64URL_H
#define KV_B64URL_H

#include <stddef.h>

/* Decode S (LEN bytes) into OUT (CAP bytes). Strict: only the 64 URL-safe
 * digits, no '=' padding, no length of 4k+1, and the unused low bits of
 * the last digit zero, so one byte string has exactly one encoding.
 * Returns the decoded length, or -1 (bad input, or it does not fit). */
long	kv_b64url_decode(const char *s, size_t len, unsigned char *out, size_t cap);

/* N bytes of IN as base64url digits into OUT (room for 4 * ceil(N / 3) + 1),
 * NUL-terminated, without padding; the number of digits. For the tests
 * and the fuzz target that make tokens, and a JWKS cache to come. */
size_t	kv_b64url_encode(const unsigned char *in, size_t n, char *out);

/* The decoded length of LEN digits (LEN not 4k+1). */
static inline size_t
kv_b64url_decoded_len(size_t len)
{
	return len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
}

#endif

/* The headers block of an AWS event-stream message: each header is a name
 * length (1 byte), the name, a type (1 byte) and a value whose size the
 * type fixes, or a 2-byte length and bytes for byte arrays and strings. */
#include "worker/aws_eventstream.h"

#include <string.h>

/* The size of a fixed-size value of TYPE; -1 for a length-prefixed one. */
static int
fixed_size(enum kv_aes_type type)
{
	static const signed char size[] = { 0, 0, 1, 2, 4, 8, -1, -1, 8, 16 };

	return size[type];
}

/* B[0..N), N ≤ 8, big-endian two's complement, sign-extended. */
static int64_t
be_signed(const unsigned char *b, int n)
{
	uint64_t v = (b[0] & 0x80) ? UINT64_MAX : 0;
	int i;

	for (i = 0; i < n; i++)
		v = v << 8 | b[i];
	return (int64_t)v;
}

/* The value of H, of type H->type, from B[0..LEFT): its size, or -1 when
 * it runs past LEFT. */
static long
value(struct kv_aes_header *h, const unsigned char *b, size_t left)
{
	int size = fixed_size(h->type);
	size_t n;

	if (size < 0) {
		if (left < 2)
			return -1;
		n = (size_t)b[0] << 8 | b[1];
		if (n > left - 2)
			return -1;
		h->bytes = (const char *)b + 2;
		h->bytes_len = n;
		return (long)n + 2;
	}
	if ((size_t)size > left)
		return -1;
	if (h->type == KV_AES_UUID)
		memcpy(h->uuid, b, 16);
	else if (h->type == KV_AES_TRUE || h->type == KV_AES_FALSE)
		h->num = h->type == KV_AES_TRUE;
	else
		h->num = be_signed(b, size);
	return size;
}

int
kv_aes_header_next(const struct kv_aes_msg *m, size_t *pos, struct kv_aes_header *h)
{
	const unsigned char *b = (const unsigned char *)m->headers + *pos;
	size_t left = m->headers_len - *pos, nlen;
	long vlen;

	if (left == 0)
		return 0;
	memset(h, 0, sizeof(*h));
	nlen = b[0];
	if (left < 2 + nlen)
		return -KV_AES_E_HEADER_TRUNCATED;
	if (b[1 + nlen] > KV_AES_UUID)
		return -KV_AES_E_HEADER_TYPE;
	h->name = (const char *)b + 1;
	h->name_len = nlen;
	h->type = (enum kv_aes_type)b[1 + nlen];
	vlen = value(h, b + 2 + nlen, left - 2 - nlen);
	if (vlen < 0)
		return -KV_AES_E_HEADER_TRUNCATED;
	*pos += 2 + nlen + (size_t)vlen;
	return 1;
}

int
kv_aes_header_find(const struct kv_aes_msg *m, const char *name, struct kv_aes_header *h)
{
	size_t pos = 0, len = strlen(name);

	while (kv_aes_header_next(m, &pos, h) == 1)
		if (h->name_len == len && memcmp(h->name, name, len) == 0)
			return 1;
	return 0;
}

int
kv_aes_header_is(const struct kv_aes_header *h, const char *s)
{
	size_t len = strlen(s);

	return h->type == KV_AES_STRING && h->bytes_len == len &&
	    memcmp(h->bytes, s, len) == 0;
}

const char *
kv_aes_strerror(enum kv_aes_err err)
{
	switch (err) {
	case KV_AES_E_NONE: return "no error";
	case KV_AES_E_LENGTH: return "message length out of bounds";
	case KV_AES_E_HEADERS_LENGTH: return "headers longer than the message";
	case KV_AES_E_HEADERS_MAX: return "headers longer than kilovolt takes";
	case KV_AES_E_PRELUDE_CRC: return "prelude CRC mismatch";
	case KV_AES_E_HEADER_TRUNCATED: return "header truncated";
	case KV_AES_E_HEADER_TYPE: return "unknown header value type";
	case KV_AES_E_MESSAGE_CRC: return "message CRC mismatch";
	case KV_AES_E_TRUNCATED: return "stream ended inside a message";
	case KV_AES_E_STOPPED: return "stopped by its consumer";
	case KV_AES_E_NOMEM: return "out of memory for a headers block";
	}
	return "unknown error";
}

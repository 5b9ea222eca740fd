/* Numbers to text without printf, for the lines and heads written once per
 * request (callgrind, a small chat request at 3db7f44: 20 k of its 75 k
 * instructions went through vsnprintf). */
#ifndef KV_FMT_H
#define KV_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* "00" to "99": two digits a division, half the divisions of one a time. */
static const char kv_fmt_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* 10^i, for counting digits without dividing. */
static const uint64_t kv_fmt_pow10[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
	100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
};

/* The decimal digits of v at out, no NUL; returns how many (1 to 20).
 * Counted first, then written from the last, in place: no copy. */
static inline size_t
kv_fmt_u64(char *out, uint64_t v)
{
	/* the bit length gives floor(log10) or one more (1233 / 4096 is
	 * just above log10(2)); one compare settles which; v | 1 makes 0 a
	 * digit long and moves no other count */
	uint64_t w = v | 1;
	size_t t = ((size_t)(64 - __builtin_clzll(w)) * 1233) >> 12;
	size_t n = t + 1 - (w < kv_fmt_pow10[t]), i;

	i = n;
	while (v >= 100) {
		i -= 2;
		memcpy(out + i, kv_fmt_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10)
		memcpy(out + i - 2, kv_fmt_pairs + 2 * v, 2);
	else
		out[i - 1] = (char)('0' + v);
	return n;
}

/* v in decimal with a '-' when negative, no NUL; returns how many (1 to 20). */
static inline size_t
kv_fmt_i64(char *out, int64_t v)
{
	if (v >= 0)
		return kv_fmt_u64(out, (uint64_t)v);
	out[0] = '-';
	return 1 + kv_fmt_u64(out + 1, -(uint64_t)v);
}

/* v as exactly `width` decimal digits, zeros in front (v < 10^width). */
static inline void
kv_fmt_u64_pad(char *out, uint64_t v, size_t width)
{
	while (width >= 2) {
		width -= 2;
		memcpy(out + width, kv_fmt_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (width == 1)
		out[0] = (char)('0' + v % 10);
}

/* "00" to "ff": the two hex digits of each byte value. */
static const char kv_fmt_hex_pairs[513] =
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
    "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
    "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
    "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
    "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
    "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
    "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/* v as 16 lowercase hex digits at out, no NUL ("%016llx"): a table load a
 * byte. */
static inline void
kv_fmt_hex64(char *out, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		memcpy(out + 2 * i, kv_fmt_hex_pairs + 2 * (v & 0xff), 2);
}

/* The n bytes at p as 2n lowercase hex digits at out, no NUL. */
static inline void
kv_fmt_hex_bytes(char *out, const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i + 2 <= n; i += 2) {	/* two a step: the loop costs more than the copy */
		memcpy(out + 2 * i, kv_fmt_hex_pairs + 2 * p[i], 2);
		memcpy(out + 2 * i + 2, kv_fmt_hex_pairs + 2 * p[i + 1], 2);
	}
	if (i < n)
		memcpy(out + 2 * i, kv_fmt_hex_pairs + 2 * p[i], 2);
}

/* A line built in a caller's buffer of cap bytes: what does not fit is
 * dropped (len stops at cap), as snprintf would cut it. No NUL is kept. */
struct kv_sb {
	char	*p;
	size_t	 len;
	size_t	 cap;
};

static inline void
kv_sb_put(struct kv_sb *b, const char *s, size_t n)
{
	/* Apart, the copy that fits: a piece of constant length (a literal)
	 * is then copied inline, not through a call to memcpy. */
	if (n <= b->cap - b->len) {
		memcpy(b->p + b->len, s, n);
		b->len += n;
		return;
	}
	n = b->cap - b->len;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void
kv_sb_str(struct kv_sb *b, const char *s)
{
	kv_sb_put(b, s, strlen(s));
}

static inline void
kv_sb_u64(struct kv_sb *b, uint64_t v)
{
	char d[20];

	if (b->cap - b->len >= sizeof(d)) {	/* room for any: in place */
		b->len += kv_fmt_u64(b->p + b->len, v);
		return;
	}
	kv_sb_put(b, d, kv_fmt_u64(d, v));
}

static inline void
kv_sb_i64(struct kv_sb *b, int64_t v)
{
	char d[20];

	if (b->cap - b->len >= sizeof(d)) {
		b->len += kv_fmt_i64(b->p + b->len, v);
		return;
	}
	kv_sb_put(b, d, kv_fmt_i64(d, v));
}

#endif

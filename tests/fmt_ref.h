/* common/fmt.h as of d32bdc1, renamed: the reference test_money_diff
 * compares the table-driven formatting with. */
#ifndef KV_FMT_REF_H
#define KV_FMT_REF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The decimal digits of v at out, no NUL; returns how many (1 to 20). */
static inline size_t
ref_fmt_u64(char *out, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

/* v in decimal with a '-' when negative, no NUL; returns how many (1 to 20). */
static inline size_t
ref_fmt_i64(char *out, int64_t v)
{
	if (v >= 0)
		return ref_fmt_u64(out, (uint64_t)v);
	out[0] = '-';
	return 1 + ref_fmt_u64(out + 1, -(uint64_t)v);
}

/* v as exactly `width` decimal digits, zeros in front (v < 10^width). */
static inline void
ref_fmt_u64_pad(char *out, uint64_t v, size_t width)
{
	while (width-- > 0) {
		out[width] = (char)('0' + v % 10);
		v /= 10;
	}
}

/* A line built in a caller's buffer of cap bytes: what does not fit is
 * dropped (len stops at cap), as snprintf would cut it. No NUL is kept. */
struct ref_sb {
	char	*p;
	size_t	 len;
	size_t	 cap;
};

static inline void
ref_sb_put(struct ref_sb *b, const char *s, size_t n)
{
	if (n > b->cap - b->len)
		n = b->cap - b->len;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static inline void
ref_sb_str(struct ref_sb *b, const char *s)
{
	ref_sb_put(b, s, strlen(s));
}

static inline void
ref_sb_u64(struct ref_sb *b, uint64_t v)
{
	char d[20];

	ref_sb_put(b, d, ref_fmt_u64(d, v));
}

static inline void
ref_sb_i64(struct ref_sb *b, int64_t v)
{
	char d[20];

	ref_sb_put(b, d, ref_fmt_i64(d, v));
}

#endif

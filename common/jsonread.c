/* The strict JSON reader (jsonread.h). One pass over the bytes; the
 * position of the first error is kept as line and column so that a
 * truncated or hand-edited catalogue names where it broke. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonread.h"

#define JR_SEEN		0x1
#define JR_ARRAY	0x2

void
kv_jr_init(struct kv_jr *jr, const char *buf, size_t len)
{
	memset(jr, 0, sizeof(*jr));
	jr->buf = jr->p = jr->line_start = buf;
	jr->end = buf + len;
	jr->line = 1;
}

static int __attribute__((format(printf, 2, 3)))
jr_fail(struct kv_jr *jr, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (jr->failed)
		return -1;
	jr->failed = 1;
	n = snprintf(jr->err, sizeof(jr->err), "%d:%ld: ", jr->line,
	    (long)(jr->p - jr->line_start) + 1);
	if (n < 0 || (size_t)n >= sizeof(jr->err))
		return -1;
	va_start(ap, fmt);
	vsnprintf(jr->err + n, sizeof(jr->err) - n, fmt, ap);
	va_end(ap);
	return -1;
}

int
kv_jr_fail(struct kv_jr *jr, const char *what)
{
	return jr_fail(jr, "%s", what);
}

/* What stands at the cursor, for messages. */
static int
jr_unexpected(struct kv_jr *jr, const char *wanted)
{
	unsigned char c;

	if (jr->p >= jr->end)
		return jr_fail(jr, "unexpected end of input (truncated?), expected %s", wanted);
	c = (unsigned char)*jr->p;
	if (c > 0x20 && c < 0x7f)
		return jr_fail(jr, "unexpected '%c', expected %s", c, wanted);
	return jr_fail(jr, "unexpected byte 0x%02x, expected %s", c, wanted);
}

static void
jr_ws(struct kv_jr *jr)
{
	for (; jr->p < jr->end; jr->p++) {
		if (*jr->p == '\n') {
			jr->line++;
			jr->line_start = jr->p + 1;
		} else if (*jr->p != ' ' && *jr->p != '\t' && *jr->p != '\r') {
			return;
		}
	}
}

enum kv_jr_type
kv_jr_peek(struct kv_jr *jr)
{
	if (jr->failed)
		return KV_JR_NONE;
	jr_ws(jr);
	if (jr->p < jr->end) {
		switch (*jr->p) {
		case '{':	return KV_JR_OBJECT;
		case '[':	return KV_JR_ARRAY;
		case '"':	return KV_JR_STRING;
		case 't':	return KV_JR_TRUE;
		case 'f':	return KV_JR_FALSE;
		case 'n':	return KV_JR_NULL;
		default:
			if (*jr->p == '-' || (*jr->p >= '0' && *jr->p <= '9'))
				return KV_JR_NUMBER;
		}
	}
	jr_unexpected(jr, "a value");
	return KV_JR_NONE;
}

int
kv_jr_enter(struct kv_jr *jr, enum kv_jr_type t)
{
	enum kv_jr_type got = kv_jr_peek(jr);

	if (got == KV_JR_NONE)
		return -1;
	if (got != t || (t != KV_JR_OBJECT && t != KV_JR_ARRAY))
		return jr_unexpected(jr, t == KV_JR_OBJECT ? "'{'" : "'['");
	if (jr->depth == KV_JR_DEPTH)
		return jr_fail(jr, "nested more than %d deep", KV_JR_DEPTH);
	jr->level[jr->depth++] = t == KV_JR_ARRAY ? JR_ARRAY : 0;
	jr->p++;
	return 0;
}

/* The separator before the next member or element, or the closing
 * bracket: 1 when an item follows, 0 when the level closed. */
static int
jr_next(struct kv_jr *jr, int array)
{
	unsigned char *lv;
	char close = array ? ']' : '}';

	if (jr->failed)
		return -1;
	if (jr->depth == 0 || ((jr->level[jr->depth - 1] & JR_ARRAY) != 0) != array)
		return jr_fail(jr, "reader misuse: not in an %s", array ? "array" : "object");
	lv = &jr->level[jr->depth - 1];
	jr_ws(jr);
	if (jr->p < jr->end && *jr->p == close) {
		jr->p++;
		jr->depth--;
		return 0;
	}
	if (*lv & JR_SEEN) {
		if (jr->p >= jr->end || *jr->p != ',')
			return jr_unexpected(jr, array ? "',' or ']'" : "',' or '}'");
		jr->p++;
		jr_ws(jr);
		if (jr->p < jr->end && *jr->p == close)
			return jr_fail(jr, "trailing comma");
	}
	*lv |= JR_SEEN;
	return 1;
}

/* Bytes of a UTF-8 sequence starting at S (at most N bytes), or 0 when
 * it is not valid (overlong, surrogate, past U+10FFFF, cut). */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	unsigned int cp;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (n < len)
		return 0;
	cp = s[0] & (0x3f >> (len - 1));
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int
hex4(const char *s, unsigned int *out)
{
	unsigned int v = 0;
	int i;

	for (i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned int)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned int)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned int)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Append N bytes to out (OUT NULL: count only). */
static int
jr_put(struct kv_jr *jr, char *out, size_t cap, size_t *pos, const char *b, size_t n)
{
	if (out != NULL) {
		if (*pos + n >= cap)
			return jr_fail(jr, "string longer than %zu bytes", cap - 1);
		memcpy(out + *pos, b, n);
	}
	*pos += n;
	return 0;
}

/* A \uXXXX escape (the cursor on the 'u'), a surrogate pair whole. */
static int
jr_uescape(struct kv_jr *jr, char *out, size_t cap, size_t *pos)
{
	unsigned int cp, lo;
	char b[4];
	size_t n;

	if (jr->end - jr->p < 5 || hex4(jr->p + 1, &cp) == -1)
		return jr_fail(jr, "bad \\u escape");
	jr->p += 5;
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return jr_fail(jr, "lone low surrogate in \\u escape");
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (jr->end - jr->p < 6 || jr->p[0] != '\\' || jr->p[1] != 'u' ||
		    hex4(jr->p + 2, &lo) == -1 || lo < 0xdc00 || lo > 0xdfff)
			return jr_fail(jr, "high surrogate without its low half");
		jr->p += 6;
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (cp == 0)
		return jr_fail(jr, "\\u0000 in a string");
	if (cp < 0x80) {
		b[0] = (char)cp, n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return jr_put(jr, out, cap, pos, b, n);
}

static int
jr_escape(struct kv_jr *jr, char *out, size_t cap, size_t *pos)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *c;

	jr->p++;	/* the backslash */
	if (jr->p >= jr->end)
		return jr_unexpected(jr, "an escape");
	if (*jr->p == 'u')
		return jr_uescape(jr, out, cap, pos);
	c = strchr(from, *jr->p);
	if (c == NULL || *c == '\0')
		return jr_fail(jr, "bad escape");
	jr->p++;
	return jr_put(jr, out, cap, pos, &to[c - from], 1);
}

/* The string at the cursor into out (NULL: skip it). */
static int
jr_read_string(struct kv_jr *jr, char *out, size_t cap)
{
	size_t pos = 0, n;
	unsigned char c;

	if (kv_jr_peek(jr) != KV_JR_STRING)
		return jr->failed ? -1 : jr_unexpected(jr, "a string");
	for (jr->p++; ; ) {
		if (jr->p >= jr->end)
			return jr_unexpected(jr, "'\"'");
		c = (unsigned char)*jr->p;
		if (c == '"')
			break;
		if (c == '\\') {
			if (jr_escape(jr, out, cap, &pos) == -1)
				return -1;
			continue;
		}
		if (c < 0x20)
			return jr_fail(jr, "control character 0x%02x in a string", c);
		n = c < 0x80 ? 1 : utf8_len((const unsigned char *)jr->p,
		    (size_t)(jr->end - jr->p));
		if (n == 0)
			return jr_fail(jr, "invalid UTF-8 in a string");
		if (jr_put(jr, out, cap, &pos, jr->p, n) == -1)
			return -1;
		jr->p += n;
	}
	jr->p++;
	if (out != NULL)
		out[pos] = '\0';
	return 0;
}

int
kv_jr_member(struct kv_jr *jr, char *key, size_t cap)
{
	int r = jr_next(jr, 0);

	if (r != 1)
		return r;
	if (jr->p >= jr->end || *jr->p != '"')
		return jr_unexpected(jr, "a member name");
	if (jr_read_string(jr, key, cap) == -1)
		return -1;
	jr_ws(jr);
	if (jr->p >= jr->end || *jr->p != ':')
		return jr_unexpected(jr, "':'");
	jr->p++;
	return 1;
}

int
kv_jr_element(struct kv_jr *jr)
{
	return jr_next(jr, 1);
}

int
kv_jr_string(struct kv_jr *jr, char *out, size_t cap)
{
	return jr_read_string(jr, out, cap);
}

static int
is_digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

int
kv_jr_number(struct kv_jr *jr, const char **text, size_t *len)
{
	const char *s;

	if (kv_jr_peek(jr) != KV_JR_NUMBER)
		return jr->failed ? -1 : jr_unexpected(jr, "a number");
	s = jr->p;
	if (*jr->p == '-')
		jr->p++;
	if (!is_digit(jr->p, jr->end))
		return jr_unexpected(jr, "a digit");
	if (*jr->p++ != '0')
		while (is_digit(jr->p, jr->end))
			jr->p++;
	if (jr->p < jr->end && *jr->p == '.') {
		if (!is_digit(++jr->p, jr->end))
			return jr_unexpected(jr, "a digit after '.'");
		while (is_digit(jr->p, jr->end))
			jr->p++;
	}
	if (jr->p < jr->end && (*jr->p == 'e' || *jr->p == 'E')) {
		jr->p++;
		if (jr->p < jr->end && (*jr->p == '+' || *jr->p == '-'))
			jr->p++;
		if (!is_digit(jr->p, jr->end))
			return jr_unexpected(jr, "a digit in the exponent");
		while (is_digit(jr->p, jr->end))
			jr->p++;
	}
	*text = s;
	*len = (size_t)(jr->p - s);
	return 0;
}

static int
jr_literal(struct kv_jr *jr, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(jr->end - jr->p) < n || memcmp(jr->p, word, n) != 0)
		return jr_fail(jr, "bad literal (expected %s)", word);
	jr->p += n;
	return 0;
}

int
kv_jr_skip(struct kv_jr *jr)
{
	const char *t;
	size_t n;
	int r;

	switch (kv_jr_peek(jr)) {
	case KV_JR_OBJECT:
		if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
			return -1;
		while ((r = kv_jr_member(jr, NULL, 0)) == 1)
			if (kv_jr_skip(jr) == -1)
				return -1;
		return r;
	case KV_JR_ARRAY:
		if (kv_jr_enter(jr, KV_JR_ARRAY) == -1)
			return -1;
		while ((r = kv_jr_element(jr)) == 1)
			if (kv_jr_skip(jr) == -1)
				return -1;
		return r;
	case KV_JR_STRING:	return jr_read_string(jr, NULL, 0);
	case KV_JR_NUMBER:	return kv_jr_number(jr, &t, &n);
	case KV_JR_TRUE:	return jr_literal(jr, "true");
	case KV_JR_FALSE:	return jr_literal(jr, "false");
	case KV_JR_NULL:	return jr_literal(jr, "null");
	default:		return -1;
	}
}

int
kv_jr_finish(struct kv_jr *jr)
{
	if (jr->failed)
		return -1;
	if (jr->depth != 0)
		return jr_fail(jr, "reader misuse: %d levels still open", jr->depth);
	jr_ws(jr);
	if (jr->p != jr->end)
		return jr_unexpected(jr, "the end of the document");
	return 0;
}

/* ---- exact decimals ------------------------------------------------------ */

int
kv_jr_decimal(const char *text, size_t len, int scale, long long *out, int *inexact)
{
	const char *p = text, *end = text + len, *mant, *mend, *dot = NULL;
	long long v = 0, exp = 0;
	int eneg = 0, keep;
	size_t ndig = 0, i;

	*inexact = 0;
	if (p < end && *p == '-')
		return -1;
	for (mant = p; p < end && ((*p >= '0' && *p <= '9') || *p == '.'); p++)
		if (*p == '.')
			dot = p;
	mend = p;
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		for (; p < end && *p >= '0' && *p <= '9'; p++)
			if (exp < 100000)
				exp = exp * 10 + (*p - '0');
	}
	if (p != end || mend == mant)
		return -1;
	/* value = digits x 10^(exp - fraction digits + scale) */
	exp = (eneg ? -exp : exp) + scale - (dot != NULL ? (long long)(mend - dot - 1) : 0);
	for (p = mant; p < mend; p++)
		if (*p != '.')
			ndig++;
	/* the digits at and past `keep` are below 1 */
	keep = exp >= 0 ? (int)ndig : (exp < -(long long)ndig ? 0 : (int)(ndig + exp));
	for (p = mant, i = 0; p < mend; p++) {
		if (*p == '.')
			continue;
		if ((int)i++ < keep) {
			if (__builtin_mul_overflow(v, 10, &v) ||
			    __builtin_add_overflow(v, *p - '0', &v))
				return -1;
		} else if (*p != '0') {
			*inexact = 1;
		}
	}
	for (; exp > 0 && v != 0; exp--)
		if (__builtin_mul_overflow(v, 10, &v))
			return -1;
	if (*inexact && __builtin_add_overflow(v, 1, &v))
		return -1;
	*out = v;
	return 0;
}

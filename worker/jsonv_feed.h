/* The strict validator's scan loop, in a header so that a scanner can have
 * its event handler inlined into it: reqscan.c defines JV_EMIT as its
 * handler and calls jv_feed() (a call per event, with its switch, was much
 * of the cost of a small body); jsonv.c defines JV_EMIT as a call of the
 * callback and wraps jv_feed() as kv_jv_feed(). Internal to those two.
 * See jsonv.h for the grammar and the events. */
#ifndef KV_JSONV_FEED_H
#define KV_JSONV_FEED_H

#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/hex.h"
#include "worker/jsonv.h"

enum {
	S_START, S_VALUE, S_ARR_FIRST, S_OBJ_FIRST, S_KEY, S_COLON, S_AFTER,
	S_STR, S_ESC, S_UHEX, S_NUM, S_LIT, S_END, S_ERR,
};

/* number grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP, N_BEGIN };

static const char *const jv_lits[] = { "true", "false", "null" };

struct jv_feed_ctx {
	struct kv_jv	*v;
	kv_jv_cb	 cb;
	void		*arg;
};

/* JV_EMIT(f, ev, level, p, n), defined by the includer, takes an event:
 * jsonv.c's calls f->cb, reqscan.c's is its handler, inlined (every call
 * site passes a constant ev, so that its switch folds away). */
#ifndef JV_EMIT
#error "jsonv_feed.h needs JV_EMIT"
#endif
static inline __attribute__((always_inline)) void
jv_emit(const struct jv_feed_ctx *f, enum kv_jv_ev ev, int level, const char *p, size_t n)
{
	JV_EMIT(f, ev, level, p, n);
}

static inline int
jv_fail(struct kv_jv *v, const char *what, unsigned char c)
{
	if (c >= 0x20 && c < 0x7f)
		snprintf(v->err, sizeof(v->err), "%s ('%c') at byte %llu", what, c,
		    (unsigned long long)v->off);
	else
		snprintf(v->err, sizeof(v->err), "%s (byte 0x%02x) at byte %llu", what, c,
		    (unsigned long long)v->off);
	v->state = S_ERR;
	return -1;
}


static inline int
jv_is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static inline int
jv_is_obj(const struct kv_jv *v)
{
	int d = v->depth - 1;

	return (v->isobj[d / 8] >> (d % 8)) & 1;
}

static inline int
jv_push(struct kv_jv *v, int obj, unsigned char c)
{
	int d = v->depth;

	if (d >= KV_JV_MAX_DEPTH)
		return jv_fail(v, "nesting deeper than 128 levels", c);
	if (obj)
		v->isobj[d / 8] |= (uint8_t)(1u << (d % 8));
	else
		v->isobj[d / 8] &= (uint8_t)~(1u << (d % 8));
	v->depth++;
	return 0;
}

static inline void
jv_after_value(struct kv_jv *v)
{
	v->state = v->depth == 0 ? S_END : S_AFTER;
}

/* A byte where a value must start. Returns 0, -1, or 1 when the byte is
 * left for the next state (a number's first byte: jv_num_run takes it). */
static inline __attribute__((always_inline)) int
jv_value_start(const struct jv_feed_ctx *f, unsigned char c)
{
	struct kv_jv *v = f->v;
	int i;

	if (c == '{') {
		jv_emit(f, KV_JV_OBJ_OPEN, v->depth, NULL, 0);
		if (jv_push(v, 1, c) == -1)
			return -1;
		v->state = S_OBJ_FIRST;
	} else if (c == '[') {
		jv_emit(f, KV_JV_ARR_OPEN, v->depth, NULL, 0);
		if (jv_push(v, 0, c) == -1)
			return -1;
		v->state = S_ARR_FIRST;
	} else if (c == '"') {
		jv_emit(f, KV_JV_STR, v->depth, NULL, 0);
		v->is_key = 0;
		v->state = S_STR;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		jv_emit(f, KV_JV_NUM, v->depth, NULL, 0);
		v->nstate = N_BEGIN;
		v->state = S_NUM;
		return 1;
	} else {
		for (i = 0; i < 3; i++)
			if (c == (unsigned char)jv_lits[i][0])
				break;
		if (i == 3)
			return jv_fail(v, c == 'N' || c == 'I' ? "NaN and Infinity are not JSON" :
			    "expected a value", c);
		v->lit = (uint8_t)i;
		v->litpos = 1;
		v->state = S_LIT;
	}
	return 0;
}

static inline __attribute__((always_inline)) int
jv_close_container(const struct jv_feed_ctx *f, unsigned char c)
{
	struct kv_jv *v = f->v;

	if ((c == '}') != jv_is_obj(v))
		return jv_fail(v, "mismatched bracket", c);
	v->depth--;
	if (c == '}')
		jv_emit(f, KV_JV_OBJ_CLOSE, v->depth, NULL, 0);
	else
		jv_emit(f, KV_JV_ARR_CLOSE, v->depth, NULL, 0);
	jv_after_value(v);
	return 0;
}

/* Structural positions: everything outside strings, numbers and literals.
 * Returns as jv_value_start does. */
static inline __attribute__((always_inline)) int
jv_structural(const struct jv_feed_ctx *f, unsigned char c)
{
	struct kv_jv *v = f->v;

	if (jv_is_ws(c))
		return 0;
	switch (v->state) {
	case S_START:
		if (c == 0xef && v->off == 0)
			return jv_fail(v, "a UTF-8 byte order mark", c);
		return jv_value_start(f, c);
	case S_VALUE:
		return jv_value_start(f, c);
	case S_ARR_FIRST:
		return c == ']' ? jv_close_container(f, c) : jv_value_start(f, c);
	case S_OBJ_FIRST:
	case S_KEY:
		if (c == '}' && v->state == S_OBJ_FIRST)
			return jv_close_container(f, c);
		if (c != '"')
			return jv_fail(v, "expected a member name", c);
		jv_emit(f, KV_JV_KEY, v->depth, NULL, 0);
		v->is_key = 1;
		v->state = S_STR;
		return 0;
	case S_COLON:
		if (c != ':')
			return jv_fail(v, "expected ':'", c);
		v->state = S_VALUE;
		return 0;
	case S_AFTER:
		if (c == ',') {
			v->state = jv_is_obj(v) ? S_KEY : S_VALUE;
			return 0;
		}
		if (c == '}' || c == ']')
			return jv_close_container(f, c);
		return jv_fail(v, "expected ',' or a closing bracket", c);
	default:	/* S_END */
		return jv_fail(v, "data after the JSON value", c);
	}
}

static inline void
jv_emit_cp(const struct jv_feed_ctx *f, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6);
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12);
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18);
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	jv_emit(f, KV_JV_BYTES, f->v->depth, b, n);
}

/* A lone high surrogate decodes to U+FFFD, as the providers' parsers do. */
static inline void
jv_flush_surrogate(const struct jv_feed_ctx *f)
{
	if (f->v->hisur != 0) {
		f->v->hisur = 0;
		jv_emit_cp(f, 0xfffd);
	}
}

/* A lead byte (0xc2..0xf4): lo..hi bound the byte after it so that
 * overlong forms, surrogates and code points past U+10FFFF are refused
 * (RFC 3629). */
static inline void
jv_utf8_lead(struct kv_jv *v, unsigned char c)
{
	v->u8lo = 0x80;
	v->u8hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		v->u8need = 1;
	else if (c >= 0xe0 && c <= 0xef) {
		v->u8need = 2;
		if (c == 0xe0)
			v->u8lo = 0xa0;
		if (c == 0xed)
			v->u8hi = 0x9f;
	} else {
		v->u8need = 3;
		if (c == 0xf0)
			v->u8lo = 0x90;
		if (c == 0xf4)
			v->u8hi = 0x8f;
	}
}

#define ONES	0x0101010101010101ULL
/* Nonzero when a byte of w is below n (n <= 128), or is zero (exact as a
 * yes/no; which byte is not told). */
#define has_less(w, n)	(((w) - ONES * (n)) & ~(w) & ONES * 0x80)
#define has_zero(w)	has_less(w, 1)

/* From p[i], past the bytes a string needs no look at (ASCII but a quote,
 * a backslash or a control byte), sixteen a load, then eight (prompts are
 * mostly such bytes). Returns where the first other byte, or the last
 * seven or fewer bytes, begin. */
static inline size_t
jv_plain(const unsigned char *p, size_t i, size_t n)
{
#ifdef __SSE2__
	while (n - i >= 16) {
		/* a signed compare below 0x20 takes the high bit bytes too */
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(
		    _mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
		    _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
		    _mm_cmplt_epi8(x, _mm_set1_epi8(0x20))));

		if (m != 0)
			return i + (size_t)__builtin_ctz(m);
		i += 16;
	}
#endif
	while (n - i >= 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		if (((w & ONES * 0x80) | has_less(w, 0x20) | has_zero(w ^ ONES * '"') |
		    has_zero(w ^ ONES * '\\')) != 0)
			return i;
		i += 8;
	}
	return i;
}

/* The end of a string; its last bytes p[0..n) come with the event. */
static inline __attribute__((always_inline)) void
jv_string_close(const struct jv_feed_ctx *f, const unsigned char *p, size_t n)
{
	struct kv_jv *v = f->v;

	if (v->is_key) {
		jv_emit(f, KV_JV_KEY_END, v->depth, (const char *)p, n);
		v->state = S_COLON;
	} else {
		jv_emit(f, KV_JV_STR_END, v->depth, (const char *)p, n);
		jv_after_value(v);
	}
}

/* A run of string content up to a quote or backslash. A closing quote
 * ends the string here, the run coming with the end event (one event for
 * the run and the end: most strings of a body lie whole in one read).
 * Returns the bytes consumed (the run, and that quote), or -1. */
static inline __attribute__((always_inline)) ssize_t
jv_str_run(const struct jv_feed_ctx *f, const unsigned char *p, size_t n)
{
	struct kv_jv *v = f->v;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c;

		if (v->u8need == 0)
			i = jv_plain(p, i, n);
		if (i == n)
			break;
		c = p[i];
		if (v->u8need > 0) {
			if (c < v->u8lo || c > v->u8hi) {
				v->off += i;
				return jv_fail(v, "invalid UTF-8", c);
			}
			v->u8lo = 0x80;
			v->u8hi = 0xbf;
			v->u8need--;
			continue;
		}
		if (c == '"' || c == '\\')
			break;
		if (c < 0x20) {
			v->off += i;
			return jv_fail(v, "control character in a string", c);
		}
		if (c >= 0x80 && (c < 0xc2 || c > 0xf4)) {
			v->off += i;
			return jv_fail(v, "invalid UTF-8", c);
		}
		if (c >= 0x80)
			jv_utf8_lead(v, c);
	}
	if (i < n && p[i] == '"') {	/* no sequence open: the checks above */
		v->off += i;
		jv_string_close(f, p, i);
		v->off++;
		return (ssize_t)i + 1;
	}
	if (i > 0) {
		jv_emit(f, KV_JV_BYTES, v->depth, (const char *)p, i);
		v->off += i;
	}
	return (ssize_t)i;
}

static inline void
jv_unit_done(const struct jv_feed_ctx *f)
{
	struct kv_jv *v = f->v;
	uint32_t u = v->ucp;

	if (u >= 0xdc00 && u <= 0xdfff && v->hisur != 0) {
		jv_emit_cp(f, 0x10000 + ((v->hisur - 0xd800) << 10) + (u - 0xdc00));
		v->hisur = 0;
		return;
	}
	jv_flush_surrogate(f);
	if (u >= 0xd800 && u <= 0xdbff)
		v->hisur = u;
	else
		jv_emit_cp(f, u >= 0xdc00 && u <= 0xdfff ? 0xfffd : u);
}

static inline int
jv_escape(const struct jv_feed_ctx *f, unsigned char c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	struct kv_jv *v = f->v;
	const char *e;
	int h;

	if (v->state == S_UHEX) {
		if ((h = kv_hexval(c)) < 0)
			return jv_fail(v, "bad \\u escape", c);
		v->ucp = v->ucp << 4 | (uint32_t)h;
		if (++v->uhex == 4) {
			jv_unit_done(f);
			v->state = S_STR;
		}
		return 0;
	}
	if (c == 'u') {
		v->uhex = 0;
		v->ucp = 0;
		v->state = S_UHEX;
		return 0;
	}
	if (c == '\0' || (e = strchr(from, c)) == NULL)
		return jv_fail(v, "bad escape", c);
	jv_flush_surrogate(f);
	jv_emit(f, KV_JV_BYTES, v->depth, &to[e - from], 1);
	v->state = S_STR;
	return 0;
}

/* A run of number bytes. The byte after the number ends it (its event
 * carries the run) and is left for the structural state. Returns the
 * bytes consumed, or -1. */
static inline __attribute__((always_inline)) ssize_t
jv_num_run(const struct jv_feed_ctx *f, const unsigned char *p, size_t n)
{
	struct kv_jv *v = f->v;
	int ns = v->nstate, next = -1;
	size_t i;

	for (i = 0; i < n; i++, ns = next) {
		unsigned char c = p[i];
		int digit = c >= '0' && c <= '9';

		switch (ns) {
		case N_BEGIN:	next = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT; break;
		case N_MINUS:	next = c == '0' ? N_ZERO : digit ? N_INT : -1; break;
		case N_ZERO:	next = c == '.' ? N_DOT : (c == 'e' || c == 'E') ? N_E : -2; break;
		case N_INT:	next = digit ? N_INT : c == '.' ? N_DOT :
				    (c == 'e' || c == 'E') ? N_E : -2; break;
		case N_DOT:	next = digit ? N_FRAC : -1; break;
		case N_FRAC:	next = digit ? N_FRAC : (c == 'e' || c == 'E') ? N_E : -2; break;
		case N_E:	next = digit ? N_EXP : (c == '+' || c == '-') ? N_ESIGN : -1; break;
		case N_ESIGN:	next = digit ? N_EXP : -1; break;
		default:	next = digit ? N_EXP : -2; break;	/* N_EXP */
		}
		if (next == -1) {
			v->off += i;
			return jv_fail(v, "bad number", c);
		}
		if (next == -2) {	/* a byte after a whole number */
			v->off += i;
			if (digit)
				return jv_fail(v, "bad number (leading zero)", c);
			jv_emit(f, KV_JV_NUM_END, v->depth, (const char *)p, i);
			jv_after_value(v);
			return (ssize_t)i;
		}
	}
	v->nstate = (uint8_t)ns;
	jv_emit(f, KV_JV_BYTES, v->depth, (const char *)p, n);
	v->off += n;
	return (ssize_t)n;
}

static inline __attribute__((always_inline)) int
jv_literal(const struct jv_feed_ctx *f, unsigned char c)
{
	struct kv_jv *v = f->v;
	const char *l = jv_lits[v->lit];

	if (c != (unsigned char)l[v->litpos])
		return jv_fail(v, "expected true, false or null", c);
	if (l[++v->litpos] == '\0') {
		if (v->lit == 0)
			jv_emit(f, KV_JV_TRUE, v->depth, NULL, 0);
		else if (v->lit == 1)
			jv_emit(f, KV_JV_FALSE, v->depth, NULL, 0);
		else
			jv_emit(f, KV_JV_NULL, v->depth, NULL, 0);
		jv_after_value(v);
	}
	return 0;
}

static inline __attribute__((always_inline)) int
jv_step(const struct jv_feed_ctx *f, unsigned char c)
{
	struct kv_jv *v = f->v;

	switch (v->state) {
	case S_STR:
		if (v->u8need > 0)	/* a quote or backslash inside a sequence */
			return jv_fail(v, "invalid UTF-8", c);
		if (v->hisur != 0 && c != '\\')
			jv_flush_surrogate(f);
		if (c == '"') {
			jv_string_close(f, NULL, 0);
			return 0;
		}
		v->state = S_ESC;	/* jv_str_run stops only at '"' or '\\' */
		return 0;
	case S_ESC:
		if (c != 'u' && v->hisur != 0)
			jv_flush_surrogate(f);
		/* FALLTHROUGH */
	case S_UHEX:
		return jv_escape(f, c);
	case S_LIT:
		return jv_literal(f, c);
	default:
		return jv_structural(f, c);
	}
}

static inline __attribute__((always_inline)) int
jv_feed(struct kv_jv *v, const char *buf, size_t len, kv_jv_cb cb, void *arg)
{
	const struct jv_feed_ctx f = { v, cb, arg };
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0;
	ssize_t k;
	int r;

	if (v->state == S_ERR)	/* every failure below returns at once */
		return -1;
	while (i < len) {
		/* Between tokens, what makes no event stays in this loop, with
		 * the transitions jv_structural() makes: whitespace, a member's
		 * colon, a comma (two calls a byte were a third of the scan). */
		if (v->state <= S_AFTER || v->state == S_END) {
			unsigned char c = p[i];

			if (jv_is_ws(c) || (v->state == S_COLON && c == ':') ||
			    (v->state == S_AFTER && c == ',')) {
				if (c == ':')
					v->state = S_VALUE;
				else if (c == ',')
					v->state = jv_is_obj(v) ? S_KEY : S_VALUE;
				i++;
				v->off++;
				continue;
			}
		}
		if (v->state == S_STR && p[i] != '"' && p[i] != '\\') {
			if (v->hisur != 0)
				jv_flush_surrogate(&f);
			if ((k = jv_str_run(&f, p + i, len - i)) == -1)
				return -1;
			i += (size_t)k;
			continue;
		}
		if (v->state == S_NUM) {
			if ((k = jv_num_run(&f, p + i, len - i)) == -1)
				return -1;
			i += (size_t)k;
			continue;
		}
		if ((r = jv_step(&f, p[i])) == -1)
			return -1;
		if (r == 1)	/* left for the state it set */
			continue;
		i++;
		v->off++;
	}
	return v->state == S_ERR ? -1 : 0;
}


#endif

/* The strict JSON validator as it was before its scan loop was made wide
 * (main d32bdc1, worker/jsonv.c, a byte at a time but for 8-byte string
 * runs): fuzz_reqscan's oracle. Its verdict and error text on any input
 * must be those of kv_jv_feed/kv_jv_finish. Functions renamed ref_jv_*;
 * struct kv_jv's fields are the same. */
#include "common/hex.h"
#include "worker/jsonv.h"

#include <stdio.h>
#include <string.h>
#include <sys/types.h>

enum {
	S_START, S_VALUE, S_ARR_FIRST, S_OBJ_FIRST, S_KEY, S_COLON, S_AFTER,
	S_STR, S_ESC, S_UHEX, S_NUM, S_LIT, S_END, S_ERR,
};

/* number grammar: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

static const char *const lits[] = { "true", "false", "null" };
static const enum kv_jv_ev lit_ev[] = { KV_JV_TRUE, KV_JV_FALSE, KV_JV_NULL };

struct feed {
	struct kv_jv	*v;
	kv_jv_cb	 cb;
	void		*arg;
};

static void
emit(struct feed *f, enum kv_jv_ev ev, int level, const char *p, size_t n)
{
	if (f->cb != NULL)
		f->cb(f->arg, ev, level, f->v->off, p, n);
}

static int
fail(struct kv_jv *v, const char *what, unsigned char c)
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

static void
ref_jv_init(struct kv_jv *v)
{
	memset(v, 0, sizeof(*v));
	v->state = S_START;
}

static int
is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int
is_obj(const struct kv_jv *v)
{
	int d = v->depth - 1;

	return (v->isobj[d / 8] >> (d % 8)) & 1;
}

static int
push(struct kv_jv *v, int obj, unsigned char c)
{
	int d = v->depth;

	if (d >= KV_JV_MAX_DEPTH)
		return fail(v, "nesting deeper than 128 levels", c);
	if (obj)
		v->isobj[d / 8] |= (uint8_t)(1u << (d % 8));
	else
		v->isobj[d / 8] &= (uint8_t)~(1u << (d % 8));
	v->depth++;
	return 0;
}

static void
after_value(struct kv_jv *v)
{
	v->state = v->depth == 0 ? S_END : S_AFTER;
}

/* A byte where a value must start. Returns 0 or -1. */
static int
value_start(struct feed *f, unsigned char c)
{
	struct kv_jv *v = f->v;
	int i;

	if (c == '{' || c == '[') {
		emit(f, c == '{' ? KV_JV_OBJ_OPEN : KV_JV_ARR_OPEN, v->depth, NULL, 0);
		if (push(v, c == '{', c) == -1)
			return -1;
		v->state = c == '{' ? S_OBJ_FIRST : S_ARR_FIRST;
	} else if (c == '"') {
		emit(f, KV_JV_STR, v->depth, NULL, 0);
		v->is_key = 0;
		v->state = S_STR;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		emit(f, KV_JV_NUM, v->depth, NULL, 0);
		emit(f, KV_JV_BYTES, v->depth, (const char *)&c, 1);
		v->nstate = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
		v->state = S_NUM;
	} else {
		for (i = 0; i < 3; i++)
			if (c == (unsigned char)lits[i][0])
				break;
		if (i == 3)
			return fail(v, c == 'N' || c == 'I' ? "NaN and Infinity are not JSON" :
			    "expected a value", c);
		v->lit = (uint8_t)i;
		v->litpos = 1;
		v->state = S_LIT;
	}
	return 0;
}

static int
close_container(struct feed *f, unsigned char c)
{
	struct kv_jv *v = f->v;

	if ((c == '}') != is_obj(v))
		return fail(v, "mismatched bracket", c);
	v->depth--;
	emit(f, c == '}' ? KV_JV_OBJ_CLOSE : KV_JV_ARR_CLOSE, v->depth, NULL, 0);
	after_value(v);
	return 0;
}

/* Structural positions: everything outside strings, numbers and literals. */
static int
structural(struct feed *f, unsigned char c)
{
	struct kv_jv *v = f->v;

	if (is_ws(c))
		return 0;
	switch (v->state) {
	case S_START:
		if (c == 0xef && v->off == 0)
			return fail(v, "a UTF-8 byte order mark", c);
		return value_start(f, c);
	case S_VALUE:
		return value_start(f, c);
	case S_ARR_FIRST:
		return c == ']' ? close_container(f, c) : value_start(f, c);
	case S_OBJ_FIRST:
	case S_KEY:
		if (c == '}' && v->state == S_OBJ_FIRST)
			return close_container(f, c);
		if (c != '"')
			return fail(v, "expected a member name", c);
		emit(f, KV_JV_KEY, v->depth, NULL, 0);
		v->is_key = 1;
		v->state = S_STR;
		return 0;
	case S_COLON:
		if (c != ':')
			return fail(v, "expected ':'", c);
		v->state = S_VALUE;
		return 0;
	case S_AFTER:
		if (c == ',') {
			v->state = is_obj(v) ? S_KEY : S_VALUE;
			return 0;
		}
		if (c == '}' || c == ']')
			return close_container(f, c);
		return fail(v, "expected ',' or a closing bracket", c);
	default:	/* S_END */
		return fail(v, "data after the JSON value", c);
	}
}

static void
emit_cp(struct feed *f, uint32_t cp)
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
	emit(f, KV_JV_BYTES, f->v->depth, b, n);
}

/* A lone high surrogate decodes to U+FFFD, as the providers' parsers do. */
static void
flush_surrogate(struct feed *f)
{
	if (f->v->hisur != 0) {
		f->v->hisur = 0;
		emit_cp(f, 0xfffd);
	}
}

/* A lead byte (0xc2..0xf4): lo..hi bound the byte after it so that
 * overlong forms, surrogates and code points past U+10FFFF are refused
 * (RFC 3629). */
static void
utf8_lead(struct kv_jv *v, unsigned char c)
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

/* A run of string content up to a quote or backslash; returns the bytes
 * consumed (the run), or -1. */
static ssize_t
str_run(struct feed *f, const unsigned char *p, size_t n)
{
	struct kv_jv *v = f->v;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c;

		/* Eight plain ASCII bytes at a time (no quote, backslash,
		 * control byte or high bit): prompts are mostly that. */
		while (v->u8need == 0 && n - i >= 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			if (((w & ONES * 0x80) | has_less(w, 0x20) | has_zero(w ^ ONES * '"') |
			    has_zero(w ^ ONES * '\\')) != 0)
				break;
			i += 8;
		}
		if (i == n)
			break;
		c = p[i];
		if (v->u8need > 0) {
			if (c < v->u8lo || c > v->u8hi) {
				v->off += i;
				return fail(v, "invalid UTF-8", c);
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
			return fail(v, "control character in a string", c);
		}
		if (c >= 0x80 && (c < 0xc2 || c > 0xf4)) {
			v->off += i;
			return fail(v, "invalid UTF-8", c);
		}
		if (c >= 0x80)
			utf8_lead(v, c);
	}
	if (i > 0) {
		emit(f, KV_JV_BYTES, v->depth, (const char *)p, i);
		v->off += i;
	}
	return (ssize_t)i;
}

static void
unit_done(struct feed *f)
{
	struct kv_jv *v = f->v;
	uint32_t u = v->ucp;

	if (u >= 0xdc00 && u <= 0xdfff && v->hisur != 0) {
		emit_cp(f, 0x10000 + ((v->hisur - 0xd800) << 10) + (u - 0xdc00));
		v->hisur = 0;
		return;
	}
	flush_surrogate(f);
	if (u >= 0xd800 && u <= 0xdbff)
		v->hisur = u;
	else
		emit_cp(f, u >= 0xdc00 && u <= 0xdfff ? 0xfffd : u);
}

static int
escape(struct feed *f, unsigned char c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	struct kv_jv *v = f->v;
	const char *e;
	int h;

	if (v->state == S_UHEX) {
		if ((h = kv_hexval(c)) < 0)
			return fail(v, "bad \\u escape", c);
		v->ucp = v->ucp << 4 | (uint32_t)h;
		if (++v->uhex == 4) {
			unit_done(f);
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
		return fail(v, "bad escape", c);
	flush_surrogate(f);
	emit(f, KV_JV_BYTES, v->depth, &to[e - from], 1);
	v->state = S_STR;
	return 0;
}

/* One number byte; 1 when the byte ends the number (not consumed). */
static int
number(struct feed *f, unsigned char c)
{
	struct kv_jv *v = f->v;
	int digit = c >= '0' && c <= '9';
	int ns = v->nstate, next = -1;

	switch (ns) {
	case N_MINUS:	next = c == '0' ? N_ZERO : digit ? N_INT : -1; break;
	case N_ZERO:	next = c == '.' ? N_DOT : (c == 'e' || c == 'E') ? N_E : -2; break;
	case N_INT:	next = digit ? N_INT : c == '.' ? N_DOT :
			    (c == 'e' || c == 'E') ? N_E : -2; break;
	case N_DOT:	next = digit ? N_FRAC : -1; break;
	case N_FRAC:	next = digit ? N_FRAC : (c == 'e' || c == 'E') ? N_E : -2; break;
	case N_E:	next = digit ? N_EXP : (c == '+' || c == '-') ? N_ESIGN : -1; break;
	case N_ESIGN:	next = digit ? N_EXP : -1; break;
	case N_EXP:	next = digit ? N_EXP : -2; break;
	}
	if (next == -1)
		return fail(v, "bad number", c);
	if (next == -2) {	/* a byte after a whole number */
		if (digit)
			return fail(v, "bad number (leading zero)", c);
		emit(f, KV_JV_NUM_END, v->depth, NULL, 0);
		after_value(v);
		return 1;
	}
	v->nstate = (uint8_t)next;
	emit(f, KV_JV_BYTES, v->depth, (const char *)&c, 1);
	return 0;
}

static int
literal(struct feed *f, unsigned char c)
{
	struct kv_jv *v = f->v;
	const char *l = lits[v->lit];

	if (c != (unsigned char)l[v->litpos])
		return fail(v, "expected true, false or null", c);
	if (l[++v->litpos] == '\0') {
		emit(f, lit_ev[v->lit], v->depth, NULL, 0);
		after_value(v);
	}
	return 0;
}

static int
string_end(struct feed *f)
{
	struct kv_jv *v = f->v;

	if (v->state == S_ESC || v->state == S_UHEX)
		return 0;
	flush_surrogate(f);
	emit(f, v->is_key ? KV_JV_KEY_END : KV_JV_STR_END, v->depth, NULL, 0);
	if (v->is_key)
		v->state = S_COLON;
	else
		after_value(v);
	return 0;
}

static int
step(struct feed *f, unsigned char c)
{
	struct kv_jv *v = f->v;
	int r;

	switch (v->state) {
	case S_STR:
		if (v->u8need > 0)	/* a quote or backslash inside a sequence */
			return fail(v, "invalid UTF-8", c);
		if (v->hisur != 0 && c != '\\')
			flush_surrogate(f);
		if (c == '"')
			return string_end(f);
		v->state = S_ESC;	/* str_run stops only at '"' or '\\' */
		return 0;
	case S_ESC:
		if (c != 'u' && v->hisur != 0)
			flush_surrogate(f);
		/* FALLTHROUGH */
	case S_UHEX:
		return escape(f, c);
	case S_NUM:
		if ((r = number(f, c)) != 1)
			return r;
		return structural(f, c);
	case S_LIT:
		return literal(f, c);
	default:
		return structural(f, c);
	}
}

static int
ref_jv_feed(struct kv_jv *v, const char *buf, size_t len, kv_jv_cb cb, void *arg)
{
	struct feed f = { v, cb, arg };
	const unsigned char *p = (const unsigned char *)buf;
	size_t i = 0;
	ssize_t k;

	while (i < len) {
		if (v->state == S_ERR)
			return -1;
		/* Between tokens, what makes no event stays in this loop, with
		 * the transitions structural() makes: whitespace, a member's
		 * colon, a comma (two calls a byte were a third of the scan). */
		if (v->state <= S_AFTER || v->state == S_END) {
			unsigned char c = p[i];

			if (is_ws(c) || (v->state == S_COLON && c == ':') ||
			    (v->state == S_AFTER && c == ',')) {
				if (c == ':')
					v->state = S_VALUE;
				else if (c == ',')
					v->state = is_obj(v) ? S_KEY : S_VALUE;
				i++;
				v->off++;
				continue;
			}
		}
		if (v->state == S_STR && p[i] != '"' && p[i] != '\\') {
			if (v->hisur != 0)
				flush_surrogate(&f);
			if ((k = str_run(&f, p + i, len - i)) == -1)
				return -1;
			i += (size_t)k;
			continue;
		}
		if (step(&f, p[i]) == -1)
			return -1;
		i++;
		v->off++;
	}
	return v->state == S_ERR ? -1 : 0;
}

static int
ref_jv_finish(struct kv_jv *v)
{
	if (v->state == S_ERR)
		return -1;
	if (v->state == S_END)
		return 0;
	if (v->state == S_NUM && v->depth == 0 &&
	    (v->nstate == N_ZERO || v->nstate == N_INT || v->nstate == N_FRAC ||
	    v->nstate == N_EXP))
		return 0;
	snprintf(v->err, sizeof(v->err), v->state == S_START ? "the body is empty" :
	    "the body ends inside the JSON value (byte %llu)", (unsigned long long)v->off);
	v->state = S_ERR;
	return -1;
}

/* The usage lexer (usage_json.h): the key ids' names (key_intern), the
 * JSON state machine, and text counting. */
#include <stdint.h>
#include <string.h>

#include "common/hex.h"
#include "worker/usage_json.h"
#include "worker/usage_lex.h"


void
usage_json_init(struct kv_json *j, int multi)
{
	memset(j, 0, sizeof(*j));
	j->state = S_VALUE;
	j->multi = (uint8_t)multi;
}

/* Forget the document in progress; counted bytes survive. */
void
usage_json_reset(struct kv_json *j)
{
	int64_t nbytes = j->nbytes, nhigh = j->nhigh, nchars = j->nchars;

	usage_json_init(j, j->multi);
	j->nbytes = nbytes;
	j->nhigh = nhigh;
	j->nchars = nchars;
}

/* Keep one decoded byte of a key, or of a value the client captures. */
static void
str_put(struct kv_json *j, unsigned char b)
{
	if (j->is_key) {
		if (j->keylen < KV_SCAN_KEY - 1)
			j->key[j->keylen++] = (char)b;
		else
			j->str_bad = 1;
	} else if (j->capture) {
		if (j->slen < KV_SCAN_MODEL - 1 && b != 0)
			j->str[j->slen++] = (char)b;
		else
			j->str_bad = 1;
	}
}

static void
str_put_utf8(struct kv_json *j, uint32_t cp)
{
	if (cp < 0x80) {
		str_put(j, (unsigned char)cp);
	} else if (cp < 0x800) {
		str_put(j, (unsigned char)(0xc0 | cp >> 6));
		str_put(j, (unsigned char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		str_put(j, (unsigned char)(0xe0 | cp >> 12));
		str_put(j, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		str_put(j, (unsigned char)(0x80 | (cp & 0x3f)));
	} else {
		str_put(j, (unsigned char)(0xf0 | cp >> 18));
		str_put(j, (unsigned char)(0x80 | ((cp >> 12) & 0x3f)));
		str_put(j, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		str_put(j, (unsigned char)(0x80 | (cp & 0x3f)));
	}
}

static int
str_byte(struct kv_json *j, unsigned char c)
{
	if (c == '"')
		return str_end(j);
	if (c < 0x20 || (j->hisur && c != '\\'))
		return usage_json_fail(j);
	if (c == '\\') {
		j->state = S_ESC;
		return EV_NONE;
	}
	str_put(j, c);
	return EV_NONE;
}

static int
esc_byte(struct kv_json *j, unsigned char c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *p;

	if (c == 'u') {
		j->state = S_UHEX;
		j->uhex = 0;
		j->ucp = 0;
		return EV_NONE;
	}
	if (j->hisur || c == 0 || (p = strchr(from, c)) == NULL)
		return usage_json_fail(j);
	str_put(j, (unsigned char)to[p - from]);
	j->state = S_STR;
	return EV_NONE;
}

static int
uhex_byte(struct kv_json *j, unsigned char c)
{
	int v = kv_hexval(c);
	uint32_t cp;

	if (v == -1)
		return usage_json_fail(j);
	j->ucp = j->ucp << 4 | (uint32_t)v;
	if (++j->uhex < 4)
		return EV_NONE;
	cp = j->ucp;
	j->state = S_STR;
	if (j->hisur) {
		if (cp < 0xdc00 || cp > 0xdfff)
			return usage_json_fail(j);
		cp = 0x10000 + ((j->hisur - 0xd800) << 10) + (cp - 0xdc00);
		j->hisur = 0;
	} else if (cp >= 0xd800 && cp <= 0xdbff) {
		j->hisur = cp;	/* a low surrogate escape must follow */
		return EV_NONE;
	} else if (cp >= 0xdc00 && cp <= 0xdfff) {
		return usage_json_fail(j);
	}
	if (cp == 0)
		j->str_bad = 1;	/* never keep a NUL */
	str_put_utf8(j, cp);
	return EV_NONE;
}

static void
num_digit(struct kv_json *j, unsigned char c)
{
	if (j->num_ok && (__builtin_mul_overflow(j->num, 10, &j->num) ||
	    __builtin_add_overflow(j->num, c - '0', &j->num)))
		j->num_ok = 0;
}

/* Next number-grammar state after C, or -1 when C ends the number. */
static int
num_next(int st, unsigned char c)
{
	int digit = c >= '0' && c <= '9';

	switch (st) {
	case N_MINUS:
		return c == '0' ? N_ZERO : digit ? N_INT : -2;
	case N_ZERO:
	case N_INT:
		if (digit)
			return st == N_ZERO ? -2 : N_INT;
		return c == '.' ? N_DOT : c == 'e' || c == 'E' ? N_E : -1;
	case N_DOT:
		return digit ? N_FRAC : -2;
	case N_FRAC:
		return digit ? N_FRAC : c == 'e' || c == 'E' ? N_E : -1;
	case N_E:
		return digit ? N_EXP : c == '+' || c == '-' ? N_ESIGN : -2;
	case N_ESIGN:
		return digit ? N_EXP : -2;
	default:
		return digit ? N_EXP : -1;
	}
}

static int
num_byte(struct kv_json *j, unsigned char c)
{
	int next = num_next(j->nstate, c);

	if (next == -2)
		return usage_json_fail(j);
	if (next == -1) {
		if (j->neg && j->num != 0)
			j->num_ok = 0;	/* "-0" is zero, any other minus is not a count */
		after_value(j);
		j->evdepth = j->depth;
		return EV_NUM | EV_AGAIN;
	}
	if (next == N_INT)
		num_digit(j, c);
	else if (next != N_ZERO)	/* "-0" stays 0 */
		j->num_ok = 0;	/* fraction or exponent: not a token count */
	j->nstate = (uint8_t)next;
	return EV_NONE;
}

static int
lit_byte(struct kv_json *j, unsigned char c)
{
	const char *t = lit_text[j->lit];

	if ((unsigned char)t[j->litpos] != c)
		return usage_json_fail(j);
	if (t[++j->litpos] != '\0')
		return EV_NONE;
	after_value(j);
	j->evdepth = j->depth;
	return EV_LIT;
}

static int
after_byte(struct kv_json *j, unsigned char c)
{
	if (c == ',') {
		j->state = in_object(j) ? S_KEY : S_VALUE;
		return EV_NONE;
	}
	if (c == '}' || c == ']')
		return json_pop(j, c == '}');
	return usage_json_fail(j);
}

/* Feed one byte; returns an EV_ code, with EV_AGAIN when the byte must be
 * fed again (it ended a number and starts something else). */
int
usage_json_step(struct kv_json *j, unsigned char c)
{
	switch (j->state) {
	case S_STR:
		return str_byte(j, c);
	case S_ESC:
		return esc_byte(j, c);
	case S_UHEX:
		return uhex_byte(j, c);
	case S_NUM:
		return num_byte(j, c);
	case S_LIT:
		return lit_byte(j, c);
	case S_ERR:
		return EV_NONE;
	}
	if (is_ws(c))
		return EV_NONE;
	switch (j->state) {
	case S_END:
		if (!j->multi)
			return usage_json_fail(j);
		j->state = S_VALUE;	/* another document follows */
		return EV_NONE | EV_AGAIN;
	case S_ARR_FIRST:
		if (c == ']')
			return json_pop(j, 0);
		return value_start(j, c);
	case S_OBJ_FIRST:
		if (c == '}')
			return json_pop(j, 1);
		/* FALLTHROUGH */
	case S_KEY:
		if (c != '"')
			return usage_json_fail(j);
		str_start(j, 1);
		return EV_NONE;
	case S_COLON:
		if (c != ':')
			return usage_json_fail(j);
		j->state = S_VALUE;
		return EV_NONE;
	case S_AFTER:
		return after_byte(j, c);
	default:
		return value_start(j, c);
	}
}

/* Bytes >= 0x80 and the UTF-8 lead bytes among them (one per non-ASCII
 * character), eight bytes at a time where none is high. */
void
usage_count_high(const unsigned char *p, size_t n, int64_t *high, int64_t *chars)
{
	size_t k = 0;

	for (; k + 8 <= n; k += 8) {
		uint64_t x;

		memcpy(&x, p + k, 8);
		if ((x & (USAGE_ONES * 0x80)) != 0)
			break;
	}
	for (; k < n; k++) {
		if (p[k] >= 0x80) {
			(*high)++;
			*chars += p[k] >= 0xc0;
		}
	}
}

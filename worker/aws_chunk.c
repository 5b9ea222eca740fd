/* The chunk-payload decoder: a byte-at-a-time walk of the top-level JSON
 * object that decodes the base64 of its "bytes" member as it goes and
 * skips the rest, strings and nesting included. */
#include "worker/aws_chunk.h"

#include <string.h>

#include "common/base64.h"

enum {
	S_OPEN, S_FIRST, S_KEY_START, S_KEY, S_COLON, S_VALUE, S_B64,
	S_SKIP_STR, S_SKIP_NEST, S_SKIP_SCALAR, S_AFTER, S_DONE, S_FAILED
};

static const char member[] = "bytes";

void
kv_aws_chunk_init(struct kv_aws_chunk *c, kv_aws_chunk_out out, void *arg)
{
	memset(c, 0, sizeof(*c));
	c->out = out;
	c->arg = arg;
	c->state = S_OPEN;
}

static int
is_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static int
flush(struct kv_aws_chunk *c)
{
	size_t n = c->olen;

	c->olen = 0;
	return n == 0 || c->out == NULL ? 0 : c->out(c->arg, c->obuf, n);
}

/* Emit the top N (1..3) bytes of the 24 bits in c->quad. */
static int
emit(struct kv_aws_chunk *c, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (c->olen == sizeof(c->obuf) && flush(c) == -1)
			return -1;
		c->obuf[c->olen++] = (char)(c->quad >> (16 - 8 * i));
	}
	c->quad = 0;
	c->nquad = 0;
	return 0;
}

/* The closing quote of the base64: a partial group is 2 or 3 digits, and
 * padding, if any, completes the group. */
static int
b64_end(struct kv_aws_chunk *c)
{
	int n = c->nquad;

	if (n == 1 || (c->npad > 0 && n + c->npad != 4))
		return -1;
	if (n == 0)
		return 0;
	c->quad <<= 6 * (4 - n);
	return emit(c, n - 1);
}

/* One character of the base64 string (escapes already undone). */
static int
b64_char(struct kv_aws_chunk *c, char ch)
{
	int v;

	if (ch == '=') {
		if (c->nquad < 2 || c->nquad + ++c->npad > 4)
			return -1;
		return 0;
	}
	v = kv_b64val((unsigned char)ch);
	if (v < 0 || c->npad > 0)
		return -1;
	c->quad = c->quad << 6 | (unsigned)v;
	return ++c->nquad == 4 ? emit(c, 3) : 0;
}

/* In the "bytes" string: JSON may escape '/' as "\/", nothing else in
 * base64 needs an escape. */
static int
in_b64(struct kv_aws_chunk *c, char ch)
{
	if (c->esc) {
		c->esc = 0;
		return ch == '/' ? b64_char(c, ch) : -1;
	}
	if (ch == '\\') {
		c->esc = 1;
		return 0;
	}
	if (ch != '"')
		return b64_char(c, ch);
	c->seen = 1;
	c->state = S_AFTER;
	return b64_end(c);
}

/* In a key: match it against "bytes" as it goes. */
static int
in_key(struct kv_aws_chunk *c, char ch)
{
	if (c->esc) {
		c->esc = 0;
		c->key_pos = -1;
		return 0;
	}
	if (ch == '\\') {
		c->esc = 1;
		return 0;
	}
	if (ch == '"') {
		c->is_bytes = c->key_pos == (int)sizeof(member) - 1;
		c->state = S_COLON;
		return 0;
	}
	if (c->key_pos >= 0)
		c->key_pos = c->key_pos < (int)sizeof(member) - 1 &&
		    member[c->key_pos] == ch ? c->key_pos + 1 : -1;
	return 0;
}

/* Inside a skipped string (at any depth) or nesting. */
static int
in_skip(struct kv_aws_chunk *c, char ch)
{
	if (c->state == S_SKIP_STR) {
		if (c->esc)
			c->esc = 0;
		else if (ch == '\\')
			c->esc = 1;
		else if (ch == '"')
			c->state = c->nest > 0 ? S_SKIP_NEST : S_AFTER;
		return 0;
	}
	if (ch == '"')
		c->state = S_SKIP_STR;
	else if (ch == '{' || ch == '[')
		c->nest++;
	else if ((ch == '}' || ch == ']') && --c->nest == 0)
		c->state = S_AFTER;
	return 0;
}

/* The start of a member's value. */
static int
value_start(struct kv_aws_chunk *c, char ch)
{
	if (c->is_bytes) {
		if (ch != '"' || c->seen)
			return -1;
		c->state = S_B64;
	} else if (ch == '"') {
		c->state = S_SKIP_STR;
	} else if (ch == '{' || ch == '[') {
		c->nest = 1;
		c->state = S_SKIP_NEST;
	} else if (ch == ',' || ch == '}' || ch == ']' || ch == ':') {
		return -1;
	} else {
		c->state = S_SKIP_SCALAR;
	}
	return 0;
}

/* Between tokens: whitespace, or the structural character a state wants. */
static int
between(struct kv_aws_chunk *c, char ch)
{
	if (is_ws(ch) && c->state != S_SKIP_SCALAR)
		return 0;
	switch (c->state) {
	case S_OPEN:
		c->state = S_FIRST;
		return ch == '{' ? 0 : -1;
	case S_FIRST:
	case S_KEY_START:
		if (ch == '}' && c->state == S_FIRST) {
			c->state = S_DONE;
			return 0;
		}
		c->key_pos = 0;
		c->state = S_KEY;
		return ch == '"' ? 0 : -1;
	case S_COLON:
		c->state = S_VALUE;
		return ch == ':' ? 0 : -1;
	case S_VALUE:
		return value_start(c, ch);
	case S_SKIP_SCALAR:
		if (!is_ws(ch) && ch != ',' && ch != '}')
			return 0;
		c->state = S_AFTER;
		return between(c, ch);
	case S_AFTER:
		c->state = ch == ',' ? S_KEY_START : S_DONE;
		return ch == ',' || ch == '}' ? 0 : -1;
	default:	/* S_DONE: nothing but whitespace after the object */
		return -1;
	}
}

static int
step(struct kv_aws_chunk *c, char ch)
{
	switch (c->state) {
	case S_B64:
		return in_b64(c, ch);
	case S_KEY:
		return in_key(c, ch);
	case S_SKIP_STR:
	case S_SKIP_NEST:
		return in_skip(c, ch);
	default:
		return between(c, ch);
	}
}

int
kv_aws_chunk_feed(struct kv_aws_chunk *c, const char *p, size_t len)
{
	size_t i;

	if (c->state == S_FAILED)
		return -1;
	/* what was decoded before a bad byte still goes out: the output must
	 * not depend on the cuts, even up to an error */
	for (i = 0; i < len; i++)
		if (step(c, p[i]) == -1) {
			c->state = S_FAILED;
			(void)flush(c);
			return -1;
		}
	if (flush(c) == -1) {
		c->state = S_FAILED;
		return -1;
	}
	return 0;
}

int
kv_aws_chunk_finish(struct kv_aws_chunk *c)
{
	return c->state == S_DONE && c->seen ? 0 : -1;
}

/* The streaming decoder of chunked message bodies (RFC 9112 7.1; http.h):
 * a byte-at-a-time state machine over the framing, payload handed back in
 * runs that point into the caller's buffer. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <string.h>

#include "common/hex.h"
#include "common/http.h"
#include "common/http_chars.h"

#define CHUNK_MAX_SIZE		((uint64_t)1 << 40)
#define CHUNK_MAX_LINE		4096
#define TRAILER_MAX_LINE	4096
#define TRAILER_MAX_TOTAL	8192

enum {
	CK_SIZE0,	/* first hex digit of a chunk size */
	CK_SIZE,	/* more hex digits, ';' or CR */
	CK_EXT,		/* chunk extension up to CR */
	CK_SIZE_LF,
	CK_DATA,
	CK_DATA_CR,
	CK_DATA_LF,
	CK_TRL_START,	/* a trailer field or the final CRLF */
	CK_TRL_NAME,
	CK_TRL_VALUE,
	CK_TRL_LF,
	CK_END_LF,
	CK_DONE,
	CK_ERROR,
};

void
kv_chunked_init(struct kv_chunked *c)
{
	memset(c, 0, sizeof(*c));
	c->state = CK_SIZE0;
}

/* The chunk-size line: 1*HEXDIG [ ";" ext ] CRLF. Returns the next state. */
static int
ck_size_byte(struct kv_chunked *c, char ch)
{
	int v = kv_hexval((unsigned char)ch);

	if (++c->linelen > CHUNK_MAX_LINE)
		return CK_ERROR;
	switch (c->state) {
	case CK_SIZE0:
		if (v == -1)
			return CK_ERROR;
		c->remaining = (uint64_t)v;
		return CK_SIZE;
	case CK_SIZE:
		if (v != -1) {
			c->remaining = c->remaining * 16 + (uint64_t)v;
			return c->remaining > CHUNK_MAX_SIZE ? CK_ERROR : CK_SIZE;
		}
		if (ch == ';')
			return CK_EXT;
		return ch == '\r' ? CK_SIZE_LF : CK_ERROR;
	default: /* CK_EXT */
		if (ch == '\r')
			return CK_SIZE_LF;
		return IS_FIELD(ch) ? CK_EXT : CK_ERROR;
	}
}

/* After the size line's LF: data, or the trailer section for size 0. The
 * trailer section reuses `remaining` as its running total. */
static int
ck_size_end(struct kv_chunked *c, char ch)
{
	if (ch != '\n')
		return CK_ERROR;
	c->linelen = 0;
	return c->remaining == 0 ? CK_TRL_START : CK_DATA;
}

static int
ck_trailer_byte(struct kv_chunked *c, char ch)
{
	if (++c->linelen > TRAILER_MAX_LINE || ++c->remaining > TRAILER_MAX_TOTAL)
		return CK_ERROR;
	switch (c->state) {
	case CK_TRL_START:
		if (ch == '\r')
			return CK_END_LF;
		return IS_TCHAR(ch) ? CK_TRL_NAME : CK_ERROR;
	case CK_TRL_NAME:
		if (ch == ':')
			return CK_TRL_VALUE;
		return IS_TCHAR(ch) ? CK_TRL_NAME : CK_ERROR;
	case CK_TRL_VALUE:
		if (ch == '\r')
			return CK_TRL_LF;
		return IS_FIELD(ch) ? CK_TRL_VALUE : CK_ERROR;
	case CK_TRL_LF:
		c->linelen = 0;
		return ch == '\n' ? CK_TRL_START : CK_ERROR;
	default: /* CK_END_LF */
		return ch == '\n' ? CK_DONE : CK_ERROR;
	}
}

/* One framing byte (any state but CK_DATA): the next state. */
static int
ck_byte(struct kv_chunked *c, char ch)
{
	switch (c->state) {
	case CK_SIZE0:
	case CK_SIZE:
	case CK_EXT:
		return ck_size_byte(c, ch);
	case CK_SIZE_LF:
		return ck_size_end(c, ch);
	case CK_DATA_CR:
		return ch == '\r' ? CK_DATA_LF : CK_ERROR;
	case CK_DATA_LF:
		c->linelen = 0;
		return ch == '\n' ? CK_SIZE0 : CK_ERROR;
	default:
		return ck_trailer_byte(c, ch);
	}
}

ssize_t
kv_chunked_feed(struct kv_chunked *c, const char *in, size_t len,
    const char **data, size_t *data_len)
{
	size_t i = 0, n;

	*data = NULL;
	*data_len = 0;
	if (c->state == CK_ERROR)
		return -1;
	while (i < len && c->state != CK_DONE) {
		if (c->state == CK_DATA) {
			n = len - i;
			if (n > c->remaining)
				n = (size_t)c->remaining;
			*data = in + i;
			*data_len = n;
			if ((c->remaining -= n) == 0)
				c->state = CK_DATA_CR;
			return (ssize_t)(i + n);
		}
		c->state = ck_byte(c, in[i++]);
		if (c->state == CK_ERROR)
			return -1;
	}
	c->done = c->state == CK_DONE;
	return (ssize_t)i;
}

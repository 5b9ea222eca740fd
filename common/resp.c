/* RESP2 encoder and parser; see resp.h for the contract. The parser starts
 * from the first byte on every call: replies to the master are a few
 * hundred bytes, so resuming mid-value would buy nothing but states. */
#include "common/resp.h"

#include <stdio.h>
#include <string.h>

#define STATUS_MAX	4096	/* a status or error line (script errors are long) */

struct parser {
	const char		*buf;
	size_t			 len;
	size_t			 pos;
	struct kv_resp_reply	*r;
};

/* The line at p->pos up to CRLF, at most MAX bytes before it. Returns 1, with
 * start and n set and pos past the CRLF; 0 when the line is not complete yet;
 * -1 for a bare CR or LF or a line over MAX. */
static int
line(struct parser *p, size_t max, const char **start, size_t *n)
{
	size_t i;

	for (i = p->pos; i < p->len; i++) {
		if (p->buf[i] == '\n')
			return -1;
		if (p->buf[i] != '\r') {
			if (i - p->pos >= max)
				return -1;
			continue;
		}
		if (i + 1 == p->len)
			return 0;
		if (p->buf[i + 1] != '\n')
			return -1;
		*start = p->buf + p->pos;
		*n = i - p->pos;
		p->pos = i + 2;
		return 1;
	}
	return p->len - p->pos > max ? -1 : 0;
}

/* Canonical decimal: "0", or an optional '-' and digits not starting with
 * 0; "-0" is not canonical. Fits int64. */
static int
canon_int(const char *s, size_t n, int64_t *out)
{
	uint64_t v = 0, lim;
	size_t i = 0;
	int neg = 0;

	if (n > 0 && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == n || (s[i] == '0' && (n - i > 1 || neg)))
		return -1;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (lim - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

static int parse_value(struct parser *p, struct kv_resp_value *v, int depth);

static int
parse_bulk(struct parser *p, struct kv_resp_value *v, int64_t n)
{
	if (n == -1) {
		v->nil = 1;
		return 1;
	}
	if (n < 0 || n > KV_RESP_MAX_BULK)
		return -1;
	if (p->len - p->pos < (size_t)n + 2)
		return 0;
	if (p->buf[p->pos + (size_t)n] != '\r' || p->buf[p->pos + (size_t)n + 1] != '\n')
		return -1;
	v->str = p->buf + p->pos;
	v->len = (size_t)n;
	p->pos += (size_t)n + 2;
	return 1;
}

/* The n elements take n contiguous nodes, claimed before any of them is
 * parsed so that nested arrays claim theirs after. */
static int
parse_array(struct parser *p, struct kv_resp_value *v, int64_t n, int depth)
{
	size_t i;
	int rc;

	if (n == -1) {
		v->nil = 1;
		return 1;
	}
	if (n < 0 || depth >= KV_RESP_MAX_DEPTH ||
	    (uint64_t)n > KV_RESP_MAX_NODES - p->r->nnodes)
		return -1;
	v->elem = p->r->nodes + p->r->nnodes;
	v->n = (size_t)n;
	p->r->nnodes += (size_t)n;
	for (i = 0; i < v->n; i++)
		if ((rc = parse_value(p, &v->elem[i], depth + 1)) != 1)
			return rc;
	return 1;
}

static int
parse_value(struct parser *p, struct kv_resp_value *v, int depth)
{
	const char *s;
	size_t n;
	int64_t num;
	int rc, type;

	if (p->pos >= p->len)
		return 0;
	memset(v, 0, sizeof(*v));
	type = (unsigned char)p->buf[p->pos++];
	v->type = type;
	switch (type) {
	case KV_RESP_STATUS:
	case KV_RESP_ERROR:
		if ((rc = line(p, STATUS_MAX, &s, &n)) != 1)
			return rc;
		v->str = s;
		v->len = n;
		return 1;
	case KV_RESP_INTEGER:
	case KV_RESP_BULK:
	case KV_RESP_ARRAY:
		if ((rc = line(p, KV_RESP_MAX_LINE, &s, &n)) != 1)
			return rc;
		if (canon_int(s, n, &num) == -1)
			return -1;
		if (type == KV_RESP_INTEGER) {
			v->integer = num;
			return 1;
		}
		return type == KV_RESP_BULK ? parse_bulk(p, v, num) :
		    parse_array(p, v, num, depth);
	default:
		return -1;
	}
}

int
kv_resp_parse(const char *buf, size_t len, struct kv_resp_reply *r, size_t *used)
{
	struct parser p = { buf, len, 0, r };
	int rc;

	r->nnodes = 1;
	rc = parse_value(&p, &r->nodes[0], 0);
	if (rc == 1)
		*used = p.pos;
	return rc;
}

/* ---- encoding ---------------------------------------------------------- */

struct out {
	char	*buf;
	size_t	 len;
	size_t	 pos;
	int	 full;
};

static void
put(struct out *o, const void *s, size_t n)
{
	if (o->full || n > o->len - o->pos) {
		o->full = 1;
		return;
	}
	memcpy(o->buf + o->pos, s, n);
	o->pos += n;
}

static void
put_head(struct out *o, char type, int64_t n)
{
	char tmp[32];
	int k = snprintf(tmp, sizeof(tmp), "%c%lld\r\n", type, (long long)n);

	put(o, tmp, (size_t)k);
}

long
kv_resp_command(char *buf, size_t outlen, int argc, const char *const *argv,
    const size_t *lens)
{
	struct out o = { buf, outlen, 0, 0 };
	int i;

	put_head(&o, '*', argc);
	for (i = 0; i < argc; i++) {
		put_head(&o, '$', (int64_t)lens[i]);
		put(&o, argv[i], lens[i]);
		put(&o, "\r\n", 2);
	}
	return o.full ? -1 : (long)o.pos;
}

static void
encode(struct out *o, const struct kv_resp_value *v)
{
	char t = (char)v->type;
	size_t i;

	switch (v->type) {
	case KV_RESP_STATUS:
	case KV_RESP_ERROR:
		put(o, &t, 1);
		put(o, v->str, v->len);
		put(o, "\r\n", 2);
		break;
	case KV_RESP_INTEGER:
		put_head(o, ':', v->integer);
		break;
	case KV_RESP_BULK:
		put_head(o, '$', v->nil ? -1 : (int64_t)v->len);
		if (!v->nil) {
			put(o, v->str, v->len);
			put(o, "\r\n", 2);
		}
		break;
	default:
		put_head(o, '*', v->nil ? -1 : (int64_t)v->n);
		for (i = 0; !v->nil && i < v->n; i++)
			encode(o, &v->elem[i]);
		break;
	}
}

long
kv_resp_encode(char *buf, size_t outlen, const struct kv_resp_value *v)
{
	struct out o = { buf, outlen, 0, 0 };

	encode(&o, v);
	return o.full ? -1 : (long)o.pos;
}

int
kv_resp_int(const struct kv_resp_value *v, int64_t *out)
{
	if (v->type == KV_RESP_INTEGER) {
		*out = v->integer;
		return 0;
	}
	if ((v->type == KV_RESP_BULK || v->type == KV_RESP_STATUS) && !v->nil)
		return canon_int(v->str, v->len, out);
	return -1;
}

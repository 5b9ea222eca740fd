/* The audit log's line: written, hashed, parsed and chained (audit.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/audit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/errf.h"
#include "common/hex.h"
#include "common/jsonread.h"

/* ",\"hash\":\"" + 64 + "\"}" and ",\"prev\":\"" + 64 + "\"" */
#define HASH_TAIL	(9 + 64 + 2)
#define PREV_TAIL	(9 + 64 + 1)

/* ---- building ----------------------------------------------------------- */

/* S as a JSON string into B at *pos: ASCII only, so that any byte a
 * command line or a URL holds comes out as valid JSON (above 0x7e as
 * \u00XX, Latin-1's reading of it). 0, or -1 when it does not fit. */
static int
put_string(char *b, size_t cap, size_t *pos, const char *s)
{
	static const char digits[] = "0123456789abcdef";
	size_t p = *pos;

	if (p >= cap)
		return -1;
	b[p++] = '"';
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (p + 7 >= cap)
			return -1;
		if (c == '"' || c == '\\') {
			b[p++] = '\\';
			b[p++] = (char)c;
		} else if (c < 0x20 || c > 0x7e) {
			memcpy(b + p, "\\u00", 4);
			b[p + 4] = digits[c >> 4];
			b[p + 5] = digits[c & 15];
			p += 6;
		} else {
			b[p++] = (char)c;
		}
	}
	if (p + 1 >= cap)
		return -1;
	b[p++] = '"';
	*pos = p;
	return 0;
}

/* Plain text T at *pos. */
static int
put_raw(char *b, size_t cap, size_t *pos, const char *t, size_t n)
{
	if (n >= cap - *pos)
		return -1;
	memcpy(b + *pos, t, n);
	*pos += n;
	return 0;
}

static int
put_fmt(char *b, size_t cap, size_t *pos, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b + *pos, cap - *pos, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= cap - *pos)
		return -1;
	*pos += (size_t)n;
	return 0;
}

/* ",\"NAME\":" (or "{\"NAME\":" for the first member) into O. */
static int
obj_name(struct kv_audit_obj *o, const char *name)
{
	size_t p = o->len;

	if (o->failed || put_raw(o->buf, sizeof(o->buf), &p, o->len ? "," : "{", 1) == -1 ||
	    put_string(o->buf, sizeof(o->buf), &p, name) == -1 ||
	    put_raw(o->buf, sizeof(o->buf), &p, ":", 1) == -1) {
		o->failed = 1;
		return -1;
	}
	o->len = p;
	return 0;
}

void
kv_audit_obj_int(struct kv_audit_obj *o, const char *name, int64_t v)
{
	if (obj_name(o, name) == 0 &&
	    put_fmt(o->buf, sizeof(o->buf), &o->len, "%lld", (long long)v) == -1)
		o->failed = 1;
}

void
kv_audit_obj_str(struct kv_audit_obj *o, const char *name, const char *s)
{
	if (obj_name(o, name) == -1)
		return;
	if ((s == NULL ? put_raw(o->buf, sizeof(o->buf), &o->len, "null", 4) :
	    put_string(o->buf, sizeof(o->buf), &o->len, s)) == -1)
		o->failed = 1;
}

void
kv_audit_obj_bool(struct kv_audit_obj *o, const char *name, int v)
{
	if (obj_name(o, name) == 0 &&
	    put_raw(o->buf, sizeof(o->buf), &o->len, v ? "true" : "false", v ? 4 : 5) == -1)
		o->failed = 1;
}

/* ",\"NAME\":" and O's object, or null when O is empty. */
static int
put_obj(char *b, size_t cap, size_t *pos, const char *name, const struct kv_audit_obj *o)
{
	if (o->failed || put_fmt(b, cap, pos, ",\"%s\":", name) == -1)
		return -1;
	if (o->len == 0)
		return put_raw(b, cap, pos, "null", 4);
	if (put_raw(b, cap, pos, o->buf, o->len) == -1)
		return -1;
	return put_raw(b, cap, pos, "}", 1);
}

void
kv_audit_digest(const char *b, size_t n, char hex[KV_AUDIT_HEX])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	/* Only an allocation failure inside OpenSSL fails a SHA-256: a
	 * digest of zeros then chains nothing and the line is refused. */
	if (EVP_Digest(b, n, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
		memset(md, 0, sizeof(md));
	kv_hex_encode(md, sizeof(md), hex);
}

/* "2026-12-07T19:40:01.123Z" of MS into OUT (64 bytes). */
static void
iso_ms(int64_t ms, char out[64])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL)
		memset(&tm, 0, sizeof(tm));
	snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* ",\"key\":{\"id\":...,\"label\":...}", or null without an account. */
static int
put_key(char *b, size_t cap, size_t *pos, const struct kv_audit_rec *r)
{
	if (r->key_id[0] == '\0')
		return put_raw(b, cap, pos, ",\"key\":null", 11);
	if (put_raw(b, cap, pos, ",\"key\":{\"id\":", 13) == -1 ||
	    put_string(b, cap, pos, r->key_id) == -1 ||
	    put_raw(b, cap, pos, ",\"label\":", 9) == -1)
		return -1;
	if ((r->label[0] != '\0' ? put_string(b, cap, pos, r->label) :
	    put_raw(b, cap, pos, "null", 4)) == -1)
		return -1;
	return put_raw(b, cap, pos, "}", 1);
}

/* The line up to and including "prev" (P of audit.h), into B. */
static int
put_body(char *b, size_t cap, size_t *pos, const struct kv_audit_rec *r,
    const char prev[KV_AUDIT_HEX])
{
	char when[64];

	iso_ms(r->time_ms, when);
	if (put_fmt(b, cap, pos, "{\"time\":\"%s\",\"time_ms\":%lld,\"via\":", when,
	    (long long)r->time_ms) == -1 || put_string(b, cap, pos, r->via) == -1 ||
	    put_obj(b, cap, pos, "who", &r->who) == -1 ||
	    put_raw(b, cap, pos, ",\"op\":", 6) == -1 || put_string(b, cap, pos, r->op) == -1 ||
	    put_raw(b, cap, pos, ",\"request\":", 11) == -1 ||
	    put_string(b, cap, pos, r->request) == -1)
		return -1;
	if (put_key(b, cap, pos, r) == -1)
		return -1;
	if (put_obj(b, cap, pos, "args", &r->args) == -1 ||
	    put_obj(b, cap, pos, "before", &r->before) == -1 ||
	    put_obj(b, cap, pos, "after", &r->after) == -1)
		return -1;
	return put_fmt(b, cap, pos, ",\"status\":%d,\"prev\":\"%s\"", r->status, prev);
}

int
kv_audit_format(char *out, size_t cap, const struct kv_audit_rec *r,
    const char prev[KV_AUDIT_HEX])
{
	char hash[KV_AUDIT_HEX];
	size_t pos = 0, body;

	if (cap > KV_AUDIT_LINE_MAX + 1)
		cap = KV_AUDIT_LINE_MAX + 1;	/* the NUL besides the line */
	if (put_body(out, cap, &pos, r, prev) == -1 || pos + HASH_TAIL + 1 >= cap)
		return -1;
	body = pos;
	out[pos] = '}';
	kv_audit_digest(out, body + 1, hash);
	if (put_fmt(out, cap, &pos, ",\"hash\":\"%s\"}\n", hash) == -1)
		return -1;
	return (int)pos;
}

/* ---- reading ------------------------------------------------------------ */

/* 64 lowercase hex digits at S into OUT. */
static int
take_hex(const char *s, char out[KV_AUDIT_HEX])
{
	int i;

	for (i = 0; i < 64; i++)
		if (kv_hexval((unsigned char)s[i]) == -1 || (s[i] >= 'A' && s[i] <= 'F'))
			return -1;
	memcpy(out, s, 64);
	out[64] = '\0';
	return 0;
}

/* The tail: ",\"prev\":\"HEX\"" then ",\"hash\":\"HEX\"}", byte for byte. */
static int
parse_tail(const char *line, size_t len, struct kv_audit_line *out)
{
	const char *h, *p;

	if (len < 1 + PREV_TAIL + HASH_TAIL)
		return -1;
	h = line + len - HASH_TAIL;
	p = h - PREV_TAIL;
	if (memcmp(h, ",\"hash\":\"", 9) != 0 || memcmp(h + 73, "\"}", 2) != 0 ||
	    memcmp(p, ",\"prev\":\"", 9) != 0 || p[73] != '"')
		return -1;
	return take_hex(h + 9, out->hash) == -1 || take_hex(p + 9, out->prev) == -1 ? -1 : 0;
}

/* The member's value, an integer of digits, into *v. */
static int
read_ms(struct kv_jr *jr, int64_t *v)
{
	const char *t;
	size_t n, i;

	if (kv_jr_peek(jr) != KV_JR_NUMBER || kv_jr_number(jr, &t, &n) == -1 || n > 18)
		return -1;
	for (*v = 0, i = 0; i < n; i++) {
		if (t[i] < '0' || t[i] > '9')
			return -1;
		*v = *v * 10 + (t[i] - '0');
	}
	return 0;
}

/* The whole line as one strict JSON object whose members open with "time"
 * (a string) and "time_ms", and close with "prev" and "hash". */
static int
parse_json(const char *line, size_t len, struct kv_audit_line *out, char *why,
    size_t whylen)
{
	struct kv_jr jr;
	char name[32], last[2][32] = { "", "" }, when[40];
	int n = 0, r;

	kv_jr_init(&jr, line, len);
	if (kv_jr_peek(&jr) != KV_JR_OBJECT || kv_jr_enter(&jr, KV_JR_OBJECT) == -1)
		return kv_errf(why, whylen, "not a JSON object: %s", jr.err);
	while ((r = kv_jr_member(&jr, name, sizeof(name))) == 1) {
		if (n == 0 && (strcmp(name, "time") != 0 ||
		    kv_jr_string(&jr, when, sizeof(when)) == -1))
			return kv_errf(why, whylen, "does not open with \"time\"");
		if (n == 1 && (strcmp(name, "time_ms") != 0 || read_ms(&jr, &out->time_ms) == -1))
			return kv_errf(why, whylen, "\"time_ms\" is not its second member, "
			    "an integer");
		if (n >= 2 && kv_jr_skip(&jr) == -1)
			break;
		memcpy(last[0], last[1], sizeof(last[0]));
		memcpy(last[1], name, sizeof(last[1]));
		n++;
	}
	if (r == -1 || jr.failed || kv_jr_finish(&jr) == -1)
		return kv_errf(why, whylen, "not a JSON object: %s", jr.err);
	if (strcmp(last[0], "prev") != 0 || strcmp(last[1], "hash") != 0)
		return kv_errf(why, whylen, "does not end with \"prev\" and \"hash\"");
	return 0;
}

int
kv_audit_parse(const char *line, size_t len, struct kv_audit_line *out, char *why,
    size_t whylen)
{
	char body[KV_AUDIT_LINE_MAX], hash[KV_AUDIT_HEX];
	size_t n;

	memset(out, 0, sizeof(*out));
	if (len == 0)
		return kv_errf(why, whylen, "an empty line");
	if (len >= KV_AUDIT_LINE_MAX)
		return kv_errf(why, whylen, "longer than any line kilovolt writes (%zu bytes)",
		    len);
	if (parse_json(line, len, out, why, whylen) == -1)
		return -1;
	if (parse_tail(line, len, out) == -1)
		return kv_errf(why, whylen, "its \"prev\" and \"hash\" are not as kilovolt "
		    "writes them (64 lowercase hex digits each, at the end)");
	n = len - HASH_TAIL;
	memcpy(body, line, n);
	body[n] = '}';
	kv_audit_digest(body, n + 1, hash);
	if (strcmp(hash, out->hash) != 0)
		return kv_errf(why, whylen, "its hash does not match its content (the line "
		    "was edited)");
	return 0;
}

void
kv_audit_chain_init(struct kv_audit_chain *ch)
{
	memcpy(ch->prev, KV_AUDIT_GENESIS, KV_AUDIT_HEX);
	ch->lines = 0;
}

int
kv_audit_chain_next(struct kv_audit_chain *ch, const char *line, size_t len,
    int terminated, char *why, size_t whylen)
{
	struct kv_audit_line l;
	char err[200];

	if (!terminated)
		return kv_errf(why, whylen, "line %zu is cut short (the file ends inside it: "
		    "truncated)", ch->lines + 1);
	if (kv_audit_parse(line, len, &l, err, sizeof(err)) == -1)
		return kv_errf(why, whylen, "line %zu: %s", ch->lines + 1, err);
	if (strcmp(l.prev, ch->prev) != 0)
		return kv_errf(why, whylen, ch->lines == 0 ? "line 1: its prev is not the "
		    "genesis value (lines before it were deleted)" : "line %zu: its prev is "
		    "not the hash of line %zu (a line was deleted, inserted or moved here)",
		    ch->lines + 1, ch->lines);
	kv_audit_digest(line, len, ch->prev);
	ch->lines++;
	return 0;
}

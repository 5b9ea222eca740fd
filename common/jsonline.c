/* Flat one-line JSON objects: see jsonline.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/jsonline.h"

#include "common/hex.h"

#include <stdio.h>
#include <string.h>

int
kv_jsonline_string(char *buf, size_t cap, size_t *pos, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, p = *pos;
	unsigned char ch;

#define PUT(c) do { if (p + 1 >= cap) goto full; buf[p++] = (c); } while (0)
	PUT('"');
	for (i = 0; i < len; i++) {
		ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			PUT('\\');
			PUT((char)ch);
		} else if (ch < 0x20 || ch == 0x7f) {
			PUT('\\'); PUT('u'); PUT('0'); PUT('0');
			PUT(hex[ch >> 4]); PUT(hex[ch & 0xf]);
		} else {
			PUT((char)ch);
		}
	}
	PUT('"');
#undef PUT
	buf[p] = '\0';
	*pos = p;
	return 0;
full:
	if (cap > 0)
		buf[cap - 1 < p ? cap - 1 : p] = '\0';
	*pos = p;
	return -1;
}

void
kv_json_write_string(FILE *f, const char *s)
{
	enum { CHUNK = 256 };
	char buf[CHUNK * 6 + 3];	/* a byte escapes to at most 6, plus quotes */
	size_t n = strlen(s), m, pos;

	fputc('"', f);
	for (; n > 0; s += m, n -= m) {
		m = n < CHUNK ? n : CHUNK;
		pos = 0;
		(void)kv_jsonline_string(buf, sizeof(buf), &pos, s, m);	/* fits */
		fwrite(buf + 1, 1, pos - 2, f);	/* without its quotes */
	}
	fputc('"', f);
}

/* Skip the string whose opening quote is at s[i]; returns the index after
 * its closing quote, or 0 when it does not close within len. */
static size_t
skip_string(const char *s, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

/* Copy the string at s[i] (opening quote) unescaped into out. */
static int
copy_string(const char *s, size_t len, size_t i, char *out, size_t outlen)
{
	size_t o = 0;
	int k, v, d;
	char c;

	for (i++; i < len && s[i] != '"'; i++) {
		c = s[i];
		if (c == '\\') {
			if (++i >= len)
				return 0;
			switch (s[i]) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u':
				if (i + 4 >= len)
					return 0;
				for (v = 0, k = 1; k <= 4; k++) {
					if ((d = kv_hexval((unsigned char)s[i + (size_t)k])) < 0)
						return 0;
					v = v * 16 + d;
				}
				i += 4;
				c = v < 0x80 ? (char)v : '?';
				break;
			default: c = s[i]; break;
			}
		}
		if (o + 1 >= outlen)
			return 0;
		out[o++] = c;
	}
	if (i >= len)
		return 0;
	out[o] = '\0';
	return 's';
}

int
kv_jsonline_get(const char *line, size_t len, const char *name, char *out,
    size_t outlen)
{
	size_t nlen = strlen(name), i = 0, end, v;

	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (outlen == 0 || len < 2 || line[0] != '{' || line[len - 1] != '}')
		return 0;
	/* Walk the members: "name":value, separated by commas. */
	for (i = 1; i < len && line[i] == '"';) {
		end = skip_string(line, len, i);
		if (end == 0 || end >= len || line[end] != ':')
			return 0;
		v = end + 1;
		if (v >= len)
			return 0;
		if (end - i - 2 == nlen && memcmp(line + i + 1, name, nlen) == 0) {
			if (line[v] == '"')
				return copy_string(line, len, v, out, outlen);
			for (end = v; end < len && line[end] != ',' && line[end] != '}'; end++)
				;
			if (end >= len || end == v || end - v >= outlen)
				return 0;
			memcpy(out, line + v, end - v);
			out[end - v] = '\0';
			return 'n';
		}
		if (line[v] == '"') {
			if ((end = skip_string(line, len, v)) == 0)
				return 0;
		} else {
			for (end = v; end < len && line[end] != ',' && line[end] != '}'; end++)
				;
		}
		if (end >= len || line[end] != ',')
			return 0;
		i = end + 1;
	}
	return 0;
}

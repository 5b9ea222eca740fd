/* Flat JSON objects on one line, as the request log writes them (one object
 * per request, no nesting, no spaces) and `kvctl requests` reads them back.
 * Pure functions: no allocation, no I/O. */
#ifndef KV_JSONLINE_H
#define KV_JSONLINE_H

#include <stddef.h>
#include <stdio.h>

/* Append S (len bytes) to buf[*pos..cap) as a JSON string literal, quotes
 * included; bytes below 0x20, '"', '\\' and 0x7f are escaped. Returns 0,
 * or -1 when it does not fit (buf then holds a cut prefix). */
int	kv_jsonline_string(char *buf, size_t cap, size_t *pos, const char *s,
	    size_t len);

/* Write S (terminated) to F as a JSON string literal, quotes included,
 * escaped as kv_jsonline_string escapes (the one JSON string writer:
 * kvctl's and the status page's JSON, the request log). Errors are F's
 * (ferror). */
void	kv_json_write_string(FILE *f, const char *s);

/* Find the member NAME of the top-level object in LINE (len bytes, need
 * not be terminated) and copy its value to out (terminated): a string's
 * contents unescaped (\uXXXX above 0x7f become '?'), a number, true, false
 * or null as written. Returns the value's type ('s' string, 'n' anything
 * else), or 0 when the member is absent, the line is not such an object,
 * or the value does not fit in outlen bytes. */
int	kv_jsonline_get(const char *line, size_t len, const char *name,
	    char *out, size_t outlen);

#endif

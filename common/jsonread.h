/* A strict, small JSON reader over a buffer held in memory (RFC 8259: no
 * comments, no trailing commas, no control characters in strings, valid
 * UTF-8, nesting at most KV_JR_DEPTH deep). A cursor, not a tree: the
 * caller walks the document and copies only what it keeps, so a 1.5 MB
 * price catalogue costs no more memory than the file. Used at load time
 * (common/catalog.c), never per request. Pure: no allocation, no I/O.
 *
 * Every function returns 0 (or 1 where noted) on success and -1 on error;
 * after the first error every call fails and jr->err holds
 * "LINE:COL: what" (1-based, COL counts bytes). */
#ifndef KV_JSONREAD_H
#define KV_JSONREAD_H

#include <stddef.h>

#define KV_JR_DEPTH	64

enum kv_jr_type { KV_JR_NONE, KV_JR_OBJECT, KV_JR_ARRAY, KV_JR_STRING, KV_JR_NUMBER,
    KV_JR_TRUE, KV_JR_FALSE, KV_JR_NULL };

struct kv_jr {
	const char	*buf, *p, *end;
	const char	*line_start;
	int		 line;
	int		 depth;
	int		 failed;
	/* per open level: JR_SEEN once a member or element was read,
	 * JR_ARRAY for an array */
	unsigned char	 level[KV_JR_DEPTH];
	char		 err[160];
};

/* Start reading BUF (LEN bytes, need not be terminated). */
void	kv_jr_init(struct kv_jr *jr, const char *buf, size_t len);

/* The type of the next value (whitespace skipped); KV_JR_NONE and an
 * error when none can start here. */
enum kv_jr_type kv_jr_peek(struct kv_jr *jr);

/* Enter the object or array that comes next. */
int	kv_jr_enter(struct kv_jr *jr, enum kv_jr_type t);

/* Next member of the open object: its name into key (at most cap - 1
 * bytes, terminated; a longer name is an error) and 1, or 0 at the '}'
 * that ends it (the object is left). The caller then reads or skips the
 * member's value. */
int	kv_jr_member(struct kv_jr *jr, char *key, size_t cap);

/* Next element of the open array: 1 (read or skip it), or 0 at ']'. */
int	kv_jr_element(struct kv_jr *jr);

/* The next value, a string, unescaped into out (cap bytes, terminated;
 * longer is an error). \u0000 is refused. */
int	kv_jr_string(struct kv_jr *jr, char *out, size_t cap);

/* The next value, a number: *text and *len span its text as written
 * (validated to RFC 8259's grammar). */
int	kv_jr_number(struct kv_jr *jr, const char **text, size_t *len);

/* Skip the next value, whatever it is. */
int	kv_jr_skip(struct kv_jr *jr);

/* Nothing but whitespace is left. */
int	kv_jr_finish(struct kv_jr *jr);

/* Record an error of the caller's at the current position (a value the
 * caller cannot use); returns -1. */
int	kv_jr_fail(struct kv_jr *jr, const char *what);

/* Decimal number TEXT (len bytes, RFC 8259 grammar, not negative) times
 * 10^SCALE into *out, exactly, by its digits (no floating point): "1.75e-07"
 * at scale 15 is 175000000. A remainder below 1 rounds up and sets
 * *inexact. Returns 0, or -1 for a negative number or one past INT64_MAX. */
int	kv_jr_decimal(const char *text, size_t len, int scale, long long *out,
	    int *inexact);

#endif

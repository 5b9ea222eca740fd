/* Which strings may name a key (key_label.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/key_label.h"

#include <stdio.h>
#include <string.h>

#include "common/hex.h"

int
kv_key_label_idlike(const char *s)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++)
		if (kv_hexval((unsigned char)s[n]) < 0)
			return 0;
	return n >= KV_LABEL_ID_DIGITS;
}

/* Parts of a path that a client, a proxy or MHD would not pass on as
 * they are: an empty one ('/' at either end, or doubled), "." or "..". */
static int
bad_parts(const char *s)
{
	const char *part = s, *end;
	size_t n;

	for (;;) {
		end = strchr(part, '/');
		n = end != NULL ? (size_t)(end - part) : strlen(part);
		if (n == 0 || (n == 1 && part[0] == '.') ||
		    (n == 2 && part[0] == '.' && part[1] == '.'))
			return 1;
		if (end == NULL)
			return 0;
		part = end + 1;
	}
}

int
kv_key_label_check(const char *label, size_t max, char *err, size_t errlen)
{
	size_t n = strlen(label);

	if (n == 0 || n >= max) {
		snprintf(err, errlen, "1 to %zu bytes", max - 1);
		return -1;
	}
	if (strspn(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789-_.@:/") != n) {
		snprintf(err, errlen, "use letters, digits and -_.@:/ only (no spaces, "
		    "quotes, %% or control bytes)");
		return -1;
	}
	if (bad_parts(label)) {
		snprintf(err, errlen, "not '.' or '..', and a '/' only between two "
		    "parts of the name, none of them empty, '.' or '..'");
		return -1;
	}
	if (kv_key_label_idlike(label)) {
		snprintf(err, errlen, "it reads as a key id (%d or more hex digits and "
		    "nothing else): add a letter past f, or a '-'", KV_LABEL_ID_DIGITS);
		return -1;
	}
	return 0;
}

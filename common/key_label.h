/* The names keys go by: the one rule for a [key NAME] of the config, a
 * key issued by kvctl keys create or POST /keys, and one another host of
 * a cluster issued. A name is read back from command lines and from the
 * admin API's paths (/keys/NAME/reset), and it shares those places with
 * key ids (the first 12 hex digits of the key's SHA-256), so a name must
 * survive a URL unchanged and must never read as an id. */
#ifndef KV_KEY_LABEL_H
#define KV_KEY_LABEL_H

#include <stddef.h>

/* A name shorter than this many hex digits may be all hex ("a", "cafe");
 * from this many on, an all-hex string is taken for an id (prefix). */
#define KV_LABEL_ID_DIGITS	6

/* 1 when S is all hex digits (either case) and at least
 * KV_LABEL_ID_DIGITS of them: what kvctl and the admin API read as an id
 * or an id prefix. */
int	kv_key_label_idlike(const char *s);

/* Check LABEL as a key's name: 1 to MAX - 1 bytes of letters, digits and
 * -_.@:/ ; not "." or "..", and '/' only between two parts, none of them
 * empty, "." or ".." (clients rewrite such paths); not idlike. Returns 0, or -1 with the reason for a person in err (without
 * LABEL, which may hold any byte: the caller names it). */
int	kv_key_label_check(const char *label, size_t max, char *err, size_t errlen);

#endif

/* The tags header's value (issue 36, docs/ledger.md "Tags"): "a, b,c" read
 * into the names of the tags a request is charged to. Pure (no config, no
 * I/O), so that it can be fuzzed (tests/fuzz/fuzz_tags.c). */
#ifndef KV_COMMON_TAGS_H
#define KV_COMMON_TAGS_H

#include <stddef.h>

#define KV_TAG_NAME	64	/* a tag's name and its NUL */

/* A tag's name: 1 to 63 bytes of A-Z a-z 0-9 '-' '_' '.' ':'. */
int	kv_tag_name_ok(const char *s, size_t len);

/* V (LEN bytes, a header value) split at commas, blanks around each name
 * dropped, a name given twice kept once (a request is charged once at a
 * node). Each name goes to ONE(ARG, NAME, NAMELEN, WHY), which returns 0,
 * or -1 to stop with *WHY set. Returns the number of distinct names; or
 * -1 with *WHY set for an empty or malformed name, -2 for more than MAX
 * names, -3 for ONE's refusal. */
int	kv_tags_split(const char *v, size_t len, int max,
	    int (*one)(void *arg, const char *name, size_t namelen, const char **why),
	    void *arg, const char **why);

#endif

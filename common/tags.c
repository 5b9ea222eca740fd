/* The tags header's value read into tag names: see tags.h. */
#include "common/tags.h"

#include <string.h>

int
kv_tag_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len >= KV_TAG_NAME)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == ':'))
			return 0;
	}
	return 1;
}

/* Was NAME one of the first N names seen (their offsets and lengths)? */
static int
seen(const char *v, const size_t *off, const size_t *len, int n, const char *name,
    size_t namelen)
{
	int i;

	for (i = 0; i < n; i++)
		if (len[i] == namelen && memcmp(v + off[i], name, namelen) == 0)
			return 1;
	return 0;
}

int
kv_tags_split(const char *v, size_t len, int max,
    int (*one)(void *arg, const char *name, size_t namelen, const char **why),
    void *arg, const char **why)
{
	size_t off[KV_TAG_NAME], nl[KV_TAG_NAME], i = 0, s, e;
	int n = 0;

	if (max > KV_TAG_NAME)
		max = KV_TAG_NAME;
	while (i <= len) {
		for (s = i; s < len && (v[s] == ' ' || v[s] == '\t'); s++)
			;
		for (e = s; e < len && v[e] != ','; e++)
			;
		i = e + 1;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (!kv_tag_name_ok(v + s, e - s)) {
			*why = "a tag is empty or not of A-Z a-z 0-9 - _ . : (at most 63 bytes)";
			return -1;
		}
		if (seen(v, off, nl, n, v + s, e - s))
			continue;
		if (n == max) {
			*why = "too many tags in one request";
			return -2;
		}
		off[n] = s;
		nl[n++] = e - s;
		if (one(arg, v + s, e - s, why) == -1)
			return -3;
	}
	return n;
}

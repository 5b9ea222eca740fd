/* libFuzzer target: the tags header's reader (common/tags.c). Beyond "no
 * crash", it checks what admission relies on: each name handed on is a
 * valid tag name lying inside the value, no name is handed on twice, no
 * more than MAX are, and a refusal says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/tags.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	const char *base;
	size_t	    len;
	const char *name[KV_TAG_NAME];
	size_t	    nlen[KV_TAG_NAME];
	int	    n;
};

static int
one(void *arg, const char *name, size_t len, const char **why)
{
	struct seen *s = arg;
	int i;

	if (name < s->base || len > s->len || (size_t)(name - s->base) > s->len - len ||
	    !kv_tag_name_ok(name, len) || s->n == KV_TAG_NAME)
		abort();
	for (i = 0; i < s->n; i++)
		if (s->nlen[i] == len && memcmp(s->name[i], name, len) == 0)
			abort();
	s->name[s->n] = name;
	s->nlen[s->n++] = len;
	(void)why;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s;
	const char *why = NULL;
	char *v;
	int max = size > 0 ? data[0] % 10 : 4, r;

	if (size > 0) {
		data++;
		size--;
	}
	if ((v = malloc(size ? size : 1)) == NULL)
		abort();
	memcpy(v, data, size);	/* exactly SIZE bytes: a read past them is caught */
	memset(&s, 0, sizeof(s));
	s.base = v;
	s.len = size;
	r = kv_tags_split(v, size, max, one, &s, &why);
	if (r >= 0 && (r != s.n || r > max))
		abort();
	if (r < 0 && why == NULL)
		abort();
	free(v);
	return 0;
}

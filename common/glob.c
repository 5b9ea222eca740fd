/* Matching a model name against a config pattern (glob.h): the one rule
 * routing ([upstream] models) and pricing ([price] globs) share. */
#include <string.h>

#include "common/glob.h"

int
kv_glob_match(const char *pattern, const char *s)
{
	size_t len = strlen(pattern);

	if (len > 0 && pattern[len - 1] == '*')
		return strncmp(pattern, s, len - 1) == 0;
	return strcmp(pattern, s) == 0;
}

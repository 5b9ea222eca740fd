/* Model name patterns of kilovolt.ini: "gpt-4o" or "gpt-4o*". */
#ifndef KV_GLOB_H
#define KV_GLOB_H

/* S matches PATTERN: a single trailing '*' matches any tail (or none),
 * else the two are equal. 1 or 0. */
int	kv_glob_match(const char *pattern, const char *s);

#endif

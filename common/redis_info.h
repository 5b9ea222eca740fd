/* Reading Redis's INFO reply: "name:value" lines, CRLF or LF ended,
 * '#' section headers. */
#ifndef KV_REDIS_INFO_H
#define KV_REDIS_INFO_H
#include <stddef.h>
#include <stdint.h>

/* Find the line "NAME:<integer>" in the LEN bytes at S (no terminator
 * needed) and store the integer in *OUT. Returns 0, or -1 when NAME is
 * absent or its value is not a decimal integer that fits in int64_t. */
int	kv_redis_info_int(const char *s, size_t len, const char *name, int64_t *out);
#endif

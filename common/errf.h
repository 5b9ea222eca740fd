/* A reason for a person into a caller's buffer (STYLE 12: low-level
 * helpers write why into the caller's buffer and return -1). */
#ifndef KV_ERRF_H
#define KV_ERRF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* FMT into ERR (ERRLEN bytes, always terminated when ERRLEN > 0); returns
 * -1, so a failing path reads `return kv_errf(err, errlen, "...", ...);`. */
static inline int __attribute__((format(printf, 3, 4)))
kv_errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

#endif

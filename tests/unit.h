/* A small unit-test harness: CHECK records a failure and carries on, so one
 * run reports every broken case. main() ends with `return unit_done();`,
 * which prints "N passed, N failed" and exits non-zero on any failure. */
#ifndef KV_UNIT_H
#define KV_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_pass, unit_fail;

#define CHECK(cond) do { \
	if (cond) { unit_pass++; } else { unit_fail++; \
		fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)

#define CHECK_INT(got, want) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (g_ == w_) { unit_pass++; } else { unit_fail++; \
		fprintf(stderr, "%s:%d: %s = %lld, want %lld\n", __FILE__, __LINE__, #got, g_, w_); } \
} while (0)

#define CHECK_STR(got, want) do { \
	const char *g_ = (got), *w_ = (want); \
	if (g_ != NULL && strcmp(g_, w_) == 0) { unit_pass++; } else { unit_fail++; \
		fprintf(stderr, "%s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, __LINE__, #got, \
		    g_ ? g_ : "(null)", w_); } \
} while (0)

static inline int
unit_done(void)
{
	printf("%d passed, %d failed\n", unit_pass, unit_fail);
	return unit_fail ? 1 : 0;
}

#endif

/* A small unit-test harness: CHECK records a failure and carries on, so one
 * run reports every broken case. main() ends with `return unit_done();`,
 * which prints "N passed, N failed" and exits non-zero on any failure. */
#ifndef KV_UNIT_H
#define KV_UNIT_H

#include <stdio.h>
#include <stdlib.h>
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

/* The whole of $top_srcdir/tests/data/NAME, NUL-terminated, its length in
 * *LEN; exits when it cannot be read. */
static inline char *
unit_data(const char *name, size_t *len)
{
	const char *top = getenv("top_srcdir");
	char path[4096];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/tests/data/%s", top ? top : ".", name);
	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) != 0 ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static inline int
unit_done(void)
{
	printf("%d passed, %d failed\n", unit_pass, unit_fail);
	return unit_fail ? 1 : 0;
}

#endif

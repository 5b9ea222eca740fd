/* libFuzzer target: kv_parse_nano against a reference built from strtoull
 * on the integer and fraction parts, a format/parse round trip, and
 * kv_cost's monotonicity on fuzzer-chosen prices and counts. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/money.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* digits+ ( '.' digits{1,9} )? and nothing else */
static int
ref_parse(const char *s, int64_t *out)
{
	const char *dot = strchr(s, '.'), *p;
	char ibuf[64], fbuf[16];
	size_t ilen = dot ? (size_t)(dot - s) : strlen(s), flen = 0;
	unsigned long long ip, fp;

	if (ilen == 0 || ilen >= sizeof(ibuf))
		return -1;
	for (p = s; p < s + ilen; p++)
		if (*p < '0' || *p > '9')
			return -1;
	if (dot != NULL) {
		flen = strlen(dot + 1);
		if (flen == 0 || flen > 9)
			return -1;
		for (p = dot + 1; *p; p++)
			if (*p < '0' || *p > '9')
				return -1;
	}
	memcpy(ibuf, s, ilen);
	ibuf[ilen] = '\0';
	snprintf(fbuf, sizeof(fbuf), "%s000000000", dot ? dot + 1 : "");
	fbuf[9] = '\0';
	errno = 0;
	ip = strtoull(ibuf, NULL, 10);
	if (errno == ERANGE || ip > (unsigned long long)INT64_MAX / 1000000000ULL)
		return -1;
	fp = strtoull(fbuf, NULL, 10);
	if (ip * 1000000000ULL + fp > (unsigned long long)INT64_MAX)
		return -1;
	*out = (int64_t)(ip * 1000000000ULL + fp);
	return 0;
}

static void
check_parse(const char *s)
{
	int64_t got = -1, want = -1, back = -1;
	char buf[64];
	int rc = kv_parse_nano(s, &got), ref = ref_parse(s, &want);

	if (rc != ref || (rc == 0 && got != want))
		abort();
	if (rc != 0)
		return;
	snprintf(buf, sizeof(buf), "%" PRId64 ".%09" PRId64, got / 1000000000,
	    got % 1000000000);
	if (kv_parse_nano(buf, &back) != 0 || back != got)
		abort();
	/* formatting truncates to the micro-dollar and parses back */
	kv_format_usd(got, buf, sizeof(buf));
	if (kv_parse_nano(buf, &back) != 0 || back != got - got % 1000)
		abort();
}

static int64_t
take(const uint8_t **p, size_t *n)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < 8 && *n > 0; i++, (*p)++, (*n)--)
		v = v << 8 | **p;
	return (int64_t)(v >> 1);	/* non-negative */
}

/* A value of any magnitude: 63 random bits shifted right by 0..63. */
static int64_t
take_scaled(const uint8_t **p, size_t *n)
{
	int64_t v = take(p, n);

	return v >> (take(p, n) & 63);
}

static void
check_cost(const uint8_t *p, size_t n)
{
	struct kv_price pr;
	struct kv_usage u, more;
	int64_t c1, c2;

	memset(&pr, 0, sizeof(pr));
	pr.input = take_scaled(&p, &n);
	pr.output = take_scaled(&p, &n);
	pr.cached_input = (take(&p, &n) & 1) ? -1 : pr.input / 10;
	pr.cache_write = (take(&p, &n) & 1) ? -1 : pr.input - pr.input / 4;
	memset(&u, 0, sizeof(u));
	u.input = take_scaled(&p, &n);
	u.output = take_scaled(&p, &n);
	u.cached_input = u.input / 2;
	u.cache_write = u.input / 4;
	more = u;
	more.output += more.output < INT64_MAX;
	if (kv_cost(&pr, &u, &c1) == -1) {
		if (c1 != INT64_MAX)
			abort();
		return;
	}
	if (c1 < 0 || (kv_cost(&pr, &more, &c2) == 0 && c2 < c1))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[48];
	size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;

	memcpy(s, data, n);
	s[n] = '\0';
	check_parse(s);
	check_cost(data, size);
	return 0;
}

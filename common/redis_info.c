/* Scanner for Redis INFO text (see redis_info.h). */
#include <string.h>

#include "common/redis_info.h"

/* The decimal integer in the LEN bytes at S, entire. */
static int
parse_int(const char *s, size_t len, int64_t *out)
{
	int neg = 0;
	uint64_t v = 0;
	size_t i = 0;

	if (len > 0 && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == len)
		return -1;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_C(1) << 63) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > (UINT64_C(1) << 63) - (neg ? 0 : 1))
			return -1;
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

int
kv_redis_info_int(const char *s, size_t len, const char *name, int64_t *out)
{
	size_t nl = strlen(name);
	const char *e = s + len;

	while (s < e) {
		const char *eol = memchr(s, '\n', (size_t)(e - s));
		size_t ll = eol ? (size_t)(eol - s) : (size_t)(e - s);

		if (ll > 0 && s[ll - 1] == '\r')
			ll--;
		if (ll > nl && memcmp(s, name, nl) == 0 && s[nl] == ':')
			return parse_int(s + nl + 1, ll - nl - 1, out);
		if (eol == NULL)
			break;
		s = eol + 1;
	}
	return -1;
}

/* Durations, sizes and amounts as kilovolt.ini writes them (config_units.h).
 * Pure functions: the fuzz target of the config (tests/fuzz/fuzz_config.c)
 * reaches them through every duration and size key. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define YEAR_MS	(366LL * 86400 * 1000)

/* Units largest first: a duration names each at most once, in this order. */
static const struct {
	const char *name;
	int64_t ms;
} units[] = {
	{ "d", 86400000 }, { "h", 3600000 }, { "m", 60000 }, { "s", 1000 }, { "ms", 1 },
};
#define NUNITS (sizeof(units) / sizeof(units[0]))

/* Digits at *S (at most 12, so no part overflows) into *V. */
static int
digits(const char **s, int64_t *v)
{
	int n = 0;

	*v = 0;
	while (isdigit((unsigned char)**s)) {
		if (++n > 12)
			return -1;
		*v = *v * 10 + (**s - '0');
		(*s)++;
	}
	return n > 0 ? 0 : -1;
}

/* The unit at S (ms before m): its index, the length in *LEN; -1 none. */
static int
unit_at(const char *s, size_t *len)
{
	size_t i, n;

	for (i = 0; i < NUNITS; i++) {
		n = strlen(units[i].name);
		/* "m" is not the start of "ms": a unit ends where letters do */
		if (strncmp(s, units[i].name, n) == 0 && !isalpha((unsigned char)s[n])) {
			*len = n;
			return (int)i;
		}
	}
	return -1;
}

int
kv_cfg_parse_duration(const char *s, int64_t unit_ms, int64_t *ms)
{
	int64_t v, total = 0;
	int u, last = -1;
	size_t len;

	if (digits(&s, &v) == -1)
		return -1;
	if (*s == '\0') {
		if (v > YEAR_MS / unit_ms)
			return -1;
		*ms = v * unit_ms;
		return 0;
	}
	for (;;) {
		u = unit_at(s, &len);
		if (u <= last)	/* none, repeated or out of order */
			return -1;
		last = u;
		total += v * units[u].ms;
		if (total > YEAR_MS)
			return -1;
		s += len;
		if (*s == '\0')
			break;
		if (digits(&s, &v) == -1)
			return -1;
	}
	*ms = total;
	return 0;
}

int
kv_cfg_parse_size(const char *s, uint64_t *out)
{
	size_t len = strlen(s), i;
	unsigned shift = 0;
	uint64_t v = 0;

	if (len == 0)
		return -1;
	switch (tolower((unsigned char)s[len - 1])) {
	case 'k': shift = 10; len--; break;
	case 'm': shift = 20; len--; break;
	case 'g': shift = 30; len--; break;
	}
	if (len == 0 || len > 13)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > ((uint64_t)1 << 40) >> shift)
		return -1;
	*out = v << shift;
	return 0;
}

void
kv_cfg_format_secs(long long secs, char *buf, size_t len)
{
	size_t i, n = 0;
	long long ms = secs * 1000;
	int r;

	if (len > 0)
		buf[0] = '\0';
	if (secs <= 0) {
		snprintf(buf, len, "%llds", secs);
		return;
	}
	for (i = 0; i < NUNITS && ms > 0 && n < len; i++) {
		if (ms / units[i].ms == 0)
			continue;
		r = snprintf(buf + n, len - n, "%lld%s", ms / units[i].ms, units[i].name);
		if (r < 0)
			return;
		n += (size_t)r;
		ms %= units[i].ms;
	}
}

void
kv_cfg_format_size(uint64_t n, char *buf, size_t len)
{
	static const char sfx[] = "gmk";
	unsigned i, shift;

	for (i = 0; i < 3 && n != 0; i++) {
		shift = 30 - 10 * i;
		if ((n & (((uint64_t)1 << shift) - 1)) == 0) {
			snprintf(buf, len, "%llu%c", (unsigned long long)(n >> shift), sfx[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)n);
}

void
kv_cfg_format_nano(int64_t nusd, char *buf, size_t len)
{
	char frac[16];
	int64_t whole = nusd / 1000000000, part = nusd % 1000000000;
	size_t n;

	if (nusd < 0) {		/* not a config value; shown, never parsed */
		snprintf(buf, len, "-%lld.%09lld", -(long long)whole, -(long long)part);
		return;
	}
	if (part == 0) {
		snprintf(buf, len, "%lld", (long long)whole);
		return;
	}
	snprintf(frac, sizeof(frac), "%09lld", (long long)part);
	for (n = strlen(frac); n > 0 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	snprintf(buf, len, "%lld.%s", (long long)whole, frac);
}

/* Cost arithmetic in integer nano-dollars: exact decimal parsing, the
 * per-response charge, and USD formatting. No floating point anywhere. */
#include <stdint.h>
#include <stdio.h>

#include "common/money.h"

#define NANO		1000000000LL
#define PER_TOKENS	1000000		/* prices are per 1M tokens */

typedef __int128 i128;

int
kv_parse_nano(const char *s, int64_t *out)
{
	int64_t ipart = 0, frac = 0;
	int idigits = 0, fdigits = 0;

	if (s == NULL)
		return -1;
	for (; *s >= '0' && *s <= '9'; s++, idigits++) {
		if (__builtin_mul_overflow(ipart, 10, &ipart) ||
		    __builtin_add_overflow(ipart, *s - '0', &ipart))
			return -1;
	}
	if (idigits == 0)
		return -1;
	if (*s == '.') {
		/* "1." is refused: a dot promises decimals */
		for (s++; *s >= '0' && *s <= '9'; s++, fdigits++) {
			if (fdigits == 9)
				return -1;
			frac = frac * 10 + (*s - '0');
		}
		if (fdigits == 0)
			return -1;
	}
	if (*s != '\0')
		return -1;
	for (; fdigits < 9; fdigits++)
		frac *= 10;
	if (__builtin_mul_overflow(ipart, NANO, &ipart) ||
	    __builtin_add_overflow(ipart, frac, &ipart))
		return -1;
	*out = ipart;
	return 0;
}

/* tokens × price into *acc; 0, or -1 when the sum leaves 127 bits. */
static int
cost_term(i128 *acc, int64_t tokens, int64_t price)
{
	i128 t = (i128)tokens * price;	/* both < 2^63: cannot overflow */

	return __builtin_add_overflow(*acc, t, acc) ? -1 : 0;
}

int
kv_cost(const struct kv_price *p, const struct kv_usage *u, int64_t *cost)
{
	int64_t uncached, pc, pw;
	i128 sum = 0, q;

	*cost = INT64_MAX;
	if (u->input < 0 || u->output < 0 || u->cached_input < 0 ||
	    u->cache_write < 0 || p->input < 0 || p->output < 0)
		return -1;
	/* a provider reporting more cached than total input is inconsistent;
	 * refuse rather than guess which number is wrong */
	if ((i128)u->cached_input + u->cache_write > u->input)
		return -1;
	uncached = u->input - u->cached_input - u->cache_write;
	pc = p->cached_input >= 0 ? p->cached_input : p->input;
	pw = p->cache_write >= 0 ? p->cache_write : p->input;
	if (cost_term(&sum, uncached, p->input) == -1 ||
	    cost_term(&sum, u->cached_input, pc) == -1 ||
	    cost_term(&sum, u->cache_write, pw) == -1 ||
	    cost_term(&sum, u->output, p->output) == -1)
		return -1;
	q = sum / PER_TOKENS + (sum % PER_TOKENS != 0);	/* sum >= 0: ceil */
	if (q > INT64_MAX)
		return -1;
	*cost = (int64_t)q;
	return 0;
}

/* Truncates toward zero to the micro-dollar: -1 nUSD prints "0.000000",
 * -1000 nUSD prints "-0.000001". */
void
kv_format_usd(int64_t nusd, char *buf, size_t len)
{
	uint64_t mag = nusd < 0 ? -(uint64_t)nusd : (uint64_t)nusd;
	uint64_t micro = mag / 1000;
	const char *sign = nusd < 0 && micro != 0 ? "-" : "";

	if (len == 0)
		return;
	snprintf(buf, len, "%s%llu.%06llu", sign,
	    (unsigned long long)(micro / 1000000),
	    (unsigned long long)(micro % 1000000));
}

void
kv_format_dollars(int64_t nusd, char *buf, size_t len)
{
	char num[24];	/* INT64_MIN is "-9223372036.854775" */

	kv_format_usd(nusd, num, sizeof(num));
	if (num[0] == '-')
		snprintf(buf, len, "-$%s", num + 1);
	else
		snprintf(buf, len, "$%s", num);
}

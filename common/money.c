/* Cost arithmetic in integer nano-dollars: exact decimal parsing, the
 * per-response charge, and USD formatting. No floating point anywhere. */
#include <stdint.h>
#include <stdio.h>

#include "common/money.h"
#include "common/fmt.h"

#include <string.h>

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

/* v / d rounded up, for v >= 0 and d > 0. A sum that fits 64 bits (every
 * ordinary request) is divided in 64 bits: the same quotient, without the
 * call to the 128-bit division (__divmodti4, ~100 instructions each, twice
 * a kv_cost). */
static i128
ceil_div(i128 v, int64_t d)
{
	if (((unsigned __int128)v >> 64) == 0) {
		uint64_t w = (uint64_t)v;

		return (i128)(w / (uint64_t)d + (w % (uint64_t)d != 0));
	}
	return v / d + (v % d != 0);
}

/* Per-1M prices of each kind of token, once the tiers are applied. */
struct rates {
	int64_t	in, out, cached, write, write1h;
	int64_t	audio_in, audio_out, reasoning;
};

int64_t
kv_price_scaled(int64_t v, int64_t num, int64_t den)
{
	i128 q;

	if (den <= 0)
		return num;
	q = ((i128)v * num + den - 1) / den;
	return q > INT64_MAX ? INT64_MAX : (int64_t)q;
}

/* Input-side prices move with IN, output with OUT, in proportion, except
 * the cache prices the catalogue gives for the tier itself (CACHED, WRITE,
 * WRITE1H; -1 when it gives none). */
static void
rates_rebase(struct rates *r, int64_t in, int64_t out, int64_t cached, int64_t write,
    int64_t write1h)
{
	r->cached = cached >= 0 ? cached : kv_price_scaled(r->cached, in, r->in);
	r->write = write >= 0 ? write : kv_price_scaled(r->write, in, r->in);
	r->write1h = write1h >= 0 ? write1h : kv_price_scaled(r->write1h, in, r->in);
	r->reasoning = kv_price_scaled(r->reasoning, out, r->out);
	r->in = in;
	r->out = out;
}

static int64_t
max3(int64_t a, int64_t b, int64_t c)
{
	return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

/* A tier the section cannot price: the dearest price it has (of those it
 * sets), for every input and every output token. */
static void
rates_dearest(struct rates *r, const struct kv_price *p)
{
	int64_t in = max3(r->in, max3(p->priority_input, p->flex_input,
	    p->long_context_input), max3(p->cached_input, p->cache_write, p->cache_write_1h));
	int64_t out = max3(r->out, max3(p->priority_output, p->flex_output,
	    p->long_context_output), 0);

	r->in = r->cached = r->write = r->write1h = in;
	r->out = out;
	if (r->reasoning < out)
		r->reasoning = out;
}

/* A service tier at IN / OUT (and its CACHED / WRITE when set) against
 * the standard input and output of P, on top of the rates so far. */
static void
rates_tier(struct rates *r, const struct kv_price *p, int64_t in, int64_t out,
    int64_t cached, int64_t write)
{
	int base = r->in == p->input;

	rates_rebase(r, kv_price_scaled(r->in, in, p->input),
	    kv_price_scaled(r->out, out, p->output),
	    base ? cached : -1, base ? write : -1, -1);
}

static void
rates_for(const struct kv_price *p, const struct kv_usage *u, struct rates *r)
{
	r->in = p->input;
	r->out = p->output;
	r->cached = p->cached_input >= 0 ? p->cached_input : p->input;
	r->write = p->cache_write >= 0 ? p->cache_write : p->input;
	r->write1h = p->cache_write_1h >= 0 ? p->cache_write_1h :
	    (p->input > INT64_MAX / 2 ? INT64_MAX : 2 * p->input);
	/* audio tokens have their own prices, which no tier moves */
	r->audio_in = p->audio_input >= 0 ? p->audio_input : p->input;
	r->audio_out = p->audio_output >= 0 ? p->audio_output : p->output;
	r->reasoning = p->reasoning_output >= 0 ? p->reasoning_output : p->output;
	if (p->long_context_threshold > 0 && u->input > p->long_context_threshold)
		rates_rebase(r, p->long_context_input, p->long_context_output,
		    p->long_context_cached, p->long_context_write, p->long_context_write_1h);
	/* a tier's own cache prices hold only where no long-context tier
	 * moved the base: the catalogue gives them for standard-length input */
	if (u->tier == KV_TIER_PRIORITY && p->priority_input >= 0)
		rates_tier(r, p, p->priority_input, p->priority_output, p->priority_cached,
		    p->priority_write);
	else if (u->tier == KV_TIER_FLEX && p->flex_input >= 0)
		rates_tier(r, p, p->flex_input, p->flex_output, p->flex_cached, p->flex_write);
	else if (u->tier != KV_TIER_STANDARD)
		rates_dearest(r, p);
}

/* The cost of usage that has input and output tokens only, at the
 * standard tier and below any long-context threshold (nearly every
 * request, and every reservation but a tiered one): the formula of
 * kv_cost with every other term 0. Returns 0 or -1 as kv_cost, or 1 when
 * the usage is not of that kind and needs the whole formula. */
static int
cost_plain(const struct kv_price *p, const struct kv_usage *u, int64_t *cost)
{
	i128 q;

	if ((u->cached_input | u->cache_write | u->cache_write_1h | u->audio_input |
	    u->audio_output | u->reasoning | u->web_search | u->web_fetch |
	    u->code_exec_ms) != 0 || u->tier != KV_TIER_STANDARD ||
	    (u->fast | u->geo_us) != 0 || u->region == KV_REGION_US || u->region == KV_REGION_EU ||
	    (p->long_context_threshold > 0 && u->input > p->long_context_threshold))
		return 1;
	if ((u->input | u->output | p->input | p->output) < 0)
		return -1;
	/* each product < 2^126: their sum cannot leave 127 bits */
	q = ceil_div((i128)u->input * p->input + (i128)u->output * p->output, PER_TOKENS);
	if (q > INT64_MAX)
		return -1;
	*cost = (int64_t)q;
	return 0;
}

static int64_t
gcd(int64_t a, int64_t b)
{
	while (b != 0) {
		int64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The multipliers U asks for that P sets (x 10^9 each, as fractions in
 * lowest terms: 1.1 is 11 / 10), into *sum and *den. */
static int
multiply(const struct kv_price *p, const struct kv_usage *u, i128 *sum, i128 *den)
{
	int64_t m[3] = { u->fast ? p->fast_mult : -1, u->geo_us ? p->geo_us_mult : -1,
	    u->region == KV_REGION_US ? p->region_us_mult :
	    u->region == KV_REGION_EU ? p->region_eu_mult : -1 };
	int64_t g;
	int i;

	for (i = 0; i < 3; i++) {
		if (m[i] < 0)
			continue;
		g = m[i] == 0 ? NANO : gcd(m[i], NANO);
		if (__builtin_mul_overflow(*sum, m[i] / g, sum) ||
		    __builtin_mul_overflow(*den, NANO / g, den))
			return -1;
	}
	return 0;
}

int
kv_cost(const struct kv_price *p, const struct kv_usage *u, int64_t *cost)
{
	struct rates r;
	int64_t uncached, fees;
	i128 sum = 0, q, den = PER_TOKENS;
	int rc;

	*cost = INT64_MAX;
	if ((rc = cost_plain(p, u, cost)) != 1)
		return rc;
	if (u->input < 0 || u->output < 0 || u->cached_input < 0 ||
	    u->cache_write < 0 || u->cache_write_1h < 0 || u->audio_input < 0 ||
	    u->audio_output < 0 || u->reasoning < 0 || p->input < 0 || p->output < 0)
		return -1;
	/* a provider reporting more cached than total input is inconsistent;
	 * refuse rather than guess which number is wrong */
	if ((i128)u->cached_input + u->cache_write + u->audio_input > u->input ||
	    u->cache_write_1h > u->cache_write || (i128)u->audio_output + u->reasoning > u->output)
		return -1;
	uncached = u->input - u->cached_input - u->cache_write - u->audio_input;
	rates_for(p, u, &r);
	if (cost_term(&sum, uncached, r.in) == -1 ||
	    cost_term(&sum, u->audio_input, r.audio_in) == -1 ||
	    cost_term(&sum, u->cached_input, r.cached) == -1 ||
	    cost_term(&sum, u->cache_write - u->cache_write_1h, r.write) == -1 ||
	    cost_term(&sum, u->cache_write_1h, r.write1h) == -1 ||
	    cost_term(&sum, u->output - u->audio_output - u->reasoning, r.out) == -1 ||
	    cost_term(&sum, u->audio_output, r.audio_out) == -1 ||
	    cost_term(&sum, u->reasoning, r.reasoning) == -1 ||
	    multiply(p, u, &sum, &den) == -1)
		return -1;
	q = den == PER_TOKENS ? ceil_div(sum, PER_TOKENS) : sum / den + (sum % den != 0);
	if (q > INT64_MAX)
		return -1;
	if (kv_cost_fees(p, u, &fees) == -1 || __builtin_add_overflow((int64_t)q, fees, cost)) {
		*cost = INT64_MAX;
		return -1;
	}
	return 0;
}

#define MS_PER_HOUR	3600000

static int64_t
fee_of(int64_t price)
{
	return price > 0 ? price : 0;
}

int
kv_cost_fees(const struct kv_price *p, const struct kv_usage *u, int64_t *fees)
{
	i128 sum = 0, t;

	*fees = INT64_MAX;
	if (u->web_search < 0 || u->web_fetch < 0 || u->code_exec_ms < 0)
		return -1;
	if ((u->web_search | u->web_fetch | u->code_exec_ms) == 0) {
		*fees = 0;	/* no calls (nearly every response): nothing to price */
		return 0;
	}
	if (cost_term(&sum, u->web_search, fee_of(p->web_search_call)) == -1 ||
	    cost_term(&sum, u->web_fetch, fee_of(p->web_fetch_call)) == -1)
		return -1;
	t = (i128)u->code_exec_ms * fee_of(p->code_exec_hour);
	t = ceil_div(t, MS_PER_HOUR);
	if (__builtin_add_overflow(sum, t, &sum) || sum > INT64_MAX)
		return -1;
	*fees = (int64_t)sum;
	return 0;
}

int
kv_cost_fees_unpriced(const struct kv_price *p, const struct kv_usage *u)
{
	return (u->web_search > 0 && p->web_search_call < 0) ||
	    (u->web_fetch > 0 && p->web_fetch_call < 0) ||
	    (u->code_exec_ms > 0 && p->code_exec_hour < 0);
}

/* Truncates toward zero to the micro-dollar: -1 nUSD prints "0.000000",
 * -1000 nUSD prints "-0.000001". */
size_t
kv_fmt_usd(char *out, int64_t nusd)
{
	uint64_t mag = nusd < 0 ? -(uint64_t)nusd : (uint64_t)nusd;
	uint64_t micro = mag / 1000;
	size_t n = 0;

	/* by hand: twice per request (a header and the access line) */
	if (nusd < 0 && micro != 0)
		out[n++] = '-';
	n += kv_fmt_u64(out + n, micro / 1000000);
	out[n++] = '.';
	kv_fmt_u64_pad(out + n, micro % 1000000, 6);
	return n + 6;
}

void
kv_format_usd(int64_t nusd, char *buf, size_t len)
{
	char tmp[32];
	size_t n;

	if (len == 0)
		return;
	if (len > KV_USD_MAX) {		/* room for any: in place */
		n = kv_fmt_usd(buf, nusd);
		buf[n] = '\0';
		return;
	}
	n = kv_fmt_usd(tmp, nusd);
	if (n > len - 1)
		n = len - 1;
	memcpy(buf, tmp, n);
	buf[n] = '\0';
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

/* Money, differential: kv_cost, kv_cost_fees, kv_format_usd and the digit
 * formatting of common/fmt.h against their d32bdc1 forms (tests/money_ref.c,
 * tests/fmt_ref.h: 128-bit division always, fees always priced, a digit a
 * division), over edge values (zero, max tokens, prices near overflow,
 * fees, cached / audio / long-context / priority / flex / unknown tiers)
 * and a million random ones. Every result, cost and return code must be
 * the same to the nano-dollar. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/fmt.h"
#include "common/money.h"
#include "common/catalog.h"
#include "worker/charge_rules.h"
#include "tests/unit.h"

/* The reference, its public names renamed so that both link. */
#define kv_parse_nano		ref_kv_parse_nano
#define kv_cost			ref_kv_cost
#define kv_cost_fees		ref_kv_cost_fees
#define kv_cost_fees_unpriced	ref_kv_cost_fees_unpriced
#define kv_format_usd		ref_kv_format_usd
#define kv_format_dollars	ref_kv_format_dollars
int	ref_kv_parse_nano(const char *, int64_t *);
int	ref_kv_cost(const struct kv_price *, const struct kv_usage *, int64_t *);
int	ref_kv_cost_fees(const struct kv_price *, const struct kv_usage *, int64_t *);
int	ref_kv_cost_fees_unpriced(const struct kv_price *, const struct kv_usage *);
void	ref_kv_format_usd(int64_t, char *, size_t);
void	ref_kv_format_dollars(int64_t, char *, size_t);
#include "tests/money_ref.c"
#undef kv_parse_nano
#undef kv_cost
#undef kv_cost_fees
#undef kv_cost_fees_unpriced
#undef kv_format_usd
#undef kv_format_dollars

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A figure drawn from where the arithmetic changes: 0, small, the edges
 * of 32 and 64 bits, INT64_MAX, or anything. */
static int64_t
figure(void)
{
	static const int64_t edge[] = {
		0, 1, 2, 999999, 1000000, 1000001, 3599999, 3600000, 3600001,
		INT32_MAX, (int64_t)UINT32_MAX, (int64_t)UINT32_MAX + 1,
		INT64_MAX / 1000000, INT64_MAX / 2, INT64_MAX - 1, INT64_MAX,
		4294967296LL * 4294967, 150000000, 600000000, 15000000000LL,
	};

	switch (next() % 6) {
	case 0:
		return edge[next() % (sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return (int64_t)(next() % 1000);
	case 2:
		return (int64_t)(next() % 100000000);
	case 3:
		return (int64_t)(next() >> (next() % 64)) & INT64_MAX;
	case 4:
		return (int64_t)(next() % 20000000000LL);
	default:
		return (int64_t)(next() >> 1);
	}
}

/* A price, or -1 (unset) a third of the time. */
static int64_t
opt_price(void)
{
	return next() % 3 == 0 ? -1 : figure();
}

static void
random_price(struct kv_price *p)
{
	kv_price_unset(p, "m");
	p->input = next() % 50 == 0 ? -1 : figure();
	p->output = next() % 50 == 0 ? -1 : figure();
	p->cached_input = opt_price();
	p->cache_write = opt_price();
	p->cache_write_1h = opt_price();
	p->audio_input = opt_price();
	p->audio_output = opt_price();
	p->reasoning_output = opt_price();
	if (next() % 2) {
		p->long_context_threshold = (int64_t)(next() % 300000);
		p->long_context_input = figure();
		p->long_context_output = figure();
		p->long_context_cached = opt_price();
		p->long_context_write = opt_price();
		p->long_context_write_1h = opt_price();
	}
	if (next() % 2) {
		p->priority_input = figure();
		p->priority_output = figure();
		p->priority_cached = opt_price();
		p->priority_write = opt_price();
	}
	if (next() % 2) {
		p->flex_input = figure();
		p->flex_output = figure();
		p->flex_cached = opt_price();
		p->flex_write = opt_price();
	}
	p->web_search_call = opt_price();
	p->web_fetch_call = opt_price();
	p->code_exec_hour = opt_price();
}

/* A count: mostly small and consistent, sometimes huge or negative. */
static int64_t
count(int64_t below)
{
	uint64_t k = next() % 10;

	if (k == 0)
		return figure();
	if (k == 1)
		return -(int64_t)(next() % 3);
	if (below <= 0)
		return 0;
	return (int64_t)(next() % (uint64_t)below);
}

static void
random_usage(struct kv_usage *u)
{
	memset(u, 0, sizeof(*u));
	u->input = next() % 4 == 0 ? figure() : (int64_t)(next() % 2000000);
	u->output = next() % 4 == 0 ? figure() : (int64_t)(next() % 200000);
	if (next() % 2) {
		u->cached_input = count(u->input / 2);
		u->cache_write = count(u->input / 4);
		u->cache_write_1h = count(u->cache_write < INT64_MAX ? u->cache_write + 1 :
		    u->cache_write);
		u->audio_input = count(u->input / 4);
		u->audio_output = count(u->output / 2);
		u->reasoning = count(u->output / 2);
	}
	if (next() % 3 == 0) {
		u->web_search = count(40);
		u->web_fetch = count(40);
		u->code_exec_ms = next() % 2 ? count(7200000) : 0;
	}
	u->tier = (int)(next() % 4);
}

static void
same_cost(const struct kv_price *p, const struct kv_usage *u)
{
	int64_t a = -7, b = -7, fa = -7, fb = -7;
	int ra = kv_cost(p, u, &a), rb = ref_kv_cost(p, u, &b);
	int qa = kv_cost_fees(p, u, &fa), qb = ref_kv_cost_fees(p, u, &fb);

	if (ra != rb || a != b || qa != qb || fa != fb) {
		fprintf(stderr, "in %lld out %lld cached %lld write %lld/%lld tier %d "
		    "ws %lld wf %lld ms %lld; price in %lld out %lld: cost %d %lld vs %d %lld, "
		    "fees %d %lld vs %d %lld\n", (long long)u->input, (long long)u->output,
		    (long long)u->cached_input, (long long)u->cache_write,
		    (long long)u->cache_write_1h, u->tier, (long long)u->web_search,
		    (long long)u->web_fetch, (long long)u->code_exec_ms, (long long)p->input,
		    (long long)p->output, ra, (long long)a, rb, (long long)b, qa, (long long)fa,
		    qb, (long long)fb);
		fprintf(stderr, "  audio %lld/%lld reasoning %lld; long context %lld at %lld\n",
		    (long long)u->audio_input, (long long)u->audio_output,
		    (long long)u->reasoning, (long long)p->long_context_threshold,
		    (long long)p->long_context_input);
		unit_fail++;
	} else
		unit_pass++;
}

/* The sums at the edge of 64 bits, where the fast division hands over to
 * the 128-bit one, and of INT64_MAX, where the cost overflows. */
static void
test_cost_edges(void)
{
	static const int64_t tok[] = {
		0, 1, 999999, 1000000, 1000001, 4294967295LL, 4294967296LL,
		18446744073LL, 18446744074LL, 9223372036854LL, 9223372036855LL,
		INT64_MAX / 2, INT64_MAX,
	};
	static const int64_t pr[] = {
		0, 1, 999999, 1000000, 1000001, 1000000000, 1000000000000LL,
		1000000000000000LL, INT64_MAX / 2, INT64_MAX,
	};
	struct kv_price p;
	struct kv_usage u;
	size_t i, j, k;

	for (i = 0; i < sizeof(tok) / sizeof(tok[0]); i++)
		for (j = 0; j < sizeof(pr) / sizeof(pr[0]); j++)
			for (k = 0; k < 8; k++) {
				kv_price_unset(&p, "m");
				p.input = pr[j];
				p.output = pr[(j + k) % (sizeof(pr) / sizeof(pr[0]))];
				p.web_search_call = k & 1 ? pr[j] : -1;
				p.code_exec_hour = k & 2 ? pr[j] : -1;
				memset(&u, 0, sizeof(u));
				u.input = tok[i];
				u.output = k & 4 ? tok[i] : tok[(i + k) % (sizeof(tok) / sizeof(tok[0]))];
				u.cached_input = k & 1 ? tok[i] / 3 : 0;
				u.web_search = k & 1 ? tok[i] : 0;
				u.code_exec_ms = k & 2 ? tok[i] : 0;
				u.tier = (int)(k % 4);
				same_cost(&p, &u);
			}
}

static void
test_cost_random(void)
{
	struct kv_price p;
	struct kv_usage u;
	int i;

	for (i = 0; i < 1000000; i++) {
		if (i % 16 == 0)
			random_price(&p);
		random_usage(&u);
		same_cost(&p, &u);
	}
}

/* kv_charge_cost prices a response's model once when it has the body's
 * section: the same as the two-price rule, cost, flags and section. */
static void
test_charge_same_price(void)
{
	struct kv_config cf;
	struct kv_price p;
	struct kv_usage u;
	const struct kv_price *priced;
	int64_t want, got;
	int i, flags, wflags;

	memset(&cf, 0, sizeof(cf));
	for (i = 0; i < 100000; i++) {
		random_price(&p);
		random_usage(&u);
		wflags = 0;
		if (ref_kv_cost(&p, &u, &want) == -1) {
			wflags = KV_CHARGE_OVERFLOW;
			want = INT64_MAX / 4;
		}
		if (ref_kv_cost_fees_unpriced(&p, &u))
			wflags |= KV_CHARGE_FEES_UNPRICED;
		got = kv_charge_cost(&cf, &p, 1, &p, &u, &flags, &priced);
		CHECK(got == want && flags == wflags && priced == &p);
	}
}

static uint64_t
ref_pow10(size_t n)
{
	uint64_t v = 1;

	while (n-- > 0)
		v *= 10;
	return v;
}

static void
test_format(void)
{
	static const int64_t edge[] = {
		0, 1, -1, 999, 1000, -999, -1000, -1001, 999999, 1000000, 1999999999,
		INT64_MAX, INT64_MIN, INT64_MIN + 1, 1997500000, -5000,
	};
	char a[40], b[40], da[40], db[40];
	size_t i, len, na, nb;
	uint64_t v;
	int64_t x;

	for (i = 0; i < 400000; i++) {
		x = i < sizeof(edge) / sizeof(edge[0]) ? edge[i] : (int64_t)figure() *
		    (next() % 2 ? 1 : -1);
		len = i % 7 == 0 ? (size_t)(next() % 24) : sizeof(a);
		memset(a, 'x', sizeof(a));
		memset(b, 'x', sizeof(b));
		kv_format_usd(x, a, len);
		ref_kv_format_usd(x, b, len);
		CHECK(memcmp(a, b, sizeof(a)) == 0);
		kv_format_dollars(x, da, sizeof(da));
		ref_kv_format_dollars(x, db, sizeof(db));
		CHECK(strcmp(da, db) == 0);
		v = next() >> (next() % 64);
		if (i < 64)
			v = i < 32 ? (uint64_t)i : UINT64_MAX - (uint64_t)(i - 32);
		else if (i < 64 + 3 * 20)	/* either side of each power of ten */
			v = ref_pow10((i - 64) / 3) + (uint64_t)((i - 64) % 3) - 1;
		na = kv_fmt_u64(a, v);
		nb = ref_fmt_u64(b, v);
		CHECK(na == nb && memcmp(a, b, na) == 0);
		na = kv_fmt_i64(a, (int64_t)v);
		nb = ref_fmt_i64(b, (int64_t)v);
		CHECK(na == nb && memcmp(a, b, na) == 0);
		{
			char hx[17], hw[17];
			unsigned char by[8];
			size_t k;

			kv_fmt_hex64(hx, v);
			hx[16] = '\0';
			snprintf(hw, sizeof(hw), "%016llx", (unsigned long long)v);
			CHECK(strcmp(hx, hw) == 0);
			for (k = 0; k < 8; k++)
				by[k] = (unsigned char)(v >> (8 * k));
			kv_fmt_hex_bytes(hx, by, 8);
			for (k = 0; k < 8; k++)
				snprintf(hw + 2 * k, 3, "%02x", by[k]);
			CHECK(memcmp(hx, hw, 16) == 0);
		}
		len = 1 + next() % 20;
		if (len < 20)
			v %= ref_pow10(len);
		kv_fmt_u64_pad(a, v, len);
		ref_fmt_u64_pad(b, v, len);
		CHECK(memcmp(a, b, len) == 0);
	}
}

int
main(void)
{
	test_cost_edges();
	test_cost_random();
	test_charge_same_price();
	test_format();
	return unit_done();
}

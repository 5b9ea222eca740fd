/* Unit tests for worker/memcost.c: the memory guard's per-stream estimate
 * starts high, moves down slowly and up at once, stays within its floor
 * and ceiling, learns a kind only from readings that kind dominates, and
 * ignores readings of too few streams. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "worker/memcost.h"
#include "tests/unit.h"

#define KB	1024

static int
learn1(struct kv_memcost *m, int kind, int n, int64_t per)
{
	int live[KV_COST_KINDS] = { 0 };

	live[kind] = n;
	return kv_memcost_learn(m, per * n, live, 0);
}

static void
test_start_and_floor(void)
{
	struct kv_memcost m;
	int i;

	kv_memcost_init(&m);
	CHECK_INT(kv_memcost_of(&m, KV_COST_PLAIN), KV_COST_START_PLAIN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_START_OWN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OPENSSL), KV_COST_START_OPENSSL);
	/* an invalid kind reads as the dearest */
	CHECK_INT(kv_memcost_of(&m, 7), KV_COST_START_OPENSSL);
	CHECK_INT(kv_memcost_of(&m, -1), KV_COST_START_OPENSSL);
	/* readings of nothing at all never go under the floor */
	for (i = 0; i < 200; i++)
		learn1(&m, KV_COST_TLS_OWN, 500, 0);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_FLOOR_OWN);
	for (i = 0; i < 200; i++)
		learn1(&m, KV_COST_TLS_OPENSSL, 500, 1 * KB);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OPENSSL), KV_COST_FLOOR_OPENSSL);
	/* nor a growth that fell under the idle reading */
	CHECK_INT(learn1(&m, KV_COST_PLAIN, 100, -50 * KB), KV_COST_PLAIN);
	CHECK(kv_memcost_of(&m, KV_COST_PLAIN) >= KV_COST_FLOOR_PLAIN);
}

static void
test_down_slowly_up_at_once(void)
{
	struct kv_memcost m;
	int64_t e, prev;
	int i;

	kv_memcost_init(&m);
	/* 8 KB a stream: one reading moves 12 KB by 1/4 of the 4 KB gap */
	CHECK_INT(learn1(&m, KV_COST_TLS_OWN, 1000, 8 * KB), KV_COST_TLS_OWN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), 12 * KB - 1024);
	prev = kv_memcost_of(&m, KV_COST_TLS_OWN);
	for (i = 0; i < 100; i++) {
		learn1(&m, KV_COST_TLS_OWN, 1000, 8 * KB);
		e = kv_memcost_of(&m, KV_COST_TLS_OWN);
		CHECK(e <= prev && e >= 8 * KB);
		prev = e;
	}
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), 8 * KB);	/* converged exactly */
	CHECK_INT(m.learned[KV_COST_TLS_OWN], 101);
	/* streams that cost more (slow clients): taken at once */
	learn1(&m, KV_COST_TLS_OWN, 1000, 20 * KB);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), 20 * KB);
	/* ... up to the ceiling */
	learn1(&m, KV_COST_TLS_OWN, 1000, 500 * KB);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_MAX);
	/* the other kinds never moved */
	CHECK_INT(kv_memcost_of(&m, KV_COST_PLAIN), KV_COST_START_PLAIN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OPENSSL), KV_COST_START_OPENSSL);
}

static void
test_too_few(void)
{
	struct kv_memcost m;
	int live[KV_COST_KINDS] = { 0, KV_COST_MIN_LIVE - 1, 0 };

	kv_memcost_init(&m);
	CHECK_INT(kv_memcost_learn(&m, 1, live, 0), -1);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_START_OWN);
	CHECK_INT(m.learned[KV_COST_TLS_OWN], 0);
	live[1] = -5;	/* nonsense counts: nothing learned */
	live[0] = 1000;
	CHECK_INT(kv_memcost_learn(&m, 1, live, 0), -1);
	CHECK_INT(kv_memcost_of(&m, KV_COST_PLAIN), KV_COST_START_PLAIN);
}

/* A dominant kind learns from the growth less the others' estimated part. */
static void
test_dominant(void)
{
	struct kv_memcost m;
	int live[KV_COST_KINDS] = { 0, 900, 100 };	/* 90 % own, 10 % OpenSSL */
	int64_t growth = 900 * (int64_t)(8 * KB) + 100 * (int64_t)KV_COST_START_OPENSSL;
	int i;

	kv_memcost_init(&m);
	for (i = 0; i < 200; i++)
		CHECK_INT(kv_memcost_learn(&m, growth, live, 0), KV_COST_TLS_OWN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), 8 * KB);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OPENSSL), KV_COST_START_OPENSSL);
	CHECK_INT(m.learned[KV_COST_TLS_OPENSSL], 0);
}

/* A mix says only "too low together": each kind present goes up in
 * proportion, and a mix that costs less moves nothing. */
static void
test_mix(void)
{
	struct kv_memcost m;
	int live[KV_COST_KINDS] = { 300, 400, 300 };
	int64_t sum = 300 * (int64_t)KV_COST_START_PLAIN + 400 * (int64_t)KV_COST_START_OWN +
	    300 * (int64_t)KV_COST_START_OPENSSL;

	kv_memcost_init(&m);
	CHECK_INT(kv_memcost_learn(&m, sum / 2, live, 0), -1);
	CHECK_INT(kv_memcost_of(&m, KV_COST_PLAIN), KV_COST_START_PLAIN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_START_OWN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OPENSSL), KV_COST_START_OPENSSL);
	CHECK_INT(kv_memcost_learn(&m, sum * 3 / 2, live, 0), -1);
	CHECK_INT(kv_memcost_of(&m, KV_COST_PLAIN), KV_COST_START_PLAIN * 3 / 2);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_START_OWN * 3 / 2);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OPENSSL), KV_COST_START_OPENSSL * 3 / 2);
	/* the raised estimates now cover the growth */
	CHECK(300 * kv_memcost_of(&m, KV_COST_PLAIN) + 400 * kv_memcost_of(&m, KV_COST_TLS_OWN) +
	    300 * kv_memcost_of(&m, KV_COST_TLS_OPENSSL) >= sum * 3 / 2);
	/* a kind not carried stays where it was */
	live[0] = 0;
	kv_memcost_init(&m);
	sum = 400 * (int64_t)KV_COST_START_OWN + 300 * (int64_t)KV_COST_START_OPENSSL;
	CHECK_INT(kv_memcost_learn(&m, sum * 2, live, 0), -1);
	CHECK_INT(kv_memcost_of(&m, KV_COST_PLAIN), KV_COST_START_PLAIN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_START_OWN * 2);
}

/* A bound (connections still being set up hold part of the growth) may
 * lower an estimate, never raise one, and says nothing about a mix. */
static void
test_bound(void)
{
	struct kv_memcost m;
	int live[KV_COST_KINDS] = { 0, 1000, 0 };
	int mix[KV_COST_KINDS] = { 500, 500, 0 };

	kv_memcost_init(&m);
	CHECK_INT(kv_memcost_learn(&m, 1000 * (int64_t)(30 * KB), live, 1), -1);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), KV_COST_START_OWN);
	CHECK_INT(m.learned[KV_COST_TLS_OWN], 0);
	CHECK_INT(kv_memcost_learn(&m, 1000 * (int64_t)(8 * KB), live, 1), KV_COST_TLS_OWN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), 12 * KB - 1024);
	CHECK_INT(kv_memcost_learn(&m, 1000 * (int64_t)(100 * KB), mix, 1), -1);
	CHECK_INT(kv_memcost_of(&m, KV_COST_PLAIN), KV_COST_START_PLAIN);
	CHECK_INT(kv_memcost_of(&m, KV_COST_TLS_OWN), 12 * KB - 1024);
}

int
main(void)
{
	test_bound();
	test_start_and_floor();
	test_down_slowly_up_at_once();
	test_too_few();
	test_dominant();
	test_mix();
	CHECK_STR(kv_memcost_name(KV_COST_TLS_OWN), "TLS (own record layer)");
	return unit_done();
}

/* GCRA words (shm/ratelimit.c): bursts, refill, exact waits, refunds,
 * overruns, a clock stepped back, the headers and the duration format. */
#include <config.h>

#include "shm/ratelimit.h"
#include "tests/unit.h"

#define S 1000000000LL

static void
test_burst_and_refill(void)
{
	_Atomic int64_t tat = 0;
	int64_t now = 1700000000LL * S, wait = 0, rem, reset;
	int i, ok = 0;

	/* 10 per minute: a burst of exactly 10, then one every 6 s. */
	for (i = 0; i < 25; i++)
		ok += kv_gcra_take(&tat, 10, 1, now, &wait) == 0;
	CHECK_INT(ok, 10);
	CHECK_INT(wait, 6 * S);
	kv_gcra_state(atomic_load(&tat), 10, now, &rem, &reset);
	CHECK_INT(rem, 0);
	CHECK_INT(reset, 60000);
	CHECK_INT(kv_gcra_take(&tat, 10, 1, now + 6 * S - 1, &wait), -1);
	CHECK_INT(wait, 1);
	CHECK_INT(kv_gcra_take(&tat, 10, 1, now + 6 * S, &wait), 0);
	CHECK_INT(kv_gcra_take(&tat, 10, 1, now + 6 * S, &wait), -1);
	/* A minute later the bucket is full again. */
	kv_gcra_state(atomic_load(&tat), 10, now + 66 * S, &rem, &reset);
	CHECK_INT(rem, 10);
	CHECK_INT(reset, 0);
}

static void
test_tokens(void)
{
	_Atomic int64_t tat = 0;
	int64_t now = 1700000000LL * S, wait, rem, reset;

	/* 1,000 tokens per minute: 600 then 400 pass, 1 more waits 60 ms. */
	CHECK_INT(kv_gcra_take(&tat, 1000, 600, now, &wait), 0);
	CHECK_INT(kv_gcra_take(&tat, 1000, 401, now, &wait), -1);
	CHECK_INT(wait, 60000000);
	CHECK_INT(kv_gcra_take(&tat, 1000, 400, now, &wait), 0);
	CHECK_INT(kv_gcra_take(&tat, 1000, 1001, now, &wait), -1);
	CHECK_INT(wait, -1);	/* never fits */
	/* A refund of 300 makes room for 300 at once. */
	kv_gcra_adjust(&tat, 1000, -300);
	kv_gcra_state(atomic_load(&tat), 1000, now, &rem, &reset);
	CHECK_INT(rem, 300);
	CHECK_INT(kv_gcra_take(&tat, 1000, 300, now, &wait), 0);
	CHECK_INT(kv_gcra_take(&tat, 1000, 1, now, &wait), -1);
}

static void
test_overrun_and_clock(void)
{
	_Atomic int64_t tat;
	int64_t now = kv_rl_now_ns(), wait, rem, reset;

	/* An overrun on a full bucket counts from now, not from the past. */
	atomic_store(&tat, now - 3600 * S);
	kv_gcra_adjust(&tat, 1000, 500);
	kv_gcra_state(atomic_load(&tat), 1000, now, &rem, &reset);
	CHECK(rem >= 499 && rem <= 500);
	/* Overruns are kept for at most one extra window. */
	kv_gcra_adjust(&tat, 1000, 1000000);
	CHECK(atomic_load(&tat) <= kv_rl_now_ns() + 2 * KV_RL_WINDOW_NS);
	CHECK_INT(kv_gcra_take(&tat, 1000, 1, kv_rl_now_ns(), &wait), -1);
	CHECK(wait > 59 * S && wait <= 60 * S + 60000000);
	/* A TAT far ahead (the clock went back an hour) waits at most 2 windows. */
	atomic_store(&tat, now + 3600 * S);
	CHECK_INT(kv_gcra_take(&tat, 10, 1, now, &wait), -1);
	CHECK_INT(wait, 2 * KV_RL_WINDOW_NS + 6 * S - KV_RL_WINDOW_NS);
	/* Limit 0 is no limit. */
	CHECK_INT(kv_gcra_take(&tat, 0, 5, now, &wait), 0);
}

static void
test_format(void)
{
	char b[32];
	struct kv_rl_view v = { .rpm = 60, .tpm = 0, .req_remaining = 59, .req_reset_ms = 1000 };
	char h[512];

	kv_format_duration(0, b, sizeof(b));
	CHECK_STR(b, "0s");
	kv_format_duration(12, b, sizeof(b));
	CHECK_STR(b, "12ms");
	kv_format_duration(1000, b, sizeof(b));
	CHECK_STR(b, "1s");
	kv_format_duration(1500, b, sizeof(b));
	CHECK_STR(b, "1.5s");
	kv_format_duration(17870, b, sizeof(b));
	CHECK_STR(b, "17.87s");
	kv_format_duration(360000, b, sizeof(b));
	CHECK_STR(b, "6m0s");
	kv_format_duration(3600000, b, sizeof(b));
	CHECK_STR(b, "1h0m0s");
	kv_format_duration(61001, b, sizeof(b));
	CHECK_STR(b, "1m1.001s");
	CHECK(kv_ratelimit_headers(&v, h, sizeof(h)) > 0);
	CHECK_STR(h, "x-ratelimit-limit-requests: 60\r\nx-ratelimit-remaining-requests: 59\r\n"
	    "x-ratelimit-reset-requests: 1s\r\n");
	v.rpm = 0;
	CHECK_INT(kv_ratelimit_headers(&v, h, sizeof(h)), 0);
	v.tpm = 1000;
	CHECK_INT(kv_ratelimit_headers(&v, h, 20), -1);
}

static void
test_tokens_counted(void)
{
	struct kv_usage u = { .input = 100, .output = 20, .cached_input = 30 };

	CHECK_INT(kv_ratelimit_tokens(&u, 0), 120);	/* OpenAI: cached included */
	CHECK_INT(kv_ratelimit_tokens(&u, 1), 90);	/* Anthropic: cache reads not */
}

int
main(void)
{
	test_burst_and_refill();
	test_tokens();
	test_overrun_and_clock();
	test_format();
	test_tokens_counted();
	return unit_done();
}

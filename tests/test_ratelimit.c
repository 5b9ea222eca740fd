/* GCRA words (shm/ratelimit.c): bursts, refill, exact waits, refunds,
 * overruns, a clock stepped back, the headers and the duration format;
 * and a cluster host's rate leases: admission within the caps, all or
 * nothing, the need noted for the master, settlement into used. */
#include <config.h>

#include <stdlib.h>
#include <time.h>

#include "common/duration.h"
#include "shm/ratelimit.h"
#include "worker/ratelimit_headers.h"
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
	/* A TAT far ahead (written before the clock went back an hour) is
	 * started again from a full bucket: no hour-long lock (issue 22). */
	atomic_store(&tat, now + 3600 * S);
	kv_gcra_state(atomic_load(&tat), 10, now, &rem, &reset);
	CHECK_INT(rem, 10);
	CHECK_INT(kv_gcra_take(&tat, 10, 1, now, &wait), 0);
	CHECK_INT(atomic_load(&tat), now + 6 * S);
	/* ... while one an overrun left (within two windows) still holds. */
	atomic_store(&tat, now + 90 * S);
	CHECK_INT(kv_gcra_take(&tat, 10, 1, now, &wait), -1);
	CHECK_INT(wait, 90 * S + 6 * S - KV_RL_WINDOW_NS);
	/* The clock is the monotonic one read as unix time: close to the
	 * wall clock at the anchor, and never going back. */
	{
		struct timespec ts;
		int64_t a = kv_rl_now_ns(), b = kv_rl_now_ns(), wall;

		clock_gettime(CLOCK_REALTIME, &ts);
		wall = (int64_t)ts.tv_sec * S + ts.tv_nsec;
		CHECK(b >= a);
		CHECK(wall - b < 5 * S && b - wall < 5 * S);
	}
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

static void
test_cluster_lease(void)
{
	struct kv_ledger_header hdr = { 0 };
	struct kv_account *a = calloc(1, sizeof(*a));
	struct kv_worker_slot *w = calloc(1, sizeof(*w));
	struct kv_ledger l = { 0 };
	struct kv_rl_view v;
	int64_t now = 1700000000LL * S, rem, reset;
	int i;

	if (a == NULL || w == NULL)
		abort();
	hdr.max_keys = 1;
	atomic_store(&hdr.cluster, 1);
	l.hdr = &hdr;
	l.accounts = a;
	atomic_store(&a->rpm, 10);
	atomic_store(&a->tpm, 1000);
	atomic_store(&a->rl_req_cap, 3);
	atomic_store(&a->rl_tok_cap, 500);
	for (i = 0; i < 4; i++)
		atomic_store(&w->resv[i].account, 1);
	atomic_store(&w->resv_hi, 4);	/* as kv_ledger_reserve records them */
	/* Three requests of 100 tokens fit the lease of 3 requests. */
	for (i = 0; i < 3; i++)
		CHECK_INT(kv_ratelimit_admit(w, i, a, 100, now, 1, &v), 0);
	CHECK_INT(atomic_load(&a->rl_req_used), 3);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 300);
	/* The fourth passes the buckets (7 requests left) but not the lease:
	 * refused 'l', retry in 1 s, nothing taken, the need noted. */
	CHECK_INT(kv_ratelimit_admit(w, 3, a, 100, now, 1, &v), -1);
	CHECK_INT(v.refused_by, 'l');
	CHECK_INT(v.retry_after_s, 1);
	CHECK_INT(atomic_load(&a->rl_req_used), 3);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 300);
	CHECK_INT(atomic_load(&a->rl_need), 101);
	kv_gcra_state(atomic_load(&a->rpm_tat), 10, now, &rem, &reset);
	CHECK_INT(rem, 7);
	kv_gcra_state(atomic_load(&a->tpm_tat), 1000, now, &rem, &reset);
	CHECK_INT(rem, 700);
	/* Room for requests but not for 300 more tokens: all or nothing. */
	atomic_store(&a->rl_req_cap, 10);
	CHECK_INT(kv_ratelimit_admit(w, 3, a, 300, now, 1, &v), -1);
	CHECK_INT(v.refused_by, 'l');
	CHECK_INT(atomic_load(&a->rl_req_used), 3);
	CHECK_INT(atomic_load(&a->rl_need), 301);
	/* Settled: the real count goes to used, the estimate leaves reserved;
	 * what was committed when sent is already in used. */
	kv_ratelimit_settle(&l, w, 0, 40, 0);
	CHECK_INT(atomic_load(&a->rl_tok_used), 40);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 200);
	CHECK_INT(kv_ratelimit_sent(w, 1, 30), 30);
	kv_ratelimit_lease_sent(&l, a, 30);
	CHECK_INT(atomic_load(&a->rl_tok_used), 70);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 170);
	kv_ratelimit_settle(&l, w, 1, 90, 30);
	CHECK_INT(atomic_load(&a->rl_tok_used), 130);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 100);
	/* Now 100 + 130 + 300 > 500 still; 270 fits exactly. */
	CHECK_INT(kv_ratelimit_admit(w, 3, a, 271, now, 1, &v), -1);
	CHECK_INT(kv_ratelimit_admit(w, 3, a, 270, now, 1, &v), 0);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 370);
	/* A dead worker's held tokens leave reserved (not used). */
	CHECK_INT(kv_ratelimit_release_worker(&l, w), 100 + 270);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 0);
	CHECK_INT(atomic_load(&a->rl_tok_used), 130);
	/* Without the lease (no [cluster]) the caps are not consulted. */
	atomic_store(&a->rl_req_cap, 0);
	CHECK_INT(kv_ratelimit_admit(w, 0, a, 1, now, 0, &v), 0);
	free(a);
	free(w);
}

int
main(void)
{
	test_burst_and_refill();
	test_tokens();
	test_overrun_and_clock();
	test_format();
	test_tokens_counted();
	test_cluster_lease();
	return unit_done();
}

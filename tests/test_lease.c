/* The cluster lease API (shm/lease.h) against the real admission of a
 * real ledger file: a cap is only lowered by kv_lease_cap_lower, a grant
 * from a stale value is refused, a worker refused for want of lease is
 * recorded once, a zero point followed clears spend, and the reset flag
 * is asked, seen and cleared. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/lease.h"
#include "shm/ledger.h"
#include "tests/unit.h"

static struct kv_account *
account(struct kv_ledger *l, const char *name, int64_t budget)
{
	uint8_t h[32];

	memset(h, 0, sizeof(h));
	memcpy(h, name, strlen(name) < 32 ? strlen(name) : 32);
	return kv_ledger_account(l, h, 1, NULL, budget);
}

static void
test_caps(struct kv_ledger *l)
{
	struct kv_worker_slot *w = &l->workers[0];
	struct kv_account *a = account(l, "sk-lease-caps", 1000);
	int64_t rem, cur;
	int r;

	atomic_store(&l->hdr->cluster, 1);
	CHECK_INT(kv_lease_cap_lower(a, 0), 0);
	CHECK_INT(kv_lease_cap_lower(a, 500), 0);	/* never raised */
	r = kv_ledger_reserve(l, w, a, 100, &rem);
	CHECK_INT(r, -3);				/* only the lease refuses */
	CHECK_INT(kv_lease_need_take(a), 100);
	CHECK_INT(kv_lease_need_take(a), 0);		/* read once */
	cur = 0;
	CHECK_INT(kv_lease_cap_grant(a, &cur, 300), 1);
	r = kv_ledger_reserve(l, w, a, 100, &rem);
	CHECK(r >= 0);
	kv_ledger_settle(l, w, r, 100, NULL, NULL);
	/* a grant computed from a cap that moved meanwhile is refused */
	cur = 300;
	CHECK_INT(kv_lease_cap_lower(a, 50), 50);
	CHECK_INT(kv_lease_cap_grant(a, &cur, 900), 0);
	CHECK_INT(cur, 50);
	CHECK_INT(atomic_load(&a->lease_cap_nusd), 50);
	/* 402, not 503, once the other hosts' commitment leaves no room */
	kv_lease_view_set(a, 850, 950, 1);
	cur = 50;
	CHECK_INT(kv_lease_cap_grant(a, &cur, 1000), 1);
	CHECK_INT(kv_ledger_reserve(l, w, a, 100, &rem), -1);
	/* open mode lifts every cap */
	kv_lease_open(a, INT64_MAX / 4);
	CHECK_INT(kv_lease_rate_cap(a, KV_LEASE_REQUESTS), INT64_MAX / 4);
	CHECK_INT(kv_lease_rate_cap_lower(a, KV_LEASE_TOKENS, 7), 7);
	cur = 7;
	CHECK_INT(kv_lease_rate_grant(a, KV_LEASE_TOKENS, &cur, 70, 12345), 1);
	CHECK_INT(kv_lease_rate_cap(a, KV_LEASE_TOKENS), 70);
	CHECK_INT(atomic_load(&a->tpm_tat), 12345);
	atomic_store(&l->hdr->cluster, 0);
}

static void
test_zero_and_reset(struct kv_ledger *l)
{
	struct kv_account *a = account(l, "sk-lease-zero", 1000);
	int64_t exp;

	kv_account_charge(a, 400);
	kv_lease_base_add(a, 100);
	CHECK_INT(kv_lease_zero_follow(a, 100), 0);	/* Redis's zero is ours */
	CHECK_INT(kv_lease_zero_follow(a, 250), 150);	/* another host reset it */
	CHECK_INT(kv_account_spent(a), 250);
	CHECK_INT(atomic_load(&a->cluster_base_nusd), 250);
	CHECK_INT(atomic_load(&a->lease_cap_nusd), 0);	/* closed first */
	CHECK_INT(kv_lease_zero_follow(a, 10000), 250);	/* never below 0 */
	CHECK_INT(kv_account_spent(a), 0);
	kv_lease_base_clear(a);
	CHECK_INT(atomic_load(&a->cluster_base_nusd), 0);
	CHECK_INT(kv_lease_reset_asked(a), 0);
	kv_lease_reset_ask(a);
	CHECK(kv_lease_reset_asked(a));
	kv_lease_reset_done(a);
	CHECK_INT(kv_lease_reset_asked(a), 0);
	exp = 1000;
	CHECK_INT(kv_lease_budget_adopt(a, &exp, 2000), 1);
	exp = 1000;	/* a kvctl budget in between is kept */
	CHECK_INT(kv_lease_budget_adopt(a, &exp, 3000), 0);
	CHECK_INT(atomic_load(&a->budget_nusd), 2000);
}

int
main(void)
{
	char dir[64], path[128], err[512];
	struct kv_ledger l;

	snprintf(dir, sizeof(dir), "/tmp/kvlease.XXXXXX");
	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", dir);
	if (kv_ledger_open(&l, path, 16, KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	test_caps(&l);
	test_zero_and_reset(&l);
	kv_ledger_close(&l);
	if (unlink(path) == -1 || rmdir(dir) == -1)
		perror("cleanup");
	return unit_done();
}

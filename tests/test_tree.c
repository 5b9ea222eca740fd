/* Unit tests for the budget tree's reservation (shm/tree.h) on a real
 * ledger file: all or nothing along a chain of nodes, the rollback of a
 * refusal, the settle at every node, a dead worker's holds released (and
 * charged alike at every node, even when it died half-way through its
 * settle), a team's rate limits in its node's record given back exactly at
 * a death, four processes racing on one tree without passing a budget or
 * breaking a sum; and the CPU cost of a chain of depth 1 and 4. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/ledger.h"
#include "shm/ratelimit.h"
#include "shm/tree.h"
#include "tests/unit.h"

#define PROCS		4
#define ROUNDS		20000

static char tmpdir[64];
static char path[128];

static int
open_new(struct kv_ledger *l)
{
	char err[512];

	if (unlink(path) == -1 && errno != ENOENT)
		return -1;
	if (kv_ledger_open(l, path, 256, KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "open_new: %s\n", err);
		return -1;
	}
	return 0;
}

static struct kv_account *
node_acct(struct kv_ledger *l, const char *name, int64_t budget)
{
	uint8_t h[32];

	kv_key_hash(name, strlen(name), h);
	return kv_ledger_account(l, h, 1, NULL, budget);
}

/* cap 50, team 100, org 90: amounts of 30 pass the cap once. */
static void
test_all_or_nothing(void)
{
	struct kv_ledger l;
	struct kv_worker_slot *w;
	struct kv_account *n[3];
	struct kv_tree_hold h1, h2, h3;
	int64_t rem;
	int refused = -1;

	if (open_new(&l) == -1)
		return;
	w = &l.workers[0];
	n[0] = node_acct(&l, "cap", 50);
	n[1] = node_acct(&l, "team", 100);
	n[2] = node_acct(&l, "org", 90);
	CHECK_INT(kv_tree_reserve(&l, w, n, 3, 30, &h1, &refused, &rem), 0);
	CHECK_INT(h1.n, 3);
	CHECK_INT(kv_tree_reserve(&l, w, n, 3, 30, &h2, &refused, &rem), -1);
	CHECK_INT(refused, 0);			/* the cap refused */
	CHECK_INT(rem, 20);
	CHECK_INT(h2.n, 0);
	CHECK_INT(atomic_load(&n[1]->reserved_nusd), 30);	/* nothing left behind */
	/* the org refuses a chain that skips the cap: team and org rolled back */
	CHECK_INT(kv_tree_reserve(&l, w, n + 1, 2, 95, &h3, &refused, &rem), -1);
	CHECK_INT(refused, 0);
	CHECK_INT(kv_tree_reserve(&l, w, n + 1, 2, 65, &h3, &refused, &rem), -1);
	CHECK_INT(refused, 1);
	CHECK_INT(rem, 60);
	CHECK_INT(atomic_load(&n[1]->reserved_nusd), 30);
	CHECK_INT(atomic_load(&n[2]->refusals), 1);
	kv_tree_settle(&l, w, &h1, 12, 1);
	CHECK_INT(h1.n, 0);
	CHECK_INT(kv_account_spent(n[0]), 12);
	CHECK_INT(kv_account_spent(n[1]), 12);
	CHECK_INT(kv_account_spent(n[2]), 12);
	CHECK_INT(atomic_load(&n[2]->reserved_nusd), 0);
	CHECK_INT((int)atomic_load(&n[2]->requests), 1);
	CHECK_INT(kv_ledger_resv_end(w) > 0, 1);
	kv_ledger_close(&l);
}

/* A worker dead with holds (sent, and half-way through a settle). */
static void
test_death(void)
{
	struct kv_ledger l;
	struct kv_worker_slot *w;
	struct kv_account *n[3];
	struct kv_tree_hold h1, h2;
	int64_t rem;
	int refused, i;

	if (open_new(&l) == -1)
		return;
	w = &l.workers[0];
	n[0] = node_acct(&l, "k", 1000);
	n[1] = node_acct(&l, "t", 1000);
	n[2] = node_acct(&l, "o", 1000);
	CHECK_INT(kv_tree_reserve(&l, w, n, 3, 100, &h1, &refused, &rem), 0);
	kv_tree_sent(w, &h1, 7);		/* reached the provider */
	CHECK_INT(kv_tree_reserve(&l, w, n, 3, 100, &h2, &refused, &rem), 0);
	/* dying while settling h2 at 40: two nodes settled, one not */
	for (i = 0; i < h2.n; i++)
		kv_ledger_resv_final(w, h2.resv[i], 40);
	kv_ledger_settle_node(&l, w, h2.resv[2], 40, 1);
	kv_ledger_settle_node(&l, w, h2.resv[1], 40, 1);
	CHECK_INT(kv_ledger_release_worker(&l, w), 4);
	for (i = 0; i < 3; i++) {
		CHECK_INT(atomic_load(&n[i]->reserved_nusd), 0);
		CHECK_INT(kv_account_spent(n[i]), 47);	/* 7 sent + 40 settling */
	}
	kv_ledger_close(&l);
}

/* A team's rate limits in its node's own record (worker/tree_rate.c does
 * this per held node): a dead worker gives back exactly the tokens each
 * node's record still holds, the sent input staying taken, as a key's. */
static void
test_rate_death(void)
{
	struct kv_ledger l;
	struct kv_worker_slot *w;
	struct kv_account *n[2];
	struct kv_tree_hold h;
	struct kv_rl_view v;
	int64_t rem, tat0[2], now = kv_rl_now_ns();
	int refused, i;

	if (open_new(&l) == -1)
		return;
	w = &l.workers[0];
	n[0] = node_acct(&l, "team", 1000);
	n[1] = node_acct(&l, "org", 1000);
	for (i = 0; i < 2; i++) {
		atomic_store(&n[i]->rpm, 0);
		atomic_store(&n[i]->tpm, 6000);	/* 10 ms of TAT a token */
	}
	CHECK_INT(kv_tree_reserve(&l, w, n, 2, 100, &h, &refused, &rem), 0);
	for (i = 0; i < 2; i++) {
		CHECK_INT(kv_ratelimit_admit(w, h.resv[i], n[i], 300, now, 0, &v), 0);
		CHECK_INT(v.tokens, 300);
		tat0[i] = atomic_load(&n[i]->tpm_tat);
	}
	/* a second request wants more than the 5,700 left: refused, nothing taken */
	CHECK_INT(kv_ratelimit_admit(w, -1, n[0], 5800, now, 0, &v), -1);
	CHECK_INT(atomic_load(&n[0]->tpm_tat), tat0[0]);
	/* sent: 100 tokens of input stay taken at each node */
	for (i = 0; i < 2; i++)
		CHECK_INT(kv_ratelimit_sent(w, h.resv[i], 100), 100);
	CHECK_INT(kv_ratelimit_release_worker(&l, w), 400);	/* 200 a node */
	for (i = 0; i < 2; i++)	/* back by 200 tokens exactly: 2 s */
		CHECK_INT(tat0[i] - atomic_load(&n[i]->tpm_tat), 2000000000LL);
	CHECK_INT(kv_ledger_release_worker(&l, w), 2);
	kv_ledger_close(&l);
}

/* One process: its own key under the shared team and org. */
static void __attribute__((noreturn))
racer(struct kv_ledger *l, int p)
{
	struct kv_worker_slot *w = &l->workers[p];
	struct kv_account *n[3];
	struct kv_tree_hold h;
	char name[16];
	int64_t rem;
	int refused, i;

	snprintf(name, sizeof(name), "key%d", p);
	n[0] = node_acct(l, name, 1000000);
	n[1] = node_acct(l, "team", 500000);
	n[2] = node_acct(l, "org", 400000);
	for (i = 0; i < ROUNDS; i++) {
		if (kv_tree_reserve(l, w, n, 3, 37, &h, &refused, &rem) == 0)
			kv_tree_settle(l, w, &h, (i % 3) == 0 ? 37 : 11, 1);
	}
	_exit(0);
}

static void
test_race(void)
{
	struct kv_ledger l;
	int64_t keys = 0;
	pid_t pid[PROCS];
	char name[16];
	int p, st;

	if (open_new(&l) == -1)
		return;
	for (p = 0; p < PROCS; p++)
		if ((pid[p] = fork()) == 0)
			racer(&l, p);
	for (p = 0; p < PROCS; p++)
		CHECK(waitpid(pid[p], &st, 0) == pid[p] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (p = 0; p < PROCS; p++) {
		snprintf(name, sizeof(name), "key%d", p);
		keys += kv_account_spent(node_acct(&l, name, 0));
		CHECK_INT(atomic_load(&node_acct(&l, name, 0)->reserved_nusd), 0);
	}
	CHECK_INT(keys, kv_account_spent(node_acct(&l, "team", 0)));
	CHECK_INT(keys, kv_account_spent(node_acct(&l, "org", 0)));
	CHECK(kv_account_spent(node_acct(&l, "org", 0)) <= 400000);
	CHECK(kv_account_spent(node_acct(&l, "org", 0)) > 400000 - 37);	/* it filled up */
	CHECK_INT(atomic_load(&node_acct(&l, "org", 0)->reserved_nusd), 0);
	kv_ledger_close(&l);
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* CPU per request: the nodes looked up by hash, held and settled. No
 * assertion (tests never assert timing): the figure for bench/RESULTS.md. */
static void
time_depth(struct kv_ledger *l, int depth, int rate)
{
	struct kv_worker_slot *w = &l->workers[0];
	struct kv_account *n[KV_TREE_NODES];
	struct kv_tree_hold h;
	struct kv_rl_view v;
	uint8_t hash[8][32];
	char name[16];
	int64_t rem;
	int i, d, refused, iters = 200000;
	double t0;

	for (d = 0; d < depth; d++) {
		snprintf(name, sizeof(name), "node%d", d);
		kv_key_hash(name, strlen(name), hash[d]);
		n[d] = node_acct(l, name, INT64_MAX / 4);
		atomic_store(&n[d]->rpm, rate ? 4000000000u : 0);	/* never refusing */
		atomic_store(&n[d]->tpm, rate ? 4000000000u : 0);
	}
	t0 = now_ns();
	for (i = 0; i < iters; i++) {
		for (d = 0; d < depth; d++)
			n[d] = kv_ledger_account(l, hash[d], 0, NULL, 0);
		if (kv_tree_reserve(l, w, n, depth, 1000, &h, &refused, &rem) != 0)
			continue;
		/* a team's rpm and tpm as worker/tree_rate.c takes and settles them */
		for (d = 0; rate && d < depth; d++)
			(void)kv_ratelimit_admit(w, h.resv[d], n[d], 300, kv_rl_now_ns(), 0, &v);
		for (d = 0; rate && d < depth; d++)
			kv_ratelimit_settle(l, w, h.resv[d], 250, 0);
		kv_tree_settle(l, w, &h, 500, 1);
	}
	printf("# tree depth %d%s: %.0f ns of CPU per request (lookup, reserve, settle)\n", depth,
	    rate ? " with rpm and tpm at each node" : "", (now_ns() - t0) / iters);
}

int
main(void)
{
	struct kv_ledger l;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kvtree.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", tmpdir);
	test_all_or_nothing();
	test_death();
	test_rate_death();
	test_race();
	if (open_new(&l) == 0) {
		time_depth(&l, 1, 0);
		time_depth(&l, 4, 0);
		time_depth(&l, 4, 1);
		kv_ledger_close(&l);
	}
	unlink(path);
	rmdir(tmpdir);
	return unit_done();
}

/* Unit tests for the master's ledger repair: reserved_nusd recomputed from
 * the recorded reservations after a worker is killed (kill -9) at any
 * point of its reserve/settle loop, with a live worker carrying on beside
 * it; half-claimed slots that never make a lookup wait and are retired;
 * the master's period roll; saturating arithmetic. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/ledger.h"
#include "shm/grow.h"
#include "shm/ratelimit.h"
#include "shm/repair.h"
#include "tests/unit.h"

#define NACCT		4
#define KILL_ROUNDS	3000
#define DEAD_SLOT	0
#define LIVE_SLOT	1

static char tmpdir[64];
static char path[128];

static int
open_new(struct kv_ledger *l, uint32_t max_keys)
{
	char err[512];

	if (unlink(path) == -1 && errno != ENOENT)
		return -1;
	if (kv_ledger_open(l, path, max_keys, KV_LEDGER_CREATE, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "open_new: %s\n", err);
		return -1;
	}
	return 0;
}

static struct kv_account *
key_acct(struct kv_ledger *l, int i, int64_t budget)
{
	char name[32];
	uint8_t h[32];

	snprintf(name, sizeof(name), "sk-repair-%d", i);
	kv_key_hash(name, strlen(name), h);
	return kv_ledger_account(l, h, 1, NULL, budget);
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* What a worker does, for ever: hold a few reservations, settle or
 * release them in random order, now and then be refused. */
static void __attribute__((noreturn))
churn(struct kv_ledger *l, int slot, uint64_t seed)
{
	struct kv_worker_slot *w = &l->workers[slot];
	struct kv_account *a[NACCT];
	int held[8], nheld = 0, r, k;
	int64_t rem;

	for (k = 0; k < NACCT; k++)
		if ((a[k] = key_acct(l, k, 0)) == NULL)
			_exit(1);
	l->self = w;
	atomic_store(&w->pid, getpid());
	for (;;) {
		k = (int)(xorshift(&seed) % NACCT);
		if (nheld < 8 && (xorshift(&seed) & 1)) {
			r = kv_ledger_reserve(l, w, a[k],
			    (int64_t)(xorshift(&seed) % 500) + 1, &rem);
			if (r >= 0)
				held[nheld++] = r;
		} else if (nheld > 0) {
			int i = (int)(xorshift(&seed) % (uint64_t)nheld);

			kv_ledger_settle(l, w, held[i], (int64_t)(xorshift(&seed) % 3),
			    NULL, NULL);
			held[i] = held[--nheld];
		}
	}
}

/* reserved == sum of the reservations recorded, for every account. */
static int
consistent(struct kv_ledger *l)
{
	int64_t sum[NACCT + 64] = { 0 };
	uint32_t i, n = l->hdr->max_keys;
	int w, j, ok = 1;

	for (w = 0; w < KV_WORKER_SLOTS; w++)
		for (j = 0; j < KV_RESV_PER_WORKER; j++) {
			uint32_t idx = atomic_load(&l->workers[w].resv[j].account);

			if (idx != 0 && idx <= n)
				sum[idx - 1] += atomic_load(&l->workers[w].resv[j].amount_nusd);
		}
	for (i = 0; i < n; i++) {
		int64_t got = atomic_load(&l->accounts[i].reserved_nusd);

		if (got != sum[i] || atomic_load(&l->accounts[i].spent_nusd) < 0) {
			fprintf(stderr, "account %u: reserved %lld, recorded %lld\n",
			    i, (long long)got, (long long)sum[i]);
			ok = 0;
		}
	}
	return ok;
}

static pid_t
start_churn(struct kv_ledger *l, int slot, uint64_t seed)
{
	pid_t pid = fork();

	if (pid == 0)
		churn(l, slot, seed);
	return pid;
}

static void
reap_one(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
}

/* Kill -9 a churning worker thousands of times at random points while a
 * second one keeps going; after each death the repair (with the live one
 * quiesced) makes every counter equal to what is recorded. */
static void
test_kill_loop(void)
{
	struct kv_ledger l;
	struct kv_repair_report r;
	struct timespec ts;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	int round, bad = 0, fixed = 0, quiet_fail = 0, i;
	uint32_t to;
	pid_t live, victim;

	CHECK_INT(open_new(&l, 16), 0);
	for (i = 0; i < NACCT; i++)
		CHECK(key_acct(&l, i, i == 0 ? 2000 : INT64_MAX / 4) != NULL);
	live = start_churn(&l, LIVE_SLOT, 12345);
	CHECK(live > 0);
	for (round = 0; round < KILL_ROUNDS; round++) {
		victim = start_churn(&l, DEAD_SLOT, xorshift(&seed));
		if (victim <= 0)
			break;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)(xorshift(&seed) % 400000);
		nanosleep(&ts, NULL);
		kill(victim, SIGKILL);
		reap_one(victim);
		if (kv_ledger_quiesce(&l, UINT64_C(1) << LIVE_SLOT, 1000) == -1) {
			quiet_fail++;
			continue;
		}
		to = atomic_load(&l.workers[LIVE_SLOT].quiesce_timeouts);
		if (kv_ledger_repair(&l, UINT64_C(1) << DEAD_SLOT, &r) == 0) {
			fixed += r.reserved_fixed;
			/* The live worker stops waiting after 50 ms (this process
			 * preempted that long on a busy machine): then the check
			 * races it, so only count rounds it really waited. */
			if (!consistent(&l) &&
			    atomic_load(&l.workers[LIVE_SLOT].quiesce_timeouts) == to)
				bad++;
		}
		atomic_store(&l.workers[DEAD_SLOT].pid, 0);
		kv_ledger_unquiesce(&l);
	}
	kill(live, SIGKILL);
	reap_one(live);
	CHECK_INT(round, KILL_ROUNDS);
	CHECK_INT(quiet_fail, 0);
	CHECK_INT(bad, 0);
	/* The live worker died too: a start-up repair releases it. */
	CHECK_INT(kv_ledger_repair(&l, ~UINT64_C(0), &r), 0);
	CHECK(consistent(&l));
	for (i = 0; i < NACCT; i++)
		CHECK_INT(atomic_load(&l.accounts[i].reserved_nusd), 0);
	printf("# %d kills, %d counters the repair corrected, %u waits timed out\n",
	    round, fixed, atomic_load(&l.workers[LIVE_SLOT].quiesce_timeouts));
	/* Some kills must have landed inside an operation, or this proves nothing. */
	CHECK(fixed > 0);
	kv_ledger_close(&l);
}

/* A claimer killed between the tag CAS and READY: other keys' lookups pass
 * it without waiting, its own key gets EAGAIN, the repair retires it, and
 * then the key gets exactly one account. */
static void
test_half_claim(void)
{
	struct kv_ledger l;
	struct kv_repair_report r;
	struct kv_account *a, *b;
	uint8_t h[32], g[32];
	uint32_t n, start, i;
	struct timespec t0, t1;
	long ms;

	CHECK_INT(open_new(&l, 8), 0);
	n = l.hdr->max_keys;
	kv_key_hash("sk-half", 7, h);
	{
		uint64_t v = 0;	/* the home slot, as the ledger computes it */

		for (i = 0; i < 8; i++)
			v = v << 8 | h[i];
		start = (uint32_t)(v % n);
	}
	kv_ledger_mark_slot(&l, start);		/* as a claimer does first */
	atomic_store(&l.accounts[start].tag, kv_account_tag(h));	/* died here */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK(kv_ledger_account(&l, h, 1, NULL, 5) == NULL);
	CHECK_INT(errno, EAGAIN);
	CHECK(kv_ledger_account(&l, h, 0, NULL, 5) == NULL);
	CHECK_INT(errno, EAGAIN);
	/* Another key whose chain crosses the slot. */
	for (i = 0; ; i++) {
		char name[32];
		uint64_t v = 0;
		int j;

		snprintf(name, sizeof(name), "sk-other-%u", i);
		kv_key_hash(name, strlen(name), g);
		for (j = 0; j < 8; j++)
			v = v << 8 | g[j];
		if (v % n == start)
			break;
	}
	b = kv_ledger_account(&l, g, 1, NULL, 5);
	CHECK(b != NULL && b != &l.accounts[start]);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK(ms < 100);	/* the old code spun 1 s per crossing */
	CHECK_INT(kv_ledger_repair(&l, 0, &r), 0);
	CHECK_INT(r.claims_fixed, 1);
	CHECK_INT(atomic_load(&l.accounts[start].state), KV_SLOT_DEAD);
	CHECK_INT(atomic_load(&l.accounts[start].tag), KV_TAG_DEAD);
	/* The retired slot is the first free one of the chain: reused. */
	a = kv_ledger_account(&l, h, 1, NULL, 5);
	CHECK(a == &l.accounts[start]);
	CHECK(kv_ledger_account(&l, h, 0, NULL, 0) == a);
	CHECK(kv_ledger_account(&l, g, 0, NULL, 0) == b);
	kv_ledger_close(&l);
}

/* The master's roll: spent cleared once per period, idle accounts too. */
static void
test_roll_all(void)
{
	struct kv_ledger l;
	struct kv_account *a, *b;

	CHECK_INT(open_new(&l, 8), 0);
	a = key_acct(&l, 1, 1000);
	b = key_acct(&l, 2, 1000);
	atomic_store(&a->period_start, 1700000000 - 86400 * 3);
	atomic_store(&a->spent_nusd, 400);
	atomic_store(&b->period_start, kv_period_start(KV_PERIOD_DAILY, 1700000000));
	atomic_store(&b->spent_nusd, 300);
	CHECK_INT(kv_ledger_roll_all(&l, KV_PERIOD_DAILY, 1700000000), 1);
	CHECK_INT(atomic_load(&a->spent_nusd), 0);
	CHECK_INT(atomic_load(&b->spent_nusd), 300);
	CHECK_INT(kv_ledger_roll_all(&l, KV_PERIOD_DAILY, 1700000000), 0);
	CHECK_INT(kv_ledger_roll_all(&l, KV_PERIOD_NONE, 1700000000), 0);
	kv_ledger_close(&l);
}

/* An overflow sentinel charged twice saturates instead of wrapping. */
static void
test_saturation(void)
{
	struct kv_ledger l;
	struct kv_account *a;
	int64_t rem;
	int r;

	CHECK_INT(open_new(&l, 8), 0);
	a = key_acct(&l, 3, INT64_MAX);
	for (int i = 0; i < 6; i++) {
		r = kv_ledger_reserve(&l, &l.workers[2], a, 0, &rem);
		CHECK(r >= 0);
		kv_ledger_settle(&l, &l.workers[2], r, INT64_MAX / 4, NULL, NULL);
	}
	CHECK(kv_account_spent(a) == INT64_MAX);
	CHECK(atomic_load(&a->spent_nusd) == KV_SPENT_MAX);
	CHECK(kv_account_remaining(a) == 0);
	CHECK(kv_sat_add(INT64_MIN, -1) == INT64_MIN);
	CHECK(kv_sat_add(5, -7) == -2);
	kv_ledger_close(&l);
}

/* Grow 8 -> 64 slots: every account's numbers, the models and the
 * counters survive; a tombstone is dropped; lookups find every key. */
static void
test_grow(void)
{
	struct kv_ledger l;
	struct kv_account *a;
	char err[512];
	uint8_t h[32];
	int64_t rem;
	int i, r;

	CHECK_INT(open_new(&l, 8), 0);
	for (i = 0; i < 6; i++) {
		a = key_acct(&l, i, 1000000);
		CHECK(a != NULL);
		r = kv_ledger_reserve(&l, &l.workers[0], a, 10, &rem);
		kv_ledger_settle(&l, &l.workers[0], r, 100 * (i + 1), NULL, "gpt-x");
	}
	atomic_store(&l.hdr->counters.requests_total, 77);
	kv_key_hash("sk-dead", 7, h);
	for (i = 0; i < 8 && atomic_load(&l.accounts[i].tag) != 0; i++)
		;
	CHECK(i < 8);
	kv_ledger_mark_slot(&l, i);
	atomic_store(&l.accounts[i].tag, kv_account_tag(h));
	atomic_store(&l.accounts[i].state, KV_SLOT_DEAD);
	CHECK_INT(kv_ledger_tombstones(&l), 1);
	CHECK_INT(kv_ledger_grow(&l, path, 4, err, sizeof(err)), -1);
	CHECK_INT(kv_ledger_grow(&l, path, 64, err, sizeof(err)), 0);
	CHECK_INT(l.hdr->max_keys, 64);
	CHECK_INT(kv_ledger_tombstones(&l), 0);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 6);
	CHECK_INT(atomic_load(&l.hdr->counters.requests_total), 77);
	CHECK(kv_ledger_model(&l, "gpt-x") != NULL &&
	    atomic_load(&kv_ledger_model(&l, "gpt-x")->requests) == 6);
	for (i = 0; i < 6; i++) {
		char name[32];

		snprintf(name, sizeof(name), "sk-repair-%d", i);
		kv_key_hash(name, strlen(name), h);
		a = kv_ledger_account(&l, h, 0, NULL, 0);
		CHECK(a != NULL && atomic_load(&a->spent_nusd) == 100 * (i + 1));
	}
	kv_ledger_close(&l);
	/* The file at the path is the grown one. */
	CHECK_INT(kv_ledger_open(&l, path, 64, 0, err, sizeof(err)), 0);
	kv_ledger_close(&l);
}

/* Tokens per minute (shm/ratelimit.h) after a worker death: the repair's
 * release gives back exactly what the records hold, which is everything
 * but the input of a request already sent (kv_ratelimit_sent), as the
 * budget keeps the "sent" minimum; a settle after a send counts the real
 * tokens exactly once. tpm 1000: one token is 60 ms of the window. */
static void
test_tokens_death(void)
{
	const int64_t tok = KV_RL_WINDOW_NS / 1000;
	struct kv_worker_slot *w;
	struct kv_repair_report rep;
	struct kv_rl_view v;
	struct kv_ledger l;
	struct kv_account *a;
	int64_t now, rem;
	int r1, r2, r3;

	CHECK_INT(open_new(&l, 8), 0);
	w = &l.workers[DEAD_SLOT];
	a = key_acct(&l, 5, INT64_MAX / 4);
	atomic_store(&a->tpm, 1000);
	now = kv_rl_now_ns();
	r1 = kv_ledger_reserve(&l, w, a, 100, &rem);
	r2 = kv_ledger_reserve(&l, w, a, 100, &rem);
	CHECK(r1 >= 0 && r2 >= 0);
	CHECK_INT(kv_ratelimit_admit(w, r1, a, 300, now, 0, &v), 0);
	CHECK_INT(kv_ratelimit_admit(w, r2, a, 200, now, 0, &v), 0);
	CHECK_INT(atomic_load(&a->tpm_tat), now + 500 * tok);
	CHECK_INT(kv_ratelimit_sent(w, r1, 40), 40);
	CHECK_INT(atomic_load(&w->resv[r1].tokens), 260);
	CHECK_INT(kv_ratelimit_sent(w, r2, 0), 0);
	/* The worker dies with both in flight. */
	CHECK_INT(kv_ledger_repair(&l, UINT64_C(1) << DEAD_SLOT, &rep), 0);
	CHECK_INT(atomic_load(&a->tpm_tat), now + 40 * tok);
	CHECK_INT(atomic_load(&w->resv[r1].tokens), 0);
	CHECK_INT(atomic_load(&a->reserved_nusd), 0);
	/* A settle after a send: 300 held, 40 of them made final, 100 used. */
	atomic_store(&a->tpm_tat, 0);
	r3 = kv_ledger_reserve(&l, w, a, 100, &rem);
	CHECK_INT(kv_ratelimit_admit(w, r3, a, 300, now, 0, &v), 0);
	CHECK_INT(kv_ratelimit_sent(w, r3, 40), 40);
	CHECK_INT(kv_ratelimit_sent(w, r3, 900), 260);	/* never more than held */
	atomic_store(&w->resv[r3].tokens, 260);
	kv_ratelimit_settle(&l, w, r3, 100, 40);
	kv_ledger_settle(&l, w, r3, 0, NULL, NULL);
	CHECK_INT(atomic_load(&a->tpm_tat), now + 100 * tok);
	CHECK_INT(kv_ledger_repair(&l, UINT64_C(1) << DEAD_SLOT, &rep), 0);
	CHECK_INT(atomic_load(&a->tpm_tat), now + 100 * tok);
	kv_ledger_close(&l);
}

/* Kill points. A process killed -9 leaves behind only what it stored, so
 * its ledger state at a kill is one of the states between two of its
 * stores. kill_points() runs the real operation once under ptrace, one
 * instruction at a time, noting each instruction after which the watched
 * ledger memory changed; then, from the same start, it kills a fresh run
 * once inside each interval between changes (and after the last), repairs
 * and checks. That covers a kill at every instruction with one kill per
 * interval; an interval's width (in instructions) is how many kill points
 * leave that state. A sanitizer build makes the code much longer: these
 * run in the release build (scripts/test.sh runs both). */
#if defined(__SANITIZE_ADDRESS__)
#define KILL_POINTS_RUN	0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILL_POINTS_RUN	0
#endif
#endif
#ifndef KILL_POINTS_RUN
#define KILL_POINTS_RUN	1
#endif
#define KP_MAX_STEPS	20000	/* instructions an operation may take */
#define KP_MAX_CHANGES	64

/* A process stopped (ptrace) before its first instruction of FN, or -1. */
static pid_t
start_traced(struct kv_ledger *l, int slot, void (*fn)(struct kv_ledger *))
{
	pid_t pid;
	int st;

	if (!KILL_POINTS_RUN)
		return -1;
	pid = fork();
	if (pid == 0) {
		l->self = &l->workers[slot];
		atomic_store(&l->workers[slot].pid, getpid());
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) == -1)
			_exit(3);
		raise(SIGSTOP);
		fn(l);
		_exit(0);
	}
	if (pid == -1 || waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st)) {
		if (pid > 0) {
			kill(pid, SIGKILL);
			reap_one(pid);
		}
		return -1;
	}
	return pid;
}

/* One instruction. Returns 1 if the process is still inside, 0 if done. */
static int
step_one(pid_t pid)
{
	int st;

	if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) == -1 || waitpid(pid, &st, 0) != pid)
		return 0;
	return !(WIFEXITED(st) || WIFSIGNALED(st));
}

struct kp_op {
	const char *name;
	void	(*setup)(struct kv_ledger *);	/* the state before the operation */
	void	(*op)(struct kv_ledger *);	/* run by the traced "worker" */
	void	(*at_kill)(struct kv_ledger *);	/* another worker, at the stop (or NULL) */
	/* After kill and repair: 0 fine, -1 wrong. WIDTH kill points end here. */
	int	(*check)(struct kv_ledger *, long step, long width);
	const void *watch[2];			/* ledger memory the operation writes */
	size_t	 wlen[2];
};

/* Walk OP once, noting after which instructions the watched memory
 * changed. Returns the number of change points in at[] (at[0] = 0, the
 * start), with *total the operation's length; -1 when ptrace is not
 * available here. */
static int
kp_map(struct kv_ledger *l, const struct kp_op *k, long at[KP_MAX_CHANGES], long *total)
{
	static unsigned char snap[2][65536];
	pid_t pid;
	long n;
	int nc = 1, i, changed;

	k->setup(l);
	if ((pid = start_traced(l, DEAD_SLOT, k->op)) == -1)
		return -1;
	for (i = 0; i < 2; i++)
		memcpy(snap[i], k->watch[i], k->wlen[i]);
	at[0] = 0;
	for (n = 1; n <= KP_MAX_STEPS && step_one(pid); n++) {
		for (i = changed = 0; i < 2; i++)
			if (memcmp(snap[i], k->watch[i], k->wlen[i]) != 0) {
				memcpy(snap[i], k->watch[i], k->wlen[i]);
				changed = 1;
			}
		if (changed && nc < KP_MAX_CHANGES)
			at[nc++] = n;
	}
	if (n <= KP_MAX_STEPS) {
		reap_one(pid);
	} else {
		kill(pid, SIGKILL);
		reap_one(pid);
	}
	*total = n;
	return n > KP_MAX_STEPS ? 0 : nc;
}

/* The walk, then a kill in every interval. Returns the number of bad ones. */
static int
kill_points(struct kv_ledger *l, const struct kp_op *k)
{
	struct kv_repair_report rep;
	long at[KP_MAX_CHANGES], total, width, n;
	int nc, i, bad = 0;
	pid_t pid;

	if ((nc = kp_map(l, k, at, &total)) == -1) {
		printf("# %s: ptrace unavailable or a sanitizer build: kill points not run\n",
		    k->name);
		return 0;
	}
	CHECK(nc > 1);	/* it changed the ledger, within KP_MAX_STEPS */
	for (i = 0; i < nc; i++) {
		width = (i + 1 < nc ? at[i + 1] : total) - at[i];
		k->setup(l);
		if ((pid = start_traced(l, DEAD_SLOT, k->op)) == -1)
			return bad + 1;
		for (n = 0; n < at[i] && step_one(pid); n++)
			;
		if (k->at_kill != NULL)
			k->at_kill(l);
		kill(pid, SIGKILL);
		reap_one(pid);
		CHECK_INT(kv_ledger_repair(l, UINT64_C(1) << DEAD_SLOT, &rep), 0);
		if (k->check(l, at[i], width) == -1) {
			fprintf(stderr, "%s: killed after %ld of %ld instructions: wrong\n",
			    k->name, at[i], total);
			bad++;
		}
		atomic_store(&l->workers[DEAD_SLOT].pid, 0);
		atomic_store(&l->workers[DEAD_SLOT].in_ledger, 0);
	}
	printf("# %s: %ld instructions, %d states a kill can leave\n", k->name, total, nc);
	return bad;
}

/* ---- the period roll -------------------------------------------------- */

#define ROLL_DAY	1700006400	/* a UTC midnight */

static struct kv_account *kp_acct;
static int kp_resv;
static int64_t kp_want, kp_now;
static long kp_count[3];

static void
roll_setup(struct kv_ledger *l)
{
	(void)l;
	atomic_store(&kp_acct->period_start, ROLL_DAY - 86400 + 60);
	atomic_store(&kp_acct->spent_nusd, 1000);	/* yesterday's */
}

static void
roll_op(struct kv_ledger *l)
{
	kv_ledger_period_roll(l, kp_acct, KV_PERIOD_DAILY, ROLL_DAY + 3600);
}

/* Another worker settles 7 while the roller is stopped: today's spend if
 * the roll has cleared spent already, else the old period's. */
static void
roll_at_kill(struct kv_ledger *l)
{
	int64_t word = atomic_load(&kp_acct->spent_nusd);
	int64_t ps = atomic_load(&kp_acct->period_start);

	(void)l;
	kp_want = (word & KV_SPENT_ROLLED) || ps == ROLL_DAY ? 7 : 0;
	kp_count[0] += ps < 0 || (word & KV_SPENT_ROLLED);
	kv_account_charge(kp_acct, 7);
}

/* After the repair and the master's next tick: the old spend gone, the
 * charge kept exactly when it landed after the clear, a later one kept. */
static int
roll_check(struct kv_ledger *l, long step, long width)
{
	(void)step;
	(void)width;
	kv_ledger_roll_all(l, KV_PERIOD_DAILY, ROLL_DAY + 3601);
	kv_account_charge(kp_acct, 5);
	return atomic_load(&kp_acct->period_start) == ROLL_DAY &&
	    atomic_load(&kp_acct->spent_nusd) == kp_want + 5 ? 0 : -1;
}

static void
test_roll_kill_points(void)
{
	struct kv_ledger l;
	struct kp_op k = { "roll", roll_setup, roll_op, roll_at_kill, roll_check,
	    { NULL, NULL }, { 0, 0 } };

	CHECK_INT(open_new(&l, 8), 0);
	kp_acct = key_acct(&l, 0, 1000000);
	CHECK(kp_acct != NULL);
	if (kp_acct == NULL)
		return;
	k.watch[0] = kp_acct, k.wlen[0] = sizeof(*kp_acct);
	k.watch[1] = &l.workers[DEAD_SLOT], k.wlen[1] = sizeof(l.workers[0]);
	kp_count[0] = 0;
	CHECK_INT(kill_points(&l, &k), 0);
	printf("# roll: %ld of those states inside the roll\n", kp_count[0]);
	kv_ledger_close(&l);
}

/* ---- settlement -------------------------------------------------------- */

static void
settle_setup(struct kv_ledger *l)
{
	int64_t rem;

	atomic_store(&kp_acct->spent_nusd, 0);
	kp_resv = kv_ledger_reserve(l, &l->workers[DEAD_SLOT], kp_acct, 1000, &rem);
	kv_ledger_resv_sent(&l->workers[DEAD_SLOT], kp_resv, 100);
}

static void
settle_op(struct kv_ledger *l)
{
	struct kv_usage u = { .input = 10, .output = 20 };

	kv_ledger_settle(l, l->self, kp_resv, 600, &u, NULL);
}

/* 1000 reserved, 100 recorded as sent, real cost 600: 100 before the
 * settle recorded the cost, 1200 (twice) in the window after the add,
 * else exactly 600; reserved 0 always. */
static int
settle_check(struct kv_ledger *l, long step, long width)
{
	int64_t spent = kv_account_spent(kp_acct);

	(void)l;
	(void)step;
	if (atomic_load(&kp_acct->reserved_nusd) != 0)
		return -1;
	if (spent == 100 && kp_count[1] == 0 && kp_count[2] == 0)
		kp_count[0] += width;
	else if (spent == 600)
		kp_count[1] += width;
	else if (spent == 1200)
		kp_count[2] += width;
	else
		return -1;
	return 0;
}

static void
test_settle_kill_points(void)
{
	struct kv_ledger l;
	struct kp_op k = { "settle", settle_setup, settle_op, NULL, settle_check,
	    { NULL, NULL }, { 0, 0 } };

	CHECK_INT(open_new(&l, 8), 0);
	kp_acct = key_acct(&l, 1, 1000000);
	CHECK(kp_acct != NULL);
	if (kp_acct == NULL)
		return;
	k.watch[0] = kp_acct, k.wlen[0] = sizeof(*kp_acct);
	k.watch[1] = &l.workers[DEAD_SLOT], k.wlen[1] = sizeof(l.workers[0]);
	memset(kp_count, 0, sizeof(kp_count));
	CHECK_INT(kill_points(&l, &k), 0);
	printf("# settle: kill points charged 100 (before it recorded the cost, the sent "
	    "minimum): %ld, exactly 600: %ld, twice (1200): %ld\n", kp_count[0], kp_count[1],
	    kp_count[2]);
	CHECK(kp_count[2] <= 4);
	CHECK(!KILL_POINTS_RUN || kp_count[1] > 0);
	kv_ledger_close(&l);
}

/* ---- tokens per minute ------------------------------------------------- */

static void
tok_setup(struct kv_ledger *l, int admitted)
{
	struct kv_rl_view v;
	int64_t rem;

	atomic_store(&kp_acct->tpm_tat, 0);
	kp_resv = kv_ledger_reserve(l, &l->workers[DEAD_SLOT], kp_acct, 10, &rem);
	if (admitted)
		(void)kv_ratelimit_admit(&l->workers[DEAD_SLOT], kp_resv, kp_acct, 300,
		    kp_now, 0, &v);
}

static void tok_setup_admit(struct kv_ledger *l) { tok_setup(l, 0); }
static void tok_setup_settle(struct kv_ledger *l) { tok_setup(l, 1); }

static void
tok_admit_op(struct kv_ledger *l)
{
	struct kv_rl_view v;

	(void)kv_ratelimit_admit(l->self, kp_resv, kp_acct, 300, kp_now, 0, &v);
}

static void
tok_settle_op(struct kv_ledger *l)
{
	kv_ratelimit_settle(l, l->self, kp_resv, 100, 0);
	kv_ledger_settle(l, l->self, kp_resv, 0, NULL, NULL);
}

/* tpm 1000, 300 taken, 100 used: the bucket full again (given back, or
 * never taken), settled exactly (100), or the 300 still taken (the
 * window); nothing else. */
static int
tok_check(struct kv_ledger *l, long step, long width)
{
	const int64_t tok = KV_RL_WINDOW_NS / 1000;
	int64_t tat = atomic_load(&kp_acct->tpm_tat);

	(void)l;
	(void)step;
	if (tat <= kp_now || tat == kp_now + 100 * tok)
		return 0;
	if (tat == kp_now + 300 * tok) {
		kp_count[0] += width;
		return 0;
	}
	return -1;
}

static void
test_tokens_kill_points(void)
{
	struct kv_ledger l;
	struct kp_op k = { "tpm admission", tok_setup_admit, tok_admit_op, NULL, tok_check,
	    { NULL, NULL }, { 0, 0 } };
	long admit_w;

	CHECK_INT(open_new(&l, 8), 0);
	kp_acct = key_acct(&l, 6, INT64_MAX / 4);
	CHECK(kp_acct != NULL);
	if (kp_acct == NULL)
		return;
	atomic_store(&kp_acct->tpm, 1000);
	kp_now = kv_rl_now_ns();
	k.watch[0] = kp_acct, k.wlen[0] = sizeof(*kp_acct);
	k.watch[1] = &l.workers[DEAD_SLOT], k.wlen[1] = sizeof(l.workers[0]);
	kp_count[0] = 0;
	CHECK_INT(kill_points(&l, &k), 0);
	admit_w = kp_count[0];
	k.name = "tpm settle", k.setup = tok_setup_settle, k.op = tok_settle_op;
	kp_count[0] = 0;
	CHECK_INT(kill_points(&l, &k), 0);
	printf("# tokens: kill points leaving the 300 taken: admission %ld, settle %ld\n",
	    admit_w, kp_count[0]);
	CHECK(admit_w <= 8 && kp_count[0] <= 8);
	kv_ledger_close(&l);
}

/* With cluster leases, rl_tok_reserved is the sum of the tokens the live
 * records hold: a torn value (a worker killed between its record and the
 * counter) is recomputed by the repair, and a dead worker's go. */
static void
test_tokens_cluster(void)
{
	struct kv_repair_report rep;
	struct kv_rl_view v;
	struct kv_ledger l;
	struct kv_account *a;
	int64_t now, rem;
	int r1, r2, r3;

	CHECK_INT(open_new(&l, 8), 0);
	a = key_acct(&l, 7, INT64_MAX / 4);
	CHECK(a != NULL);
	if (a == NULL)
		return;
	atomic_store(&l.hdr->cluster, 1);
	atomic_store(&a->tpm, 1000);
	atomic_store(&a->rl_tok_cap, 1000000);
	atomic_store(&a->rl_req_cap, 1000000);
	atomic_store(&a->lease_cap_nusd, INT64_MAX / 4);	/* the budget's lease */
	now = kv_rl_now_ns();
	r1 = kv_ledger_reserve(&l, &l.workers[DEAD_SLOT], a, 10, &rem);
	r2 = kv_ledger_reserve(&l, &l.workers[DEAD_SLOT], a, 10, &rem);
	r3 = kv_ledger_reserve(&l, &l.workers[LIVE_SLOT], a, 10, &rem);
	CHECK(r1 >= 0 && r2 >= 0 && r3 >= 0);
	CHECK_INT(kv_ratelimit_admit(&l.workers[DEAD_SLOT], r1, a, 300, now, 1, &v), 0);
	CHECK_INT(kv_ratelimit_admit(&l.workers[DEAD_SLOT], r2, a, 200, now, 1, &v), 0);
	CHECK_INT(kv_ratelimit_admit(&l.workers[LIVE_SLOT], r3, a, 100, now, 1, &v), 0);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 600);
	atomic_fetch_add(&a->rl_tok_reserved, 77);	/* torn */
	CHECK_INT(kv_ledger_repair(&l, UINT64_C(1) << DEAD_SLOT, &rep), 0);
	CHECK_INT(atomic_load(&a->rl_tok_reserved), 100);
	CHECK_INT(rep.tokens_fixed, 1);
	CHECK_INT(kv_ledger_repair(&l, 0, &rep), 0);
	CHECK_INT(rep.tokens_fixed, 0);
	kv_ledger_close(&l);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kvrepair.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", tmpdir);
	test_half_claim();
	test_roll_all();
	test_saturation();
	test_grow();
	test_tokens_death();
	test_tokens_cluster();
	test_roll_kill_points();
	test_settle_kill_points();
	test_tokens_kill_points();
	test_kill_loop();
	unlink(path);
	rmdir(tmpdir);
	return unit_done();
}

/* Unit tests for the shared-memory ledger: creation and every refusal,
 * accounts, reservations under real multi-process contention, dead-worker
 * release, lossless reset, UTC periods and histograms. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/grow.h"
#include "shm/history.h"
#include "shm/incarnation.h"
#include "shm/ledger.h"
#include "shm/repair.h"
#include "tests/unit.h"

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

static void
hash_of(const char *s, uint8_t h[32])
{
	kv_key_hash(s, strlen(s), h);
}

/* Shared scratch memory for child processes to report into. */
static void *
shared_alloc(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Wait for every child; returns how many did not exit 0. */
static int
reap(pid_t *pids, int n)
{
	int i, st, bad = 0;

	for (i = 0; i < n; i++) {
		if (pids[i] <= 0) {
			bad++;
			continue;
		}
		if (waitpid(pids[i], &st, 0) == -1 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad++;
	}
	return bad;
}

static int
patch_file(uint64_t off, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd == -1)
		return -1;
	n = pwrite(fd, data, len, (off_t)off);
	if (close(fd) == -1 || n != (ssize_t)len)
		return -1;
	return 0;
}

/* The whole file, for "a refused ledger is left untouched" checks. */
static char *
slurp(size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	if (fd == -1)
		return NULL;
	if (fstat(fd, &st) == -1 || (buf = malloc(st.st_size + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	*len = (size_t)read(fd, buf, st.st_size);
	close(fd);
	return buf;
}

static void
expect_refusal(uint32_t max_keys, int flags, const char *want)
{
	struct kv_ledger l;
	char err[512] = "";
	size_t n1 = 0, n2 = 0;
	char *before = slurp(&n1), *after;

	CHECK_INT(kv_ledger_open(&l, path, max_keys, flags, err, sizeof(err)), -1);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "  error was: %s (want \"%s\")\n", err, want);
	CHECK(strstr(err, want) != NULL);
	after = slurp(&n2);
	CHECK(before != NULL && after != NULL && n1 == n2 &&
	    memcmp(before, after, n1) == 0);
	free(before);
	free(after);
}

static void
test_create_reopen(void)
{
	struct kv_ledger l, r;
	struct stat st;
	char err[512];

	CHECK_INT(open_new(&l, 100), 0);
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK_INT((uint64_t)st.st_size, l.hdr->total_size);
	CHECK_INT(l.size, l.hdr->total_size);
	CHECK(l.hdr->magic == KV_LEDGER_MAGIC);
	CHECK_INT(l.hdr->version, KV_LEDGER_VERSION);
	CHECK_INT(l.hdr->max_keys, 100);
	CHECK((char *)&l.accounts[100] == (char *)l.history);
	CHECK((char *)&l.history[100] == (char *)l.base + l.size);
	CHECK((uintptr_t)l.accounts % 64 == 0 && (uintptr_t)l.workers % 64 == 0);
	atomic_store(&l.hdr->counters.requests_total, 42);
	kv_ledger_close(&l);

	/* Reopen: with CREATE (exists), with max_keys 0 (any), read-only. */
	CHECK_INT(kv_ledger_open(&l, path, 100, KV_LEDGER_CREATE, err, sizeof(err)), 0);
	CHECK_INT(atomic_load(&l.hdr->counters.requests_total), 42);
	CHECK_INT(kv_ledger_open(&r, path, 0, KV_LEDGER_READONLY, err, sizeof(err)), 0);
	CHECK_INT(r.hdr->max_keys, 100);
	atomic_fetch_add(&l.hdr->counters.requests_total, 1);
	CHECK_INT(atomic_load(&r.hdr->counters.requests_total), 43);
	CHECK_INT(kv_ledger_sync(&l), 0);
	kv_ledger_close(&r);
	kv_ledger_close(&l);

	CHECK_INT(kv_ledger_open(&l, path, 0, KV_LEDGER_READONLY | KV_LEDGER_CREATE,
	    err, sizeof(err)), -1);
	/* CREATE without a size only attaches: a missing file stays missing. */
	unlink(path);
	CHECK_INT(kv_ledger_open(&l, path, 0, KV_LEDGER_CREATE, err, sizeof(err)), -1);
	CHECK(strstr(err, "No such file") != NULL);
}

static void
test_refusals(void)
{
	struct kv_ledger l;
	char err[512];
	uint32_t v2 = KV_LEDGER_VERSION + 1, big = 999;
	char verr[64];
	uint64_t zero = 0, total;

	unlink(path);
	CHECK_INT(kv_ledger_open(&l, path, 10, 0, err, sizeof(err)), -1);
	CHECK(strstr(err, "No such file") != NULL);
	CHECK_INT(errno, ENOENT);

	CHECK_INT(open_new(&l, 10), 0);
	total = l.hdr->total_size;
	kv_ledger_close(&l);
	expect_refusal(20, 0, "has 10 key slots, the config asks for 20");

	CHECK_INT(patch_file(offsetof(struct kv_ledger_header, version), &v2, 4), 0);
	snprintf(verr, sizeof(verr), "layout version %u, this build reads %u",
	    KV_LEDGER_VERSION + 1, KV_LEDGER_VERSION);
	expect_refusal(0, 0, verr);
	expect_refusal(10, KV_LEDGER_CREATE, verr);
	v2 = KV_LEDGER_VERSION;
	CHECK_INT(patch_file(offsetof(struct kv_ledger_header, version), &v2, 4), 0);

	CHECK_INT(patch_file(offsetof(struct kv_ledger_header, account_size), &big, 4), 0);
	expect_refusal(0, 0, "account size is 999");
	big = sizeof(struct kv_account);
	CHECK_INT(patch_file(offsetof(struct kv_ledger_header, account_size), &big, 4), 0);

	CHECK_INT(truncate(path, 4096), 0);
	snprintf(err, sizeof(err), "truncated: 4096 bytes, header says %llu",
	    (unsigned long long)total);
	expect_refusal(0, 0, err);
	CHECK_INT(truncate(path, (off_t)total + 64), 0);
	expect_refusal(0, 0, "trailing data");
	CHECK_INT(truncate(path, 100), 0);
	expect_refusal(0, KV_LEDGER_CREATE, "truncated: 100 bytes");

	/* A creation interrupted before the magic went in. */
	CHECK_INT(open_new(&l, 10), 0);
	kv_ledger_close(&l);
	CHECK_INT(patch_file(0, &zero, 8), 0);
	expect_refusal(10, KV_LEDGER_CREATE, "bad magic");
	CHECK_INT(kv_ledger_open(&l, path, 10, 0, err, sizeof(err)), -1);
	CHECK_INT(errno, EINVAL);
}

/* Permission denied, as an unprivileged user when running as root. */
static void
test_unreadable(void)
{
	struct kv_ledger l;
	char err[512] = "";
	pid_t pid;
	int st = 0;

	CHECK_INT(open_new(&l, 10), 0);
	kv_ledger_close(&l);
	pid = fork();
	if (pid == 0) {
		/* root reads anything: become nobody instead of chmod'ing. */
		if (geteuid() == 0) {
			if (setgid(65534) == -1 || setuid(65534) == -1)
				_exit(3);
		} else if (chmod(path, 0) == -1) {
			_exit(3);
		}
		if (kv_ledger_open(&l, path, 0, KV_LEDGER_READONLY, err,
		    sizeof(err)) != -1)
			_exit(1);
		if (strstr(err, "permission denied") == NULL ||
		    strstr(err, "Permission denied") == NULL) {
			fprintf(stderr, "  error was: %s\n", err);
			_exit(2);
		}
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	CHECK_INT(WEXITSTATUS(st), 0);
	CHECK_INT(chmod(path, 0600), 0);
}

static void
test_accounts(void)
{
	struct kv_ledger l;
	struct kv_account *a, *b, *c;
	uint8_t h1[32], h2[32], h[32];
	char id[13], name[32];
	int i;

	hash_of("abc", h1);
	kv_key_id(h1, id);
	CHECK_STR(id, "ba7816bf8f01");
	CHECK(h1[31] == 0xad);
	/* every byte value in every place, against printf */
	for (i = 0; i < 256; i++) {
		char want[13];

		memset(h, 0, sizeof(h));
		h[i % 6] = (uint8_t)i;
		h[5 - i % 6] = (uint8_t)(255 - i);
		kv_key_id(h, id);
		snprintf(want, sizeof(want), "%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3],
		    h[4], h[5]);
		CHECK_STR(id, want);
	}
	hash_of("sk-other", h2);

	CHECK_INT(open_new(&l, 4), 0);
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == NULL);
	a = kv_ledger_account(&l, h1, 1, "alice-with-a-label-much-longer-than-"
	    "the-forty-eight-bytes", 5000);
	CHECK(a != NULL);
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == a);
	CHECK(kv_ledger_account(&l, h1, 1, "other", 1) == a);
	CHECK_INT(strlen(a->label), KV_LABEL_MAX - 1);
	CHECK(a->flags & KV_ACCOUNT_NAMED);
	CHECK_INT(atomic_load(&a->budget_nusd), 5000);
	b = kv_ledger_account(&l, h2, 1, "", 7);
	CHECK(b != NULL && b != a && b->flags == 0 && b->label[0] == '\0');
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 2);
	CHECK_INT(kv_ledger_account_index(&l, a) + 1 + kv_ledger_account_index(&l, b) + 1
	    <= 2 * 4, 1);

	/* Fill the table: 4 slots, then nothing more fits but all are found. */
	c = NULL;
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		hash_of(name, h);
		c = kv_ledger_account(&l, h, 1, NULL, 1);
		CHECK(c != NULL);
	}
	hash_of("one-too-many", h);
	CHECK(kv_ledger_account(&l, h, 1, NULL, 1) == NULL);
	CHECK(kv_ledger_account(&l, h, 0, NULL, 1) == NULL);
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == a);
	CHECK(kv_ledger_account(&l, h2, 0, NULL, 0) == b);
	hash_of("k1", h);
	CHECK(kv_ledger_account(&l, h, 0, NULL, 0) == c);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 4);
	/* the slot found last is found again only while it is this key's:
	 * retired, the key is not found, and made anew where the probe puts it */
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == a);
	kv_account_retire(&l, a);
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == NULL);
	CHECK(kv_ledger_account(&l, h2, 0, NULL, 0) == b);
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == NULL);
	a = kv_ledger_account(&l, h1, 1, NULL, 9);
	CHECK(a != NULL && memcmp(a->hash, h1, 32) == 0 &&
	    atomic_load(&a->state) == KV_SLOT_READY);
	CHECK(a != NULL && atomic_load(&a->budget_nusd) == 9);
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == a);
	CHECK(kv_ledger_account(&l, h2, 0, NULL, 0) == b);
	l.account_memo = 4242;	/* out of the table: ignored */
	CHECK(kv_ledger_account(&l, h2, 0, NULL, 0) == b);
	kv_ledger_close(&l);
}

static void
test_reserve_settle(void)
{
	struct kv_ledger l;
	struct kv_worker_slot *w;
	struct kv_account *a;
	struct kv_model_slot *m;
	struct kv_usage u = { .input = 10, .output = 20, .cached_input = 4 };
	uint8_t h[32];
	int64_t rem;
	int r1, r2, i;
	char longname[200];

	CHECK_INT(open_new(&l, 8), 0);
	w = &l.workers[3];
	hash_of("sk-budget", h);
	a = kv_ledger_account(&l, h, 1, NULL, 100);
	r1 = kv_ledger_reserve(&l, w, a, 60, &rem);
	CHECK(r1 >= 0);
	CHECK_INT(rem, 40);
	CHECK_INT(atomic_load(&w->resv[r1].account), kv_ledger_account_index(&l, a) + 1);
	CHECK_INT(atomic_load(&w->resv[r1].amount_nusd), 60);
	r2 = kv_ledger_reserve(&l, w, a, 50, &rem);
	CHECK_INT(r2, -1);
	CHECK_INT(rem, 40);
	CHECK_INT(atomic_load(&a->refusals), 1);
	CHECK_INT(atomic_load(&a->reserved_nusd), 60);
	r2 = kv_ledger_reserve(&l, w, a, 40, &rem);	/* exactly the budget */
	CHECK(r2 >= 0 && r2 != r1);
	CHECK_INT(rem, 0);
	kv_ledger_settle(&l, w, r1, 30, &u, "gpt-4o-mini");
	CHECK_INT(atomic_load(&a->spent_nusd), 30);
	CHECK_INT(atomic_load(&a->reserved_nusd), 40);
	CHECK_INT(atomic_load(&w->resv[r1].account), 0);
	CHECK_INT(kv_account_remaining(a), 30);
	CHECK_INT(atomic_load(&a->requests), 1);
	CHECK_INT(atomic_load(&a->input_tokens), 10);
	CHECK_INT(atomic_load(&a->output_tokens), 20);
	CHECK_INT(atomic_load(&a->cached_input_tokens), 4);
	CHECK(atomic_load(&a->last_used) > 0);
	kv_ledger_settle(&l, w, r2, 0, NULL, NULL);	/* a plain release */
	CHECK_INT(atomic_load(&a->reserved_nusd), 0);
	CHECK_INT(atomic_load(&a->requests), 1);
	kv_ledger_settle(&l, w, r2, 99, &u, NULL);	/* already settled: ignored */
	CHECK_INT(atomic_load(&a->spent_nusd), 30);

	m = kv_ledger_model(&l, "gpt-4o-mini");
	CHECK(m != NULL && kv_ledger_model(&l, "gpt-4o-mini") == m);
	CHECK_STR(m->name, "gpt-4o-mini");
	CHECK_INT(atomic_load(&m->requests), 1);
	CHECK_INT(atomic_load(&m->cost_nusd), 30);
	CHECK_INT(atomic_load(&m->input_tokens), 10);
	CHECK_INT(atomic_load(&m->cached_input_tokens), 4);
	CHECK(kv_ledger_model(&l, "") == NULL && kv_ledger_model(&l, NULL) == NULL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	m = kv_ledger_model(&l, longname);
	CHECK(m != NULL && strlen(m->name) == KV_MODEL_NAME - 1);
	CHECK(kv_ledger_model(&l, longname) == m);
	CHECK_INT(atomic_load(&l.hdr->models_used), 2);
	/* the row found last is remembered: names in turn, a longer name
	 * cut to the same row, a name one byte apart, each its own row */
	longname[KV_MODEL_NAME + 3] = '\0';
	CHECK(kv_ledger_model(&l, longname) == m);
	longname[KV_MODEL_NAME - 2] = 'y';
	CHECK(kv_ledger_model(&l, longname) != m);
	longname[KV_MODEL_NAME - 2] = 'x';
	CHECK(kv_ledger_model(&l, "gpt-4o-mini") != m);
	CHECK(kv_ledger_model(&l, "gpt-4o-mini") == kv_ledger_model(&l, "gpt-4o-mini"));
	CHECK_STR(kv_ledger_model(&l, "gpt-4o-mini")->name, "gpt-4o-mini");
	CHECK(kv_ledger_model(&l, "gpt-4o") != kv_ledger_model(&l, "gpt-4o-mini"));
	CHECK_STR(kv_ledger_model(&l, "gpt-4o")->name, "gpt-4o");
	CHECK(kv_ledger_model(&l, longname) == m);
	CHECK_INT(atomic_load(&l.hdr->models_used), 4);

	/* A worker slot with every reservation in use refuses with -2. */
	atomic_store(&a->budget_nusd, INT64_MAX);
	for (i = 0; i < KV_RESV_PER_WORKER; i++)
		if (kv_ledger_reserve(&l, w, a, 1, &rem) < 0)
			break;
	CHECK_INT(i, KV_RESV_PER_WORKER);
	CHECK_INT(kv_ledger_reserve(&l, w, a, 1, &rem), -2);
	CHECK_INT(kv_ledger_release_worker(&l, w), KV_RESV_PER_WORKER);
	CHECK_INT(atomic_load(&a->reserved_nusd), 0);

	/* Overflowing sums refuse rather than wrap. */
	atomic_store(&a->budget_nusd, 100);
	CHECK_INT(kv_ledger_reserve(&l, w, a, INT64_MAX, &rem), -1);
	kv_ledger_close(&l);
}

/* NPROC processes hammer one account; only budget/AMOUNT reservations may
 * ever be admitted and the sums must come out exact. */
#define NPROC		8
#define CYCLES		20000
#define AMOUNT		1000
#define ADMITTED	50000

static int
hammer(struct kv_ledger *l, int slot, struct kv_account *a, _Atomic uint64_t *admitted)
{
	struct kv_worker_slot *w = &l->workers[slot];
	struct kv_usage u = { .input = 1, .output = 2 };
	int64_t rem;
	int i, r;

	atomic_store(&w->pid, getpid());
	for (i = 0; i < CYCLES; i++) {
		r = kv_ledger_reserve(l, w, a, AMOUNT, &rem);
		if (r == -2)
			return 1;
		if (r < 0)
			continue;
		if (atomic_load(&a->spent_nusd) > atomic_load(&a->budget_nusd))
			return 2;
		atomic_fetch_add(admitted, 1);
		kv_ledger_settle(l, w, r, AMOUNT, &u, "m");
	}
	return 0;
}

static void
test_concurrent_budget(void)
{
	struct kv_ledger l;
	struct kv_account *a;
	_Atomic uint64_t *admitted = shared_alloc(NPROC * sizeof(*admitted));
	pid_t pids[NPROC];
	uint64_t total = 0;
	uint8_t h[32];
	int i;

	CHECK(admitted != NULL);
	if (admitted == NULL || open_new(&l, 16) == -1)
		return;
	hash_of("sk-contended", h);
	a = kv_ledger_account(&l, h, 1, "contended", (int64_t)ADMITTED * AMOUNT);
	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(hammer(&l, i, a, &admitted[i]));
	}
	CHECK_INT(reap(pids, NPROC), 0);
	for (i = 0; i < NPROC; i++)
		total += atomic_load(&admitted[i]);
	CHECK_INT(total, ADMITTED);
	CHECK_INT(atomic_load(&a->spent_nusd), (int64_t)ADMITTED * AMOUNT);
	CHECK_INT(atomic_load(&a->reserved_nusd), 0);
	CHECK_INT(atomic_load(&a->requests), ADMITTED);
	CHECK_INT(atomic_load(&a->output_tokens), 2 * ADMITTED);
	CHECK_INT(atomic_load(&a->refusals), NPROC * CYCLES - ADMITTED);
	CHECK_INT(atomic_load(&kv_ledger_model(&l, "m")->requests), ADMITTED);
	kv_ledger_close(&l);
	munmap(admitted, NPROC * sizeof(*admitted));
}

/* Many processes claim the same fresh hashes at the same instant: each
 * hash must end up in exactly one slot. */
#define CLAIM_HASHES 64

static void
test_concurrent_claim(void)
{
	struct kv_ledger l;
	_Atomic uint32_t *go = shared_alloc(4096);
	uint32_t *idx = shared_alloc(NPROC * CLAIM_HASHES * sizeof(uint32_t));
	pid_t pids[NPROC];
	uint8_t h[32];
	char name[32];
	int i, k, same = 1;

	CHECK(go != NULL && idx != NULL);
	if (go == NULL || idx == NULL || open_new(&l, 4096) == -1)
		return;
	for (i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] != 0)
			continue;
		atomic_fetch_add(go, 1);
		for (k = 0; k < 1000000 && atomic_load(go) < NPROC; k++)
			sched_yield();
		for (k = 0; k < CLAIM_HASHES; k++) {
			struct kv_account *a;

			snprintf(name, sizeof(name), "fresh-%d", k);
			hash_of(name, h);
			/* EAGAIN: another process is filling this key's slot
			 * (preempted mid-claim); a worker answers 503 "retry". */
			for (int t = 0; t < 100000; t++) {
				a = kv_ledger_account(&l, h, 1, NULL, 1);
				if (a != NULL || errno != EAGAIN)
					break;
				sched_yield();
			}
			idx[i * CLAIM_HASHES + k] = a ? kv_ledger_account_index(&l, a) : ~0u;
		}
		_exit(0);
	}
	CHECK_INT(reap(pids, NPROC), 0);
	for (k = 0; k < CLAIM_HASHES; k++)
		for (i = 1; i < NPROC; i++)
			if (idx[i * CLAIM_HASHES + k] != idx[k] || idx[k] == ~0u)
				same = 0;
	CHECK(same);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), CLAIM_HASHES);
	kv_ledger_close(&l);
	munmap(go, 4096);
	munmap(idx, NPROC * CLAIM_HASHES * sizeof(uint32_t));
}

/* A worker dies holding reservations; the master's release restores them. */
static void
test_release_dead_worker(void)
{
	struct kv_ledger l;
	struct kv_account *a, *b;
	struct kv_worker_slot *w;
	uint8_t h[32];
	int64_t rem;
	pid_t pid;
	int st = 0;

	CHECK_INT(open_new(&l, 16), 0);
	w = &l.workers[5];
	hash_of("sk-a", h);
	a = kv_ledger_account(&l, h, 1, NULL, 1000000);
	hash_of("sk-b", h);
	b = kv_ledger_account(&l, h, 1, NULL, 1000000);
	pid = fork();
	if (pid == 0) {
		atomic_store(&w->pid, getpid());
		atomic_store(&w->connections, 3);
		atomic_store(&w->active_streams, 3);
		if (kv_ledger_reserve(&l, w, a, 100, &rem) < 0 ||
		    kv_ledger_reserve(&l, w, a, 200, &rem) < 0 ||
		    kv_ledger_reserve(&l, w, b, 300, &rem) < 0)
			_exit(1);
		raise(SIGKILL);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st));
	CHECK_INT(atomic_load(&a->reserved_nusd), 300);
	CHECK_INT(atomic_load(&b->reserved_nusd), 300);
	CHECK_INT(kv_ledger_sum_active_streams(&l), 3);
	CHECK_INT(kv_ledger_release_worker(&l, w), 3);
	CHECK_INT(atomic_load(&a->reserved_nusd), 0);
	CHECK_INT(atomic_load(&b->reserved_nusd), 0);
	CHECK_INT(atomic_load(&w->connections), 0);
	CHECK_INT(kv_ledger_sum_active_streams(&l), 0);
	CHECK_INT(kv_ledger_release_worker(&l, w), 0);
	kv_ledger_close(&l);
}

/* Reset with atomic_exchange while 4 processes keep settling: every charge
 * lands either in the value the reset took away or in what is left. */
#define ADDERS 4

static void
test_reset_lossless(void)
{
	struct kv_ledger l;
	struct kv_account *a;
	_Atomic uint64_t *tally = shared_alloc(4096);
	_Atomic int *stop;
	pid_t pids[ADDERS];
	uint64_t sum = 0;
	int64_t taken;
	uint8_t h[32];
	int i;

	CHECK(tally != NULL);
	if (tally == NULL || open_new(&l, 16) == -1)
		return;
	stop = (_Atomic int *)&tally[ADDERS];
	hash_of("sk-reset", h);
	a = kv_ledger_account(&l, h, 1, NULL, INT64_MAX / 2);
	for (i = 0; i < ADDERS; i++) {
		pids[i] = fork();
		if (pids[i] != 0)
			continue;
		for (int n = 0; n < 5000000 && !atomic_load(stop); n++) {
			int64_t rem;
			int r = kv_ledger_reserve(&l, &l.workers[i], a, 1, &rem);

			if (r < 0)
				_exit(1);
			kv_ledger_settle(&l, &l.workers[i], r, 1, NULL, NULL);
			atomic_fetch_add(&tally[i], 1);
		}
		_exit(0);
	}
	for (i = 0; i < 1000 && atomic_load(&a->spent_nusd) < 20000; i++)
		usleep(1000);
	taken = atomic_exchange(&a->spent_nusd, 0);
	/* Let charges land after the reset too, even on a loaded machine. */
	for (i = 0; i < 5000 && atomic_load(&a->spent_nusd) < 20000; i++)
		usleep(1000);
	atomic_store(stop, 1);
	CHECK_INT(reap(pids, ADDERS), 0);
	for (i = 0; i < ADDERS; i++)
		sum += atomic_load(&tally[i]);
	CHECK(taken > 0 && atomic_load(&a->spent_nusd) > 0);
	CHECK_INT((uint64_t)taken + (uint64_t)atomic_load(&a->spent_nusd), sum);
	kv_ledger_close(&l);
	munmap(tally, 4096);
}

static int64_t
utc(int y, int mon, int d, int hh, int mm, int ss)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d,
	    .tm_hour = hh, .tm_min = mm, .tm_sec = ss };

	return (int64_t)timegm(&tm);
}

/* Every day from 1960 to 2110 against gmtime's calendar. */
static void
test_period_sweep(void)
{
	int64_t t, exp_d, exp_w, exp_m;
	struct tm tm;
	time_t tt;
	int bad = 0;

	for (t = utc(1960, 1, 1, 0, 0, 0); t < utc(2110, 1, 1, 0, 0, 0); t += 86400 + 3599) {
		tt = (time_t)t;
		gmtime_r(&tt, &tm);
		exp_d = utc(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, 0, 0, 0);
		exp_m = utc(tm.tm_year + 1900, tm.tm_mon + 1, 1, 0, 0, 0);
		exp_w = exp_d - (int64_t)((tm.tm_wday + 6) % 7) * 86400;
		if (kv_period_start(KV_PERIOD_DAILY, t) != exp_d ||
		    kv_period_start(KV_PERIOD_WEEKLY, t) != exp_w ||
		    kv_period_start(KV_PERIOD_MONTHLY, t) != exp_m)
			bad++;
	}
	CHECK_INT(bad, 0);
}

static void
test_periods(void)
{
	struct kv_ledger l;
	struct kv_account *a;
	uint8_t h[32];

	CHECK_INT(kv_period_start(KV_PERIOD_NONE, 1700000000), 0);
	CHECK_INT(kv_period_start(KV_PERIOD_DAILY, utc(2024, 2, 29, 13, 5, 7)),
	    utc(2024, 2, 29, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_DAILY, utc(2024, 3, 1, 0, 0, 0)),
	    utc(2024, 3, 1, 0, 0, 0));
	/* 2024-01-01 was a Monday; 2023-12-31 a Sunday. */
	CHECK_INT(kv_period_start(KV_PERIOD_WEEKLY, utc(2024, 1, 7, 23, 59, 59)),
	    utc(2024, 1, 1, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_WEEKLY, utc(2024, 1, 1, 0, 0, 0)),
	    utc(2024, 1, 1, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_WEEKLY, utc(2023, 12, 31, 12, 0, 0)),
	    utc(2023, 12, 25, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_WEEKLY, 0), utc(1969, 12, 29, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_MONTHLY, utc(2024, 2, 29, 23, 59, 59)),
	    utc(2024, 2, 1, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_MONTHLY, utc(2023, 12, 31, 23, 59, 59)),
	    utc(2023, 12, 1, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_MONTHLY, utc(2024, 1, 1, 0, 0, 0)),
	    utc(2024, 1, 1, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_MONTHLY, utc(2100, 3, 1, 0, 0, 0) - 1),
	    utc(2100, 2, 1, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_MONTHLY, utc(2000, 2, 29, 12, 0, 0)),
	    utc(2000, 2, 1, 0, 0, 0));
	CHECK_INT(kv_period_start(KV_PERIOD_DAILY, -1), -86400);
	test_period_sweep();

	CHECK_INT(open_new(&l, 4), 0);
	hash_of("sk-period", h);
	a = kv_ledger_account(&l, h, 1, NULL, 1000);
	atomic_store(&a->period_start, utc(2024, 2, 28, 10, 0, 0));
	atomic_store(&a->spent_nusd, 500);
	kv_ledger_period_roll(&l, a, KV_PERIOD_DAILY, utc(2024, 2, 28, 23, 59, 59));
	CHECK_INT(atomic_load(&a->spent_nusd), 500);
	kv_ledger_period_roll(&l, a, KV_PERIOD_NONE, utc(2030, 1, 1, 0, 0, 0));
	CHECK_INT(atomic_load(&a->spent_nusd), 500);
	kv_ledger_period_roll(&l, a, KV_PERIOD_DAILY, utc(2024, 2, 29, 0, 0, 1));
	CHECK_INT(atomic_load(&a->spent_nusd), 0);
	CHECK_INT(atomic_load(&a->period_start), utc(2024, 2, 29, 0, 0, 0));
	atomic_store(&a->spent_nusd, 7);
	kv_ledger_period_roll(&l, a, KV_PERIOD_DAILY, utc(2024, 2, 29, 18, 0, 0));
	CHECK_INT(atomic_load(&a->spent_nusd), 7);
	kv_ledger_period_roll(&l, a, KV_PERIOD_MONTHLY, utc(2024, 3, 1, 0, 0, 0));
	CHECK_INT(atomic_load(&a->spent_nusd), 0);
	kv_ledger_close(&l);
}

static void
test_histogram(void)
{
	struct kv_histogram hg;
	int i;

	memset(&hg, 0, sizeof(hg));
	kv_histogram_observe(&hg, 0);
	kv_histogram_observe(&hg, 5000);	/* le 5 ms */
	kv_histogram_observe(&hg, 5001);
	kv_histogram_observe(&hg, 30000000);	/* le 30 s */
	kv_histogram_observe(&hg, 30000001);	/* +Inf */
	CHECK_INT(atomic_load(&hg.bucket[0]), 2);
	CHECK_INT(atomic_load(&hg.bucket[1]), 1);
	CHECK_INT(atomic_load(&hg.bucket[KV_HIST_BUCKETS - 1]), 1);
	CHECK_INT(atomic_load(&hg.bucket[KV_HIST_BUCKETS]), 1);
	for (i = 2; i < KV_HIST_BUCKETS - 1; i++)
		CHECK_INT(atomic_load(&hg.bucket[i]), 0);
	CHECK_INT(atomic_load(&hg.count), 5);
	CHECK_INT(atomic_load(&hg.sum_us), 60010002);
}

static void
test_worker_sums(void)
{
	struct kv_ledger l;

	CHECK_INT(open_new(&l, 4), 0);
	atomic_store(&l.workers[0].pid, 100);
	atomic_store(&l.workers[0].connections, 5);
	atomic_store(&l.workers[0].active_streams, 2);
	atomic_store(&l.workers[7].pid, 101);
	atomic_store(&l.workers[7].connections, 1);
	/* A freed slot's stale numbers are not counted. */
	atomic_store(&l.workers[9].connections, 1000);
	CHECK_INT(kv_ledger_sum_connections(&l), 6);
	CHECK_INT(kv_ledger_sum_active_streams(&l), 2);
	kv_ledger_close(&l);
}

/* Scans visit exactly the slots ever claimed (and nothing past max_keys),
 * and a worker's reservation scans end past its highest record. */
static void
test_claimed_slots(void)
{
	struct kv_ledger l;
	struct kv_worker_slot *w;
	struct kv_account *a[3];
	uint8_t h[32], seen[200] = { 0 };
	char key[32];
	uint32_t i, visits = 0;
	int64_t rem;
	int r[3], k;

	CHECK_INT(open_new(&l, 200), 0);
	CHECK_INT(kv_ledger_next_slot(&l, 0), 200);
	for (k = 0; k < 3; k++) {
		snprintf(key, sizeof(key), "sk-scan-%d", k);
		hash_of(key, h);
		a[k] = kv_ledger_account(&l, h, 1, NULL, 1000);
		CHECK(a[k] != NULL);
	}
	KV_FOR_EACH_SLOT(&l, i) {
		seen[i] = 1;
		visits++;
	}
	CHECK_INT(visits, 3);
	for (k = 0; k < 3; k++)
		CHECK_INT(seen[kv_ledger_account_index(&l, a[k])], 1);
	kv_ledger_mark_slot(&l, 199);		/* the last word's last bit */
	CHECK_INT(kv_ledger_next_slot(&l, 199), 199);
	CHECK_INT(kv_ledger_next_slot(&l, 200), 200);

	w = &l.workers[1];
	CHECK_INT(kv_ledger_resv_end(w), 0);
	for (k = 0; k < 3; k++)
		CHECK((r[k] = kv_ledger_reserve(&l, w, a[0], 10, &rem)) >= 0);
	CHECK_INT(kv_ledger_resv_end(w), (uint32_t)r[2] + 1);
	kv_ledger_settle(&l, w, r[2], 10, NULL, NULL);
	CHECK_INT(kv_ledger_resv_end(w), (uint32_t)r[2] + 1);	/* a high-water mark */
	CHECK_INT(kv_ledger_release_worker(&l, w), 2);
	CHECK_INT(kv_ledger_resv_end(w), 0);
	CHECK_INT(atomic_load(&a[0]->reserved_nusd), 0);
	kv_ledger_close(&l);
}

/* A process preempted between claiming a model row and writing its name
 * must not make the others' totals vanish: they count into the row. */
static void
test_model_mid_claim(void)
{
	struct kv_ledger l;
	struct kv_model_slot *m;

	CHECK_INT(open_new(&l, 16), 0);
	m = kv_ledger_model(&l, "gpt-mid-claim");
	CHECK(m != NULL);
	if (m == NULL)
		return;
	atomic_store(&m->state, KV_SLOT_CLAIMING);	/* as the claimer left it */
	CHECK(kv_ledger_model(&l, "gpt-mid-claim") == m);
	CHECK(kv_ledger_model(&l, "gpt-other") != m);
	atomic_store(&m->state, KV_SLOT_READY);
	CHECK(kv_ledger_model(&l, "gpt-mid-claim") == m);
	CHECK_INT(atomic_load(&l.hdr->models_used), 2);
	kv_ledger_close(&l);
}

/* The history rings live beside the accounts (history[i] for accounts[i])
 * and the sampler writes one only when its key's spend moved: an idle
 * key's ring page stays untouched. */
static void
test_history_apart(void)
{
	static const struct kv_hist_slot zero;
	struct kv_ledger l;
	struct kv_account *a, *b;
	uint8_t h[32];
	int64_t now = 1700000000, mins[KV_HIST_MINUTES], hours[KV_HIST_HOURS];

	CHECK_INT(open_new(&l, 8), 0);
	hash_of("sk-hist-busy", h);
	a = kv_ledger_account(&l, h, 1, NULL, 1000);
	hash_of("sk-hist-idle", h);
	b = kv_ledger_account(&l, h, 1, NULL, 1000);
	CHECK(a != NULL && b != NULL);
	if (a == NULL || b == NULL)
		return;
	CHECK((char *)l.history == (char *)&l.accounts[l.hdr->max_keys]);
	kv_account_charge(a, 250);
	kv_history_sample_all(&l, now);
	kv_history_sample_all(&l, now + 120);
	CHECK(memcmp(&l.history[b - l.accounts], &zero, sizeof(zero)) == 0);
	CHECK(memcmp(&l.history[a - l.accounts], &zero, sizeof(zero)) != 0);
	kv_history_read(&l, a, now + 120, mins, hours);
	CHECK_INT(mins[KV_HIST_MINUTES - 3], 250);	/* two minutes back */
	CHECK_INT(mins[KV_HIST_MINUTES - 1], 0);
	CHECK_INT(hours[KV_HIST_HOURS - 1] + hours[KV_HIST_HOURS - 2], 250);
	kv_ledger_close(&l);
}

/* The header's requests/errors rings (layout 18): each sample adds what
 * the counters rose by since the last one; errors are the relayed 5xx,
 * the upstream failures and the cuts, and nothing else. */
static void
test_history_totals(void)
{
	struct kv_ledger l;
	struct kv_counters *c;
	int64_t now = 1700000040, rm[KV_HIST_MINUTES], em[KV_HIST_MINUTES];
	int64_t rh[KV_HIST_HOURS], eh[KV_HIST_HOURS];

	CHECK_INT(open_new(&l, 4), 0);
	c = &l.hdr->counters;
	atomic_store(&c->requests_total, 10);
	atomic_store(&c->responses_5xx_relayed_total, 1);
	atomic_store(&c->upstream_errors_total, 2);
	atomic_store(&c->responses_cut_total, 3);
	atomic_store(&c->client_aborts_total, 50);	/* not an error */
	atomic_store(&c->responses_5xx_total, 70);	/* holds the others */
	CHECK_INT((int64_t)kv_history_errors(&l), 6);
	kv_history_sample_totals(&l, now);
	atomic_fetch_add(&c->requests_total, 5);
	atomic_fetch_add(&c->responses_cut_total, 1);
	kv_history_sample_totals(&l, now + 60);
	kv_history_sample_totals(&l, now + 120);	/* nothing new */
	kv_history_totals_read(&l, now + 120, rm, em, rh, eh);
	CHECK_INT(rm[KV_HIST_MINUTES - 3], 10);
	CHECK_INT(em[KV_HIST_MINUTES - 3], 6);
	CHECK_INT(rm[KV_HIST_MINUTES - 2], 5);
	CHECK_INT(em[KV_HIST_MINUTES - 2], 1);
	CHECK_INT(rm[KV_HIST_MINUTES - 1], 0);
	CHECK_INT(rh[KV_HIST_HOURS - 1] + rh[KV_HIST_HOURS - 2], 15);
	CHECK_INT(eh[KV_HIST_HOURS - 1] + eh[KV_HIST_HOURS - 2], 7);
	/* An hour later the minute ring has moved on; the day still holds it. */
	kv_history_totals_read(&l, now + 3600 + 120, rm, em, rh, eh);
	CHECK_INT(rm[KV_HIST_MINUTES - 3] + rm[KV_HIST_MINUTES - 2], 0);
	kv_ledger_close(&l);
}

/* The account API kvctl and the admin API share: reset closes the lease
 * before zeroing spent; a budget set is an override; a limit set leaves a
 * negative one alone and refills the bucket. */
static void
test_account_api(void)
{
	struct kv_ledger l;
	struct kv_account *a;
	uint8_t h[32];

	hash_of("sk-api", h);
	CHECK_INT(open_new(&l, 4), 0);
	a = kv_ledger_account(&l, h, 1, "api", 5000);
	CHECK(a != NULL);
	CHECK(kv_slot_ready(&a->state));
	kv_account_charge(a, 700);
	atomic_store(&a->lease_cap_nusd, 900);
	CHECK_INT(kv_account_reset(a), 700);
	CHECK_INT(kv_account_spent(a), 0);
	CHECK_INT(atomic_load(&a->lease_cap_nusd), 0);
	CHECK_INT(kv_account_set_budget(a, 1234), 5000);
	CHECK_INT(atomic_load(&a->budget_nusd), 1234);
	CHECK(atomic_load(&a->aflags) & KV_AF_OVERRIDE);
	atomic_store(&a->rpm, 5);
	atomic_store(&a->rpm_tat, 77);
	atomic_store(&a->tpm_tat, 88);
	kv_account_set_limits(a, -1, 300);
	CHECK_INT(atomic_load(&a->rpm), 5);
	CHECK_INT(atomic_load(&a->rpm_tat), 77);
	CHECK_INT(atomic_load(&a->tpm), 300);
	CHECK_INT(atomic_load(&a->tpm_tat), 0);
	kv_account_set_limits(a, 60, -1);
	CHECK_INT(atomic_load(&a->rpm), 60);
	CHECK_INT(atomic_load(&a->rpm_tat), 0);
	CHECK_INT(atomic_load(&a->tpm), 300);
	kv_ledger_close(&l);
	unlink(path);
}

/* The cluster incarnation (shm/incarnation.h): drawn for a new ledger,
 * kept by the same file under the same host_id and across a grow, drawn
 * anew for another host_id and for a copy of the file. */
static void
test_incarnation(void)
{
	struct kv_ledger l, c;
	char cpath[160], cmd[400], err[512];
	uint64_t id, id2;
	int drawn;

	CHECK_INT(open_new(&l, 16), 0);
	CHECK_INT(atomic_load(&l.hdr->incarnation), 0);
	id = kv_ledger_incarnation(&l, "gw-1", &drawn);
	CHECK(id != 0 && drawn == 1);
	CHECK(kv_ledger_incarnation(&l, "gw-1", &drawn) == id && drawn == 0);
	CHECK_INT(kv_ledger_sync(&l), 0);
	snprintf(cpath, sizeof(cpath), "%s/copy", tmpdir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, cpath);
	CHECK_INT(system(cmd), 0);
	CHECK_INT(kv_ledger_open(&c, cpath, 16, 0, err, sizeof(err)), 0);
	id2 = kv_ledger_incarnation(&c, "gw-1", &drawn);
	CHECK(id2 != 0 && id2 != id && drawn == 1);	/* a copy: another inode */
	kv_ledger_close(&c);
	unlink(cpath);
	CHECK_INT(kv_ledger_grow(&l, path, 32, err, sizeof(err)), 0);
	CHECK(kv_ledger_incarnation(&l, "gw-1", &drawn) == id && drawn == 0);
	id2 = kv_ledger_incarnation(&l, "gw-2", &drawn);
	CHECK(id2 != 0 && id2 != id && drawn == 1);	/* another host_id */
	CHECK(kv_ledger_incarnation(&l, "gw-2", &drawn) == id2 && drawn == 0);
	kv_ledger_close(&l);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kvledger.XXXXXX");
	if (mkdtemp(tmpdir) == NULL || chmod(tmpdir, 0755) == -1) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", tmpdir);
	test_create_reopen();
	test_refusals();
	test_unreadable();
	test_accounts();
	test_reserve_settle();
	test_concurrent_budget();
	test_concurrent_claim();
	test_release_dead_worker();
	test_reset_lossless();
	test_periods();
	test_histogram();
	test_worker_sums();
	test_claimed_slots();
	test_model_mid_claim();
	test_history_apart();
	test_history_totals();
	test_account_api();
	test_incarnation();
	unlink(path);
	rmdir(tmpdir);
	return unit_done();
}

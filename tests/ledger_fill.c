/* ledger_fill: populate a ledger through the ledger API, for kvctl tests.
 *
 *   ledger_fill LEDGER MAX_KEYS STEP...
 *
 * steps, applied in order:
 *   key RAW LABEL BUDGET          claim RAW's account ("-" = no label; USD)
 *   use RAW MODEL COST IN OUT CACHED
 *                                 reserve COST nano-dollars and settle it
 *                                 with these tokens, as a worker would
 *   hold RAW AMOUNT               reserve AMOUNT nano-dollars, never settle
 *   period RAW UNIX               set RAW's period_start to UNIX seconds (a
 *                                 period that began long ago, for roll tests)
 *   worker SLOT PID               mark a worker slot alive (for status)
 *   master PID                    record a master pid and start time
 *   spend RAW SECS_AGO NUSD       RAW spent NUSD nano-dollars SECS_AGO
 *                                 seconds ago: the spend goes into RAW's
 *                                 history rings through the master's own
 *                                 kv_history_sample (give them oldest first)
 *   halfclaim RAW                 write RAW's claim tag into the first free
 *                                 slot of its chain and stop there, as a
 *                                 claimer killed mid-claim leaves it
 *   fillclaim RAW BUDGET          finish the claim halfclaim began (hash,
 *                                 budget in USD, READY), as a claimer the
 *                                 scheduler held up a while then does
 *   skew RAW NUSD                 add NUSD to RAW's reserved_nusd with no
 *                                 reservation recorded (a torn counter)
 *   halfroll RAW                  stop a roll of RAW's period to today (UTC)
 *                                 after its first step, as a worker killed
 *                                 between the CAS and clearing spent leaves
 *                                 it: period_start = -today, spent the old
 *
 * Each key step prints "ID LABEL" so scripts learn the ids. Exit 0, or 1
 * with a message on any failure (a refused reservation is a failure). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/money.h"
#include "shm/history.h"
#include "shm/ledger.h"

static int
fail(const char *what, const char *arg)
{
	fprintf(stderr, "ledger_fill: %s: %s\n", what, arg);
	return -1;
}

static struct kv_account *
account_of(struct kv_ledger *l, const char *raw)
{
	uint8_t h[32];

	kv_key_hash(raw, strlen(raw), h);
	return kv_ledger_account(l, h, 0, NULL, 0);
}

static int
step_key(struct kv_ledger *l, char **a)
{
	struct kv_account *acct;
	uint8_t h[32];
	int64_t budget;
	char id[13];
	const char *label = strcmp(a[1], "-") == 0 ? "" : a[1];

	if (kv_parse_nano(a[2], &budget) == -1)
		return fail("not a USD amount", a[2]);
	kv_key_hash(a[0], strlen(a[0]), h);
	acct = kv_ledger_account(l, h, 1, label, budget);
	if (acct == NULL)
		return fail("key table full", a[0]);
	kv_key_id(h, id);
	printf("%s %s\n", id, label[0] ? label : "-");
	return 0;
}

static int
step_use(struct kv_ledger *l, char **a)
{
	struct kv_account *acct = account_of(l, a[0]);
	struct kv_usage u = { .found = 1 };
	int64_t cost = atoll(a[2]), rem;
	int r;

	if (acct == NULL)
		return fail("no such key (add it with `key` first)", a[0]);
	u.input = atoll(a[3]);
	u.output = atoll(a[4]);
	u.cached_input = atoll(a[5]);
	r = kv_ledger_reserve(l, &l->workers[0], acct, cost, &rem);
	if (r < 0)
		return fail("reservation refused", a[0]);
	kv_ledger_settle(l, &l->workers[0], r, cost, &u, a[1]);
	return 0;
}

static int
step_hold(struct kv_ledger *l, char **a)
{
	struct kv_account *acct = account_of(l, a[0]);
	int64_t rem;

	if (acct == NULL)
		return fail("no such key", a[0]);
	if (kv_ledger_reserve(l, &l->workers[1], acct, atoll(a[1]), &rem) < 0)
		return fail("reservation refused", a[0]);
	return 0;
}

static int
step_period(struct kv_ledger *l, char **a)
{
	struct kv_account *acct = account_of(l, a[0]);
	char *end;
	long long t = strtoll(a[1], &end, 10);

	if (acct == NULL)
		return fail("no such key", a[0]);
	if (*a[1] == '\0' || *end != '\0')
		return fail("not unix seconds", a[1]);
	atomic_store(&acct->period_start, (int64_t)t);
	return 0;
}

static int
step_worker(struct kv_ledger *l, char **a)
{
	int slot = atoi(a[0]);
	struct kv_worker_slot *w;

	if (slot < 0 || slot >= KV_WORKER_SLOTS)
		return fail("bad worker slot", a[0]);
	w = &l->workers[slot];
	atomic_store(&w->state, KV_WORKER_RUNNING);
	atomic_store(&w->generation, 1);
	atomic_store(&w->started, (int64_t)time(NULL));
	atomic_store(&w->heartbeat, (int64_t)time(NULL));
	atomic_store(&w->connections, 2);
	atomic_store(&w->active_streams, 1);
	atomic_store(&w->pid, atoi(a[1]));
	return 0;
}

static int
step_master(struct kv_ledger *l, char **a)
{
	atomic_store(&l->hdr->master_pid, atoi(a[0]));
	atomic_store(&l->hdr->master_start, (int64_t)time(NULL) - 3723);
	atomic_fetch_add(&l->hdr->counters.requests_total, 7);
	return 0;
}

static int
step_halfclaim(struct kv_ledger *l, char **a)
{
	uint32_t n = l->hdr->max_keys, i;
	uint64_t start = 0, zero;
	uint8_t h[32];

	kv_key_hash(a[0], strlen(a[0]), h);
	for (i = 0; i < 8; i++)
		start = start << 8 | h[i];
	start %= n;	/* the home slot, as the ledger computes it */
	for (i = 0; i < n; i++) {
		struct kv_account *acct = &l->accounts[(start + i) % n];

		zero = 0;
		kv_ledger_mark_slot(l, (uint32_t)((start + i) % n));	/* as a claimer does */
		if (atomic_compare_exchange_strong(&acct->tag, &zero, kv_account_tag(h)))
			return 0;
	}
	return fail("key table full", a[0]);
}

static int
step_fillclaim(struct kv_ledger *l, char **a)
{
	uint32_t n = l->hdr->max_keys, i;
	int64_t budget;
	uint8_t h[32];

	if (kv_parse_nano(a[1], &budget) == -1)
		return fail("not a USD amount", a[1]);
	kv_key_hash(a[0], strlen(a[0]), h);
	for (i = 0; i < n; i++) {
		struct kv_account *acct = &l->accounts[i];

		uint32_t st = atomic_load(&acct->state);

		if (atomic_load(&acct->tag) != kv_account_tag(h) ||
		    (st != KV_SLOT_FREE && st != KV_SLOT_CLAIMING))
			continue;
		memcpy(acct->hash, h, 32);
		atomic_store(&acct->rpm, atomic_load(&l->hdr->default_rpm));
		atomic_store(&acct->tpm, atomic_load(&l->hdr->default_tpm));
		atomic_store(&acct->budget_nusd, budget);
		atomic_store(&acct->period_start, (int64_t)time(NULL));
		atomic_store_explicit(&acct->state, KV_SLOT_READY, memory_order_release);
		atomic_fetch_add(&l->hdr->accounts_used, 1);
		return 0;
	}
	return fail("no half-made claim", a[0]);
}

static int
step_skew(struct kv_ledger *l, char **a)
{
	struct kv_account *acct = account_of(l, a[0]);

	if (acct == NULL)
		return fail("no such key", a[0]);
	atomic_fetch_add(&acct->reserved_nusd, atoll(a[1]));
	return 0;
}

static int
step_halfroll(struct kv_ledger *l, char **a)
{
	struct kv_account *acct = account_of(l, a[0]);

	if (acct == NULL)
		return fail("no such key", a[0]);
	atomic_store(&acct->period_start,
	    -kv_period_start(KV_PERIOD_DAILY, (int64_t)time(NULL)));
	return 0;
}

static int
step_spend(struct kv_ledger *l, char **a)
{
	struct kv_account *acct = account_of(l, a[0]);
	int64_t t = (int64_t)time(NULL) - atoll(a[1]);

	if (acct == NULL)
		return fail("no such key", a[0]);
	if (atomic_load(&l->history[acct - l->accounts].minute) == 0)
		kv_history_sample(l, acct, t);	/* where spend stood before */
	atomic_fetch_add(&acct->spent_nusd, atoll(a[2]));
	kv_history_sample(l, acct, t);
	return 0;
}

static const struct {
	const char *name;
	int nargs;
	int (*run)(struct kv_ledger *, char **);
} steps[] = {
	{ "key", 3, step_key },
	{ "use", 6, step_use },
	{ "hold", 2, step_hold },
	{ "period", 2, step_period },
	{ "worker", 2, step_worker },
	{ "master", 1, step_master },
	{ "halfclaim", 1, step_halfclaim },
	{ "fillclaim", 2, step_fillclaim },
	{ "skew", 2, step_skew },
	{ "halfroll", 1, step_halfroll },
	{ "spend", 3, step_spend },
};

static int
run_steps(struct kv_ledger *l, int argc, char **argv)
{
	size_t s;
	int i = 0;

	while (i < argc) {
		for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++)
			if (strcmp(argv[i], steps[s].name) == 0)
				break;
		if (s == sizeof(steps) / sizeof(steps[0]))
			return fail("unknown step", argv[i]);
		if (i + steps[s].nargs >= argc)
			return fail("too few arguments for", argv[i]);
		if (steps[s].run(l, argv + i + 1) == -1)
			return -1;
		i += 1 + steps[s].nargs;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct kv_ledger l;
	char err[1024];
	int rc;

	if (argc < 3) {
		fputs("usage: ledger_fill LEDGER MAX_KEYS STEP...\n", stderr);
		return 1;
	}
	if (kv_ledger_open(&l, argv[1], (uint32_t)strtoul(argv[2], NULL, 10),
	    KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "ledger_fill: %s\n", err);
		return 1;
	}
	rc = run_steps(&l, argc - 3, argv + 3);
	kv_ledger_close(&l);
	return rc == 0 ? 0 : 1;
}

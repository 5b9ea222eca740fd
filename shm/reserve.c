/* The spent word, reservations and settlement: an account's spent amount
 * read and charged (in the one file with the settle, whose window between
 * the charge and the reservation's clearing stays as short as
 * test_repair's kill points demand), a worker's reservation records, the
 * admission of an amount against an account's budget (and its lease), the
 * settle of a request's cost into the account, the per-model totals and
 * the worker slot, and the release of a dead worker's reservations. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/ledger.h"
#include "shm/ledger-int.h"
#include "shm/targets.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Admission retries that re-validate spent after the CAS; see admit(). */
#define ADMIT_VALIDATE_TRIES	10000

int64_t
kv_account_spent(const struct kv_account *a)
{
	return spent_value(atomic_load(&a->spent_nusd));
}

void
kv_account_charge(struct kv_account *a, int64_t cost)
{
	int64_t cur = atomic_load(&a->spent_nusd), v;

	if (cost <= 0)
		return;
	do {
		v = cur & ~KV_SPENT_ROLLED;
		v = v > KV_SPENT_MAX - cost ? KV_SPENT_MAX : v + cost;
	} while (!atomic_compare_exchange_weak(&a->spent_nusd, &cur,
	    (cur & KV_SPENT_ROLLED) | v));
}

int64_t
kv_account_remaining(const struct kv_account *a)
{
	int64_t reserved = atomic_load(&a->reserved_nusd);
	int64_t spent = kv_account_spent(a);
	int64_t budget = atomic_load(&a->budget_nusd);

	return kv_sat_add(kv_sat_add(budget, -spent), -reserved);
}

/* Find a free reservation entry in W (only its own worker writes there,
 * starting from the hint) and record the amount before the account, so a
 * master that sees the account also sees the amount. */
static int
resv_record(struct kv_worker_slot *w, uint32_t account, int64_t amount)
{
	uint32_t start = atomic_load(&w->resv_hint) % KV_RESV_PER_WORKER, i, j;

	for (i = 0; i < KV_RESV_PER_WORKER; i++) {
		j = (start + i) % KV_RESV_PER_WORKER;
		if (atomic_load(&w->resv[j].account) != 0)
			continue;
		if (j + 1 > atomic_load(&w->resv_hi))	/* before the record shows */
			atomic_store(&w->resv_hi, j + 1);
		atomic_store(&w->resv[j].amount_nusd, amount);
		atomic_store(&w->resv_sent_nusd[j], 0);
		atomic_store_explicit(&w->resv[j].account, account,
		    memory_order_release);
		atomic_store(&w->resv_hint, (j + 1) % KV_RESV_PER_WORKER);
		return (int)j;
	}
	return -1;
}

static void
resv_clear(struct kv_worker_slot *w, int r)
{
	atomic_store(&w->resv[r].amount_nusd, 0);
	atomic_store(&w->resv_sent_nusd[r], 0);
	atomic_store_explicit(&w->resv[r].account, 0, memory_order_release);
	atomic_store(&w->resv_hint, (uint32_t)r);
}

void
kv_ledger_resv_sent(struct kv_worker_slot *w, int resv, int64_t min_nusd)
{
	if (resv < 0 || resv >= KV_RESV_PER_WORKER || min_nusd < 0)
		return;
	atomic_store(&w->resv_sent_nusd[resv], min_nusd < KV_SPENT_MAX ? min_nusd : KV_SPENT_MAX);
}

/* What a dead worker's reservation leaves spent: the real cost when it
 * died settling (KV_RESV_COST), else the minimum its worker recorded once
 * the request was sent (at most the amount reserved). */
static int64_t
resv_death_charge(struct kv_worker_slot *w, uint32_t r, int64_t amount)
{
	int64_t min = atomic_load(&w->resv_sent_nusd[r]);

	if (min & KV_RESV_COST)
		return min & ~KV_RESV_COST;
	return min < amount ? min : amount;
}

int64_t
kv_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

/* spent + reserved + amount <= budget, without overflow. */
static int
admits(int64_t budget, int64_t spent, int64_t reserved, int64_t amount)
{
	int64_t sum;

	if (__builtin_add_overflow(spent, reserved, &sum) ||
	    __builtin_add_overflow(sum, amount, &sum))
		return 0;
	return sum <= budget;
}

/* The admission loop. reserved is read before spent because settlement
 * adds to spent before it subtracts from reserved: in that order a reader
 * may over-count but never under-count. The CAS on reserved alone cannot
 * see spent move (reserved can come back to the same value: ABA), so after
 * a successful CAS spent is read again; unchanged means the check held at
 * the instant of the CAS, changed means undo and try again.
 * With cluster leases (LEASED) the budget is what the other hosts have not
 * committed, and this host's lease caps it too (-3 when only the lease
 * refuses). The master lowers a cap before it reads spent and reserved to
 * return the rest, so a cap seen lower after the CAS means undo and retry:
 * either this admission sees the new cap or the master sees it. */
static int
admit(struct kv_account *a, int64_t amount, int64_t *remaining, int leased)
{
	int64_t budget, spent, word, reserved, cap = 0;
	int tries;

	for (tries = 0; ; tries++) {
		reserved = atomic_load(&a->reserved_nusd);
		word = atomic_load(&a->spent_nusd);
		spent = spent_value(word);
		budget = atomic_load(&a->budget_nusd);
		if (leased)
			budget -= atomic_load(&a->cluster_other_nusd);
		if (!admits(budget, spent, reserved, amount)) {
			*remaining = kv_sat_add(kv_sat_add(budget, -spent), -reserved);
			return -1;
		}
		if (leased && !admits(cap = atomic_load(&a->lease_cap_nusd), spent, reserved,
		    amount)) {
			*remaining = kv_sat_add(kv_sat_add(budget, -spent), -reserved);
			return -3;
		}
		if (!atomic_compare_exchange_strong(&a->reserved_nusd, &reserved,
		    reserved + amount))
			continue;
		if (leased && atomic_load(&a->lease_cap_nusd) < cap) {
			atomic_fetch_sub(&a->reserved_nusd, amount);
			continue;
		}
		/* Past the bound, accept the (rarely ABA-prone) plain CAS rather
		 * than spin forever under a storm of settlements. */
		if (tries > ADMIT_VALIDATE_TRIES ||
		    atomic_load(&a->spent_nusd) == word) {
			*remaining = budget - spent - reserved - amount;
			return 0;
		}
		atomic_fetch_sub(&a->reserved_nusd, amount);
	}
}

/* kv_ledger_reserve, with the cluster's leases (LEASED) or without. */
static int
reserve_in(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_account *a,
    int64_t amount, int64_t *remaining, int leased)
{
	int r, rc;

	if (amount < 0)
		amount = 0;
	op_enter(l);
	/* Retired by the master between this worker's lookup and now. */
	if (atomic_load(&a->state) != KV_SLOT_READY) {
		op_leave(l);
		*remaining = 0;
		return -4;
	}
	/* Recorded first; a worker killed anywhere in here is made exact by
	 * the master's repair, which recomputes reserved from the records of
	 * the live workers (kv_ledger_repair). */
	r = resv_record(w, kv_ledger_account_index(l, a) + 1, amount);
	if (r == -1) {
		*remaining = kv_account_remaining(a);
		op_leave(l);
		return -2;
	}
	rc = admit(a, amount, remaining, leased);
	if (rc == -3) {
		int64_t need = atomic_load(&a->lease_need_nusd);

		while (need < amount &&
		    !atomic_compare_exchange_weak(&a->lease_need_nusd, &need, amount))
			;
		resv_clear(w, r);
		op_leave(l);
		return -3;
	}
	if (rc == -1) {
		atomic_fetch_add(&a->refusals, 1);
		resv_clear(w, r);
		op_leave(l);
		return -1;
	}
	op_leave(l);
	return r;
}

int
kv_ledger_reserve(struct kv_ledger *l, struct kv_worker_slot *w,
    struct kv_account *a, int64_t amount, int64_t *remaining)
{
	return reserve_in(l, w, a, amount, remaining, atomic_load(&l->hdr->cluster) != 0);
}

int
kv_ledger_reserve_node(struct kv_ledger *l, struct kv_worker_slot *w,
    struct kv_account *a, int64_t amount, int64_t *remaining)
{
	return reserve_in(l, w, a, amount, remaining, 0);
}

int
kv_ledger_hold(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_account *a)
{
	int r;

	op_enter(l);
	if (atomic_load(&a->state) != KV_SLOT_READY) {
		op_leave(l);
		return -4;
	}
	r = resv_record(w, kv_ledger_account_index(l, a) + 1, 0);
	op_leave(l);
	return r < 0 ? -2 : r;
}

static void
model_add(struct kv_model_slot *m, int64_t cost, const struct kv_usage *u)
{
	atomic_fetch_add(&m->requests, 1);
	atomic_fetch_add(&m->cost_nusd, (uint64_t)cost);
	if (u == NULL)
		return;
	atomic_fetch_add(&m->input_tokens, (uint64_t)(u->input > 0 ? u->input : 0));
	atomic_fetch_add(&m->output_tokens, (uint64_t)(u->output > 0 ? u->output : 0));
	atomic_fetch_add(&m->cached_input_tokens,
	    (uint64_t)(u->cached_input > 0 ? u->cached_input : 0));
}

static void
account_add(struct kv_account *a, const struct kv_usage *u)
{
	atomic_fetch_add(&a->requests, 1);
	atomic_store(&a->last_used, (int64_t)time(NULL));
	if (u == NULL)
		return;
	atomic_fetch_add(&a->input_tokens, (uint64_t)(u->input > 0 ? u->input : 0));
	atomic_fetch_add(&a->output_tokens, (uint64_t)(u->output > 0 ? u->output : 0));
	atomic_fetch_add(&a->cached_input_tokens,
	    (uint64_t)(u->cached_input > 0 ? u->cached_input : 0));
}

void
kv_ledger_resv_final(struct kv_worker_slot *w, int resv, int64_t cost)
{
	if (resv < 0 || resv >= KV_RESV_PER_WORKER)
		return;
	if (cost < 0)
		cost = 0;
	atomic_store(&w->resv_sent_nusd[resv], (cost < KV_SPENT_MAX ? cost : KV_SPENT_MAX) |
	    KV_RESV_COST);
}

/* Charge COST (made >= 0 in *COST) to RESV's account and release its
 * reservation. Returns the account inside the ledger bracket (the caller
 * counts, then leaves it), or NULL for no reservation (not entered). */
static struct kv_account *
settle_record(struct kv_ledger *l, struct kv_worker_slot *w, int resv, int64_t *cost)
{
	struct kv_account *a;
	uint32_t idx;
	int64_t amount;

	if (resv < 0 || resv >= KV_RESV_PER_WORKER)
		return NULL;
	idx = atomic_load(&w->resv[resv].account);
	if (idx == 0 || idx > l->hdr->max_keys)
		return NULL;
	a = &l->accounts[idx - 1];
	if (*cost < 0)
		*cost = 0;
	op_enter(l);
	/* What a kill -9 from here on leaves: the real cost, recorded as the
	 * death charge before it is added and cleared right after, so a death
	 * on either side of the add is charged exactly once. Only between the
	 * CAS that adds and the store that clears (two instructions) is it
	 * charged twice: docs/ledger.md says why no lock-free order closes
	 * that, and test_repair measures it. */
	kv_ledger_resv_final(w, resv, *cost);
	/* Spent first, then reserved: admission may briefly over-count the
	 * pair, never under-count it. Saturating: an overflow sentinel cost
	 * must not wrap spent negative. */
	kv_account_charge(a, *cost);
	atomic_store(&w->resv_sent_nusd[resv], 0);
	amount = atomic_exchange(&w->resv[resv].amount_nusd, 0);
	atomic_fetch_sub(&a->reserved_nusd, amount);
	resv_clear(w, resv);
	return a;
}

void
kv_ledger_settle(struct kv_ledger *l, struct kv_worker_slot *w, int resv,
    int64_t cost, const struct kv_usage *usage, const char *model)
{
	struct kv_model_slot *m;
	struct kv_account *a;

	if ((a = settle_record(l, w, resv, &cost)) == NULL)
		return;
	if (cost != 0 || usage != NULL) {
		if (cost > 0)
			atomic_fetch_or(&a->aflags, KV_AF_KEPT);
		account_add(a, usage);
		m = (model != NULL && model[0] != '\0') ? kv_ledger_model(l, model) : NULL;
		if (m != NULL)
			model_add(m, cost, usage);
	}
	op_leave(l);
}


void
kv_ledger_settle_node(struct kv_ledger *l, struct kv_worker_slot *w, int resv,
    int64_t cost, int counted)
{
	struct kv_account *a;

	if ((a = settle_record(l, w, resv, &cost)) == NULL)
		return;
	if (counted) {
		atomic_fetch_add(&a->requests, 1);
		atomic_store(&a->last_used, (int64_t)time(NULL));
	}
	op_leave(l);
}

int
kv_ledger_release_worker(struct kv_ledger *l, struct kv_worker_slot *w)
{
	uint32_t i, idx;
	int64_t amount, charge;
	int n = 0;

	kv_targets_release_worker(l, w);
	for (i = 0; i < kv_ledger_resv_end(w); i++) {
		idx = atomic_load(&w->resv[i].account);
		if (idx == 0)
			continue;
		amount = atomic_exchange(&w->resv[i].amount_nusd, 0);
		charge = resv_death_charge(w, i, amount);
		/* spent first, then reserved, as kv_ledger_settle does */
		if (idx <= l->hdr->max_keys)
			kv_account_charge(&l->accounts[idx - 1], charge);
		if (idx <= l->hdr->max_keys && amount != 0)
			atomic_fetch_sub(&l->accounts[idx - 1].reserved_nusd, amount);
		atomic_store(&w->resv_sent_nusd[i], 0);
		atomic_store(&w->resv[i].account, 0);
		n++;
	}
	atomic_store(&w->resv_hint, 0);
	atomic_store(&w->resv_hi, 0);
	atomic_store(&w->connections, 0);
	atomic_store(&w->active_streams, 0);
	atomic_store(&w->mem_pending, 0);
	return n;
}

static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Names longer than the slot are stored and compared truncated. */
static int
model_name_eq(const struct kv_model_slot *m, const char *name)
{
	return strncmp(m->name, name, KV_MODEL_NAME - 1) == 0;
}

static void
model_fill(struct kv_model_slot *m, const char *name)
{
	memset(m->name, 0, sizeof(m->name));
	snprintf(m->name, sizeof(m->name), "%s", name);
	atomic_store_explicit(&m->state, KV_SLOT_READY, memory_order_release);
}

static struct kv_model_slot *
model_probe(struct kv_ledger *l, const char *name)
{
	uint64_t h = fnv1a(name), tag = h | 1, t;
	struct kv_model_slot *m;
	uint32_t i, st;

	for (i = 0; i < KV_MODEL_SLOTS; i++) {
		m = &l->models[(h + i) % KV_MODEL_SLOTS];
		t = atomic_load_explicit(&m->tag, memory_order_acquire);
		if (t == 0) {
			if (slot_try_claim(&m->tag, tag, &t)) {
				model_fill(m, name);
				atomic_fetch_add(&l->hdr->models_used, 1);
				return m;
			}
		}
		if (t != tag)
			continue;
		/* A row is its 64-bit name hash; the name is its label. While
		 * another process is still writing the label (it can be
		 * preempted there for a whole time slice), the hash alone says
		 * the row is ours: counting into it loses nothing. Once the
		 * label is there it also rules out a hash collision. */
		st = atomic_load_explicit(&m->state, memory_order_acquire);
		if (st == KV_SLOT_FREE || st == KV_SLOT_CLAIMING)
			return m;
		if (st == KV_SLOT_READY && model_name_eq(m, name))
			return m;
	}
	return NULL;
}

struct kv_model_slot *
kv_ledger_model(struct kv_ledger *l, const char *model)
{
	char name[KV_MODEL_NAME];
	struct kv_model_slot *m;
	size_t n;

	if (model == NULL || model[0] == '\0')
		return NULL;
	op_enter(l);
	/* The row found last, when it is ready and has this name (compared
	 * as the probe does, cut to the slot): the row the probe would find,
	 * as only a ready row holds a name and none is ever renamed. */
	if (l->model_memo - 1 < KV_MODEL_SLOTS) {
		m = &l->models[l->model_memo - 1];
		if (atomic_load_explicit(&m->state, memory_order_acquire) == KV_SLOT_READY &&
		    model_name_eq(m, model)) {
			op_leave(l);
			return m;
		}
	}
	/* cut to the slot's size as snprintf would; a copy, not a format, on
	 * every request */
	n = strnlen(model, sizeof(name) - 1);
	memcpy(name, model, n);
	name[n] = '\0';
	m = model_probe(l, name);
	if (m != NULL)
		l->model_memo = (uint32_t)(m - l->models) + 1;
	op_leave(l);
	return m;
}

uint32_t
kv_ledger_resv_end(const struct kv_worker_slot *w)
{
	uint32_t hi = atomic_load(&w->resv_hi);

	return hi < KV_RESV_PER_WORKER ? hi : KV_RESV_PER_WORKER;
}

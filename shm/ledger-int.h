/* What the ledger's files (ledger.c, accounts.c, periods.c, reserve.c)
 * share: the bracket around a worker's ledger operation, the spent word's
 * decoding and the slot claim, static in each file that includes it as
 * they were when the ledger was one file: the compiler inlines them or not
 * as it did then, which test_repair's kill points measure (a settle's
 * window in which a kill charges twice). Not for callers of the ledger:
 * see ledger.h. */
#ifndef KV_LEDGER_INT_H
#define KV_LEDGER_INT_H

#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "common/clock.h"
#include "shm/ledger.h"

/* How long a ledger operation waits for the master's repair to finish
 * (it takes about a millisecond, once per worker death) before going on;
 * the repair then sees the change and leaves that account for next time. */
#define QUIESCE_WAIT_NS	50000000LL

/* Ledger operations of a worker are bracketed by op_enter/op_leave so the
 * master can repair counters while no live worker is half-way through one
 * (see kv_ledger_quiesce). Outside a worker (l->self NULL) they do nothing. */
static void
op_enter(struct kv_ledger *l)
{
	struct kv_worker_slot *w = l->self;
	int64_t deadline = 0;

	if (w == NULL || l->op_depth++ > 0)
		return;
	for (;;) {
		atomic_store(&w->in_ledger, 1);
		if (atomic_load(&l->hdr->quiesce) == 0)
			return;
		if (deadline == 0)
			deadline = kv_mono_ns() + QUIESCE_WAIT_NS;
		else if (kv_mono_ns() > deadline) {
			atomic_fetch_add(&w->quiesce_timeouts, 1);
			return;
		}
		atomic_store(&w->in_ledger, 0);
		sched_yield();
	}
}

static void
op_leave(struct kv_ledger *l)
{
	if (l->self == NULL || --l->op_depth > 0)
		return;
	atomic_store(&l->self->in_ledger, 0);
}

static inline int64_t
spent_value(int64_t word)
{
	int64_t v = word & ~KV_SPENT_ROLLED;

	return v >= KV_SPENT_MAX ? INT64_MAX : v;
}

/* Claim a free slot: CAS its tag 0 -> tag. Returns 1 when won; else sets
 * *seen to the tag now there. */
static inline int
slot_try_claim(_Atomic uint64_t *slot_tag, uint64_t tag, uint64_t *seen)
{
	uint64_t expect = 0;

	if (atomic_compare_exchange_strong(slot_tag, &expect, tag))
		return 1;
	*seen = expect;
	return 0;
}

#endif

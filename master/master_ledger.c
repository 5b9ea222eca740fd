/* The master's upkeep of the ledger with the workers paused between
 * ledger operations: the repair after a worker's death and at start-up,
 * the roll of budget periods, the reclaim of accounts nobody needs, and
 * the file rebuilt for a larger max_keys. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/master_ledger.h"

#include <stdint.h>
#include <time.h>

#include "common/log.h"
#include "master/key_sync.h"
#include "master/master_procs.h"
#include "shm/grow.h"
#include "shm/keys.h"
#include "shm/ledger.h"
#include "shm/ratelimit.h"
#include "shm/repair.h"

#define QUIESCE_MS	100	/* longest a repair waits for a worker's ledger op */

static void
log_repair(const struct kv_repair_report *r, const char *when)
{
	if (r->reserved_fixed == 0 && r->claims_fixed == 0 && r->skipped == 0 &&
	    r->rolls_fixed == 0 && r->tokens_fixed == 0)
		return;
	kv_log_warnx("KV0600", "ledger repair %s: %d accounts' reserved_nusd recomputed "
	    "from the recorded reservations, %d half-claimed slots retired, %d "
	    "period rolls finished, %d accounts' reserved tokens recomputed, %d left "
	    "for the next repair (changed meanwhile)", when, r->reserved_fixed,
	    r->claims_fixed, r->rolls_fixed, r->tokens_fixed, r->skipped);
}

static uint64_t
quiesce_timeouts(const struct master *m)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < KV_WORKER_SLOTS; i++)
		n += atomic_load(&m->ledger.workers[i].quiesce_timeouts);
	return n;
}

void
kv_master_repair_now(struct master *m)
{
	struct kv_repair_report r;
	uint64_t dead = m->dead_mask, live = kv_master_live_mask(m), timeouts;
	int i, quiet;

	timeouts = quiesce_timeouts(m);
	quiet = kv_ledger_quiesce(&m->ledger, live, QUIESCE_MS) == 0;
	if (!quiet) {
		for (i = 0; i < KV_WORKER_SLOTS; i++)
			if (dead & (UINT64_C(1) << i)) {
				(void)kv_ratelimit_release_worker(&m->ledger,
				    &m->ledger.workers[i]);
				(void)kv_ledger_release_worker(&m->ledger, &m->ledger.workers[i]);
			}
		m->recount = 1;
		dead = 0;
	} else if (kv_ledger_repair(&m->ledger, dead, &r) == -1) {
		kv_log_warn("KV0601", "ledger repair");
		m->recount = 1;
	} else {
		m->recount = r.skipped != 0;
		log_repair(&r, "after a worker exit");
	}
	if (quiet)
		kv_ledger_unquiesce(&m->ledger);
	/* A worker that stopped waiting (this process was stalled past its
	 * patience) may have raced the recount: do it again next tick. */
	if (quiesce_timeouts(m) != timeouts)
		m->recount = 1;
	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		struct kv_worker_slot *ws = &m->ledger.workers[i];

		if (!(m->dead_mask & (UINT64_C(1) << i)))
			continue;
		atomic_store(&ws->pid, 0);
		atomic_store(&ws->state, KV_WORKER_FREE);
	}
	m->dead_mask = 0;
}

void
kv_master_roll_periods(struct master *m)
{
	int64_t now = (int64_t)time(NULL);
	enum kv_period p;
	uint32_t i;

	KV_FOR_EACH_SLOT(&m->ledger, i) {
		const struct kv_account *a = &m->ledger.accounts[i];

		/* An issued key may have a period of its own (shm/keys.h). */
		p = kv_keys_period(a, m->cf->period);
		if (p != KV_PERIOD_NONE && atomic_load(&a->state) == KV_SLOT_READY &&
		    atomic_load(&a->period_start) < kv_period_start(p, now))
			break;
	}
	if (i == m->ledger.hdr->max_keys ||
	    kv_ledger_quiesce(&m->ledger, kv_master_live_mask(m), QUIESCE_MS) == -1)
		return;
	i = (uint32_t)kv_ledger_roll_all(&m->ledger, m->cf->period, now);
	kv_ledger_unquiesce(&m->ledger);
	kv_log_info("new budget period: spend reset on %u keys", i);
}

/* Idle this long, an account nobody needs is reclaimed: when a worker
 * found the table full, or once it is 90 % used; a worker's call is
 * honoured this long (kv_master_reclaim_accounts in master_ledger.h). */
#define RECLAIM_IDLE_FULL_S	1
#define RECLAIM_IDLE_S		30
#define RECLAIM_RETRY_S		5

void
kv_master_reclaim_accounts(struct master *m)
{
	struct kv_ledger_header *h = m->ledger.hdr;
	int64_t now = (int64_t)time(NULL), idle, grace;
	struct kv_reclaim_report rep;
	int wanted;

	if (atomic_exchange(&h->reclaim_wanted, 0) != 0)
		m->reclaim_until = now + RECLAIM_RETRY_S;
	wanted = now <= m->reclaim_until;
	/* Strangers only on a full or 90 % full table (-1: none). */
	idle = (uint64_t)atomic_load(&h->accounts_used) * 10 >= (uint64_t)h->max_keys * 9 ?
	    RECLAIM_IDLE_S : -1;
	if (wanted)
		idle = RECLAIM_IDLE_FULL_S;
	grace = wanted ? 0 : KV_KEYS_ROTATED_GRACE_S;
	if (kv_ledger_reclaimable(&m->ledger, now, idle, grace) == 0 ||
	    kv_ledger_quiesce(&m->ledger, kv_master_live_mask(m), QUIESCE_MS) == -1)
		return;
	kv_ledger_reclaim(&m->ledger, now, idle, grace, &rep);
	kv_ledger_unquiesce(&m->ledger);
	m->reclaim_until = 0;
	if (rep.forgotten > 0) {
		kv_log_info("forgot %d accounts (kvctl forget)", rep.forgotten);
		kv_key_sync(&m->ledger, m->cf);	/* a forgotten config key starts afresh */
	}
	if (rep.strangers > 0)
		kv_log_info("reclaimed %d accounts of unknown keys that were never charged "
		    "nor answered 2xx (%u of %u slots now used)", rep.strangers,
		    atomic_load(&h->accounts_used), h->max_keys);
	if (rep.links > 0)
		kv_log_info("reclaimed %d slots of rotated-out or forgotten keys' secrets "
		    "(%u of %u slots now used)", rep.links, atomic_load(&h->accounts_used),
		    h->max_keys);
}

void
kv_master_startup_repair(struct master *m)
{
	struct kv_repair_report r;
	uint64_t orphans = 0;
	int i;

	atomic_store(&m->ledger.hdr->quiesce, 0);
	for (i = 0; i < KV_WORKER_SLOTS; i++)
		if (atomic_load(&m->ledger.workers[i].pid) != 0)
			orphans |= UINT64_C(1) << i;
	if (kv_ledger_repair(&m->ledger, orphans, &r) == -1) {
		kv_log_warn("KV0601", "ledger repair");
		m->recount = 1;
	}
	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		atomic_store(&m->ledger.workers[i].pid, 0);
		atomic_store(&m->ledger.workers[i].state, KV_WORKER_FREE);
	}
	if (r.released != 0)
		kv_log_info("released %d reservations of an earlier run's workers",
		    r.released);
	log_repair(&r, "at start-up");
}

int
kv_master_resize_ledger(struct master *m)
{
	uint32_t have = m->ledger.hdr->max_keys, want = m->cf->max_keys;
	uint32_t dead = kv_ledger_tombstones(&m->ledger);
	char err[1024];

	if (want < have) {
		kv_log_warnx("KV0611", "ledger %s has %u key slots, the config asks for %u: "
		    "a ledger only grows (set max_keys = %u, or move the file away to "
		    "start afresh)", m->cf->ledger, have, want, have);
		return -1;
	}
	if (want == have && dead == 0)
		return 0;
	if (kv_ledger_grow(&m->ledger, m->cf->ledger, want, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0612", "%s", err);
		return -1;
	}
	kv_log_info("ledger %s rebuilt: %u -> %u key slots, %u retired slots dropped, "
	    "all history kept", m->cf->ledger, have, want, dead);
	return 0;
}

/* x-kilovolt-budget-remaining: see budget_shown.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "worker/budget_shown.h"

#include "shm/ledger.h"
#include "worker/conn-t.h"
#include "worker/worker.h"

int64_t
kv_budget_shown(const struct kv_conn *c)
{
	int64_t own;

	if (c->acct == NULL || c->resv < 0 || c->resv >= KV_RESV_PER_WORKER)
		return c->remaining;
	own = atomic_load(&c->w->slot->resv[c->resv].amount_nusd);
	return kv_sat_add(kv_account_remaining(c->acct), own);
}

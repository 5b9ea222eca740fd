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

	if (c->adm.acct == NULL || c->adm.resv < 0 || c->adm.resv >= KV_RESV_PER_WORKER)
		return c->adm.remaining;
	own = atomic_load(&c->w->slot->resv[c->adm.resv].amount_nusd);
	return kv_sat_add(kv_account_remaining(c->adm.acct), own);
}

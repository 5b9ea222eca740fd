/* The config's budget tree synced into the ledger: one account per team
 * and per model cap (see tree_sync.h). */
#include "master/tree_sync.h"

#include <string.h>

#include "common/log.h"
#include "shm/tree.h"

static struct kv_account *
sync_node(struct kv_ledger *l, const char *node, const uint8_t hash[32], int64_t budget,
    int period)
{
	struct kv_account *a;
	int64_t dropped;

	if (budget < 0)	/* none: it admits what its parents admit */
		budget = KV_NODE_UNBOUNDED;
	a = kv_ledger_account(l, hash, 1, node, budget);
	if (a == NULL) {
		kv_log_warnx("KV0137", "budget node %s: the account table is full", node);
		return NULL;
	}
	kv_account_set_label(a, node);
	atomic_fetch_or(&a->aflags, KV_AF_NODE | KV_AF_CONFIG | KV_AF_KEPT);
	atomic_store(&a->period, (uint32_t)period + 1);
	dropped = kv_account_config_budget(a, budget);
	if (dropped >= 0)
		kv_log_info("%s: the config's budget changed, dropping the override of %lld nusd",
		    node, (long long)dropped);
	return a;
}

static void
sync_caps(struct kv_ledger *l, const struct kv_modelcaps *caps, int period)
{
	struct kv_account *a;
	int i;

	for (i = 0; caps != NULL && i < caps->n; i++) {
		a = sync_node(l, caps->cap[i].node, caps->cap[i].hash, caps->cap[i].budget_nusd,
		    period);
		if (a != NULL)	/* a cap is money only, not the [budget] rpm of a key */
			kv_account_config_key(a, 0, 0);
	}
}

void
kv_tree_sync(struct kv_ledger *l, const struct kv_config *cf)
{
	size_t i;

	for (i = 0; i < cf->nteams; i++) {
		const struct kv_teamdef *t = &cf->teams[i];
		struct kv_account *a = sync_node(l, t->node, t->hash, t->budget_nusd, t->period);

		/* the running buckets kept, as a [key]'s are across a reload */
		if (a != NULL)
			kv_account_config_key(a, (uint32_t)t->rpm, (uint32_t)t->tpm);
		if ((t->rpm != 0 || t->tpm != 0) && cf->cluster.enabled)
			kv_log_warnx("KV0138", "[team %s]: rpm and tpm are not applied on a "
			    "[cluster] host yet (its budget is)", t->name);
		sync_caps(l, t->caps, t->period);
	}
	for (i = 0; i < cf->nkeys; i++)
		sync_caps(l, cf->keys[i].caps, (int)cf->period);
	for (i = 0; i < cf->ntags; i++) {
		const struct kv_teamdef *t = &cf->tags[i];
		struct kv_account *a = sync_node(l, t->node, t->hash, t->budget_nusd, t->period);

		if (a != NULL)	/* a tag has no rate limits, nor the [budget] rpm of a key */
			kv_account_config_key(a, 0, 0);
		sync_caps(l, t->caps, t->period);
	}
}

static int
caps_hold(const struct kv_modelcaps *caps, const uint8_t hash[32])
{
	int i;

	for (i = 0; caps != NULL && i < caps->n; i++)
		if (memcmp(caps->cap[i].hash, hash, 32) == 0)
			return 1;
	return 0;
}

int
kv_tree_in_config(const struct kv_config *cf, const uint8_t hash[32])
{
	size_t i;

	for (i = 0; i < cf->nteams; i++)
		if (memcmp(cf->teams[i].hash, hash, 32) == 0 || caps_hold(cf->teams[i].caps, hash))
			return 1;
	for (i = 0; i < cf->nkeys; i++)
		if (caps_hold(cf->keys[i].caps, hash))
			return 1;
	for (i = 0; i < cf->ntags; i++)
		if (memcmp(cf->tags[i].hash, hash, 32) == 0 || caps_hold(cf->tags[i].caps, hash))
			return 1;
	return 0;
}

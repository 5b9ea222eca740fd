/* The config's [key] sections synced into the ledger, at start-up, on
 * each reload and after a reclaim: see key_sync.h. */
#include "master/key_sync.h"
#include "master/tree_sync.h"

#include <string.h>

#include "common/log.h"

/* The budget a config key gets. An override (kvctl budget, admin API)
 * stands while the config's own value stays what it was when the override
 * was made; a changed config value wins and drops the override. */
static void
apply_budget(struct kv_account *a, const struct kv_keydef *k, int64_t budget)
{
	int64_t dropped = kv_account_config_budget(a, budget);

	if (dropped >= 0)
		kv_log_info("key %s: the config's budget changed, dropping the override of "
		    "%lld nusd", k->label, (long long)dropped);
}

static int
in_config(const struct kv_config *cf, const uint8_t hash[32])
{
	size_t i;

	for (i = 0; i < cf->nkeys; i++)
		if (memcmp(cf->keys[i].hash, hash, 32) == 0)
			return 1;
	return kv_tree_in_config(cf, hash);
}

/* A config key's label, held by another account: that account is the
 * key's former one (rotated out, perhaps by an older build that did not
 * mark it KV_AF_FORMER). */
static int
label_in_config(const struct kv_config *cf, const struct kv_account *a)
{
	size_t i;

	if (!(a->flags & KV_ACCOUNT_NAMED) || a->label[0] == '\0')
		return 0;
	for (i = 0; i < cf->nkeys; i++)
		if (strncmp(cf->keys[i].label, a->label, KV_LABEL_MAX - 1) == 0)
			return 1;
	return 0;
}

void
kv_key_sync(struct kv_ledger *l, const struct kv_config *cf)
{
	struct kv_account *a;
	uint32_t j, fl;
	size_t i;

	atomic_store(&l->hdr->policy, cf->unknown_keys_deny ? KV_POLICY_DENY : 0);
	atomic_store(&l->hdr->default_rpm, cf->default_rpm);
	atomic_store(&l->hdr->default_tpm, cf->default_tpm);
	for (i = 0; i < cf->nkeys; i++) {
		const struct kv_keydef *k = &cf->keys[i];
		int64_t budget = k->budget_nusd >= 0 ? k->budget_nusd : cf->default_budget_nusd;

		a = kv_ledger_account(l, k->hash, 1, k->label, budget);
		if (a == NULL) {
			kv_log_warnx("KV0105", "key %s: the account table is full", k->label);
			continue;
		}
		/* The label follows the config: a [key] renamed renames it. */
		kv_account_set_label(a, k->label);
		apply_budget(a, k, budget);
		kv_account_config_key(a, k->rpm >= 0 ? (uint32_t)k->rpm : cf->default_rpm,
		    k->tpm >= 0 ? (uint32_t)k->tpm : cf->default_tpm);
	}
	kv_tree_sync(l, cf);
	/* A key gone from the config keeps its label, marked as the one it
	 * had (KV_AF_FORMER): the name now belongs to the config's key. */
	KV_FOR_EACH_SLOT(l, j) {
		a = &l->accounts[j];
		if (atomic_load(&a->state) != KV_SLOT_READY || in_config(cf, a->hash))
			continue;
		fl = atomic_load(&a->aflags);
		kv_account_config_gone(a, !(fl & (KV_AF_FORMER | KV_AF_CONFIG)) &&
		    label_in_config(cf, a));
	}
}

/* kvctl reset and kvctl forget: a key's spend back to zero (or every
 * key's), a key's account freed; on the ledger and, with [cluster], in
 * Redis; each write in the audit log. */
#include <config.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/kvctl_int.h"
#include "common/config.h"
#include "shm/keys.h"
#include "shm/lock.h"
#include "shm/repair.h"

static int
reset_all(struct kvctl *k)
{
	struct kvctl_audit ka;
	int64_t total = 0;
	uint32_t i, n = 0;
	char money[32];

	if (kvctl_cmd_audit(k, &ka, "key.reset_all") == -1)
		return KVCTL_EXIT_USAGE;
	KV_FOR_EACH_SLOT(&k->l, i) {
		struct kv_account *a = &k->l.accounts[i];

		if (!kv_slot_ready(&a->state))
			continue;
		total += kv_account_reset(a);
		n++;
	}
	kvctl_format_money(total, money, sizeof(money));
	printf("reset %u key%s (%s spent cleared)\n", n, n == 1 ? "" : "s", money);
	kv_audit_obj_int(&ka.rec.before, "keys", n);
	kv_audit_obj_int(&ka.rec.before, "spent_nusd", total);
	kv_audit_obj_int(&ka.rec.after, "spent_nusd", 0);
	return kvctl_audit_finish(&ka, KVCTL_EXIT_OK);
}

/* --all on a host that leases from Redis: every key, on every host. */
static int
reset_cluster_all(struct kvctl *k)
{
	struct kvctl_audit ka;
	struct kv_account **as;
	uint32_t i;
	size_t n = 0;
	int rc;

	if ((as = calloc(k->l.hdr->max_keys, sizeof(*as))) == NULL) {
		fprintf(stderr, "kvctl: out of memory\n");
		return KVCTL_EXIT_USAGE;
	}
	if (kvctl_cmd_audit(k, &ka, "key.reset_all") == -1) {
		free(as);
		return KVCTL_EXIT_USAGE;
	}
	KV_FOR_EACH_SLOT(&k->l, i) {
		if (kv_slot_ready(&k->l.accounts[i].state))
			as[n++] = &k->l.accounts[i];
	}
	kv_audit_obj_int(&ka.rec.before, "keys", (int64_t)n);
	rc = kvctl_cluster_reset(&k->l, as, n);
	kv_audit_obj_bool(&ka.rec.after, "reset_on_every_host", rc == KVCTL_EXIT_OK);
	free(as);
	return kvctl_audit_finish(&ka, rc);
}

int
kvctl_cmd_reset(struct kvctl *k)
{
	struct kvctl_audit ka;
	struct kv_account *a;
	char desc[128], money[32];
	int64_t old;
	int rc;

	if (k->all && k->nargs > 0)
		return kvctl_usage_error(NULL, "%s", "reset: give a KEY or --all, not both");
	if (!k->all && k->nargs == 0)
		return kvctl_usage_error(NULL, "%s", "reset: which key? (KEY or --all)");
	if (k->all && atomic_load(&k->l.hdr->cluster))
		return reset_cluster_all(k);
	if (k->all)
		return reset_all(k);
	if ((rc = kvctl_cmd_audit_key(k, &ka, "key.reset", &a)) != KVCTL_EXIT_OK)
		return rc;
	if (atomic_load(&k->l.hdr->cluster)) {
		kv_audit_obj_int(&ka.rec.before, "spent_nusd", kv_account_spent(a));
		rc = kvctl_cluster_reset(&k->l, &a, 1);
		kv_audit_obj_bool(&ka.rec.after, "reset_on_every_host", rc == KVCTL_EXIT_OK);
		return kvctl_audit_finish(&ka, rc);
	}
	old = kv_account_reset(a);
	kvctl_format_money(old, money, sizeof(money));
	kvctl_describe_key(a, desc, sizeof(desc));
	printf("reset %s: spent was %s, now $0.000000\n", desc, money);
	kv_audit_obj_int(&ka.rec.before, "spent_nusd", old);
	kv_audit_obj_int(&ka.rec.after, "spent_nusd", 0);
	return kvctl_audit_finish(&ka, KVCTL_EXIT_OK);
}

/* Has the account at A been retired (or its slot reused) since? */
static int
retired(const struct kv_account *a, uint64_t tag)
{
	return atomic_load(&a->state) != KV_SLOT_READY || atomic_load(&a->tag) != tag;
}

/* Retired, or retired and claimed afresh (the flag went with the old one). */
static int
forgotten(const struct kv_account *a, uint64_t tag)
{
	return retired(a, tag) || !(atomic_load(&a->aflags) & KV_AF_FORGET);
}

#define FORGET_WAIT_S	10	/* for the master's next tick, and in-flight requests */

/* An issued key of a [cluster] lives in Redis's kv:issued too, from where
 * this host would import it again: forget deletes it there first. A key
 * still valid would come back from every other host that holds it, so it
 * must be revoked (everywhere, through Redis) first. */
static int
forget_in_redis(struct kvctl *k, const struct kv_account *a, const char *desc)
{
	struct kv_config *cf;
	int rc;

	if (!(atomic_load(&a->aflags) & KV_AF_ISSUED) || k->ledger != NULL ||
	    (cf = kvctl_config_load(k->config ? k->config : kv_config_default_path())) == NULL)
		return KVCTL_EXIT_OK;
	if (cf->cluster.enabled && !(atomic_load(&a->aflags) & KV_AF_REVOKED)) {
		fprintf(stderr, "kvctl: forget: %s is an issued key the cluster's hosts share: "
		    "revoke it first (kvctl keys revoke), then forget it\n", desc);
		rc = KVCTL_EXIT_USAGE;
	} else {
		rc = kvctl_issued_unpublish(cf, &k->l, a);
	}
	kvctl_config_free(cf);
	return rc;
}

/* Delete account A and its history. With a daemon running, only its
 * master may retire a slot (it pauses the workers first), so mark it and
 * wait; without one, retire it here. */
static int
forget_account(struct kvctl *k, struct kv_account *a)
{
	char desc[128];
	uint64_t tag;
	int rc, i, running, cfg;

	kvctl_describe_key(a, desc, sizeof(desc));
	if ((rc = forget_in_redis(k, a, desc)) != KVCTL_EXIT_OK)
		return rc;
	tag = atomic_load(&a->tag);
	cfg = (atomic_load(&a->aflags) & KV_AF_CONFIG) != 0;
	if ((running = kv_ledger_locked(k->path)) == -1) {
		fprintf(stderr, "kvctl: %s: cannot tell whether kilovoltd runs: %s\n",
		    k->path, strerror(errno));
		return KVCTL_EXIT_USAGE;
	}
	if (!running) {
		kv_account_retire(&k->l, a);
		printf("forgot %s (no daemon running)%s\n", desc, cfg ? "; a key of the "
		    "config gets a fresh account at the next start" : "");
		return KVCTL_EXIT_OK;
	}
	kv_account_mark_forget(a);
	atomic_store(&k->l.hdr->reclaim_wanted, 1);
	/* A key of the config is given a fresh account at once, perhaps in the
	 * same slot with the same tag: a cleared KV_AF_FORGET says it is done. */
	for (i = 0; i < FORGET_WAIT_S * 10 && !forgotten(a, tag); i++)
		usleep(100000);
	if (!forgotten(a, tag)) {
		fprintf(stderr, "kvctl: %s is marked to be forgotten; kilovoltd has not done "
		    "it yet (requests in flight?): it will once they end\n", desc);
		return KVCTL_EXIT_USAGE;
	}
	printf("forgot %s%s\n", desc, cfg ? " (a key of the config: the next reload or "
	    "restart gives it a fresh account)" : "");
	return KVCTL_EXIT_OK;
}

/* forget KEY, in the audit log whether or not it was done. */
int
kvctl_cmd_forget(struct kvctl *k)
{
	struct kvctl_audit ka;
	struct kv_account *a;
	int rc;

	if ((rc = kvctl_cmd_audit_key(k, &ka, "key.forget", &a)) != KVCTL_EXIT_OK)
		return rc;
	kv_audit_obj_int(&ka.rec.before, "budget_nusd", atomic_load(&a->budget_nusd));
	kv_audit_obj_int(&ka.rec.before, "spent_nusd", kv_account_spent(a));
	rc = forget_account(k, a);
	kv_audit_obj_bool(&ka.rec.after, "forgotten", rc == KVCTL_EXIT_OK);
	return kvctl_audit_finish(&ka, rc);
}

/* The budget tree's reservation: a request's amount held at each node
 * above its key in order, all or nothing, rolled back in reverse order on
 * a refusal, and settled at every node it held (shm/tree.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/tree.h"

/* One node's hold. With [cluster] a node with a budget is leased from
 * Redis like a key (docs/cluster.md "The tree across hosts"): its
 * budget is every host's, so this host admits within its lease and the
 * other hosts' commitment. A node without one (KV_NODE_UNBOUNDED) admits
 * what its parents admit: no lease to wait for. */
static int
reserve_one(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_account *a,
    int64_t amount, int64_t *remaining)
{
	if (atomic_load(&a->budget_nusd) < KV_NODE_UNBOUNDED)
		return kv_ledger_reserve(l, w, a, amount, remaining);
	return kv_ledger_reserve_node(l, w, a, amount, remaining);
}

int
kv_tree_reserve(struct kv_ledger *l, struct kv_worker_slot *w,
    struct kv_account *const *nodes, int n, int64_t amount, struct kv_tree_hold *h,
    int *refused, int64_t *remaining)
{
	int i, r;

	h->n = 0;
	if (n > KV_TREE_NODES) {
		*refused = KV_TREE_NODES;
		*remaining = 0;
		return -2;
	}
	for (i = 0; i < n; i++) {
		r = reserve_one(l, w, nodes[i], amount, remaining);
		if (r < 0) {
			*refused = i;
			kv_tree_release(l, w, h);
			return r;
		}
		h->resv[h->n++] = r;
	}
	return 0;
}

int
kv_tree_hold(struct kv_ledger *l, struct kv_worker_slot *w,
    struct kv_account *const *nodes, int n, struct kv_tree_hold *h)
{
	int i, r;

	h->n = 0;
	if (n > KV_TREE_NODES)
		return -1;
	for (i = 0; i < n; i++) {
		if ((r = kv_ledger_hold(l, w, nodes[i])) < 0) {
			kv_tree_release(l, w, h);
			return -1;
		}
		h->resv[h->n++] = r;
	}
	return 0;
}

void
kv_tree_sent(struct kv_worker_slot *w, const struct kv_tree_hold *h, int64_t min)
{
	int i;

	for (i = 0; i < h->n; i++)
		kv_ledger_resv_sent(w, h->resv[i], min);
}

void
kv_tree_settle(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_tree_hold *h,
    int64_t cost, int counted)
{
	int i;

	/* All death charges first: a worker killed half-way through leaves
	 * every node charged COST, the settled ones and the rest alike. */
	for (i = 0; i < h->n; i++)
		kv_ledger_resv_final(w, h->resv[i], cost);
	for (i = h->n - 1; i >= 0; i--)
		kv_ledger_settle_node(l, w, h->resv[i], cost, counted);
	h->n = 0;
}

void
kv_tree_release(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_tree_hold *h)
{
	kv_tree_settle(l, w, h, 0, 0);
}

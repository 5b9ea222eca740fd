/* The budget tree's reservation (issue 36, docs/ledger.md "Budget tree"):
 * a request's amount held at every node above its key, all or nothing,
 * and settled at each. A node is a ledger account (its hash names it, see
 * common/config.h); each hold is one reservation record of the worker, so
 * the master's repair releases a dead worker's holds as it does a key's. */
#ifndef KV_SHM_TREE_H
#define KV_SHM_TREE_H

#include "shm/ledger.h"

#define KV_TREE_NODES	32	/* nodes one request may hold (caps, teams) */
#define KV_NODE_UNBOUNDED (INT64_MAX / 4)	/* the budget of a node that has none */

struct kv_tree_hold {
	int	n;			/* nodes held; 0 none */
	int	resv[KV_TREE_NODES];	/* their reservation records, in order */
};

/* Reserve AMOUNT at NODES[0..N-1] in order, each with one CAS: a node
 * with a budget as kv_ledger_reserve holds a key (bounded by its cluster
 * lease under [cluster]), one without as kv_ledger_reserve_node. Returns
 * 0 with all N held in H; or the refusal of the first node that refused
 * (-1 budget, -2 no free record, -3 this host's lease of it is short:
 * wait for the master, -4 retired) with its index in *REFUSED and its
 * remaining in *REMAINING, after releasing what it took, in reverse
 * order. */
int	kv_tree_reserve(struct kv_ledger *l, struct kv_worker_slot *w,
	    struct kv_account *const *nodes, int n, int64_t amount, struct kv_tree_hold *h,
	    int *refused, int64_t *remaining);

/* kv_ledger_hold at NODES[0..N-1] into H: 0, or -1 with nothing held. */
int	kv_tree_hold(struct kv_ledger *l, struct kv_worker_slot *w,
	    struct kv_account *const *nodes, int n, struct kv_tree_hold *h);

/* The request reached the provider: MIN is what each node is charged if
 * the worker dies (kv_ledger_resv_sent). */
void	kv_tree_sent(struct kv_worker_slot *w, const struct kv_tree_hold *h, int64_t min);

/* COST made each hold's death charge first, then each node charged COST
 * and the rest released (COUNTED: the request counts at the node). H is
 * empty after. kv_tree_release is the same with nothing charged. */
void	kv_tree_settle(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_tree_hold *h,
	    int64_t cost, int counted);
void	kv_tree_release(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_tree_hold *h);

#endif

/* The budget tree at admission and settlement (admission_tree.c): the
 * request's amount held at every node above its key, all or nothing. */
#ifndef KV_ADMISSION_TREE_H
#define KV_ADMISSION_TREE_H

#include <stdint.h>

#include "worker/conn-t.h"

/* Hold AMOUNT at each node above the request's key (c->adm.acct, already
 * reserved): the key's model caps that match the model, then its team,
 * the team's matching caps, its parent's ... up to the org. Returns 0
 * (held in c->adm.tree; also when the key is in no tree), or -1 with
 * everything taken here released and the reply (402 naming the node, or
 * 503) in *ST. The key's own reservation is the caller's to release. */
int	tree_admit(struct kv_conn *c, int64_t amount, enum kv_rc *st);

/* tree_admit for a charge no budget refuses (kv_tree_hold): nothing held
 * at the nodes, none refusing. 0, or -1 with nothing held (a node not in
 * the ledger yet, too many, no free record). */
int	tree_hold(struct kv_conn *c);

/* The request reached the provider: see kv_tree_sent. */
void	tree_sent(struct kv_conn *c, int64_t min);

/* Settle the tree's holds at COST (COUNTED: the request counts). */
void	tree_settle(struct kv_conn *c, int64_t cost, int counted);

#endif

/* The budget tree's rate limits (tree_rate.c): a [team]'s rpm and tpm
 * taken at admission from every node a request holds, all or nothing, and
 * settled with the key's. */
#ifndef KV_TREE_RATE_H
#define KV_TREE_RATE_H

#include <stdint.h>

#include "worker/conn-t.h"

/* Take one request and TOKENS (the key's estimate) at each node held in
 * c->adm.tree that has a limit, each in the node's own reservation record
 * (kv_ratelimit_admit), in order. Returns 0; or -1 with what it took given
 * back and the 429 naming the node (x-kilovolt-budget-node) in *ST; the
 * budget holds are the caller's to release. Nothing on a [cluster] host
 * (docs/ledger.md "Budget tree"). */
int	tree_rate_admit(struct kv_conn *c, int64_t tokens, enum kv_rc *st);

/* The request reached the provider: the input's tokens stay taken at
 * each node should the worker die (kv_ratelimit_sent). Once. */
void	tree_rate_sent(struct kv_conn *c);

/* The request is over: each node's tokens moved to the TOKENS counted.
 * Before tree_settle, which frees the records. */
void	tree_rate_settle(struct kv_conn *c, int64_t tokens);

/* Admitted here but refused after (the key's own limit): every request
 * and token taken here given back. Before tree_settle. */
void	tree_rate_undo(struct kv_conn *c);

#endif

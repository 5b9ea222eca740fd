/* The budget tree's nodes synced into the ledger (tree_sync.c), by
 * kv_key_sync at start-up and on each reload. */
#ifndef KV_TREE_SYNC_H
#define KV_TREE_SYNC_H

#include "common/config.h"
#include "shm/ledger.h"

/* Every [team] and every model_budget cap of a team or a key has its
 * account (made when missing), labelled with its node name (cut to the
 * label's size), marked KV_AF_NODE | KV_AF_CONFIG | KV_AF_KEPT, with the
 * config's budget (an override stands as a key's does) and period. */
void	kv_tree_sync(struct kv_ledger *l, const struct kv_config *cf);

/* 1 when HASH is one of CF's tree nodes. */
int	kv_tree_in_config(const struct kv_config *cf, const uint8_t hash[32]);

#endif

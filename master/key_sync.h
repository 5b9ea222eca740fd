/* The config-key sync (key_sync.c): the ledger's accounts made to match
 * the config's [key] sections and its [budget] policy. */
#ifndef KV_KEY_SYNC_H
#define KV_KEY_SYNC_H

#include "common/config.h"
#include "shm/ledger.h"

/* Named keys are in the ledger from start-up, each marked KV_AF_CONFIG;
 * a key no longer in the config loses the mark, so under unknown_keys =
 * deny it is refused at once (workers check the mark, not their copy of
 * the config). New unnamed keys start with the [budget] rpm/tpm.
 * The policy words (unknown_keys, the default rpm and tpm) are set in L's
 * header; each config key's account is made (named, with its budget: an
 * override of it stands while the config's value is unchanged), labelled,
 * limited and marked; every other account loses KV_AF_CONFIG, and keeps
 * its label marked KV_AF_FORMER when it was a config key's. */
void	kv_key_sync(struct kv_ledger *l, const struct kv_config *cf);

#endif

/* What a reload does to the prices of the models the running config
 * prices by name (issue 33): one log line per model it drops or reprices. */
#ifndef KV_PRICE_CHANGES_H
#define KV_PRICE_CHANGES_H

#include "common/config.h"

/* Log, for each model OLD prices by an exact entry, what NEW does if it
 * differs: dropped (refused, or only a glob or [price default] prices it
 * now; KV0135) or repriced (KV0136), with the old and new input and output
 * prices. Both configs must be indexed (kv_config_load). */
void	kv_price_changes_log(const struct kv_config *old, const struct kv_config *new);

#endif

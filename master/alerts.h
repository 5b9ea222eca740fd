/* Spend alerts ([alerts]): when a key's spend crosses a threshold (a
 * percentage of its budget) the master posts one JSON message to the
 * webhook, once per key, threshold and budget period. The master never
 * waits for the webhook: each message is delivered by a short-lived child
 * process (fork), which retries with back-off (1, 2, 4 s) and gives up
 * after 4 attempts or 60 s, logging the outcome. */
#ifndef KV_ALERTS_H
#define KV_ALERTS_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "shm/ledger.h"

struct kv_alerts_state;

/* State for L's accounts. Thresholds a key has already passed when the
 * master starts (or the config changes) count as sent: a restart does not
 * repeat them. NULL on allocation failure (logged). */
struct kv_alerts_state *kv_alerts_new(const struct kv_ledger *l);
void	kv_alerts_free(struct kv_alerts_state *s);

/* Look at every account and post what newly crossed a threshold of CF's
 * [alerts]. Cheap enough for every master tick; no-op without [alerts]. */
void	kv_alerts_tick(struct kv_alerts_state *s, const struct kv_config *cf,
	    const struct kv_ledger *l, int64_t now);

/* The message for one crossing, JSON (or Slack's {"text": ...}) into buf.
 * Returns its length, or -1 if it does not fit. */
int	kv_alerts_message(char *buf, size_t len, int slack, const struct kv_account *a,
	    int threshold, int64_t now);

#endif

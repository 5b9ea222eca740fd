/* /metrics: the ledger in the Prometheus text exposition format 0.0.4.
 * Kept apart from the HTTP side so it can be tested on a ledger alone. */
#ifndef KV_STATUS_METRICS_H
#define KV_STATUS_METRICS_H

#include <stdint.h>
#include <stdio.h>

#include "shm/ledger.h"

/* Per-key and per-model series: the biggest spenders get their own, the
 * rest are summed into key="other" / model="other". */
#define KV_STATUS_MAX_SERIES	100

/* Write every kilovolt_* family to F: HELP and TYPE lines, the
 * KV_COUNTERS counters (money as *_dollars_total), gauges, the two
 * histograms (cumulative, in seconds), then per-key and per-model series.
 * NOW is unix seconds (for uptime). */
void	kv_status_metrics(FILE *f, const struct kv_ledger *l, int64_t now);

#endif

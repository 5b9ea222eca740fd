/* The status page ("/"), rendered on the server from the ledger. */
#ifndef KV_STATUS_HTML_H
#define KV_STATUS_HTML_H

#include <stdint.h>
#include <stdio.h>

#include "shm/ledger.h"

/* Write the whole page for L as of NOW: totals, per key a budget bar and
 * charts of spend per minute over the last hour and per hour over the last
 * day (from the ledger's history rings), models and workers. */
void	kv_status_html(FILE *f, const struct kv_ledger *l, int64_t now);

#endif

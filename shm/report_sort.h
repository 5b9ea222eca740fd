/* The order reports list keys in: kvctl's tables, /status.json, the status
 * page, the metrics and the spend history all agree on it. */
#ifndef KV_REPORT_SORT_H
#define KV_REPORT_SORT_H

#include <stddef.h>

#include "shm/ledger.h"

/* Collect pointers to the ready accounts, sorted by spent (desc).
 * Returns the count; *out is malloc'd (caller frees), NULL on failure. */
size_t	kv_report_sorted_accounts(const struct kv_ledger *l,
	    const struct kv_account ***out);

#endif

/* The order reports list keys in: kvctl's tables, /status.json, the status
 * page, the metrics and the spend history all agree on it. */
#ifndef KV_REPORT_SORT_H
#define KV_REPORT_SORT_H

#include <stddef.h>

#include "shm/ledger.h"

/* Collect pointers to the ready accounts that are keys (not nodes of the
 * budget tree, KV_AF_NODE), sorted by spent (desc).
 * Returns the count; *out is malloc'd (caller frees), NULL on failure. */
size_t	kv_report_sorted_accounts(const struct kv_ledger *l,
	    const struct kv_account ***out);

/* The same for the budget tree's nodes whose name starts with PREFIX
 * ("team/", "model/"; "" for all). */
size_t	kv_report_sorted_nodes(const struct kv_ledger *l, const char *prefix,
	    const struct kv_account ***out);

#endif

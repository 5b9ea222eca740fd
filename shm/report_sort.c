/* The ready accounts of the ledger in the order every report lists them
 * (report_sort.h): below both report.c and history.c, which list keys in
 * that order. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/report_sort.h"

#include <stdlib.h>
#include <string.h>

/* Accounts are sorted on a snapshot of their spend: sorting on live values
 * would hand qsort a comparator that changes its mind. */
struct acct_snap {
	const struct kv_account	*a;
	int64_t			 spent;
};

static int
cmp_spent_desc(const void *x, const void *y)
{
	const struct acct_snap *a = x, *b = y;

	if (a->spent != b->spent)
		return a->spent < b->spent ? 1 : -1;
	/* Ties in a stable, meaningful order: by id. */
	return memcmp(a->a->hash, b->a->hash, sizeof(a->a->hash));
}

/* Ready accounts that are keys (NODES 0) or budget-tree nodes whose
 * label starts with PREFIX (NODES 1), sorted. */
static size_t
sorted(const struct kv_ledger *l, const struct kv_account ***out, int nodes,
    const char *prefix)
{
	uint32_t i, n = l->hdr->max_keys;
	const struct kv_account **v;
	struct acct_snap *snap;
	size_t count = 0;

	*out = NULL;
	snap = calloc(n, sizeof(*snap));
	v = calloc(n, sizeof(*v));
	if (snap == NULL || v == NULL) {
		free(snap);
		free(v);
		return 0;
	}
	KV_FOR_EACH_SLOT(l, i) {
		const struct kv_account *a = &l->accounts[i];

		if (!kv_slot_ready(&a->state) ||
		    ((atomic_load(&a->aflags) & KV_AF_NODE) != 0) != nodes)
			continue;
		if (nodes && strncmp(a->label, prefix, strlen(prefix)) != 0)
			continue;
		snap[count].a = a;
		snap[count++].spent = kv_account_spent(a);
	}
	qsort(snap, count, sizeof(*snap), cmp_spent_desc);
	for (i = 0; i < count; i++)
		v[i] = snap[i].a;
	free(snap);
	*out = v;
	return count;
}

size_t
kv_report_sorted_accounts(const struct kv_ledger *l, const struct kv_account ***out)
{
	return sorted(l, out, 0, "");
}

size_t
kv_report_sorted_nodes(const struct kv_ledger *l, const char *prefix,
    const struct kv_account ***out)
{
	return sorted(l, out, 1, prefix);
}

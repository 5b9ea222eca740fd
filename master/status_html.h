/* The status page ("/"), rendered on the server from the ledger. */
#ifndef KV_STATUS_HTML_H
#define KV_STATUS_HTML_H

#include <stdint.h>
#include <stdio.h>

#include "shm/ledger.h"

/* Keys shown per page of the key table (the top ones by spend on page 1). */
#define KV_STATUS_PAGE_KEYS	25
/* Longest search the page takes (?q=); a longer one is cut. */
#define KV_STATUS_QUERY_MAX	48

/* What the query string asks of the page: a search of the keys (an id
 * prefix or a part of a label, any case; NULL or "" for all of them) and
 * which page of the matching keys, from 1 (past the last: the last). */
struct kv_status_view {
	const char	*q;
	long		 page;
	const struct kv_config *cf;	/* the running config: the tree's shape; NULL none */
};

/* Write the whole page for L as of NOW: the cards (the Errors card names
 * relayed 5xx, upstream failures and cuts), charts of the gateway's spend
 * and of its requests and errors over the last hour and day, the keys by
 * spend a page at a time (V) with a budget bar and charts on one scale per
 * column, the models, the upstream targets and the workers. The page's
 * size does not grow with the number of keys. V may be NULL (page 1, all
 * keys). */
void	kv_status_html(FILE *f, const struct kv_ledger *l, int64_t now,
	    const struct kv_status_view *v);

#endif

/* The status page's key table (status_html_keys.c). Only the status
 * page's files include it. */
#ifndef KV_STATUS_HTML_KEYS_H
#define KV_STATUS_HTML_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shm/history.h"
#include "shm/ledger.h"

/* One page of keys, with their history read once for the shared scales. */
struct key_page {
	const struct kv_account	**acc;		/* the matching keys, by spend */
	size_t			  n;		/* how many match */
	size_t			  first, count;	/* this page's slice of them */
	long			  page, pages;
	int64_t			(*mins)[KV_HIST_MINUTES];
	int64_t			(*hours)[KV_HIST_HOURS];
	int64_t			  max_min, max_hour;
};

/* Fill KP from the sorted accounts ACC (N of them) for the view's search
 * Q and PAGE: the matching keys in order, this page's slice, its history
 * as of NOW and the slice's largest bucket per chart column. Returns 0 or
 * -1 (out of memory); free KP with kv_html_key_page_free either way. */
int	kv_html_key_page(struct key_page *kp, const struct kv_ledger *l,
	    const struct kv_account **acc, size_t n, const char *q, long page, int64_t now);

void	kv_html_key_page_free(struct key_page *kp);

/* The key table of KP: its heading (the search Q, and ALL, the number of
 * keys in all), the search form and page links, and a row per key. */
void	kv_html_keys(FILE *f, const struct key_page *kp, const char *q, size_t all);

/* A budget bar cell: SPENT and RESERVED of BUDGET. */
void	kv_html_bar(FILE *f, int64_t budget, int64_t spent, int64_t reserved);

/* Two cells: A's rate limits and what is left of each now; its 402s and
 * 429s. */
void	kv_html_limits(FILE *f, const struct kv_account *a);

/* With [cluster], per key synced with Redis: the figures of the JSON's
 * "cluster" object (shm/report.c), as this host last synced them. */
void	kv_html_cluster_leases(FILE *f, const struct kv_ledger *l, const struct key_page *kp);

#endif

/* The pieces of HTML the status page's sections share
 * (status_html_parts.c). Only the status page's files include it. */
#ifndef KV_STATUS_HTML_PARTS_H
#define KV_STATUS_HTML_PARTS_H

#include <stdint.h>
#include <stdio.h>

/* Percent-encode S for a query string value. */
void	kv_html_urlenc(FILE *f, const char *s);

/* S escaped for HTML text or an attribute value; control characters
 * become '?'. */
void	kv_html_esc(FILE *f, const char *s);

/* NUSD as dollars in BUF; returns BUF. */
const char *kv_html_usd(int64_t nusd, char buf[32]);

/* The largest of the N values V, or 0 when none is above it. */
int64_t	kv_html_max_of(const int64_t *v, int n);

/* A key table's chart of N buckets (the last hour's minutes or the last
 * day's hours) of spend V, on the scale MAX shared by its column; its
 * tooltip names the total spent in the last WHAT. */
void	kv_html_key_chart(FILE *f, const int64_t *v, int n, int64_t max, const char *what);

/* An overview chart: spend (MONEY set), or requests V with their errors
 * ERR (or NULL) drawn over them on the same scale, N buckets, in a figure
 * with id ID captioned WHAT. The scale's top is written above it. */
void	kv_html_top_chart(FILE *f, const char *id, const char *what, const int64_t *v,
	    const int64_t *err, int n, int money);

/* End a table's body: when it had no ROWS, a row saying EMPTY across its
 * COLS columns; then TAIL, which closes the body, the table and what
 * holds it. */
void	kv_html_table_end(FILE *f, size_t rows, int cols, const char *empty,
	    const char *tail);

#endif

/* The x-kilovolt-budget-remaining a response carries (issue 24). */
#ifndef KV_BUDGET_SHOWN_H
#define KV_BUDGET_SHOWN_H

#include <stdint.h>

struct kv_conn;

/* What `kvctl show` would say remains of C's key once this request
 * settles at nothing: budget - spent - the reservations of the key's
 * other requests in flight, read now. This request's own reservation is a
 * worst case (an SDK's max_tokens: 64000 reserved $0.96 of a $2 key for
 * a call that cost $0.0002), so it is left out. Without an account (an
 * unmetered request): the amount admission computed. */
int64_t	kv_budget_shown(const struct kv_conn *c);

#endif

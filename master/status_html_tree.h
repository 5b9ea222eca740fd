/* The status page's budget tree (status_html_tree.c). Only the status
 * page's files include it. */
#ifndef KV_STATUS_HTML_TREE_H
#define KV_STATUS_HTML_TREE_H

#include <stdio.h>

#include "common/config.h"
#include "shm/ledger.h"

/* The teams of CF as a tree (each under its parent, the org first), then
 * the users by spend (at most KV_HTML_TREE_USERS), each row with its
 * spend, budget, reserved, requests, limits and its top models (the spend
 * of its model_budget caps, the only spend per model a node keeps). Its
 * rows carry data-node, data-spent-nusd, data-budget-nusd and
 * data-requests for scripts. Nothing when there is no tree. CF NULL: the
 * ledger's teams by spend. */
void	kv_html_tree(FILE *f, const struct kv_ledger *l, const struct kv_config *cf);

#define KV_HTML_TREE_USERS	50
#define KV_HTML_TREE_MODELS	3	/* top models shown per node */

#endif

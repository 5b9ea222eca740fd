/* The request kept in obuf, rewritten for another target: request line
 * (its base path), Host, the credential (api_key of the new upstream) and,
 * after a fallback, the model its model_map names. */
#ifndef KV_UPSTREAM_REWRITE_H
#define KV_UPSTREAM_REWRITE_H

#include "worker/conn-t.h"

/* Rebuild c->obuf (head + whole body) for c->rt's target; FROM is the
 * target the request was built for. Returns 0 or -1 (obuf unchanged). */
int	kv_upset_rewrite(struct kv_conn *c, const struct kv_upstream *from);

/* The name model_map gives MODEL on upstream U, or NULL when none. */
const char *kv_model_map(const struct kv_upstream *u, const char *model, size_t *len);

#endif

/* The master's Google access token for Vertex AI upstreams: fetched at
 * start-up (blocking, before any worker: a vertex upstream without api_key
 * and no token fails the start), published to the shared slot the workers
 * read (common/gcp_token.h), refreshed 5 minutes before it expires by a
 * helper process (master/cred_refresh.h). One per master. */
#ifndef KV_GCP_REFRESH_H
#define KV_GCP_REFRESH_H

#include <stddef.h>

#include "common/config.h"
#include "master/loop.h"
#include "shm/ledger.h"

/* Whether CF has an upstream that sends Google's access token (a vertex
 * upstream without api_key); its index into *IDX when so. */
int	kv_gcp_needed(const struct kv_config *cf, size_t *idx);

/* At start-up, before the first worker is forked: map the shared slot
 * and, when CF needs it, fetch the token. 0, or -1 (logged: the start
 * fails). */
int	kv_gcp_refresh_start(struct kv_mloop *lp, const struct kv_config *cf,
	    const struct kv_ledger *l);

/* After a reload to CF: a config that newly needs a token gets it fetched
 * now, by the helper. */
void	kv_gcp_refresh_config(const struct kv_config *cf);

/* In a forked worker: close the master's end of a helper's pipe. */
void	kv_gcp_refresh_forget(void);

#endif

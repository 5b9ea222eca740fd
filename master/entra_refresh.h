/* The master's Entra ID token for provider = azure upstreams with tenant
 * set: fetched at start-up (blocking, before any worker: without one the
 * start fails), published to the shared slot the workers read
 * (common/entra_token.h), refreshed 5 minutes before it expires by a
 * helper process (master/cred_refresh.h). One per master. */
#ifndef KV_ENTRA_REFRESH_H
#define KV_ENTRA_REFRESH_H

#include <stddef.h>

#include "common/config.h"
#include "master/loop.h"
#include "shm/ledger.h"

/* The first upstream of CF that sends an Entra token (provider = azure
 * with tenant set), or NULL. */
const struct kv_upstream *kv_entra_needed(const struct kv_config *cf);

/* At start-up, before the first worker is forked: map the shared slot
 * and, when CF needs it, fetch the token. 0, or -1 (logged: the start
 * fails). */
int	kv_entra_refresh_start(struct kv_mloop *lp, const struct kv_config *cf,
	    const struct kv_ledger *l);

/* After a reload to CF: a config that newly needs a token, or names
 * another identity, gets one fetched now, by the helper. */
void	kv_entra_refresh_config(const struct kv_config *cf);

/* In a forked worker: close the master's end of a helper's pipe. */
void	kv_entra_refresh_forget(void);

#endif

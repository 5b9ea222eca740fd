/* The master's copy of the OpenID provider's keys for [auth jwt]
 * jwks_url: fetched by a helper process (never the master's loop, never a
 * request's path), checked as the verifier reads it (common/jwks.h) and
 * written beside the ledger (LEDGER.jwks, replaced by rename, so a reader
 * sees the old set or the new whole), then fetched again every 15 minutes;
 * a failed fetch keeps the set it had and is retried after 1, 2, 4 ... 300 s.
 * The file outlives restarts: a master that starts while the provider is
 * down still has its keys. */
#ifndef KV_JWKS_REFRESH_H
#define KV_JWKS_REFRESH_H

#include "common/config.h"
#include "master/loop.h"
#include "shm/ledger.h"

/* LEDGER.jwks into OUT (CAP bytes); -1 when it does not fit. */
int	kv_jwks_cache_path(const struct kv_config *cf, char *out, size_t cap);

/* At start-up, after the ledger is mapped: note a cached set (logged), and
 * when CF has a jwks_url, start the first fetch. */
void	kv_jwks_refresh_start(struct kv_mloop *lp, const struct kv_config *cf,
	    const struct kv_ledger *l);

/* After a reload to CF: a new jwks_url is fetched now; none stops it. */
void	kv_jwks_refresh_config(const struct kv_config *cf);

/* In a forked worker: close the master's end of a helper's pipe. */
void	kv_jwks_refresh_forget(void);

#endif

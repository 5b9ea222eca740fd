/* The master's AWS credentials for SigV4 upstreams: fetched at start-up
 * (blocking, before any worker: a Bedrock upstream with neither api_key nor
 * credentials fails the start), published to the shared slot the workers
 * read (common/aws_creds.h), and refreshed 5 minutes before they expire by
 * a short-lived helper process that runs the chain (master/aws_chain.h)
 * and hands the result back over a pipe the master's loop watches: the
 * master itself never waits on AWS. On failure the helper is tried again
 * after 1, 2, 4 ... 60 s, logged with back-off. One per master. */
#ifndef KV_AWS_REFRESH_H
#define KV_AWS_REFRESH_H

#include "common/config.h"
#include "master/loop.h"
#include "shm/ledger.h"

/* Whether CF has an upstream that signs with SigV4 (a Bedrock upstream
 * without api_key); its index into *IDX when so. */
int	kv_aws_needed(const struct kv_config *cf, size_t *idx);

/* At start-up, before the first worker is forked: map the shared slot
 * (kept for the master's life, so every later worker inherits it) and,
 * when CF needs them, fetch the credentials. LP is the master's loop; L
 * the ledger a helper unmaps. 0, or -1 (logged: the start fails). */
int	kv_aws_refresh_start(struct kv_mloop *lp, const struct kv_config *cf,
	    const struct kv_ledger *l);

/* After a reload to CF (cheap when CF is the config seen last): a config
 * that newly needs credentials gets them fetched now, by the helper. */
void	kv_aws_refresh_config(const struct kv_config *cf);

/* In a forked worker: close the master's end of a helper's pipe. */
void	kv_aws_refresh_forget(void);

#endif

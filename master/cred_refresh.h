/* The master's refresh of an upstream credential that expires (AWS's
 * credentials, Google's access token): a blocking fetch at start-up,
 * published to the shared slot the workers read, then refreshed 5 minutes
 * before expiry by a short-lived helper process (master/helper_proc.h) that
 * hands the result back over a pipe the master's loop watches: the master
 * itself never waits on a provider. On failure the helper is tried again
 * after 1, 2, 4 ... 60 s, logged with back-off. The owner says what to
 * fetch and where to publish it (struct kv_credref_ops). */
#ifndef KV_CRED_REFRESH_H
#define KV_CRED_REFRESH_H

#include <stddef.h>
#include <stdint.h>

#include "common/backoff.h"
#include "master/helper_proc.h"
#include "master/loop.h"
#include "shm/ledger.h"

struct kv_credref_ops {
	const char	*what;		/* "AWS credentials", for the log */
	size_t		 size;		/* of one set of credentials */
	/* In the helper (or at start-up): fetch into CREDS (SIZE bytes,
	 * zeroed). 0, or -1 with the reason in ERR[0..ERRLEN), nothing
	 * secret in it. */
	int		(*fetch)(void *creds, char *err, size_t errlen);
	/* In the master: hand CREDS to the workers. */
	void		(*publish)(const void *creds);
	/* When CREDS expire (Unix seconds, 0 never); where they came from. */
	int64_t		(*expires)(const void *creds);
	const char	*(*source)(const void *creds);
	/* Log a failed refresh (the owner's KV code): WHY, the next try in
	 * RETRY_S seconds, MORE the back-off's count. */
	void		(*log_failed)(const char *why, int retry_s, const char *more);
};

struct kv_credref {
	const struct kv_credref_ops	*ops;
	struct kv_mloop			*lp;
	int				 needed;	/* the config wants them */
	struct kv_mloop_timer		 timer;
	struct kv_helper		 helper;
	void				*ans;		/* the helper's answer */
	struct kv_backoff		 bo;
	int				 retry_s;
};

/* Set R up for OPS on loop LP (L: the ledger a helper unmaps); no fetch.
 * 0, or -1 (out of memory). */
int	kv_credref_init(struct kv_credref *r, const struct kv_credref_ops *ops,
	    struct kv_mloop *lp, const struct kv_ledger *l);

/* Publish CREDS and arm the next refresh from their expiry. */
void	kv_credref_publish(struct kv_credref *r, const void *creds);

/* Start the helper now, when R is needed and none runs. */
void	kv_credref_run(struct kv_credref *r);

/* In a forked worker: close the master's end of a helper's pipe. */
void	kv_credref_forget(struct kv_credref *r);

#endif

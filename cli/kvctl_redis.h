/* kvctl's Redis client (the [cluster]'s Redis: kvctl cluster, and the
 * issued keys kvctl writes there itself): blocking, over common/resp.c,
 * every read and write within a timeout; TLS, Sentinels and AUTH as the
 * master's connection does them. */
#ifndef KV_CLI_KVCTL_REDIS_H
#define KV_CLI_KVCTL_REDIS_H

#include <stddef.h>
#include <openssl/ssl.h>

#include "common/config.h"
#include "common/resp.h"

struct kvctl_redis {
	int			 fd;
	SSL_CTX			*ctx;		/* rediss:// */
	SSL			*ssl;
	char			*buf;
	size_t			 len, cap, used;
	struct kv_resp_reply	 r;
};

/* Connects C (zeroed by the caller) to CL's Redis: the Sentinels asked
 * first when CL names them, TLS for rediss://, AUTH with CL's user and
 * password. 0, or -1 with the reason on stderr (C then needs only
 * kvctl_redis_close). */
int	kvctl_redis_open(struct kvctl_redis *c, const struct kv_cluster *cl);

/* Sends one command and waits for its reply (valid until the next call);
 * NULL when the connection failed (errno says how). An error reply is a
 * reply. */
const struct kv_resp_value *kvctl_redis_call(struct kvctl_redis *c, int argc,
    const char *const *argv);

/* Closes and frees what C holds. */
void	kvctl_redis_close(struct kvctl_redis *c);

#endif

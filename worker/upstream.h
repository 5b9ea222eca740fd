/* Upstream connections of one worker: TLS contexts, DNS refreshed without
 * blocking the loop, non-blocking connect, and a keep-alive pool per
 * upstream (a TLS handshake to a provider costs tens of milliseconds). */
#ifndef KV_UPSTREAM_H
#define KV_UPSTREAM_H

#include <netdb.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "common/config.h"
#include "worker/stream.h"

#define KV_POOL_MAX_IDLE	64	/* idle connections kept per upstream */
#define KV_POOL_IDLE_SECS	30	/* providers close idle keep-alive sooner */
#define KV_DNS_REFRESH_SECS	60

struct kv_upconn;

struct kv_upstream_rt {
	const struct kv_upstream *cf;
	SSL_CTX		*ctx;		/* NULL for http:// */
	SSL_SESSION	*session;	/* last session, for resumption */
	struct addrinfo	*ai;		/* current addresses, NULL until resolved */
	int		 numeric;	/* host is an IP literal: never re-resolved */
	int64_t		 resolved_at;
	struct gaicb	 gcb;		/* getaddrinfo_a request in flight */
	struct addrinfo	 ghints;
	int		 resolving;
	struct kv_upconn *idle;		/* pool, most recently used first */
	int		 nidle;
};

struct kv_upconn {
	struct kv_stream	 s;
	struct kv_upstream_rt	*rt;
	int			 reused;	/* came from the pool */
	int64_t			 idle_since;
	struct kv_upconn	*next;
};

/* Build runtime state for every upstream in cf: TLS contexts (verification
 * on, the system store or ca_file) and a first, blocking DNS lookup (at
 * start-up only). Returns 0, or -1 with a reason in err. */
int	kv_upstreams_init(struct kv_upstream_rt **rts, const struct kv_config *cf,
	    char *err, size_t errlen);
void	kv_upstreams_free(struct kv_upstream_rt *rts, size_t n);

/* Runtime state of a configured upstream. */
struct kv_upstream_rt *kv_upstreams_find(struct kv_upstream_rt *rts, size_t n,
	    const struct kv_upstream *up);

/* Once a second: start or collect DNS refreshes, close expired idle
 * connections. Never blocks. */
void	kv_upstreams_tick(struct kv_upstream_rt *rts, size_t n, int64_t now);

/* A pooled connection that is still open, or NULL. One released this very
 * second (now, the pool's clock: time(NULL)) is taken without asking the
 * kernel: a server that closes an idle connection does so after seconds,
 * and one that closes it sooner is caught by the retry before any byte. */
struct kv_upconn *kv_upconn_take_idle(struct kv_upstream_rt *rt, int64_t now);

/* Start a non-blocking connect (TCP_NODELAY set; TLS session prepared with
 * SNI, hostname or IP verification and resumption). Returns the new
 * connection (connect may still be in progress: wait for EPOLLOUT, then
 * kv_upconn_connected), or NULL with a reason in err. */
struct kv_upconn *kv_upconn_connect(struct kv_upstream_rt *rt, char *err, size_t errlen);

/* After EPOLLOUT on a connecting socket: 0 when connected, -1 with reason. */
int	kv_upconn_connected(struct kv_upconn *uc, char *err, size_t errlen);

/* Return a connection whose last response ended cleanly to the pool. */
void	kv_upconn_release(struct kv_upconn *uc, int64_t now);

/* Close and free; abort sends a reset. */
void	kv_upconn_close(struct kv_upconn *uc, int abort);

#endif

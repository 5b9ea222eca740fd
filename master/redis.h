/* One non-blocking Redis connection, driven from the master's poll loop:
 * TCP or a unix socket, AUTH, pipelined commands whose replies go to
 * callbacks in order, and reconnection with back-off. No threads: the
 * master forks. */
#ifndef KV_REDIS_H
#define KV_REDIS_H

#include <poll.h>
#include <stddef.h>

#include "common/config.h"
#include "common/resp.h"

struct kv_redis;

/* Called once per command: REPLY is its reply (an ERROR reply included),
 * or NULL when the connection was lost before it came. The reply lives
 * only during the call. */
typedef void (*kv_redis_cb)(void *arg, const struct kv_resp_value *reply);

/* Called each time a connection is up and authenticated. */
typedef void (*kv_redis_ready_cb)(void *arg);

/* A connection for C (host/port or unix path, password). Connecting
 * starts at the first kv_redis_pollfd. Returns NULL on out of memory. */
struct kv_redis *kv_redis_new(const struct kv_cluster *c, kv_redis_ready_cb ready, void *arg);

/* Close the socket, fail every pending callback, free R. */
void	kv_redis_free(struct kv_redis *r);

/* In a forked child: close the socket without a word to Redis or any
 * callback, so the child holds no copy of the parent's connection. */
void	kv_redis_forget(struct kv_redis *r);

/* Fill at most one pollfd (returns 0 or 1) and lower *timeout_ms to the
 * next time R needs to run (connect attempt, connect or reply deadline). */
int	kv_redis_pollfd(struct kv_redis *r, struct pollfd *pfd, int *timeout_ms);

/* After poll: PFD is what kv_redis_pollfd filled (NULL when it filled
 * none). Reads, writes, dispatches replies, handles timers. */
void	kv_redis_run(struct kv_redis *r, const struct pollfd *pfd);

/* 1 when connected and authenticated. */
int	kv_redis_ready(const struct kv_redis *r);

/* Queue a command; CB gets its reply. Returns 0, or -1 when not ready or
 * the output buffer is over its bound (CB is then not called). */
int	kv_redis_call(struct kv_redis *r, int argc, const char *const *argv,
	    const size_t *lens, kv_redis_cb cb, void *arg);

/* Drop the connection (an unusable reply, a lost script): pending
 * callbacks get NULL and a reconnect follows the back-off. */
void	kv_redis_reset(struct kv_redis *r, const char *why);

#endif

/* One client connection and its relay state machine: read a request head,
 * resolve the account and reserve budget, connect (or reuse) an upstream,
 * stream the request body, stream the response back while scanning it for
 * usage, settle the charge, then the next request on the connection. */
#ifndef KV_CONN_H
#define KV_CONN_H

#include <stdint.h>

#include "worker/worker.h"

/* Take ownership of an accepted, non-blocking client socket -- unless the
 * memory guard has no room for another connection even after dropping the
 * slowest unfinished request heads: then it gets a 503 and is closed at
 * once. */
void	kv_conn_accept(struct kv_worker *w, int fd);

/* An epoll event on the client (upstream == 0) or upstream socket. */
void	kv_conn_event(struct kv_conn *c, int upstream, uint32_t events);

/* The event sources' callbacks (evsrc.h): a client socket's, and an
 * upstream socket's (nothing for one idle in the pool: its events were
 * taken before the turn's dispatch, see worker.c pool_events). */
void	kv_conn_client_ready(struct kv_worker *w, struct kv_evsrc *src, uint32_t events);
void	kv_conn_upstream_ready(struct kv_worker *w, struct kv_evsrc *src, uint32_t events);

/* Run a connection that is on the worker's ready list. */
void	kv_conn_resume(struct kv_conn *c);

/* Once a second: enforce client_timeout / upstream_timeout on c. */
void	kv_conn_tick(struct kv_conn *c, int64_t now_ms);

/* The worker is draining: close c if it sits idle between requests,
 * otherwise let its request finish and then close. */
void	kv_conn_drain(struct kv_conn *c);

/* Free connections closed during the last epoll batch: an event later in
 * the same batch may still point at one. */
void	kv_conn_reap(struct kv_worker *w);

/* Close every connection at once (drain deadline passed). */
void	kv_conn_close_all(struct kv_worker *w);

#endif

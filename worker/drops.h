/* Connections dropped before a request is served: refused at accept (a
 * 503, then a graceful close) or shed to make room for others. Each is
 * counted in the ledger (kilovolt_accept_refusals_total,
 * kilovolt_idle_shed_total, kilovolt_heads_shed_total), written to the
 * request log, and summed in one log line a minute with its cause
 * (KV0655). */
#ifndef KV_DROPS_H
#define KV_DROPS_H

#include <stdint.h>

struct kv_worker;

enum kv_drop_cause {
	KV_DROP_FULL,		/* refused: memory at the refusal point */
	KV_DROP_MAXCONN,	/* refused: max_connections */
	KV_DROP_IDLE,		/* shed: it had sent nothing */
	KV_DROP_HEAD,		/* shed: its head was unfinished (the slowest) */
	KV_DROP_CAUSES
};

/* Refused connections linger this long at most (read away, then closed),
 * and at most KV_DROP_LINGER of them at once: a flood of refused sockets
 * holds no more (the oldest is closed for a new one). */
#define KV_DROP_LINGER_MS	1000
#define KV_DROP_LINGER		64

/* Answer FD (just accepted, nothing read) with 503 and Retry-After for
 * CAUSE (KV_DROP_FULL or KV_DROP_MAXCONN), then close it gracefully: our
 * side is shut and what the client sent is read away until it closes or
 * KV_DROP_LINGER_MS pass, so that the kernel does not answer the unread
 * request with a reset that destroys the 503. Counts and logs it. FD is
 * the module's from here on. */
void	kv_drop_refuse(struct kv_worker *w, int fd, enum kv_drop_cause cause);

/* A connection of BYTES_IN bytes received is being shed for CAUSE
 * (KV_DROP_IDLE or KV_DROP_HEAD): count and log it (the caller closes). */
void	kv_drop_shed(struct kv_worker *w, enum kv_drop_cause cause, uint64_t bytes_in);

/* Once a second: close refused connections past their linger, and at
 * most once a minute log what was dropped since the last line. */
void	kv_drop_tick(struct kv_worker *w);

/* The worker exits: log what was dropped since the last line, and close
 * every lingering refused connection. */
void	kv_drop_close_all(struct kv_worker *w);

#endif

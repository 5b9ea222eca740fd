/* Upstream connections of one worker: TLS contexts, DNS refreshed without
 * blocking the loop, non-blocking connect, and a keep-alive pool per
 * upstream (a TLS handshake to a provider costs tens of milliseconds). */
#ifndef KV_UPSTREAM_H
#define KV_UPSTREAM_H

#include <netdb.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "common/backoff.h"
#include "common/config.h"
#include "worker/stream.h"
#include "worker/evsrc.h"

#define KV_POOL_MAX_IDLE	64	/* idle connections kept per upstream */
#define KV_POOL_IDLE_SECS	30	/* providers close idle keep-alive sooner */
#define KV_DNS_REFRESH_SECS	60
#define KV_TLS_HANDSHAKES_MAX	32	/* TLS handshakes in flight per upstream */

struct kv_upconn;

/* A request parked until its upstream admits another TLS handshake
 * (kv_upstream_gate). Embedded in the caller's own struct. */
struct kv_upwait {
	struct kv_upwait	 *next, **pprev;	/* pprev NULL: not parked */
	struct kv_upstream_rt	 *rt;		/* set while parked or granted */
	int			  granted;	/* woken: a slot is held for it */
	void			(*wake)(struct kv_upwait *);
};

#define KV_TSLOT_UNKNOWN	(-2)

struct kv_upstream_rt {
	const struct kv_upstream *cf;
	kv_ev_fn	*ready;		/* its connections' event callback (the engine's) */
	char		 label[64];	/* "NAME/HOST:PORT" (kv_target_label), made once */
	int		 tslot;		/* its ledger target slot; KV_TSLOT_UNKNOWN until used */
	SSL_CTX		*ctx;		/* NULL for http:// */
	SSL_SESSION	*session;	/* last session, for resumption */
	struct addrinfo	*ai;		/* current addresses, NULL until resolved */
	int		 numeric;	/* host is an IP literal: never re-resolved */
	int64_t		 resolved_at;
	struct kv_backoff dns_log;	/* KV0302 once, then backed off */
	struct gaicb	 gcb;		/* getaddrinfo_a request in flight */
	struct addrinfo	 ghints;
	int		 resolving;
	/* The pool, in two lists, most recently used first: idle holds the
	 * connections that were in it at the last epoll_wait (a close of
	 * theirs is an event that wait returned), fresh those released since
	 * (their close may not have been seen yet). */
	struct kv_upconn *idle;
	struct kv_upconn *fresh;
	uint64_t	 fresh_turn;	/* the loop turn fresh was filled in */
	int		 nidle;		/* in both lists */
	int		 handshaking;	/* TLS handshakes in flight */
	int		 unsettled;	/* started with no session, no ticket yet */
	int		 no_tickets;	/* a connection settled and got none */
	int		 ticket_late;	/* a parked request gave up waiting for it */
	int		 granted;	/* slots held for woken waiters */
	int		 nwaiting;	/* parked */
	/* What its streams are (memcost.h): the dearest kind among those it
	 * carried at the memory guard's last count, else what its config
	 * says; its requests still to come are priced as that. */
	int		 cost_kind;
	struct kv_upwait *waiters;	/* parked by kv_upstream_gate, FIFO */
	struct kv_upwait **waiters_tail;
};

struct kv_upconn {
	struct kv_stream	 s;
	struct kv_upstream_rt	*rt;
	/* Its epoll entry outlives a request: a pooled connection stays in
	 * the set (watching EPOLLIN, so a server's close is seen), and is
	 * not added for one request and deleted after it (two epoll_ctl a
	 * request were 6 % of a worker's CPU on small requests). */
	struct kv_evsrc		 ev;
	int			 registered;	/* in the worker's epoll set */
	uint32_t		 watch;		/* the events asked for */
	int			 dead;		/* closed, freed by kv_upconn_reap */
	int			 reused;	/* came from the pool */
	int			 in_handshake;	/* counted in rt->handshaking */
	int			 unsettled;	/* counted in rt->unsettled */
	int64_t			 idle_since;
	struct kv_upconn	*next;
};

/* The worker's loop calls this after each epoll_wait, before it handles
 * the events: the connections released before it join the pool's idle
 * list. COMPLETE: the wait returned every ready event (fewer than it had
 * room for), so a pooled connection the server closed has its event among
 * them (kv_upconn_idle_event); after a wait that filled its array, a
 * close may be among the events it left for the next one, and pooled
 * connections are checked with poll(2) again until a complete wait. */
void	kv_upstreams_turn(int complete);

/* Build runtime state for every upstream in cf: TLS contexts (verification
 * on, the system store or ca_file) and a first, blocking DNS lookup (at
 * start-up only). READY is the callback every upstream connection's epoll
 * events go to (handed down: the pool calls nothing above it). Returns 0,
 * or -1 with a reason in err. */
int	kv_upstreams_init(struct kv_upstream_rt **rts, const struct kv_config *cf,
	    kv_ev_fn *ready, char *err, size_t errlen);
void	kv_upstreams_free(struct kv_upstream_rt *rts, size_t n);

/* Runtime state of a configured upstream (one of the cf->upstreams the
 * runtimes were built from), or NULL. */
struct kv_upstream_rt *kv_upstreams_find(struct kv_upstream_rt *rts, size_t n,
	    const struct kv_upstream *up);

/* Once a second: start or collect DNS refreshes, close expired idle
 * connections. Never blocks. */
void	kv_upstreams_tick(struct kv_upstream_rt *rts, size_t n, int64_t now);

/* May a request to rt go on to take a pooled connection or open one?
 * 0: yes (plaintext; a pooled connection is there; or a TLS handshake slot
 * is free and a session can be resumed or none is awaited).
 * 1: w is parked; w->wake is called (once, from inside an upstream call
 * of this worker) when it may try again. A burst of requests to a target
 * with no session yet waits for the first full handshake's ticket, so the
 * rest resume, and at most KV_TLS_HANDSHAKES_MAX handshakes (each holding
 * record buffers and key shares) are in flight at once. */
int	kv_upstream_gate(struct kv_upstream_rt *rt, struct kv_upwait *w);

/* Unpark w if it is parked (it is then never woken). */
void	kv_upstream_ungate(struct kv_upwait *w);

/* A request parked for the first handshake's ticket waited long enough:
 * until a session arrives, requests to rt no longer wait for one (each
 * handshakes on its own, up to KV_TLS_HANDSHAKES_MAX at once), so a target
 * that never finishes a handshake fails them side by side, not one after
 * another. Wakes what may go now. */
void	kv_upstream_gate_stop_waiting(struct kv_upstream_rt *rt);

/* A pooled connection that is still open, or NULL. One that was in the pool
 * at the last (complete) epoll_wait is taken without asking the kernel: it
 * sits in the epoll set watching EPOLLIN, so a close of the server's
 * before that wait was an event, and the loop handled it before anything
 * else (kv_upconn_idle_event). One released since, when no such one is
 * left, is checked with poll(2): a server may close right after its
 * answer. A request is never sent twice, so a close must be seen before
 * any byte is written. NOW is unused (the pool's clock is time(NULL)). */
struct kv_upconn *kv_upconn_take_idle(struct kv_upstream_rt *rt, int64_t now);

/* Start a non-blocking connect (TCP_NODELAY set; TLS session prepared with
 * SNI, hostname or IP verification and resumption). Returns the new
 * connection (connect may still be in progress: wait for EPOLLOUT, then
 * kv_upconn_connected), or NULL with a reason in err. */
struct kv_upconn *kv_upconn_connect(struct kv_upstream_rt *rt, char *err, size_t errlen);

/* An epoll event for a connection that waited in the pool when epoll_wait
 * returned it (uc->ev.ptr NULL), handled before the turn's other events:
 * the server closed it or sent bytes nobody asked for (an idle connection
 * watches EPOLLIN only, and HUP and ERR are always reported), so it leaves
 * the pool and is closed. An event of a connection released after the wait
 * is stale (it was readable for the request that then read it) and the
 * worker does not pass it here. */
void	kv_upconn_idle_event(struct kv_upconn *uc);

/* Connections closed while in the epoll set are freed here, once the
 * worker has handled the events of its last epoll_wait: one of them may
 * still point at such a connection. */
void	kv_upconn_reap(void);

/* After EPOLLOUT on a connecting socket: 0 when connected, -1 with reason. */
int	kv_upconn_connected(struct kv_upconn *uc, char *err, size_t errlen);

/* Return a connection whose last response ended cleanly to the pool. */
void	kv_upconn_release(struct kv_upconn *uc, int64_t now);

/* Close and free; abort sends a reset. */
void	kv_upconn_close(struct kv_upconn *uc, int abort);

#endif

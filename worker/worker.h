/* A worker process: one epoll loop relaying many connections at once. */
#ifndef KV_WORKER_H
#define KV_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/config.h"
#include "shm/ledger.h"
#include "common/http.h"
#include "worker/deadlines.h"
#include "worker/evsrc.h"
#include "worker/memguard.h"
#include "worker/upstream.h"

#define KV_EXIT_CONFIG		2		/* exit code: broken config, do not respawn */


struct kv_conn;

/* A list of connections, oldest first (conn_io.c keeps them). */
struct kv_connq {
	struct kv_conn		*first, *last;
};

struct kv_worker {
	const struct kv_config	*cf;
	/* the budget tree's node accounts by their config slot, found on
	 * first use (admission_tree.c); NULL until then */
	struct kv_account	**tree_nodes;
	/* [auth jwt]'s key set and verified tokens (jwt_auth.c); NULL until
	 * the first token */
	struct kv_jwt_keys	*jwt;
	struct kv_ledger	*ledger;
	struct kv_worker_slot	*slot;
	int			 slot_index;
	uint32_t		 generation;
	int			 epfd;
	int			 lfd;		/* -1 once draining */
	struct kv_evsrc		 lev;
	int			 accept_paused;
	int64_t			 accept_resume_ms;
	struct kv_upstream_rt	*ups;
	struct kv_conn		*conns;
	size_t			 nconns;
	struct kv_conn		*ready;		/* connections with work epoll cannot see */
	struct kv_conn		*dead;		/* closed; freed once no event can name them */
	uint64_t		 spool_bytes;	/* request bytes spooled now ([server] spool_max) */
	char			*spool_io;	/* KV_SPOOL_IO bytes: see request_body */
	int			 draining;
	int64_t			 drain_deadline_ms;
	int64_t			 now_ms;
	int			 splice_ok;
	struct kv_memguard	 mem;		/* 503 past the memory budget */
	/* the connections the guard may shed, oldest first: those that sent
	 * nothing (new, or idle between requests), then unfinished heads */
	struct kv_connq		 idle, heads;
	/* how conn_io.c closes a connection it sheds: the engine's close, handed
	 * down (conn.c sets it), as the pool never calls up */
	void			(*shed_close)(struct kv_conn *);
	struct kv_deadlines	 deadlines;	/* every connection's, first due on top */
	struct kv_conn		*lease_parked;	/* waiting for cluster lease (leasewait.h) */
	int			 nlease_parked;
	int64_t			 lease_kick_ms;	/* the master was last kicked */
	int64_t			 lease_poll_ms;	/* the parked last looked again */
	/* scratch for the parser, one request or response at a time */
	struct kv_http_request	 req;
	uint64_t		 req_parse;	/* bumped by every parse into req */
	struct kv_http_response	 res;
};

/* The worker's whole life: serve connections accepted on lfd with config cf
 * until told to stop (SIGTERM: drain and exit 0) or the master dies.
 * Never returns. */
void	kv_worker_main(const struct kv_config *cf, struct kv_ledger *l,
	    int slot, uint32_t generation, int lfd) __attribute__((noreturn));

#endif

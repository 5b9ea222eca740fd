/* The worker's memory guard: past its share of the daemon's memory budget
 * ([server] memory_limit, by default the limit of the memory cgroup the
 * daemon runs in) a worker answers new requests with 503 and Retry-After,
 * while the streams it already carries go on, so that the kernel's OOM
 * killer never has to pick a process (docs/tls-memory.md). */
#ifndef KV_MEMGUARD_H
#define KV_MEMGUARD_H

#include <stdint.h>

#include "common/config.h"
#include "worker/memcost.h"

struct kv_conn;
struct kv_ledger;
struct kv_upstream_rt;

/* What a request still to be set up may add (TLS session, record and
 * socket buffers, kernel socket memory) is learned, per kind of upstream
 * leg, from the cgroup's memory against the streams carried (memcost.h),
 * at most every KV_MEMGUARD_LEARN_MS: from each rise of KV_MEMGUARD_RISE
 * streams above the most the worker carried before. */
#define KV_MEMGUARD_LEARN_MS	50
#define KV_MEMGUARD_RISE	128
#define KV_MEMGUARD_READ_MS	10	/* re-read the usage at most this often */
#define KV_MEMGUARD_RETRY_S	1	/* Retry-After of a refusal */
/* The connections' own memory -- each one's state and socket from accept,
 * and the bytes of a request head not yet whole -- may take this share of
 * a worker's part of the limit; past it the connections that have sent
 * nothing are closed, oldest first, then the slowest unfinished heads (a
 * flood of silent or slow-header connections cannot fill the rest, nor
 * lock real clients out). */
#define KV_MEMGUARD_CONN_PCT	30

struct kv_memguard {
	int64_t		limit;		/* bytes; 0: the guard is off */
	int64_t		refuse_at;	/* limit * memory_refuse / 100 */
	int		nworkers;
	struct kv_upstream_rt *ups;	/* their pending handshakes; cost_kind set here */
	size_t		nups;
	const size_t	*nconns;	/* the worker's connections */
	struct kv_conn	*const *conns;	/* ... their list, walked to count the streams */
	const struct kv_ledger *ledger;	/* every worker's connections, or NULL */
	int64_t		idle;		/* the first reading, -1 before it */
	struct kv_memcost cost;		/* what a stream adds, by kind, as learned */
	int64_t		learn_ms;	/* the last walk of the streams */
	int		live;		/* streams carried at that walk */
	int		rise_n;		/* streams at the last rise sampled (learn_rise) */
	int		rise_live[KV_COST_KINDS];	/* ... by kind */
	int64_t		rise_used;	/* ... and the usage then */
	int64_t		rise_others;	/* ... and the connections without a stream */
	int64_t		said[KV_COST_KINDS];	/* estimates last logged */
	int		usage_fd;	/* the cgroup's usage file, or /proc/self/statm */
	int		cg;		/* usage_fd is the cgroup's */
	int		v2;
	int		stat_fd;	/* the cgroup's memory.stat, -1 none */
	int64_t		used;		/* last reading, bytes */
	int64_t		read_ms;
	int		full;		/* refusing */
	int		since_read;	/* admitted since the last reading */
	uint64_t	refused;
	int64_t		held;		/* the connections' own bytes (kv_memguard_hold) */
	int64_t		held_max;	/* their share; 0: no bound */
	int		shedding;	/* closing connections: logged once an episode */
	int64_t		trim_ms;	/* the last malloc_trim */
	uint64_t	shed;
};

/* Set the guard up from cf: resolve memory_limit = auto from the cgroup
 * (v2 memory.max, v1 memory.limit_in_bytes; no limit there: off) and open
 * the cgroup's usage file (memory.current or memory.usage_in_bytes) when
 * it can be read; without one, each worker holds its own private resident
 * memory to 1/nworkers of the limit. ups: the worker's upstreams (their
 * handshakes still to come count as memory to come); nconns: its count of
 * connections, conns their list; ledger (or NULL) gives every worker's
 * count of connections, for this worker's part of the cgroup's memory.
 * Logs what it decided.
 * Never fails: a guard it cannot set up is off. */
void	kv_memguard_init(struct kv_memguard *g, const struct kv_config *cf, int nworkers,
	    struct kv_upstream_rt *ups, size_t nups, const size_t *nconns,
	    struct kv_conn *const *conns, const struct kv_ledger *ledger);

/* Should a new request be refused? The usage (the cgroup's less its
 * inactive page cache, which the kernel reclaims before it kills; read at
 * most every KV_MEMGUARD_READ_MS) plus what every request still to come
 * lacks (parked at the handshake gate, or admitted since the reading; half
 * of it for one in the handshake): a stream of its upstream's kind (as
 * learned, memcost.h; what a carried stream costs now if that is more)
 * less the connection it holds already -- this worker's counted now, the
 * other workers' as each last published them in the ledger
 * (kv_worker_slot.mem_pending) -- must stay under the refusal point.
 * Logs once when refusing starts and once when it stops. now_ms: the
 * worker's clock. */
int	kv_memguard_full(struct kv_memguard *g, int64_t now_ms);

void	kv_memguard_close(struct kv_memguard *g);

/* Once a loop turn: learn from a fresh reading (at most every
 * KV_MEMGUARD_LEARN_MS, only with connections), so that streams set up
 * after the admissions that let them in still teach what they cost: a
 * burst admitted before its handshakes end would otherwise leave the
 * estimate at its start. And publish this worker's requests still to come
 * in its ledger slot, for the other workers' kv_memguard_full. */
void	kv_memguard_observe(struct kv_memguard *g, int64_t now_ms);

/* Is the memory itself (the usage as kv_memguard_full reads it, without
 * the requests still to come) at the refusal point? Only then is a new
 * connection refused at accept: the connections' own share is kept by
 * shedding (conn_heads_shed), never by refusing. */
int	kv_memguard_at_limit(struct kv_memguard *g, int64_t now_ms);

/* The connections' own memory grew (or shrank) by DELTA bytes. */
void	kv_memguard_hold(struct kv_memguard *g, int64_t delta);

/* Are the connections' own bytes, with MORE to come, past their share
 * (KV_MEMGUARD_CONN_PCT of this worker's part of the limit)? 0 when the
 * guard is off. */
int	kv_memguard_conns_over(const struct kv_memguard *g, int64_t more);

/* N connections (silent ones, unfinished heads) were closed to make room
 * (0: the episode is over).
 * Logs once when dropping starts and once when it ends; gives the freed
 * heap back to the kernel (malloc_trim, at most every
 * KV_MEMGUARD_READ_MS of NOW_MS), so that the
 * cgroup's usage, which the refusals read, falls with it. */
void	kv_memguard_shed(struct kv_memguard *g, int n, int64_t now_ms);

/* The memory cgroup limit of this process in bytes, 0 when there is none
 * (or it cannot be read). Exposed for kilovoltd -t. */
int64_t	kv_memguard_cgroup_limit(void);

#endif

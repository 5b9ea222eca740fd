/* The worker's memory guard: past its share of the daemon's memory budget
 * ([server] memory_limit, by default the limit of the memory cgroup the
 * daemon runs in) a worker answers new requests with 503 and Retry-After,
 * while the streams it already carries go on, so that the kernel's OOM
 * killer never has to pick a process (docs/tls-memory.md). */
#ifndef KV_MEMGUARD_H
#define KV_MEMGUARD_H

#include <stdint.h>

#include "common/config.h"

/* What a request admitted now may still add once its streams are set up
 * (TLS session, record and socket buffers): the cgroup growth measured per
 * paced TLS stream, 21 KB, rounded up (docs/tls-memory.md). */
#define KV_MEMGUARD_STREAM_EST	(22 * 1024)
#define KV_MEMGUARD_READ_MS	10	/* re-read the usage at most this often */
#define KV_MEMGUARD_RETRY_S	1	/* Retry-After of a refusal */

struct kv_memguard {
	int64_t		limit;		/* bytes; 0: the guard is off */
	int64_t		refuse_at;	/* limit * memory_refuse / 100 */
	int		nworkers;
	int		usage_fd;	/* the cgroup's usage file, or /proc/self/statm */
	int		cg;		/* usage_fd is the cgroup's */
	int		v2;
	char		cgdir[4096];
	int64_t		used;		/* last reading, bytes */
	int64_t		read_ms;
	int64_t		window_ms;	/* start of the admissions window */
	int64_t		base;		/* the reading at its start */
	int		admitted;	/* requests admitted in the window */
	int		full;		/* refusing */
	uint64_t	refused;
};

/* Set the guard up from cf: resolve memory_limit = auto from the cgroup
 * (v2 memory.max, v1 memory.limit_in_bytes; no limit there: off) and open
 * the cgroup's usage file (memory.current or memory.usage_in_bytes) when
 * it can be read; without one, each worker holds its own private resident
 * memory to 1/nworkers of the limit. Logs what it decided. Never fails:
 * a guard it cannot set up is off. */
void	kv_memguard_init(struct kv_memguard *g, const struct kv_config *cf, int nworkers);

/* Should a new request be refused? Reads the usage at most every
 * KV_MEMGUARD_READ_MS; within each second, the usage at its start plus
 * KV_MEMGUARD_STREAM_EST for each request admitted since (times nworkers:
 * the others admit too), or the reading if higher, must stay under the
 * refusal point: a request's memory comes after its admission. Logs once when refusing
 * starts and once when it stops. now_ms: the worker's clock. */
int	kv_memguard_full(struct kv_memguard *g, int64_t now_ms);

void	kv_memguard_close(struct kv_memguard *g);

/* The memory cgroup limit of this process in bytes, 0 when there is none
 * (or it cannot be read). Exposed for kilovoltd -t. */
int64_t	kv_memguard_cgroup_limit(void);

#endif

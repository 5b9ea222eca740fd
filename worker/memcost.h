/* What one more stream adds to the daemon's memory, by kind of upstream
 * leg, as the memory guard learns it from the cgroup's growth over the
 * streams it carries (worker/memguard.c). Pure arithmetic, no I/O: the
 * guard takes the readings, this file turns them into an estimate
 * (docs/tls-memory.md, "The guard learns what a stream costs"). */
#ifndef KV_MEMCOST_H
#define KV_MEMCOST_H

#include <stdint.h>

/* The kinds of upstream leg a stream can ride: their costs differ by the
 * ~15 KB OpenSSL keeps for a connection left on its record layer. */
enum kv_memcost_kind {
	KV_COST_PLAIN,		/* http:// */
	KV_COST_TLS_OWN,	/* TLS 1.3 handed off to kilovolt's record layer */
	KV_COST_TLS_OPENSSL,	/* TLS left on OpenSSL's (1.2, CCM, tls_record_layer = openssl) */
	KV_COST_KINDS
};

/* Before any reading: the figures the guard used as constants, measured
 * per paced stream in a v1 cgroup (docs/tls-memory.md); high on purpose,
 * since a first burst is judged by them. */
#define KV_COST_START_PLAIN	(12 * 1024)
#define KV_COST_START_OWN	(12 * 1024)
#define KV_COST_START_OPENSSL	(22 * 1024)
/* Never below: what the userspace part alone of such a stream keeps (a
 * plaintext stream's connection state and buffers about 4.5 KB, plus its
 * two sockets; OpenSSL's ~15.3 KB on top), so that one reading that came
 * out too low cannot open the gate wide. */
#define KV_COST_FLOOR_PLAIN	(6 * 1024)
#define KV_COST_FLOOR_OWN	(6 * 1024)
#define KV_COST_FLOOR_OPENSSL	(18 * 1024)
#define KV_COST_MAX		(64 * 1024)	/* a stream behind a slow client, at most */
/* Fewer carried streams than this say too little: the cgroup's reading
 * moves by a few hundred kB on its own (page cache, kernel). */
#define KV_COST_MIN_LIVE	64
/* A reading below the estimate moves it down by this fraction of the gap
 * (an exponentially weighted mean of the readings); one above it is taken
 * at once: growing is the dangerous direction. */
#define KV_COST_DOWN_SHIFT	2	/* 1/4 */

struct kv_memcost {
	int64_t		est[KV_COST_KINDS];	/* bytes a stream of the kind adds */
	uint64_t	learned[KV_COST_KINDS];	/* readings that moved it */
};

/* Every kind at its starting figure. */
void	kv_memcost_init(struct kv_memcost *m);

/* One reading: GROWTH bytes of memory over the idle reading are this
 * worker's part, carried by LIVE[k] streams of each kind. When one kind
 * carries at least 7/8 of them, its estimate moves toward (GROWTH less
 * the others' estimated share) / its count: at once when higher, by 1/4
 * of the gap when lower, never under its floor nor over KV_COST_MAX. A
 * mix where no kind dominates says only whether the estimates together
 * fall short: then each kind carried is raised in proportion.
 * BOUND: the growth holds more than these streams (connections still
 * being set up hold part of theirs): the reading can only lower an
 * estimate, never raise one. Returns the kind whose estimate moved, or -1
 * (too few streams, a mix, or a bound above the estimate). */
int	kv_memcost_learn(struct kv_memcost *m, int64_t growth, const int live[KV_COST_KINDS],
	    int bound);

/* The estimate for KIND (clamped to a valid kind). */
int64_t	kv_memcost_of(const struct kv_memcost *m, int kind);

/* Its floor and starting figure. */
int64_t	kv_memcost_floor(int kind);
int64_t	kv_memcost_start(int kind);

/* "plain HTTP", "TLS (own record layer)", "TLS (OpenSSL)": for the log. */
const char *kv_memcost_name(int kind);

#endif

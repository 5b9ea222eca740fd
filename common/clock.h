/* The clock helpers every process shares (worker, master, the ledger's
 * repair and rate limits), inline: they sit on the request path.
 * clock_gettime cannot fail with a valid clock id and pointer; were it to,
 * the figures read 0, a time long past. */
#ifndef KV_COMMON_CLOCK_H
#define KV_COMMON_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on clock ID (CLOCK_MONOTONIC, CLOCK_REALTIME, ...). */
static inline int64_t
kv_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) == -1)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Nanoseconds on CLOCK_MONOTONIC: durations and deadlines. */
static inline int64_t
kv_mono_ns(void)
{
	return kv_clock_ns(CLOCK_MONOTONIC);
}

/* Milliseconds on CLOCK_MONOTONIC, the same in every process of a host
 * (the targets' health and cooling times in the ledger use it). */
static inline int64_t
kv_now_ms(void)
{
	return kv_mono_ns() / 1000000;
}

#endif

/* Log back-off: an error that repeats every few seconds (an upstream that
 * does not resolve) is logged once, then at growing intervals with a count,
 * so that a day of it is a few dozen lines, not tens of thousands. */
#ifndef KV_BACKOFF_H
#define KV_BACKOFF_H

#include <stddef.h>
#include <stdint.h>

#define KV_BACKOFF_MAX_S	600	/* at least one line every 10 minutes */

struct kv_backoff {
	uint64_t	count;		/* failures since the first, 0 = none */
	int64_t		first_s;	/* when the first of them happened */
	int64_t		next_s;		/* the next one logged is at or after this */
	int64_t		step_s;		/* the current interval: 1, 2, 4 ... 600 s */
};

/* One more failure at NOW (seconds, any clock that does not go back).
 * Returns 1 when it should be logged: the first one, then the first at or
 * after each interval, the interval doubling up to KV_BACKOFF_MAX_S. */
int	kv_backoff_fail(struct kv_backoff *b, int64_t now);

/* ", still failing: N times in DURATION" for a repeat, "" for the first,
 * into BUF. NOW as for kv_backoff_fail. */
void	kv_backoff_describe(const struct kv_backoff *b, int64_t now, char *buf, size_t len);

/* The thing works again: returns the failures counted (0 when there were
 * none) and forgets them. */
uint64_t kv_backoff_ok(struct kv_backoff *b);

#endif

/* A worker's connection deadlines: a binary min-heap, so the loop sleeps
 * until the first one due and handles just those, instead of walking every
 * connection once a second. As nginx's timers, a deadline moved later (a
 * stream's idle deadline on every read) is lazy: the heap keeps the earlier
 * time and puts the entry back at its real one when that comes, so the
 * common move costs no heap work; a deadline moved earlier is sifted at
 * once. */
#ifndef KV_DEADLINES_H
#define KV_DEADLINES_H

#include <stddef.h>
#include <stdint.h>

/* Kept in its owner (struct kv_conn); zero-initialised is "not queued". */
struct kv_deadline {
	int64_t	 at;	/* the real deadline, ms */
	int64_t	 key;	/* its place in the heap: <= at */
	size_t	 idx;	/* heap position + 1; 0: not queued */
};

struct kv_deadlines {
	struct kv_deadline	**v;
	size_t			  n, cap;
};

/* Room for N queued deadlines, so kv_deadline_set never allocates.
 * Returns 0, or -1 on out of memory (Q unchanged). */
int	kv_deadlines_reserve(struct kv_deadlines *q, size_t n);

/* D is due at AT (ms), in place of what it had. Q must have room
 * (kv_deadlines_reserve) for one more when D is not queued. */
void	kv_deadline_set(struct kv_deadlines *q, struct kv_deadline *d, int64_t at);

/* D no longer has a deadline (its owner closes). */
void	kv_deadline_cancel(struct kv_deadlines *q, struct kv_deadline *d);

/* Take out and return an entry due by NOW (at <= NOW), or NULL when none
 * is; entries met whose deadline moved later go back in at their real time. */
struct kv_deadline *kv_deadlines_expired(struct kv_deadlines *q, int64_t now);

/* How long the loop may sleep from NOW for the first deadline: 0..MAX ms. */
int	kv_deadlines_wait_ms(const struct kv_deadlines *q, int64_t now, int max);

void	kv_deadlines_free(struct kv_deadlines *q);

#endif

/* Connection deadlines as a binary min-heap: see deadlines.h. */
#include "worker/deadlines.h"

#include <stdlib.h>

static void
place(struct kv_deadlines *q, size_t i, struct kv_deadline *d)
{
	q->v[i] = d;
	d->idx = i + 1;
}

static void
sift_up(struct kv_deadlines *q, size_t i)
{
	struct kv_deadline *d = q->v[i];

	while (i > 0 && q->v[(i - 1) / 2]->key > d->key) {
		place(q, i, q->v[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	place(q, i, d);
}

static void
sift_down(struct kv_deadlines *q, size_t i)
{
	struct kv_deadline *d = q->v[i];
	size_t c;

	while ((c = 2 * i + 1) < q->n) {
		if (c + 1 < q->n && q->v[c + 1]->key < q->v[c]->key)
			c++;
		if (q->v[c]->key >= d->key)
			break;
		place(q, i, q->v[c]);
		i = c;
	}
	place(q, i, d);
}

int
kv_deadlines_reserve(struct kv_deadlines *q, size_t n)
{
	struct kv_deadline **v;
	size_t cap;

	if (n <= q->cap)
		return 0;
	cap = q->cap < 64 ? 64 : q->cap;
	while (cap < n)
		cap *= 2;
	if ((v = realloc(q->v, cap * sizeof(*v))) == NULL)
		return -1;
	q->v = v;
	q->cap = cap;
	return 0;
}

void
kv_deadline_set(struct kv_deadlines *q, struct kv_deadline *d, int64_t at)
{
	d->at = at;
	if (d->idx != 0 && at >= d->key)
		return;		/* later: found at its key, put back then */
	if (d->idx == 0) {
		d->key = at;
		place(q, q->n++, d);
		sift_up(q, q->n - 1);
		return;
	}
	d->key = at;
	sift_up(q, d->idx - 1);
}

void
kv_deadline_cancel(struct kv_deadlines *q, struct kv_deadline *d)
{
	struct kv_deadline *last;
	size_t i;

	if (d->idx == 0)
		return;
	i = d->idx - 1;
	d->idx = 0;
	last = q->v[--q->n];
	if (last == d)
		return;
	place(q, i, last);
	if (i > 0 && q->v[(i - 1) / 2]->key > last->key)
		sift_up(q, i);
	else
		sift_down(q, i);
}

struct kv_deadline *
kv_deadlines_expired(struct kv_deadlines *q, int64_t now)
{
	struct kv_deadline *d;

	while (q->n > 0 && (d = q->v[0])->key <= now) {
		if (d->at <= now) {
			kv_deadline_cancel(q, d);
			return d;
		}
		d->key = d->at;	/* moved later: to its real place */
		sift_down(q, 0);
	}
	return NULL;
}

int
kv_deadlines_wait_ms(const struct kv_deadlines *q, int64_t now, int max)
{
	int64_t w;

	if (q->n == 0)
		return max;
	w = q->v[0]->key - now;
	return w <= 0 ? 0 : w < max ? (int)w : max;
}

void
kv_deadlines_free(struct kv_deadlines *q)
{
	free(q->v);
	q->v = NULL;
	q->n = q->cap = 0;
}

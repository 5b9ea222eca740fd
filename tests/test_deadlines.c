/* The worker's deadline heap (worker/deadlines.c) against a plain array:
 * thousands of random sets (earlier, later: lazy), cancels and expiries;
 * what expires, and when, is exactly what the array says is due, and the
 * wait is never past the first real deadline. */
#include <stdint.h>
#include <stdlib.h>

#include "tests/unit.h"
#include "worker/deadlines.h"

#define N	200
#define STEPS	20000

static struct kv_deadline d[N];
static int64_t model[N];	/* -1: no deadline */

static int64_t
model_first(void)
{
	int64_t m = INT64_MAX;
	int i;

	for (i = 0; i < N; i++)
		if (model[i] >= 0 && model[i] < m)
			m = model[i];
	return m;
}

int
main(void)
{
	struct kv_deadlines q = { 0 };
	struct kv_deadline *e;
	int64_t now = 1000, first;
	int i, j, k, wrong = 0, early = 0, missed = 0, expired = 0;

	srand(7);
	CHECK_INT(kv_deadlines_reserve(&q, N), 0);
	CHECK_INT(kv_deadlines_wait_ms(&q, now, 1000), 1000);
	CHECK(kv_deadlines_expired(&q, now) == NULL);
	for (i = 0; i < N; i++)
		model[i] = -1;
	for (k = 0; k < STEPS; k++) {
		i = rand() % N;
		switch (rand() % 4) {
		case 0:
		case 1:		/* set: as often later (lazy) as earlier */
			model[i] = now + rand() % 3000;
			kv_deadline_set(&q, &d[i], model[i]);
			break;
		case 2:
			model[i] = -1;
			kv_deadline_cancel(&q, &d[i]);
			break;
		default:	/* time passes; expire what is due */
			first = model_first();
			if (kv_deadlines_wait_ms(&q, now, 5000) > (first == INT64_MAX ? 5000 : first - now))
				missed++;	/* would sleep past a deadline */
			now += rand() % 400;
			while ((e = kv_deadlines_expired(&q, now)) != NULL) {
				j = (int)(e - d);
				expired++;
				if (model[j] < 0)
					wrong++;	/* cancelled, or never set */
				else if (model[j] > now)
					early++;
				model[j] = -1;
			}
			for (j = 0; j < N; j++)
				if (model[j] >= 0 && model[j] <= now)
					missed++;	/* due but not expired */
			break;
		}
	}
	CHECK_INT(wrong, 0);
	CHECK_INT(early, 0);
	CHECK_INT(missed, 0);
	CHECK(expired > 1000);
	/* a cancel of the last entry, of the top, of one not queued */
	kv_deadlines_free(&q);
	CHECK_INT(kv_deadlines_reserve(&q, 3), 0);
	for (i = 0; i < 3; i++) {
		d[i] = (struct kv_deadline){ 0 };
		kv_deadline_set(&q, &d[i], 100 + i);
	}
	kv_deadline_cancel(&q, &d[2]);
	kv_deadline_cancel(&q, &d[0]);
	kv_deadline_cancel(&q, &d[0]);
	CHECK_INT(q.n, 1);
	CHECK(kv_deadlines_expired(&q, 200) == &d[1]);
	CHECK_INT(q.n, 0);
	kv_deadlines_free(&q);
	return unit_done();
}

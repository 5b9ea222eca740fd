/* The master's event loop (master/loop.c): watches fire for ready fds with
 * their events and not once cleared; a watch moves to another fd, and to a
 * new socket that reuses a closed one's number; timers fire in one turn
 * when due, a timer re-armed by its own callback for a past time waits for
 * the next turn, a stopped one never fires; the wait ends at the first
 * timer, not at MAX_MS. */
#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/clock.h"
#include "master/loop.h"
#include "tests/unit.h"

struct hits {
	int		 n;
	uint32_t	 events;
};

static void
on_io(void *arg, uint32_t events)
{
	struct hits *h = arg;

	h->n++;
	h->events = events;
}

static void
on_t(void *arg)
{
	((struct hits *)arg)->n++;
}

struct rearm {
	struct kv_mloop		*lp;
	struct kv_mloop_timer	 t;
	int			 n;
};

static void
on_rearm(void *arg)
{
	struct rearm *r = arg;

	r->n++;
	kv_mloop_timer_at(r->lp, &r->t, kv_now_ms() - 5);	/* already past */
}

static void
watches(struct kv_mloop *lp)
{
	struct kv_mloop_io io;
	struct hits h = { 0, 0 };
	int a[2], b[2];

	CHECK(pipe(a) == 0 && pipe(b) == 0);
	kv_mloop_io_init(&io, on_io, &h);
	CHECK_INT(kv_mloop_io_set(lp, &io, a[0], EPOLLIN), 0);
	CHECK_INT(kv_mloop_turn(lp, 0), 0);
	CHECK_INT(h.n, 0);			/* nothing to read yet */
	CHECK_INT(write(a[1], "x", 1), 1);
	CHECK_INT(kv_mloop_turn(lp, 1000), 0);
	CHECK_INT(h.n, 1);
	CHECK(h.events & EPOLLIN);
	/* moved to b: a's byte no longer wakes it */
	CHECK_INT(kv_mloop_io_set(lp, &io, b[0], EPOLLIN), 0);
	CHECK_INT(kv_mloop_turn(lp, 0), 0);
	CHECK_INT(h.n, 1);
	CHECK_INT(write(b[1], "y", 1), 1);
	CHECK_INT(kv_mloop_turn(lp, 1000), 0);
	CHECK_INT(h.n, 2);
	kv_mloop_io_clear(lp, &io);
	CHECK_INT(kv_mloop_turn(lp, 0), 0);
	CHECK_INT(h.n, 2);			/* cleared: b is still readable */
	/* b's read end closed and its number reused by a new pipe */
	CHECK_INT(kv_mloop_io_set(lp, &io, b[0], EPOLLIN), 0);
	CHECK(close(b[0]) == 0 && close(b[1]) == 0);
	CHECK(pipe(b) == 0);
	CHECK_INT(kv_mloop_io_set(lp, &io, b[0], EPOLLIN), 0);
	CHECK_INT(write(b[1], "z", 1), 1);
	CHECK_INT(kv_mloop_turn(lp, 1000), 0);
	CHECK_INT(h.n, 3);
	/* events 0 stops watching */
	CHECK_INT(kv_mloop_io_set(lp, &io, b[0], 0), 0);
	CHECK_INT(io.fd, -1);
	CHECK_INT(kv_mloop_turn(lp, 0), 0);
	CHECK_INT(h.n, 3);
	close(a[0]), close(a[1]), close(b[0]), close(b[1]);
}

static void
timers(struct kv_mloop *lp)
{
	struct kv_mloop_timer t1, t2;
	struct hits h1 = { 0, 0 }, h2 = { 0, 0 };
	struct rearm r = { .lp = lp };
	int64_t t0;

	kv_mloop_timer_init(&t1, on_t, &h1);
	kv_mloop_timer_init(&t2, on_t, &h2);
	t0 = kv_now_ms();
	kv_mloop_timer_at(lp, &t1, t0 + 50);
	kv_mloop_timer_at(lp, &t2, t0 + 50);
	kv_mloop_timer_stop(lp, &t2);
	CHECK_INT(kv_mloop_turn(lp, 5000), 0);	/* wakes for t1, not in 5 s */
	CHECK(kv_now_ms() - t0 < 2500);
	CHECK(kv_now_ms() - t0 >= 50);
	CHECK_INT(h1.n, 1);
	CHECK_INT(h2.n, 0);
	CHECK_INT(kv_mloop_turn(lp, 0), 0);	/* fired once: disarmed */
	CHECK_INT(h1.n, 1);
	/* re-arming moves it */
	kv_mloop_timer_at(lp, &t1, kv_now_ms() + 100000);
	kv_mloop_timer_at(lp, &t1, kv_now_ms() - 1);
	CHECK_INT(kv_mloop_turn(lp, 1000), 0);
	CHECK_INT(h1.n, 2);
	/* a timer re-armed into the past by its callback: once per turn */
	kv_mloop_timer_init(&r.t, on_rearm, &r);
	kv_mloop_timer_at(lp, &r.t, kv_now_ms());
	CHECK_INT(kv_mloop_turn(lp, 0), 0);
	CHECK_INT(r.n, 1);
	CHECK_INT(kv_mloop_turn(lp, 0), 0);
	CHECK_INT(r.n, 2);
	kv_mloop_timer_stop(lp, &r.t);
	CHECK_INT(kv_mloop_turn(lp, 0), 0);
	CHECK_INT(r.n, 2);
}

int
main(void)
{
	struct kv_mloop *lp = kv_mloop_new();

	CHECK(lp != NULL);
	if (lp == NULL)
		return unit_done();
	watches(lp);
	timers(lp);
	kv_mloop_free(lp);
	return unit_done();
}

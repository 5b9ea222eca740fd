/* The master's event loop: see loop.h. A few dozen timers at most (one per
 * health-check target, Redis, MHD, the tick), so a list scanned per turn
 * does what a heap would. */
#include "master/loop.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/clock.h"

#define TURN_EVENTS	64

struct kv_mloop {
	int			 ep;
	struct kv_mloop_timer	*timers;	/* armed ones */
	uint64_t		 turn;
};

struct kv_mloop *
kv_mloop_new(void)
{
	struct kv_mloop *lp = calloc(1, sizeof(*lp));

	if (lp == NULL)
		return NULL;
	if ((lp->ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		free(lp);
		return NULL;
	}
	return lp;
}

void
kv_mloop_free(struct kv_mloop *lp)
{
	if (lp == NULL)
		return;
	(void)close(lp->ep);	/* nothing to act on: the set dies with it */
	free(lp);
}

void
kv_mloop_forget(struct kv_mloop *lp)
{
	if (lp != NULL)
		(void)close(lp->ep);
}

void
kv_mloop_io_init(struct kv_mloop_io *io, kv_mloop_io_fn *fn, void *arg)
{
	io->fd = -1;
	io->events = 0;
	io->fn = fn;
	io->arg = arg;
}

int
kv_mloop_io_set(struct kv_mloop *lp, struct kv_mloop_io *io, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	if (fd == -1 || events == 0) {
		kv_mloop_io_clear(lp, io);
		return 0;
	}
	if (io->fd != fd)
		kv_mloop_io_clear(lp, io);
	/* Even with the same fd and events, ask the kernel: the number may
	 * be a new socket whose old one closed (and left the set), which MOD
	 * finds missing, and ADD is right. */
	if (io->fd == fd && epoll_ctl(lp->ep, EPOLL_CTL_MOD, fd, &ev) == 0)
		goto done;
	if (epoll_ctl(lp->ep, EPOLL_CTL_ADD, fd, &ev) == -1 &&
	    (errno != EEXIST || epoll_ctl(lp->ep, EPOLL_CTL_MOD, fd, &ev) == -1)) {
		io->fd = -1;
		return -1;
	}
done:
	io->fd = fd;
	io->events = events;
	return 0;
}

void
kv_mloop_io_clear(struct kv_mloop *lp, struct kv_mloop_io *io)
{
	if (io->fd == -1)
		return;
	/* ENOENT/EBADF: the fd was closed already and left the set. */
	(void)epoll_ctl(lp->ep, EPOLL_CTL_DEL, io->fd, NULL);
	io->fd = -1;
	io->events = 0;
}

void
kv_mloop_timer_init(struct kv_mloop_timer *t, kv_mloop_timer_fn *fn, void *arg)
{
	t->at_ms = 0;
	t->fn = fn;
	t->arg = arg;
	t->next = NULL;
	t->fired_turn = 0;
	t->armed = 0;
}

void
kv_mloop_timer_stop(struct kv_mloop *lp, struct kv_mloop_timer *t)
{
	struct kv_mloop_timer **pp;

	if (!t->armed)
		return;
	for (pp = &lp->timers; *pp != NULL; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->next = NULL;
	t->armed = 0;
}

void
kv_mloop_timer_at(struct kv_mloop *lp, struct kv_mloop_timer *t, int64_t at_ms)
{
	t->at_ms = at_ms;
	if (t->armed)
		return;
	t->next = lp->timers;
	lp->timers = t;
	t->armed = 1;
}

/* The wait until the first timer, within [0, MAX_MS]. */
static int
wait_ms(const struct kv_mloop *lp, int64_t now, int max_ms)
{
	const struct kv_mloop_timer *t;
	int64_t w = max_ms;

	for (t = lp->timers; t != NULL; t = t->next)
		if (t->at_ms - now < w)
			w = t->at_ms - now;
	return w < 0 ? 0 : (int)w;
}

/* A timer due by NOW that has not fired this turn, or NULL. */
static struct kv_mloop_timer *
due(const struct kv_mloop *lp, int64_t now)
{
	struct kv_mloop_timer *t;

	for (t = lp->timers; t != NULL; t = t->next)
		if (t->at_ms <= now && t->fired_turn != lp->turn)
			return t;
	return NULL;
}

int
kv_mloop_turn(struct kv_mloop *lp, int max_ms)
{
	struct epoll_event ev[TURN_EVENTS];
	struct kv_mloop_timer *t;
	struct kv_mloop_io *io;
	int n, i;
	int64_t now;

	lp->turn++;
	n = epoll_wait(lp->ep, ev, TURN_EVENTS, wait_ms(lp, kv_now_ms(), max_ms));
	if (n == -1 && errno != EINTR)
		return -1;
	for (i = 0; i < n; i++) {
		io = ev[i].data.ptr;
		if (io->fd != -1)	/* not cleared by an earlier callback */
			io->fn(io->arg, ev[i].events);
	}
	now = kv_now_ms();
	while ((t = due(lp, now)) != NULL) {
		kv_mloop_timer_stop(lp, t);
		t->fired_turn = lp->turn;
		t->fn(t->arg);
	}
	return 0;
}

/* The master's one event loop: every descriptor the master waits on (the
 * signal self-pipe, the status service, each health-check probe, Redis, the
 * workers' lease kick) sits in one epoll set with a callback of its own,
 * and every deadline is a timer, so no part keeps a descriptor budget, an
 * epoll set of its own, or a poll() of the whole master. Single-threaded.
 * Callbacks may set and clear any watch and arm or stop any timer; a watch
 * or timer must not be freed by a callback of the turn that may still run
 * it (owners free theirs between turns). */
#ifndef KV_MASTER_LOOP_H
#define KV_MASTER_LOOP_H

#include <stdint.h>

struct kv_mloop;

/* EVENTS are epoll's (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP), which on
 * Linux have poll()'s values: POLLIN == EPOLLIN and so on. */
typedef void kv_mloop_io_fn(void *arg, uint32_t events);
typedef void kv_mloop_timer_fn(void *arg);

/* A watch, kept in its owner; kv_mloop_io_init before first use. */
struct kv_mloop_io {
	int		 fd;		/* -1: not watching */
	uint32_t	 events;
	kv_mloop_io_fn	*fn;
	void		*arg;
};

/* A timer, kept in its owner; kv_mloop_timer_init before first use. */
struct kv_mloop_timer {
	int64_t			 at_ms;		/* kv_now_ms() clock */
	kv_mloop_timer_fn	*fn;
	void			*arg;
	struct kv_mloop_timer	*next;		/* the loop's armed list */
	uint64_t		 fired_turn;
	int			 armed;
};

/* A loop, or NULL when epoll_create1 failed (errno set). */
struct kv_mloop *kv_mloop_new(void);

/* Close the loop's epoll fd and free it; watches and timers are forgotten,
 * not touched (NULL is a no-op). */
void	kv_mloop_free(struct kv_mloop *lp);

/* In a forked child: close the epoll fd without a word, free nothing the
 * parent still uses. */
void	kv_mloop_forget(struct kv_mloop *lp);

void	kv_mloop_io_init(struct kv_mloop_io *io, kv_mloop_io_fn *fn, void *arg);

/* Watch FD for EVENTS, in place of whatever IO watched before (another fd,
 * other events, or a closed fd of the same number). FD -1 or EVENTS 0
 * stops watching. Returns 0, or -1 with errno set by epoll_ctl. */
int	kv_mloop_io_set(struct kv_mloop *lp, struct kv_mloop_io *io, int fd,
	    uint32_t events);

/* Stop watching; call before the owner closes the fd. Never fails. */
void	kv_mloop_io_clear(struct kv_mloop *lp, struct kv_mloop_io *io);

void	kv_mloop_timer_init(struct kv_mloop_timer *t, kv_mloop_timer_fn *fn, void *arg);

/* Arm T to fire once at AT_MS (re-arming moves it). A timer armed by a
 * callback for a time already past fires in the next turn, not this one. */
void	kv_mloop_timer_at(struct kv_mloop *lp, struct kv_mloop_timer *t, int64_t at_ms);
void	kv_mloop_timer_stop(struct kv_mloop *lp, struct kv_mloop_timer *t);

/* One turn: wait until a watched fd is ready, the next timer is due or
 * MAX_MS passed (a signal ends the wait early), then run the ready watches'
 * callbacks and the due timers'. Returns 0, or -1 when epoll_wait failed
 * for another reason than EINTR (errno set). */
int	kv_mloop_turn(struct kv_mloop *lp, int max_ms);

#endif

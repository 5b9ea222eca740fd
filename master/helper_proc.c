/* A helper process whose one answer the master's loop reads (helper_proc.h).
 * The helper is reaped with the workers: the master reaps every child, and
 * a pid it does not know is just reaped. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/helper_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/log.h"

void
kv_helper_init(struct kv_helper *h, struct kv_mloop *lp, const struct kv_ledger *l,
    void *ans, size_t size, int max_s, kv_helper_run_fn *run, kv_helper_done_fn *done,
    void *arg)
{
	memset(h, 0, sizeof(*h));
	h->lp = lp;
	h->ledger = l;
	h->fd = -1;
	h->ans = ans;
	h->size = size;
	h->max_s = max_s;
	h->run = run;
	h->done = done;
	h->arg = arg;
	kv_mloop_io_init(&h->io, NULL, NULL);
}

static void __attribute__((noreturn))
child(struct kv_helper *h, int fd)
{
	if (h->ledger != NULL && h->ledger->base != NULL)
		(void)munmap(h->ledger->base, h->ledger->size);
	if (fd != 3 && (dup2(fd, 3) == -1 || close(fd) == -1))
		_exit(1);
	if (close_range(4, ~0U, 0) == -1)
		for (fd = 4; fd < 1024; fd++)
			(void)close(fd);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	alarm((unsigned)h->max_s);
	memset(h->ans, 0, h->size);
	h->run(h->arg, h->ans, h->size);
	if (write(3, h->ans, h->size) != (ssize_t)h->size)
		_exit(1);
	_exit(0);
}

/* The answer, read as it comes; at its end (or EOF), handed over. */
static void
on_pipe(void *arg, uint32_t events)
{
	struct kv_helper *h = arg;
	ssize_t n = 0;

	(void)events;
	while (h->got < h->size &&
	    (n = read(h->fd, (char *)h->ans + h->got, h->size - h->got)) > 0)
		h->got += (size_t)n;
	if (h->got < h->size && !(n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)))
		return;	/* more to come */
	kv_mloop_io_clear(h->lp, &h->io);
	close(h->fd);
	h->fd = -1;
	h->done(h->arg, h->got == h->size, "the helper process ended without an answer");
}

int
kv_helper_start(struct kv_helper *h)
{
	int p[2];
	pid_t pid;

	if (h->fd != -1)
		return 0;
	if (pipe2(p, O_CLOEXEC) == -1) {
		h->done(h->arg, 0, strerror(errno));
		return -1;
	}
	kv_log_flush();
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		h->done(h->arg, 0, "no helper process (fork failed)");
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		child(h, p[1]);
	}
	close(p[1]);
	h->fd = p[0];
	h->got = 0;
	kv_mloop_io_init(&h->io, on_pipe, h);
	if (fcntl(h->fd, F_SETFL, O_NONBLOCK) == -1 ||
	    kv_mloop_io_set(h->lp, &h->io, h->fd, EPOLLIN) == -1) {
		close(h->fd);	/* the helper's write fails: it goes */
		h->fd = -1;
		h->done(h->arg, 0, "the master cannot watch the helper's pipe");
		return -1;
	}
	return 0;
}

int
kv_helper_running(const struct kv_helper *h)
{
	return h->fd != -1;
}

void
kv_helper_forget(struct kv_helper *h)
{
	if (h->fd != -1)
		close(h->fd);
	h->fd = -1;
}

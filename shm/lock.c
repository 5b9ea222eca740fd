/* One daemon per ledger: the master's exclusive flock(2) on the ledger
 * file, inherited by its workers; see lock.h. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t
kv_pid_start(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	if (close(fd) == -1 || n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: count from the
	 * last ')'. Field 3 follows it; the start time is field 22. */
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	for (field = 2; field < 22 && p != NULL; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &v) != 1)
		return 0;
	return v;
}

static void
holder_message(struct kv_ledger *l, const char *path, char *err, size_t errlen)
{
	char host[64];
	int32_t pid = atomic_load(&l->hdr->master_pid);

	memcpy(host, l->hdr->master_host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	snprintf(err, errlen, "ledger %s is in use by another kilovoltd "
	    "(master pid %d%s%s, as seen in its own pid namespace): one daemon per "
	    "ledger; stop that one, or give this one another ledger", path,
	    (int)pid, host[0] ? " on host " : "", host);
}

static int
same_file(int fd, const char *path)
{
	struct stat a, b;

	if (fstat(fd, &a) == -1 || stat(path, &b) == -1)
		return 0;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void
record_holder(struct kv_ledger *l)
{
	uint64_t id = 0;
	char host[64] = "";

	if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		id = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (id == 0)
		id = 1;
	if (gethostname(host, sizeof(host)) == -1)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	l->prev_instance = atomic_load(&l->hdr->instance);
	memcpy(l->hdr->master_host, host, sizeof(host));
	atomic_store(&l->hdr->master_pid, (int32_t)getpid());
	atomic_store(&l->hdr->master_start, (int64_t)time(NULL));
	atomic_store(&l->hdr->instance, id);
}

int
kv_ledger_lock(struct kv_ledger *l, const char *path, char *err, size_t errlen)
{
	if (flock(l->fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno == EWOULDBLOCK)
			holder_message(l, path, err, errlen);
		else
			snprintf(err, errlen, "ledger %s: flock: %s", path,
			    strerror(errno));
		return -1;
	}
	/* Locked an inode that a grow or a restore renamed away meanwhile. */
	if (!same_file(l->fd, path)) {
		snprintf(err, errlen, "ledger %s was replaced while this daemon "
		    "opened it: start again", path);
		errno = ESTALE;
		return -1;
	}
	record_holder(l);
	return 0;
}

int
kv_ledger_locked(const char *path)
{
	int fd, r = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		r = errno == EWOULDBLOCK ? 1 : -1;
	} else if (flock(fd, LOCK_UN) == -1)
		r = -1;
	if (close(fd) == -1)
		r = -1;
	return r;
}

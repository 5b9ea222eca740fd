/* Appending to the audit log under its lock (audit_log.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/audit_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/errf.h"

int
kv_audit_path_beside(const char *ledger, char *out, size_t len)
{
	const char *slash = strrchr(ledger, '/');
	int n;

	if (slash == NULL)
		n = snprintf(out, len, "%s", KV_AUDIT_FILE);
	else
		n = snprintf(out, len, "%.*s/%s", (int)(slash - ledger), ledger, KV_AUDIT_FILE);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
kv_audit_path(const struct kv_config *cf, char *out, size_t len)
{
	if (strcmp(cf->audit_log, "off") == 0) {
		out[0] = '\0';
		return 1;
	}
	if (cf->audit_log[0] == '\0')
		return kv_audit_path_beside(cf->ledger, out, len);
	return snprintf(out, len, "%s", cf->audit_log) >= (int)len ? -1 : 0;
}

/* flock, polling for at most KV_AUDIT_LOCK_MS, so that a writer stuck
 * while holding it (or anyone holding it on purpose) gets admin writes
 * refused and holds the master's loop that long at most, not for good. */
static int
lock_file(int fd)
{
	struct timespec ts = { 0, 10 * 1000000L };
	int i;

	for (i = 0; i < KV_AUDIT_LOCK_MS / 10; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		(void)nanosleep(&ts, NULL);
	}
	errno = EWOULDBLOCK;
	return -1;
}

/* The digest of the file's last line into lg->prev (the genesis value for
 * an empty file). */
static int
read_last(struct kv_audit_log *lg, char *err, size_t errlen)
{
	char buf[KV_AUDIT_LINE_MAX + 1];
	struct stat st;
	off_t from;
	ssize_t n;
	size_t i;

	if (fstat(lg->fd, &st) == -1)
		return kv_errf(err, errlen, "%s: fstat: %s", lg->path, strerror(errno));
	lg->empty = st.st_size == 0;
	if (lg->empty) {
		memcpy(lg->prev, KV_AUDIT_GENESIS, KV_AUDIT_HEX);
		return 0;
	}
	from = st.st_size > (off_t)sizeof(buf) ? st.st_size - (off_t)sizeof(buf) : 0;
	n = pread(lg->fd, buf, (size_t)(st.st_size - from), from);
	if (n != st.st_size - from)
		return kv_errf(err, errlen, "%s: reading its last line: %s", lg->path,
		    n == -1 ? strerror(errno) : "short read");
	if (buf[n - 1] != '\n')
		return kv_errf(err, errlen, "%s ends inside a line (cut short?): see "
		    "kvctl audit --verify; move it aside to start a new log", lg->path);
	for (i = (size_t)n - 1; i > 0 && buf[i - 1] != '\n'; i--)
		;
	if (i == 0 && from > 0)
		return kv_errf(err, errlen, "%s: its last line is longer than any kilovolt "
		    "writes: see kvctl audit --verify", lg->path);
	kv_audit_digest(buf + i, (size_t)n - 1 - i, lg->prev);
	return 0;
}

int
kv_audit_begin(struct kv_audit_log *lg, const char *path, char *err, size_t errlen)
{
	lg->fd = -1;
	lg->path[0] = '\0';
	if (path == NULL || path[0] == '\0')
		return 0;
	if (snprintf(lg->path, sizeof(lg->path), "%s", path) >= (int)sizeof(lg->path))
		return kv_errf(err, errlen, "audit log path too long");
	lg->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (lg->fd == -1)
		return kv_errf(err, errlen, "%s: open: %s", path, strerror(errno));
	if (lock_file(lg->fd) == -1) {
		kv_errf(err, errlen, "%s: lock: %s", path, errno == EWOULDBLOCK ?
		    "another writer holds it" : strerror(errno));
		kv_audit_end(lg);
		return -1;
	}
	if (read_last(lg, err, errlen) == -1) {
		kv_audit_end(lg);
		return -1;
	}
	return 0;
}

void
kv_audit_end(struct kv_audit_log *lg)
{
	if (lg->fd == -1)
		return;
	/* close(2) lets go of the flock; an error closing a file we only
	 * read or fsync'ed loses nothing. */
	(void)close(lg->fd);
	lg->fd = -1;
}

/* A new file's name is in its directory only once that is synced too. */
static void
sync_dir(const char *path)
{
	char dir[KV_AUDIT_PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		(void)fsync(fd);
		(void)close(fd);
	}
}

/* Write the line whole, or cut the file back to SIZE. */
static int
append(struct kv_audit_log *lg, const char *line, size_t len, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	int e;

	if (fstat(lg->fd, &st) == -1)
		return kv_errf(err, errlen, "%s: fstat: %s", lg->path, strerror(errno));
	n = write(lg->fd, line, len);
	if (n == (ssize_t)len && fsync(lg->fd) == 0)
		return 0;
	e = n == -1 || n == (ssize_t)len ? errno : ENOSPC;
	if (n > 0 && ftruncate(lg->fd, st.st_size) == -1)
		return kv_errf(err, errlen, "%s: a cut line could not be taken back (%s): "
		    "kvctl audit --verify names it", lg->path, strerror(errno));
	return kv_errf(err, errlen, "%s: %s: %s", lg->path, n == (ssize_t)len ? "fsync" :
	    "write", strerror(e));
}

int
kv_audit_commit(struct kv_audit_log *lg, struct kv_audit_rec *r, char *err, size_t errlen)
{
	char line[KV_AUDIT_LINE_MAX + 1];
	int n, rc;

	if (lg->path[0] == '\0')
		return 0;
	if (lg->fd == -1)
		return kv_errf(err, errlen, "%s: not held", lg->path);
	if (r->time_ms == 0)
		r->time_ms = kv_clock_ns(CLOCK_REALTIME) / 1000000;
	if ((n = kv_audit_format(line, sizeof(line), r, lg->prev)) == -1)
		rc = kv_errf(err, errlen, "%s: the line for %s does not fit %d bytes",
		    lg->path, r->op, KV_AUDIT_LINE_MAX);
	else
		rc = append(lg, line, (size_t)n, err, errlen);
	if (rc == 0 && lg->empty)
		sync_dir(lg->path);
	kv_audit_end(lg);
	return rc;
}

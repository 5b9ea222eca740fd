/* The master's once-a-second check of the ledger file (truncated, deleted,
 * replaced) and the save of the spend still mapped; see ledger_watch.h. */

#include "master/ledger_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"

void
kv_ledger_watch_init(struct kv_ledger_watch *w, const struct kv_ledger *l,
    const char *path)
{
	struct stat st;

	memset(w, 0, sizeof(*w));
	w->copy_fd = -1;
	snprintf(w->path, sizeof(w->path), "%s", path);
	if (fstat(l->fd, &st) == 0) {
		w->dev = st.st_dev;
		w->ino = st.st_ino;
	}
	memcpy(&w->layout, l->hdr, offsetof(struct kv_ledger_header, master_pid));
}

static int
write_all(int fd, const char *p, size_t n, off_t off)
{
	ssize_t k;

	while (n > 0) {
		k = pwrite(fd, p, n, off);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
		off += k;
	}
	return 0;
}

/* Write the mapping to a new file named DEST (not replacing anything).
 * Returns the open descriptor, or -1 (logged). */
static int
save_copy(const struct kv_ledger *l, const char *dest)
{
	char tmp[4200];
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.new.%d", dest, (int)getpid());
	if ((fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) == -1) {
		kv_log_warn("KV0607", "save ledger copy: %s", tmp);
		return -1;
	}
	if (write_all(fd, l->base, l->size, 0) == -1 || fsync(fd) == -1 ||
	    renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_NOREPLACE) == -1) {
		kv_log_warn("KV0607", "save ledger copy to %s", dest);
		if (unlink(tmp) == -1 || close(fd) == -1)
			return -1;
		return -1;
	}
	return fd;
}

/* Extend the file back and restore the layout words of its header, so
 * that no worker faults on it while the daemon drains. */
static void
unshrink(struct kv_ledger_watch *w, struct kv_ledger *l)
{
	if (ftruncate(l->fd, (off_t)l->size) == -1 ||
	    (errno = posix_fallocate(l->fd, 0, (off_t)l->size)) != 0)
		kv_log_warn("KV0608", "extend %s back to %zu bytes", w->path, l->size);
	if (memcmp(l->hdr, &w->layout, offsetof(struct kv_ledger_header, master_pid)) != 0)
		memcpy(l->hdr, &w->layout, offsetof(struct kv_ledger_header, master_pid));
}

static enum kv_ledger_fault
classify(struct kv_ledger_watch *w, struct kv_ledger *l, off_t *size)
{
	struct stat st, ps;

	if (fstat(l->fd, &st) == -1)
		return KV_LF_NONE;
	*size = st.st_size;
	if ((uint64_t)st.st_size < l->size)
		return KV_LF_TRUNCATED;
	if (stat(w->path, &ps) == -1)
		return errno == ENOENT ? KV_LF_DELETED : KV_LF_NONE;
	if (ps.st_dev != w->dev || ps.st_ino != w->ino)
		return KV_LF_REPLACED;
	return KV_LF_NONE;
}

enum kv_ledger_fault
kv_ledger_watch_check(struct kv_ledger_watch *w, struct kv_ledger *l)
{
	enum kv_ledger_fault f;
	off_t size = 0;

	if (w->fault != KV_LF_NONE || (f = classify(w, l, &size)) == KV_LF_NONE)
		return KV_LF_NONE;
	w->fault = f;
	switch (f) {
	case KV_LF_TRUNCATED:
		unshrink(w, l);
		kv_log_warnx("KV0603", "ledger %s was truncated to %lld bytes while running "
		    "(its layout needs %zu): whatever was recorded past that point is lost. "
		    "The file was extended back so no process faults on it; stopping. Restore "
		    "the ledger from a backup if you have one, then start kilovoltd again",
		    w->path, (long long)size, l->size);
		break;
	case KV_LF_DELETED:
		w->copy_fd = save_copy(l, w->path);
		if (w->copy_fd != -1 && flock(w->copy_fd, LOCK_EX | LOCK_NB) == -1)
			kv_log_warn("KV0609", "lock the written-back %s", w->path);
		kv_log_warnx("KV0605", "ledger %s was deleted while running: %s; stopping "
		    "(the final state is written there on exit, so no spend is lost)",
		    w->path, w->copy_fd != -1 ? "wrote this daemon's copy back to it" :
		    "could not write it back (see above)");
		break;
	case KV_LF_REPLACED:
		kv_log_warnx("KV0606", "ledger %s was replaced by another file while running: "
		    "this daemon leaves that file alone, saves its own state to "
		    "%s.replaced.%d on exit, and stops; keep the one you want as %s",
		    w->path, w->path, (int)getpid(), w->path);
		break;
	case KV_LF_NONE:
		break;
	}
	return f;
}

void
kv_ledger_watch_finish(struct kv_ledger_watch *w, struct kv_ledger *l)
{
	char dest[4200];
	int fd;

	if (w->fault == KV_LF_DELETED && w->copy_fd != -1) {
		if (write_all(w->copy_fd, l->base, l->size, 0) == -1 || fsync(w->copy_fd) == -1)
			kv_log_warn("KV0607", "write final state to %s", w->path);
		else
			kv_log_info("final ledger state written to %s", w->path);
		if (close(w->copy_fd) == -1)
			kv_log_warn("KV0607", "close %s", w->path);
		w->copy_fd = -1;
	} else if (w->fault == KV_LF_REPLACED) {
		snprintf(dest, sizeof(dest), "%s.replaced.%d", w->path, (int)getpid());
		if ((fd = save_copy(l, dest)) != -1) {
			kv_log_info("this daemon's ledger state saved to %s", dest);
			if (close(fd) == -1)
				kv_log_warn("KV0607", "close %s", dest);
		}
	}
}

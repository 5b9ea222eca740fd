/* The request-body spool. See spool.h. */
#include "worker/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/log.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

int
kv_spool_dir(const struct kv_config *cf, char *out, size_t len)
{
	const char *slash;
	int n;

	if (cf->spool_dir[0] != '\0')
		n = snprintf(out, len, "%s", cf->spool_dir);
	else if ((slash = strrchr(cf->ledger, '/')) == NULL)
		n = snprintf(out, len, "spool");
	else
		n = snprintf(out, len, "%.*s/spool", (int)(slash - cf->ledger), cf->ledger);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

void
kv_spool_prepare(const struct kv_config *cf)
{
	char dir[4200];
	struct statfs sf;
	int fd;

	if (kv_spool_dir(cf, dir, sizeof(dir)) == -1) {
		kv_log_warnx("KV0500", "spool_dir: path too long");
		return;
	}
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		kv_log_warn("KV0501", "mkdir %s", dir);
	if (statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC)
		kv_log_warnx("KV0502", "spool_dir %s is on tmpfs: spooled request bodies "
		    "count against the memory limit; set [server] spool_dir to a disk", dir);
	if ((fd = kv_spool_open(cf)) == -1)
		kv_log_warn("KV0503", "cannot create spool files in %s: request bodies "
		    "over 8 KiB will be refused with 503", dir);
	else
		close(fd);
}

int
kv_spool_open(const struct kv_config *cf)
{
	char path[4300];
	int fd, saved;

	if (kv_spool_dir(cf, path, sizeof(path) - 16) == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd != -1 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return fd;
	/* No O_TMPFILE on this filesystem: a named file, gone at once. */
	strcat(path, "/kv-XXXXXX");
	if ((fd = mkostemp(path, O_CLOEXEC)) == -1)
		return -1;
	if (unlink(path) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int
kv_spool_append(int fd, const char *buf, size_t len)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, buf, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0) {
			errno = ENOSPC;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t
kv_spool_pread(int fd, char *buf, size_t len, int64_t off)
{
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(fd, buf + got, len - got, (off_t)(off + (int64_t)got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

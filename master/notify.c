/* sd_notify without libsystemd: one AF_UNIX datagram to $NOTIFY_SOCKET.
 * The protocol is documented in sd_notify(3); a leading '@' names a socket in
 * the abstract namespace. A socket is opened per message: the master sends a
 * handful of them in its life, and holding none means nothing leaks into the
 * workers it forks. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include "master/notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/log.h"

/* Only the first failure is logged: a broken notify socket must not flood
 * the journal every time the status line changes. */
static int notify_warned;

static void
notify_warn(const char *id, const char *what, int with_errno)
{
	if (notify_warned)
		return;
	notify_warned = 1;
	if (with_errno)
		kv_log_warn(id, "sd_notify: %s", what);
	else
		kv_log_warnx(id, "sd_notify: %s", what);
}

/* Fill sun from NOTIFY_SOCKET's value; returns the address length or -1. */
static socklen_t
notify_addr(const char *path, struct sockaddr_un *sun)
{
	size_t len = strlen(path);

	if ((path[0] != '/' && path[0] != '@') || len < 2 ||
	    len >= sizeof(sun->sun_path))
		return (socklen_t)-1;
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, path, len);
	if (path[0] == '@') {
		/* Abstract names are not NUL-terminated: the length says where
		 * the name ends, so it must not include a trailing NUL. */
		sun->sun_path[0] = '\0';
		return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	}
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

int
kv_notify(const char *msg)
{
	struct sockaddr_un sun;
	const char *path = getenv("NOTIFY_SOCKET");
	socklen_t alen;
	ssize_t n;
	int fd, saved;

	if (path == NULL || path[0] == '\0')
		return 0;
	alen = notify_addr(path, &sun);
	if (alen == (socklen_t)-1) {
		notify_warn("KV0901", "NOTIFY_SOCKET is not a usable path", 0);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		notify_warn("KV0902", "socket", 1);
		return -1;
	}
	n = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL,
	    (struct sockaddr *)&sun, alen);
	saved = errno;
	if (close(fd) == -1 && n != -1)
		saved = errno;
	if (n == -1 || (size_t)n != strlen(msg)) {
		errno = saved;
		notify_warn("KV0903", "sendto", n == -1);
		return -1;
	}
	return 0;
}

int
kv_notify_status(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	char *p;
	int n;

	memcpy(buf, "STATUS=", 7);
	va_start(ap, fmt);
	n = vsnprintf(buf + 7, sizeof(buf) - 7, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	/* A newline would start another field (a forged READY=1, say). */
	for (p = buf + 7; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return kv_notify(buf);
}

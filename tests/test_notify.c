/* kv_notify against real sockets: an abstract-namespace one (what systemd
 * uses today) and a filesystem one, read back exactly as systemd would. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "master/notify.h"
#include "tests/unit.h"

/* Bind a datagram socket at NAME ('@' = abstract), non-blocking so a
 * missing message fails the test instead of hanging it. */
static int
listen_at(const char *name)
{
	struct sockaddr_un sun;
	size_t len = strlen(name);
	socklen_t alen;
	int fd;

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, name, len);
	alen = offsetof(struct sockaddr_un, sun_path) + len;
	if (name[0] == '@')
		sun.sun_path[0] = '\0';
	else
		alen++;
	if (bind(fd, (struct sockaddr *)&sun, alen) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One datagram, NUL-terminated into buf; "" when none is waiting. */
static const char *
recv_one(int fd, char *buf, size_t size)
{
	ssize_t n = recv(fd, buf, size - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void
test_unset(void)
{
	unsetenv("NOTIFY_SOCKET");
	CHECK_INT(kv_notify("READY=1"), 0);
	CHECK_INT(kv_notify_status("x %d", 1), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	CHECK_INT(kv_notify("READY=1"), 0);
}

static void
test_abstract(void)
{
	char name[64], buf[1024];
	int fd;

	snprintf(name, sizeof(name), "@kv-test-notify-%d", (int)getpid());
	fd = listen_at(name);
	CHECK(fd != -1);
	if (fd == -1)
		return;
	setenv("NOTIFY_SOCKET", name, 1);
	CHECK_INT(kv_notify("READY=1\nSTATUS=serving"), 0);
	CHECK_STR(recv_one(fd, buf, sizeof(buf)), "READY=1\nSTATUS=serving");
	CHECK_INT(kv_notify_status("%d workers, %s", 4, "ok"), 0);
	CHECK_STR(recv_one(fd, buf, sizeof(buf)), "STATUS=4 workers, ok");
	/* A newline in the status must not smuggle in a second field. */
	CHECK_INT(kv_notify_status("evil\nREADY=1"), 0);
	CHECK_STR(recv_one(fd, buf, sizeof(buf)), "STATUS=evil READY=1");
	/* Nothing else arrived. */
	CHECK_STR(recv_one(fd, buf, sizeof(buf)), "");
	close(fd);
	/* The name's length ends it: a longer name is a different socket. */
	setenv("NOTIFY_SOCKET", "@kv-test-notify-nobody-listens-here", 1);
	CHECK_INT(kv_notify("READY=1"), -1);
}

static void
test_path(void)
{
	char dir[] = "/tmp/kv-notify-XXXXXX", path[128], buf[1024];
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/notify", dir);
	fd = listen_at(path);
	CHECK(fd != -1);
	if (fd != -1) {
		setenv("NOTIFY_SOCKET", path, 1);
		CHECK_INT(kv_notify("STOPPING=1"), 0);
		CHECK_STR(recv_one(fd, buf, sizeof(buf)), "STOPPING=1");
		close(fd);
	}
	CHECK_INT(unlink(path), 0);
	CHECK_INT(rmdir(dir), 0);
	/* Socket gone: the send fails and says so. */
	CHECK_INT(kv_notify("READY=1"), -1);
}

static void
test_bad_values(void)
{
	char longpath[200];

	setenv("NOTIFY_SOCKET", "relative/path", 1);
	CHECK_INT(kv_notify("READY=1"), -1);
	setenv("NOTIFY_SOCKET", "@", 1);
	CHECK_INT(kv_notify("READY=1"), -1);
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	setenv("NOTIFY_SOCKET", longpath, 1);
	CHECK_INT(kv_notify("READY=1"), -1);
}

/* A long status is cut, never overflowing: the datagram is bounded. */
static void
test_long_status(void)
{
	char name[64], big[2000], buf[4096];
	int fd;

	snprintf(name, sizeof(name), "@kv-test-notify-long-%d", (int)getpid());
	fd = listen_at(name);
	CHECK(fd != -1);
	if (fd == -1)
		return;
	setenv("NOTIFY_SOCKET", name, 1);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(kv_notify_status("%s", big), 0);
	recv_one(fd, buf, sizeof(buf));
	CHECK(strncmp(buf, "STATUS=xxx", 10) == 0);
	CHECK(strlen(buf) > 100 && strlen(buf) < sizeof(big));
	close(fd);
}

int
main(void)
{
	test_unset();
	test_abstract();
	test_path();
	test_bad_values();
	test_long_status();
	unsetenv("NOTIFY_SOCKET");
	return unit_done();
}

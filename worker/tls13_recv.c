/* Reading a TLS record only once the kernel holds all of it (tls13.h). */
#include "worker/tls13.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

long
kv_tls13_recv(int fd, uint8_t *buf)
{
	ssize_t n;
	do
		n = recv(fd, buf, KV_TLS13_HDR, MSG_PEEK);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	if (n == 0)
		return -2;
	if (n < KV_TLS13_HDR)
		return 0;        /* the rest of the header is still to come */
	long body = kv_tls13_header(buf);
	if (body < 0)
		return -1;
	int q = 0;
	if (ioctl(fd, FIONREAD, &q) < 0)
		return -1;
	size_t want = KV_TLS13_HDR + (size_t)body;
	if ((size_t)q < want)
		return 0;
	do
		n = recv(fd, buf, want, MSG_WAITALL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)want ? (long)want : -1;
}

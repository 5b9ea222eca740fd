/* Reading one TLS record from a socket (tls13.h). The fast path takes a
 * record straight from the kernel into the worker's buffer: a peek at the
 * header, one recv of the record (two syscalls, as OpenSSL's own reads).
 * What arrived of a record that is not all there is kept per connection
 * until the record is whole: TCP does not promise that the kernel will
 * ever hold a whole record for a reader that does not read. Over loopback
 * (64 KB segments, receive-side silly-window avoidance) the window closed
 * with 9 KB of a record queued and the rest never came: a reader waiting
 * for FIONREAD to cover the record spun on EPOLLIN for ever. */
#include "worker/tls13.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/crypto.h>

/* recv without blocking: the count, 0 when nothing is there, -2 at end of
 * stream, -1 on an error. */
static long
take(int fd, uint8_t *p, size_t n, int flags)
{
	ssize_t r;
	do
		r = recv(fd, p, n, flags | MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
	return r == 0 ? -2 : (long)r;
}

void
kv_tls13_part_free(struct kv_tls13_part *pt)
{
	if (pt->p != NULL) {
		OPENSSL_cleanse(pt->p, pt->want);
		free(pt->p);
	}
	memset(pt, 0, sizeof *pt);
}

/* Grows pt to hold the record its header (now whole) announces: 0, -3
 * for a bad header, -1 without memory. */
static int
part_grow(struct kv_tls13_part *pt)
{
	long body = kv_tls13_header(pt->p);
	uint8_t *np;
	if (body < 0)
		return -3;
	if ((np = realloc(pt->p, KV_TLS13_HDR + (size_t)body)) == NULL)
		return -1;
	pt->p = np;
	pt->want = (uint16_t)(KV_TLS13_HDR + (size_t)body);
	return 0;
}

/* Adds what the kernel holds to a record kept in part; moves it to buf
 * when whole. */
static long
part_more(int fd, uint8_t *buf, struct kv_tls13_part *pt)
{
	for (;;) {
		long n = take(fd, pt->p + pt->have, (size_t)(pt->want - pt->have), 0);
		if (n == -2 || n < 0)
			return -1;       /* end of stream inside a record, or an error */
		if (n == 0)
			return 0;
		pt->have = (uint16_t)(pt->have + n);
		if (pt->have < pt->want)
			continue;
		if (pt->want == KV_TLS13_HDR) {
			int g = part_grow(pt);
			if (g < 0)
				return g;
			continue;
		}
		long len = pt->want;
		memcpy(buf, pt->p, (size_t)len);
		kv_tls13_part_free(pt);
		return len;
	}
}

/* Starts keeping a record of want bytes (or a header) in part: the have
 * bytes of it already read into buf, then what else the kernel holds. */
static long
part_start(int fd, uint8_t *buf, struct kv_tls13_part *pt, size_t have, size_t want)
{
	if ((pt->p = malloc(want)) == NULL)
		return -1;
	memcpy(pt->p, buf, have);
	pt->want = (uint16_t)want;
	pt->have = (uint16_t)have;
	return part_more(fd, buf, pt);
}

long
kv_tls13_recv(int fd, uint8_t *buf, struct kv_tls13_part *pt)
{
	if (pt->p != NULL)
		return part_more(fd, buf, pt);
	long n = take(fd, buf, KV_TLS13_HDR, MSG_PEEK);
	if (n <= 0)
		return n;
	if (n < KV_TLS13_HDR)
		return part_start(fd, buf, pt, 0, KV_TLS13_HDR);
	long body = kv_tls13_header(buf);
	if (body < 0)
		return -3;
	size_t want = KV_TLS13_HDR + (size_t)body;
	n = take(fd, buf, want, 0);
	if (n < 0)
		return -1;       /* an error; end of stream right after a peek is one too */
	if ((size_t)n == want)
		return n;
	return part_start(fd, buf, pt, (size_t)n, want);
}

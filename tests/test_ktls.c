/* Unit tests for worker/ktls.c's fallback: on a kernel without TLS (no
 * /proc/net/tls_stat, TCP_ULP "tls" refused) kv_ktls_start leaves a
 * connected socket as it was (1), so the own record layer can take it;
 * on a kernel with TLS it takes the keys (0). Either way nothing breaks. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker/ktls.h"
#include "worker/tls13.h"
#include "tests/unit.h"

/* A connected loopback TCP pair: *a the client end, *b the server's. */
static int
tcp_pair(int *a, int *b)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof sin;
	int l;

	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((l = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return -1;
	if (bind(l, (struct sockaddr *)&sin, sizeof sin) == -1 || listen(l, 1) == -1 ||
	    getsockname(l, (struct sockaddr *)&sin, &sl) == -1 ||
	    (*a = socket(AF_INET, SOCK_STREAM, 0)) == -1) {
		close(l);
		return -1;
	}
	if (connect(*a, (struct sockaddr *)&sin, sizeof sin) == -1 || (*b = accept(l, NULL, NULL)) == -1) {
		close(*a);
		close(l);
		return -1;
	}
	close(l);
	return 0;
}

int
main(void)
{
	struct kv_tls13_conn t;
	char buf[16];
	int a, b, r, avail;

	avail = kv_ktls_available();
	CHECK_INT(avail, access("/proc/net/tls_stat", F_OK) == 0);
	CHECK_INT(kv_ktls_available(), avail);	/* looked at once, the same after */
	CHECK_INT(tcp_pair(&a, &b), 0);
	memset(&t, 0, sizeof t);
	t.rd.suite = t.wd.suite = KV_TLS13_AES128_GCM;
	r = kv_ktls_start(a, &t);
	CHECK(r == 0 || r == 1);
	if (!avail)
		CHECK_INT(r, 1);	/* no TLS in this kernel: refused */
	if (r == 1) {
		/* the socket is as it was: bytes pass unchanged */
		CHECK_INT(write(a, "hello", 5), 5);
		CHECK_INT(read(b, buf, sizeof buf), 5);
		CHECK(memcmp(buf, "hello", 5) == 0);
	}
	/* a suite the kernel is never given */
	t.wd.suite = KV_TLS13_NONE;
	close(a);
	close(b);
	CHECK_INT(tcp_pair(&a, &b), 0);
	CHECK_INT(kv_ktls_start(a, &t), 1);
	close(a);
	close(b);
	return unit_done();
}

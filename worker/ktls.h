/* Kernel TLS for a TLS 1.3 leg after the hand-off ([upstream]
 * tls_record_layer = kernel): the traffic keys kv_tls_handoff took from
 * OpenSSL go to the kernel (TCP_ULP "tls", TLS_TX and TLS_RX), which then
 * seals and opens the records. Where the kernel has no TLS (no
 * /proc/net/tls_stat, or TCP_ULP refused), the leg stays on kilovolt's own
 * record layer (worker/tls13_io.h); that fallback is logged once.
 * NOT TESTED against a kernel with TLS: the build machines have no tls
 * module; only the fallback is (tests/t_tls13.sh). docs/tls-memory.md. */
#ifndef KV_KTLS_H
#define KV_KTLS_H

#include <stddef.h>
#include <sys/types.h>

struct kv_tls13_conn;

/* Does this kernel offer TLS (/proc/net/tls_stat exists)? Looked at once
 * per process; the first "no" logs KV0663. */
int	kv_ktls_available(void);

/* Hands both directions of t (keys, IVs, record sequence numbers) to the
 * kernel on socket fd. 0: the kernel now seals and opens every record.
 * 1: the kernel refused before anything changed (the socket is as it
 * was: use the own record layer); logs KV0663 the first time. -1: the
 * kernel took one direction and refused the other: the connection can be
 * neither, close it. */
int	kv_ktls_start(int fd, const struct kv_tls13_conn *t);

/* Reads application data from a kernel TLS socket: > 0 bytes; 0 after
 * close_notify; KV_IO_AGAIN (setting *want to EPOLLIN); KV_IO_ERROR for
 * any other alert, a KeyUpdate (the kernel's read key cannot follow it
 * here), or a socket error. Session tickets are read and dropped. */
ssize_t	kv_ktls_read(int fd, void *buf, size_t len, int *want);

#endif

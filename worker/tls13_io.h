/* A kv_stream's TLS 1.3 legs after kv_tls_handoff: reads and writes
 * through kilovolt's record layer (worker/tls13.h), with OpenSSL's SSL
 * freed. Same results as kv_stream_read/write (KV_IO_AGAIN, KV_IO_ERROR). */
#ifndef KV_TLS13_IO_H
#define KV_TLS13_IO_H

#include <stddef.h>
#include <sys/types.h>

struct kv_stream;
struct kv_tls13_io;
struct kv_counters;

/* Where this process counts completed upstream handshakes and hand-offs
 * (the ledger's upstream_tls_handshakes_total, upstream_tls_handoffs_total):
 * set once by the worker; NULL (the default) counts nothing. */
void	kv_tls13_io_counters(struct kv_counters *c);

/* Counts one completed upstream TLS handshake. */
void	kv_tls13_io_count_handshake(void);

/* Moves s from its SSL to the own record layer when kv_tls_handoff allows
 * it; the SSL is then freed (quietly: nothing is written, the session
 * stays resumable). A no-op otherwise. */
void	kv_tls13_io_adopt(struct kv_stream *s);

/* Reads plaintext: > 0; 0 after close_notify; KV_IO_AGAIN until a whole
 * record is in the kernel; KV_IO_ERROR for any fatal condition (bad tag,
 * bad record, an alert, end of stream without close_notify): close then. */
ssize_t	kv_tls13_io_read(struct kv_stream *s, void *buf, size_t len);

/* Seals up to 2^14 bytes of buf in one record and sends it: > 0 bytes
 * taken; KV_IO_AGAIN when the socket took the record only in part (call
 * again with the same bytes: the rest of the sealed record goes first and
 * the call then returns what it took). */
ssize_t	kv_tls13_io_write(struct kv_stream *s, const void *buf, size_t len);

/* Forgets the keys (cleansed) and any held bytes. */
void	kv_tls13_io_free(struct kv_tls13_io *t);

#endif

/* One byte stream to a peer: a plain socket or a TLS session on it.
 * Non-blocking; callers retry when told which readiness to wait for. */
#ifndef KV_STREAM_H
#define KV_STREAM_H

#include <stddef.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#define KV_IO_AGAIN	(-2)	/* would block: wait for s->want (EPOLLIN/EPOLLOUT) */
#define KV_IO_ERROR	(-1)

struct kv_stream {
	int	 fd;
	SSL	*ssl;		/* NULL for plaintext, and after a TLS 1.3 hand-off */
	struct kv_tls13_io *t13; /* after the hand-off: kilovolt's record layer */
	int	 ktls_want;	/* at the hand-off, try the kernel's (tls_record_layer = kernel) */
	int	 ktls;		/* 1: after the hand-off the kernel seals and opens the
				 * records (worker/ktls.h); -1: it took one direction only */
	int	 want;		/* readiness the last KV_IO_AGAIN waits for */
	/* Called once, on the first read after the handshake that returns
	 * anything but KV_IO_AGAIN: by then any session ticket the server
	 * sent ahead of its answer has been processed. */
	void	(*settled)(struct kv_stream *);
};

/* A TLS stream, on OpenSSL or handed off: no splice, no sendfile (not on
 * kernel TLS either: untested there, see worker/ktls.h). */
#define kv_stream_tls(s)	((s)->ssl != NULL || (s)->t13 != NULL || (s)->ktls != 0)

/* Read up to len bytes: returns > 0, 0 on orderly EOF, KV_IO_AGAIN or
 * KV_IO_ERROR. A TLS read that waits (KV_IO_AGAIN) gives back its record
 * buffer unless it holds part of a record. */
ssize_t	kv_stream_read(struct kv_stream *s, void *buf, size_t len);
/* kv_stream_read of a plaintext stream (the client leg), without a look
 * at TLS. */
ssize_t	kv_stream_recv(struct kv_stream *s, void *buf, size_t len);

/* Write up to len bytes: returns > 0, KV_IO_AGAIN or KV_IO_ERROR. */
ssize_t	kv_stream_write(struct kv_stream *s, const void *buf, size_t len);

/* The stream will not be read for a while (its turn is over, or its
 * client is behind): give back TLS record buffers that hold no unread
 * bytes. A no-op on plaintext. */
void	kv_stream_idle(struct kv_stream *s);

/* Drive the TLS client handshake: 1 done, KV_IO_AGAIN, or KV_IO_ERROR with
 * a reason (certificate verification result included) in err. Waiting
 * between flights holds no record buffer either. */
int	kv_stream_handshake(struct kv_stream *s, char *err, size_t errlen);

/* Free the TLS session and close the socket. With abort set, send a TCP
 * reset (SO_LINGER 0) so the peer can tell the stream was cut. */
void	kv_stream_close(struct kv_stream *s, int abort);

#endif

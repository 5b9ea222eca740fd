/* The AWS event stream (application/vnd.amazon.eventstream), as Bedrock's
 * InvokeModelWithResponseStream and ConverseStream answer: a resumable,
 * pure decoder. Each message is
 *
 *   total length (4) | headers length (4) | prelude CRC (4) |
 *   headers | payload | message CRC (4)
 *
 * big-endian, the prelude CRC over the first 8 bytes, the message CRC over
 * every byte before it. The decoder is fed the stream cut anywhere and
 * hands out, for each message, its parsed headers once they are all in,
 * its payload in the pieces it arrives in (never buffered whole), and its
 * end once the message CRC matched. Its memory is the struct (224 bytes on
 * x86-64): a headers block of up to KV_AES_HEADERS_INLINE bytes (all of
 * Bedrock's) is held in the struct; a longer one, up to KV_AES_HEADERS_MAX,
 * in a buffer allocated for that message alone and freed at its end (or
 * when the decoder fails, or by kv_aes_release). No I/O. */
#ifndef KV_AWS_EVENTSTREAM_H
#define KV_AWS_EVENTSTREAM_H

#include <stddef.h>
#include <stdint.h>

/* The largest headers block taken (kilovolt's limit: Bedrock sends under
 * 200 bytes; AWS's own C library takes 128 KiB). */
#define KV_AES_HEADERS_MAX	1024
/* The largest headers block held in the decoder itself (Bedrock's largest,
 * an exception's, is 103 bytes in tests/data). */
#define KV_AES_HEADERS_INLINE	128
/* The largest message (AWS's: 16 MiB), and the smallest (no headers, no
 * payload: the prelude and the two CRCs). */
#define KV_AES_MESSAGE_MAX	(16u * 1024 * 1024)
#define KV_AES_MESSAGE_MIN	16u

/* Header value types, as on the wire. */
enum kv_aes_type {
	KV_AES_TRUE = 0, KV_AES_FALSE = 1, KV_AES_BYTE = 2, KV_AES_SHORT = 3,
	KV_AES_INT = 4, KV_AES_LONG = 5, KV_AES_BYTES = 6, KV_AES_STRING = 7,
	KV_AES_TIMESTAMP = 8, KV_AES_UUID = 9
};

/* Why a stream was refused (kv_aes_dec.err). */
enum kv_aes_err {
	KV_AES_E_NONE = 0,
	KV_AES_E_LENGTH,	/* total length out of [MIN, MAX] */
	KV_AES_E_HEADERS_LENGTH, /* headers longer than the message holds */
	KV_AES_E_HEADERS_MAX,	/* headers longer than KV_AES_HEADERS_MAX */
	KV_AES_E_PRELUDE_CRC,
	KV_AES_E_HEADER_TRUNCATED, /* a header runs past the headers block */
	KV_AES_E_HEADER_TYPE,	/* a value type past 9 */
	KV_AES_E_MESSAGE_CRC,
	KV_AES_E_TRUNCATED,	/* the stream ended inside a message */
	KV_AES_E_STOPPED,	/* a callback returned -1 */
	KV_AES_E_NOMEM		/* no memory for a headers block past INLINE */
};

/* One header. NAME and, for BYTES and STRING, BYTES point into the
 * decoder's buffer, valid until the message's end callback returns.
 * NUM holds BYTE, SHORT, INT, LONG and TIMESTAMP (milliseconds since the
 * epoch), sign-extended, and 1/0 for TRUE/FALSE; UUID holds the 16 bytes. */
struct kv_aes_header {
	const char		*name;
	size_t			 name_len;
	enum kv_aes_type	 type;
	int64_t			 num;
	const char		*bytes;
	size_t			 bytes_len;
	unsigned char		 uuid[16];
};

/* The message being decoded, as the callbacks see it. */
struct kv_aes_msg {
	uint32_t	 total_len;	/* the whole message, prelude and CRCs included */
	uint32_t	 headers_len;
	uint32_t	 payload_len;
	const char	*headers;	/* the raw headers block, HEADERS_LEN bytes */
};

/* What the decoder calls, each returning 0 to go on or -1 to stop it.
 * head: the message's headers are in and well-formed (iterate them with
 * kv_aes_header_next, look one up with kv_aes_header_find); payload: the
 * next LEN (> 0) payload bytes; end: the message CRC matched. Headers and
 * payload are handed out before the CRC that covers them is checked: what
 * a consumer does with them counts only once end is called; an error in
 * between means the message is void. Any callback may be NULL. */
struct kv_aes_ops {
	int	(*head)(void *arg, const struct kv_aes_msg *m);
	int	(*payload)(void *arg, const struct kv_aes_msg *m, const char *p,
		    size_t len);
	int	(*end)(void *arg, const struct kv_aes_msg *m);
};

struct kv_aes_dec {
	const struct kv_aes_ops	*ops;
	void			*arg;
	int			 state;
	enum kv_aes_err		 err;
	uint64_t		 offset;	/* stream bytes consumed */
	uint64_t		 messages;	/* messages ended */
	uint32_t		 crc;		/* of the message so far */
	uint32_t		 need;		/* bytes left in this part */
	uint32_t		 have;		/* bytes of this part in buf/prelude */
	unsigned char		 prelude[12];	/* the prelude, then the message CRC */
	struct kv_aes_msg	 msg;
	char			*heap;		/* the open message's long headers, or NULL */
	char			 hbuf[KV_AES_HEADERS_INLINE];
};

/* Start D on a new stream, calling OPS with ARG (OPS may be NULL: validate
 * only). D must not hold a heap buffer (a new struct, or after
 * kv_aes_release, kv_aes_finish or a failure). D is not moved while in use
 * (the message points into it). */
void	kv_aes_init(struct kv_aes_dec *d, const struct kv_aes_ops *ops, void *arg);

/* Take the next LEN bytes of the stream (P may be NULL when LEN is 0).
 * The calls D makes, and whether it fails, do not depend on how the stream
 * is cut into feeds (only payload pieces follow the cuts). Returns 0, or
 * -1 with d->err set and d->offset just past the byte that showed it;
 * once failed, every later feed fails the same way. */
int	kv_aes_feed(struct kv_aes_dec *d, const char *p, size_t len);

/* The stream ended: 0 when it ended between messages, else -1
 * (KV_AES_E_TRUNCATED, or the earlier error). */
int	kv_aes_finish(struct kv_aes_dec *d);

/* D is dropped, perhaps inside a message: free the headers buffer that
 * message holds, if any; D is failed (KV_AES_E_STOPPED unless it had
 * failed already). Idempotent. */
void	kv_aes_release(struct kv_aes_dec *d);

/* The header at *POS in M's headers block (*POS starts at 0) into H, and
 * *POS past it. Returns 1, 0 at the end of the block, or minus a kv_aes_err
 * (KV_AES_E_HEADER_TRUNCATED or _TYPE) when the block is malformed at *POS
 * (the head callback only ever sees well-formed blocks). */
int	kv_aes_header_next(const struct kv_aes_msg *m, size_t *pos,
	    struct kv_aes_header *h);

/* The first header of M named NAME into H: 1 found, 0 not. */
int	kv_aes_header_find(const struct kv_aes_msg *m, const char *name,
	    struct kv_aes_header *h);

/* 1 when H is a STRING header equal to S (":event-type" is "chunk"...). */
int	kv_aes_header_is(const struct kv_aes_header *h, const char *s);

/* A short English reason for ERR, for logs. */
const char *kv_aes_strerror(enum kv_aes_err err);

#endif

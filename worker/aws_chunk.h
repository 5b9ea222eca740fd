/* The payload of a Bedrock InvokeModelWithResponseStream `chunk` event,
 * {"bytes":"<base64>"} (Bedrock may add members, such as "p" padding),
 * turned back into the provider's own event JSON that the base64 carries,
 * for the Anthropic usage scanner. Fed in any pieces, as the event-stream
 * decoder hands the payload out; memory is the struct. Pure, no I/O. */
#ifndef KV_AWS_CHUNK_H
#define KV_AWS_CHUNK_H

#include <stddef.h>

/* Decoded bytes go out in pieces of at most this many. */
#define KV_AWS_CHUNK_OUT	64

/* Where decoded bytes go; returns 0, or -1 to stop the decoder. */
typedef int (*kv_aws_chunk_out)(void *arg, const char *p, size_t len);

struct kv_aws_chunk {
	kv_aws_chunk_out out;
	void		*arg;
	int		 state;
	int		 nest;		/* depth inside a skipped value */
	int		 esc;		/* a backslash just seen in a string */
	int		 key_pos;	/* bytes of the key matched against "bytes"; -1 no match */
	int		 is_bytes;	/* the member being read is "bytes" */
	int		 seen;		/* a "bytes" member was read */
	unsigned	 quad;		/* base64 bits pending */
	int		 nquad;		/* sextets in quad */
	int		 npad;		/* '=' seen */
	size_t		 olen;
	char		 obuf[KV_AWS_CHUNK_OUT];
};

/* Start C on one chunk payload; decoded bytes go to OUT(ARG, ...). */
void	kv_aws_chunk_init(struct kv_aws_chunk *c, kv_aws_chunk_out out, void *arg);

/* The next LEN bytes of the payload. Decoded bytes reach OUT before it
 * returns, whatever the cut, up to the byte that showed an error. Returns
 * 0, or -1 when the payload is not a
 * JSON object with one string member "bytes" in valid base64 (values of
 * other members are skipped, not validated) or OUT failed. */
int	kv_aws_chunk_feed(struct kv_aws_chunk *c, const char *p, size_t len);

/* The payload ended: 0 when the object was closed and held "bytes", else -1. */
int	kv_aws_chunk_finish(struct kv_aws_chunk *c);

#endif

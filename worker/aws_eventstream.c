/* The AWS event-stream decoder: a state machine over the parts of a
 * message (prelude, headers, payload, message CRC), each taken whole or in
 * pieces from whatever the caller feeds. Only the prelude, the CRC and the
 * headers are copied (a long headers block into a buffer of its own, freed
 * once its message is over); payload bytes go straight from the caller's
 * buffer to its callback. */
#include "worker/aws_eventstream.h"

#include <stdlib.h>
#include <string.h>

#include "common/crc32.h"

enum { ST_PRELUDE, ST_HEADERS, ST_PAYLOAD, ST_CRC, ST_FAILED };

static uint32_t
be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* The message is over: its long headers' buffer goes. */
static void
drop_heap(struct kv_aes_dec *d)
{
	free(d->heap);
	d->heap = NULL;
	d->msg.headers = d->hbuf;
}

static int
fail(struct kv_aes_dec *d, enum kv_aes_err err)
{
	drop_heap(d);
	d->err = err;
	d->state = ST_FAILED;
	return -1;
}

void
kv_aes_init(struct kv_aes_dec *d, const struct kv_aes_ops *ops, void *arg)
{
	memset(d, 0, sizeof(*d));
	d->ops = ops;
	d->arg = arg;
	d->state = ST_PRELUDE;
	d->need = sizeof(d->prelude);
	d->msg.headers = d->hbuf;
}

void
kv_aes_release(struct kv_aes_dec *d)
{
	if (d->state != ST_FAILED)
		(void)fail(d, KV_AES_E_STOPPED);
	drop_heap(d);
}

/* Enter STATE, which takes NEED bytes. */
static void
enter(struct kv_aes_dec *d, int state, uint32_t need)
{
	d->state = state;
	d->need = need;
	d->have = 0;
}

/* The 12 prelude bytes are in: check them, size the message. */
static int
prelude_done(struct kv_aes_dec *d)
{
	struct kv_aes_msg *m = &d->msg;

	if (kv_crc32(0, d->prelude, 8) != be32(d->prelude + 8))
		return fail(d, KV_AES_E_PRELUDE_CRC);
	m->total_len = be32(d->prelude);
	m->headers_len = be32(d->prelude + 4);
	if (m->total_len < KV_AES_MESSAGE_MIN || m->total_len > KV_AES_MESSAGE_MAX)
		return fail(d, KV_AES_E_LENGTH);
	if (m->headers_len > m->total_len - KV_AES_MESSAGE_MIN)
		return fail(d, KV_AES_E_HEADERS_LENGTH);
	if (m->headers_len > KV_AES_HEADERS_MAX)
		return fail(d, KV_AES_E_HEADERS_MAX);
	m->payload_len = m->total_len - KV_AES_MESSAGE_MIN - m->headers_len;
	if (m->headers_len > sizeof(d->hbuf)) {
		if ((d->heap = malloc(m->headers_len)) == NULL)
			return fail(d, KV_AES_E_NOMEM);
		m->headers = d->heap;
	}
	d->crc = kv_crc32(0, d->prelude, sizeof(d->prelude));
	enter(d, ST_HEADERS, m->headers_len);
	return 0;
}

/* The headers block is in: check every header, hand them out. */
static int
headers_done(struct kv_aes_dec *d)
{
	struct kv_aes_header h;
	size_t pos = 0;
	int rc;

	while ((rc = kv_aes_header_next(&d->msg, &pos, &h)) == 1)
		;
	if (rc < 0)
		return fail(d, (enum kv_aes_err)-rc);
	if (d->ops && d->ops->head && d->ops->head(d->arg, &d->msg) == -1)
		return fail(d, KV_AES_E_STOPPED);
	enter(d, ST_PAYLOAD, d->msg.payload_len);
	return 0;
}

/* The message CRC is in. */
static int
crc_done(struct kv_aes_dec *d)
{
	if (be32(d->prelude) != d->crc)
		return fail(d, KV_AES_E_MESSAGE_CRC);
	d->messages++;
	if (d->ops && d->ops->end && d->ops->end(d->arg, &d->msg) == -1)
		return fail(d, KV_AES_E_STOPPED);
	drop_heap(d);
	enter(d, ST_PRELUDE, sizeof(d->prelude));
	return 0;
}

/* The part D is in is complete: act on it. */
static int
part_done(struct kv_aes_dec *d)
{
	switch (d->state) {
	case ST_PRELUDE:
		return prelude_done(d);
	case ST_HEADERS:
		return headers_done(d);
	case ST_PAYLOAD:
		enter(d, ST_CRC, 4);
		return 0;
	default:
		return crc_done(d);
	}
}

/* Take up to LEN bytes of the current part from P; returns how many. */
static size_t
take(struct kv_aes_dec *d, const char *p, size_t len)
{
	size_t n = len < d->need ? len : d->need;

	if (d->state == ST_PRELUDE || d->state == ST_CRC)
		memcpy(d->prelude + d->have, p, n);
	else if (d->state == ST_HEADERS)
		memcpy((d->heap ? d->heap : d->hbuf) + d->have, p, n);
	if (d->state != ST_CRC)
		d->crc = d->state == ST_PRELUDE ? d->crc : kv_crc32(d->crc, p, n);
	d->have += (uint32_t)n;
	d->need -= (uint32_t)n;
	d->offset += n;
	return n;
}

int
kv_aes_feed(struct kv_aes_dec *d, const char *p, size_t len)
{
	size_t n;

	if (d->state == ST_FAILED)
		return -1;
	/* an empty part (no headers, no payload) completes without a byte */
	for (;;) {
		if (d->need == 0) {
			if (part_done(d) == -1)
				return -1;
			continue;
		}
		if (len == 0)
			return 0;
		n = take(d, p, len);
		if (d->state == ST_PAYLOAD && d->ops && d->ops->payload &&
		    d->ops->payload(d->arg, &d->msg, p, n) == -1)
			return fail(d, KV_AES_E_STOPPED);
		p += n;
		len -= n;
	}
}

int
kv_aes_finish(struct kv_aes_dec *d)
{
	if (d->state == ST_FAILED)
		return -1;
	if (d->state != ST_PRELUDE || d->have != 0)
		return fail(d, KV_AES_E_TRUNCATED);
	return 0;
}

/* The WebSocket frame parser (ws_frame.h): a frame's header gathered
 * across reads and checked as soon as its bytes are in, then its payload
 * handed out in place. */
#include "common/ws_frame.h"

#include <string.h>

void
kv_ws_init(struct kv_ws_parser *p, enum kv_ws_side side)
{
	memset(p, 0, sizeof(*p));
	p->side = side;
}

static int
is_control(uint8_t op)
{
	return (op & 0x8) != 0;
}

/* The first two bytes' rules, checked before the rest of the header
 * arrives: a peer that breaks them is refused at once. */
static enum kv_ws_err
check_start(const struct kv_ws_parser *p, uint8_t b0, uint8_t b1)
{
	uint8_t op = b0 & 0x0f, len7 = b1 & 0x7f;

	if (b0 & 0x70)
		return KV_WS_ERR_RSV;
	if ((op > KV_WS_OP_BINARY && op < KV_WS_OP_CLOSE) || op > KV_WS_OP_PONG)
		return KV_WS_ERR_OPCODE;
	if (((b1 & 0x80) != 0) != (p->side == KV_WS_FROM_CLIENT))
		return KV_WS_ERR_MASK;
	if (is_control(op)) {
		if (!(b0 & 0x80) || len7 > KV_WS_CONTROL_MAX)
			return KV_WS_ERR_CONTROL;
		return KV_WS_OK;
	}
	if (op == KV_WS_OP_CONT ? !p->in_msg : p->in_msg)
		return KV_WS_ERR_CONT;
	return KV_WS_OK;
}

/* The whole header's length, known from its first two bytes. */
static uint8_t
head_size(const uint8_t *h)
{
	uint8_t len7 = h[1] & 0x7f, n = 2;

	if (len7 == 126)
		n += 2;
	else if (len7 == 127)
		n += 8;
	if (h[1] & 0x80)
		n += 4;
	return n;
}

/* The header is whole: its length (minimal, RFC 6455 5.2), mask key and
 * the message it opens, continues or ends. */
static enum kv_ws_err
take_head(struct kv_ws_parser *p)
{
	const uint8_t *h = p->head;
	uint8_t len7 = h[1] & 0x7f, at = 2, i;
	uint64_t len = len7;

	if (len7 == 126) {
		len = (uint64_t)h[2] << 8 | h[3];
		at = 4;
		if (len < 126)
			return KV_WS_ERR_LENGTH;
	} else if (len7 == 127) {
		for (len = 0, i = 0; i < 8; i++)
			len = len << 8 | h[2 + i];
		at = 10;
		if ((len >> 63) != 0 || len <= 0xffff)
			return KV_WS_ERR_LENGTH;
	}
	p->fin = (h[0] & 0x80) != 0;
	p->opcode = h[0] & 0x0f;
	p->masked = (h[1] & 0x80) != 0;
	if (p->masked)
		memcpy(p->mask, h + at, 4);
	else
		memset(p->mask, 0, 4);
	p->len = len;
	p->off = 0;
	if (!is_control(p->opcode)) {
		if (p->opcode != KV_WS_OP_CONT)
			p->msg_op = p->opcode;
		p->in_msg = !p->fin;
	}
	return KV_WS_OK;
}

/* Gather header bytes; HEAD once it is whole. */
static size_t
feed_head(struct kv_ws_parser *p, const uint8_t *in, size_t len,
    struct kv_ws_event *ev)
{
	size_t used = 0;
	uint8_t want = p->hlen < 2 ? 2 : head_size(p->head);

	while (used < len && p->hlen < want) {
		p->head[p->hlen++] = in[used++];
		if (p->hlen == 2) {
			if ((p->err = check_start(p, p->head[0], p->head[1])) != KV_WS_OK)
				break;
			want = head_size(p->head);
		}
	}
	if (p->err == KV_WS_OK && p->hlen == want)
		p->err = take_head(p);
	if (p->err != KV_WS_OK) {
		ev->kind = KV_WS_ERR;
		ev->err = p->err;
		return 0;
	}
	if (p->hlen < want) {
		ev->kind = KV_WS_NEED;
		return used;
	}
	ev->kind = KV_WS_HEAD;
	ev->end = p->len == 0;
	ev->data = p->head;
	ev->len = p->hlen;
	p->hlen = 0;
	p->in_payload = p->len != 0;
	return used;
}

size_t
kv_ws_feed(struct kv_ws_parser *p, uint8_t *in, size_t len,
    struct kv_ws_event *ev)
{
	uint64_t left;
	size_t n;

	memset(ev, 0, sizeof(*ev));
	if (p->err != KV_WS_OK) {
		ev->kind = KV_WS_ERR;
		ev->err = p->err;
		return 0;
	}
	if (!p->in_payload)
		return feed_head(p, in, len, ev);
	left = p->len - p->off;
	n = left < len ? (size_t)left : len;
	ev->kind = KV_WS_DATA;
	ev->data = in;
	ev->len = n;
	ev->off = p->off;
	p->off += n;
	ev->end = p->off == p->len;
	if (ev->end)
		p->in_payload = 0;
	return n;
}

void
kv_ws_mask(const uint8_t key[4], uint64_t off, uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] ^= key[(off + i) & 3];
}

const char *
kv_ws_strerror(enum kv_ws_err err)
{
	switch (err) {
	case KV_WS_OK:		return "no error";
	case KV_WS_ERR_RSV:	return "reserved bit set";
	case KV_WS_ERR_OPCODE:	return "reserved opcode";
	case KV_WS_ERR_MASK:	return "masking wrong for the sender";
	case KV_WS_ERR_CONTROL:	return "control frame fragmented or over 125 bytes";
	case KV_WS_ERR_LENGTH:	return "payload length not minimal or over 2^63";
	case KV_WS_ERR_CONT:	return "continuation out of place";
	}
	return "unknown";
}

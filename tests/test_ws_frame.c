/* Unit tests of the WebSocket frame parser (common/ws_frame.c): frames
 * of every length form, masked and not, fed whole, split at every point
 * and byte by byte, and every refusal. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ws_frame.h"
#include "tests/unit.h"

/* What a stream said: each frame as "op/fin/len:" and the unmasked
 * payloads concatenated, or the error. */
struct said {
	char	 frames[512];
	uint8_t	 payload[70000];
	size_t	 plen;
	int	 err;
};

/* Build a frame into out; returns its size. */
static size_t
frame(uint8_t *out, int fin, int op, int masked, const uint8_t *pay,
    size_t len)
{
	static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
	size_t n = 0;
	int i;

	out[n++] = (uint8_t)((fin ? 0x80 : 0) | op);
	if (len < 126) {
		out[n++] = (uint8_t)((masked ? 0x80 : 0) | len);
	} else if (len <= 0xffff) {
		out[n++] = (uint8_t)((masked ? 0x80 : 0) | 126);
		out[n++] = (uint8_t)(len >> 8);
		out[n++] = (uint8_t)len;
	} else {
		out[n++] = (uint8_t)((masked ? 0x80 : 0) | 127);
		for (i = 7; i >= 0; i--)
			out[n++] = (uint8_t)((uint64_t)len >> (8 * i));
	}
	if (masked) {
		memcpy(out + n, key, 4);
		n += 4;
	}
	memcpy(out + n, pay, len);
	if (masked)
		kv_ws_mask(key, 0, out + n, len);
	return n + len;
}

/* Feed one piece; returns -1 on an error event. */
static int
feed(struct kv_ws_parser *p, uint8_t *in, size_t len, struct said *s)
{
	struct kv_ws_event ev;
	size_t off = 0, n;

	while (off < len) {
		n = kv_ws_feed(p, in + off, len - off, &ev);
		if (ev.kind == KV_WS_ERR) {
			s->err = (int)ev.err;
			return -1;
		}
		if (ev.kind == KV_WS_HEAD)
			snprintf(s->frames + strlen(s->frames),
			    sizeof(s->frames) - strlen(s->frames), "%d/%d/%llu:",
			    p->opcode, p->fin, (unsigned long long)p->len);
		if (ev.kind == KV_WS_DATA) {
			if (ev.off + ev.len > p->len || n != ev.len)
				return -2;
			if (p->masked)
				kv_ws_mask(p->mask, ev.off, ev.data, ev.len);
			memcpy(s->payload + s->plen, ev.data, ev.len);
			s->plen += ev.len;
		}
		off += n;
	}
	return 0;
}

/* Parse a copy of buf[0..len) cut at CUT (0: whole), or byte by byte. */
static void
parse(const uint8_t *buf, size_t len, size_t cut, int bytewise,
    enum kv_ws_side side, struct said *s)
{
	struct kv_ws_parser p;
	uint8_t *copy = malloc(len + 1);
	size_t i;

	memset(s, 0, sizeof(*s));
	memcpy(copy, buf, len);
	kv_ws_init(&p, side);
	if (bytewise) {
		for (i = 0; i < len; i++)
			if (feed(&p, copy + i, 1, s) < 0)
				break;
	} else if (feed(&p, copy, cut, s) == 0) {
		feed(&p, copy + cut, len - cut, s);
	}
	free(copy);
}

/* Every split point and byte by byte give what the whole gave. */
static void
every_split(const uint8_t *buf, size_t len, enum kv_ws_side side,
    const char *frames, const uint8_t *pay, size_t plen, int err)
{
	static struct said whole, s;
	size_t cut;
	int bad = 0;

	parse(buf, len, len, 0, side, &whole);
	CHECK_STR(whole.frames, frames);
	CHECK_INT(whole.err, err);
	CHECK_INT(whole.plen, plen);
	CHECK(memcmp(whole.payload, pay, plen) == 0);
	for (cut = 0; cut <= len; cut += len > 4000 ? 97 : 1) {
		parse(buf, len, cut, 0, side, &s);
		bad += strcmp(s.frames, whole.frames) != 0 || s.err != whole.err ||
		    s.plen != whole.plen || memcmp(s.payload, whole.payload, s.plen) != 0;
	}
	parse(buf, len, 0, 1, side, &s);
	bad += strcmp(s.frames, whole.frames) != 0 || s.err != whole.err ||
	    s.plen != whole.plen;
	CHECK_INT(bad, 0);
}

static void
test_lengths(void)
{
	static uint8_t pay[70000], buf[200000];
	size_t sizes[] = { 0, 1, 125, 126, 127, 65535, 65536, 69999 };
	char want[64];
	size_t i, n;

	for (i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 7 + 3);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(want, sizeof(want), "1/1/%zu:", sizes[i]);
		n = frame(buf, 1, KV_WS_OP_TEXT, 1, pay, sizes[i]);
		every_split(buf, n, KV_WS_FROM_CLIENT, want, pay, sizes[i], 0);
		n = frame(buf, 1, KV_WS_OP_TEXT, 0, pay, sizes[i]);
		every_split(buf, n, KV_WS_FROM_SERVER, want, pay, sizes[i], 0);
	}
}

/* A fragmented message with a ping and a pong between its pieces, then
 * a close: the order and payloads survive every split. */
static void
test_fragments(void)
{
	uint8_t buf[512];
	const char *want = "1/0/9:9/1/2:0/0/4:10/1/0:0/1/3:8/1/2:";
	size_t n = 0;

	n += frame(buf + n, 0, KV_WS_OP_TEXT, 1, (const uint8_t *)"{\"type\":\"", 9);
	n += frame(buf + n, 1, KV_WS_OP_PING, 1, (const uint8_t *)"hi", 2);
	n += frame(buf + n, 0, KV_WS_OP_CONT, 1, (const uint8_t *)"resp", 4);
	n += frame(buf + n, 1, KV_WS_OP_PONG, 1, (const uint8_t *)"", 0);
	n += frame(buf + n, 1, KV_WS_OP_CONT, 1, (const uint8_t *)"\"}x", 3);
	n += frame(buf + n, 1, KV_WS_OP_CLOSE, 1, (const uint8_t *)"\x03\xe8", 2);
	every_split(buf, n, KV_WS_FROM_CLIENT, want,
	    (const uint8_t *)"{\"type\":\"hiresp\"}x\x03\xe8", 20, 0);
}

/* One refused stream: a good frame first, then BAD; the error comes
 * after the good frame whatever the split. */
static void
refused(const uint8_t *bad, size_t blen, enum kv_ws_side side,
    enum kv_ws_err err)
{
	uint8_t buf[64];
	size_t n = frame(buf, 1, KV_WS_OP_BINARY, side == KV_WS_FROM_CLIENT,
	    (const uint8_t *)"ok", 2);

	memcpy(buf + n, bad, blen);
	every_split(buf, n + blen, side, "2/1/2:", (const uint8_t *)"ok", 2,
	    (int)err);
}

static void
test_refusals(void)
{
	const uint8_t cont_first[] = { 0x80, 0x81, 1, 2, 3, 4, 'x' };
	uint8_t two_starts[32];
	size_t n;

	refused((const uint8_t *)"\xc1\x80\0\0\0\0", 6, KV_WS_FROM_CLIENT, KV_WS_ERR_RSV);
	refused((const uint8_t *)"\x91\x80", 2, KV_WS_FROM_CLIENT, KV_WS_ERR_RSV);
	refused((const uint8_t *)"\xa1\x00", 2, KV_WS_FROM_SERVER, KV_WS_ERR_RSV);
	refused((const uint8_t *)"\x83\x80", 2, KV_WS_FROM_CLIENT, KV_WS_ERR_OPCODE);
	refused((const uint8_t *)"\x8b\x00", 2, KV_WS_FROM_SERVER, KV_WS_ERR_OPCODE);
	refused((const uint8_t *)"\x81\x05hello", 7, KV_WS_FROM_CLIENT, KV_WS_ERR_MASK);
	refused((const uint8_t *)"\x81\x85", 2, KV_WS_FROM_SERVER, KV_WS_ERR_MASK);
	refused((const uint8_t *)"\x09\x80", 2, KV_WS_FROM_CLIENT, KV_WS_ERR_CONTROL);
	refused((const uint8_t *)"\x88\xfe\x00\x7e", 4, KV_WS_FROM_CLIENT, KV_WS_ERR_CONTROL);
	refused((const uint8_t *)"\x81\x7e\x00\x7d", 4, KV_WS_FROM_SERVER, KV_WS_ERR_LENGTH);
	refused((const uint8_t *)"\x81\x7f\0\0\0\0\0\0\xff\xff", 10, KV_WS_FROM_SERVER,
	    KV_WS_ERR_LENGTH);
	refused((const uint8_t *)"\x81\x7f\x80\0\0\0\0\0\0\0", 10, KV_WS_FROM_SERVER,
	    KV_WS_ERR_LENGTH);
	refused(cont_first, sizeof(cont_first), KV_WS_FROM_CLIENT, KV_WS_ERR_CONT);
	/* a new text frame while a fragmented one is open */
	n = frame(two_starts, 0, KV_WS_OP_TEXT, 0, (const uint8_t *)"a", 1);
	n += frame(two_starts + n, 1, KV_WS_OP_TEXT, 0, (const uint8_t *)"b", 1);
	every_split(two_starts, n, KV_WS_FROM_SERVER, "1/0/1:", (const uint8_t *)"a",
	    1, KV_WS_ERR_CONT);
}

/* The largest lengths the header can say are taken, not overflowed. */
static void
test_big_length(void)
{
	uint8_t h[] = { 0x82, 0x7f, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'a' };
	struct kv_ws_parser p;
	struct kv_ws_event ev;
	size_t n;

	kv_ws_init(&p, KV_WS_FROM_SERVER);
	n = kv_ws_feed(&p, h, sizeof(h), &ev);
	CHECK_INT(n, 10);
	CHECK_INT(ev.kind, KV_WS_HEAD);
	CHECK(p.len == INT64_MAX);
	n = kv_ws_feed(&p, h + 10, 1, &ev);
	CHECK_INT(n, 1);
	CHECK_INT(ev.kind, KV_WS_DATA);
	CHECK_INT(ev.end, 0);
	CHECK_STR(kv_ws_strerror(KV_WS_ERR_MASK), "masking wrong for the sender");
}

/* Masking is its own inverse at any offset. */
static void
test_mask(void)
{
	const uint8_t key[4] = { 1, 2, 3, 4 };
	uint8_t b[8] = "abcdefg";

	kv_ws_mask(key, 3, b, 7);
	CHECK_INT(b[0], 'a' ^ 4);
	CHECK_INT(b[1], 'b' ^ 1);
	kv_ws_mask(key, 3, b, 3);
	kv_ws_mask(key, 6, b + 3, 4);
	CHECK_STR((char *)b, "abcdefg");
}

int
main(void)
{
	test_lengths();
	test_fragments();
	test_refusals();
	test_big_length();
	test_mask();
	return unit_done();
}

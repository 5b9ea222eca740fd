/* libFuzzer target: the WebSocket frame parser. The relay feeds it
 * whatever each read returned, so the frames it finds, their payloads and
 * its verdict must not depend on where the reads split the stream: whole,
 * cut at two points picked from the input, and byte by byte must agree.
 * The first byte picks the side (client frames masked, server's not). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/ws_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	uint8_t	*payload;	/* unmasked payloads, concatenated */
	size_t	 plen;
	uint64_t heads;		/* a digest of every header seen */
	size_t	 nheads;
	int	 err;
};

static void
take(struct kv_ws_parser *p, const struct kv_ws_event *ev, struct outcome *o)
{
	if (ev->kind == KV_WS_HEAD) {
		if (p->opcode >= 8 && (p->len > KV_WS_CONTROL_MAX || !p->fin))
			abort();
		o->heads = o->heads * 1000003u + p->len * 31u + p->opcode * 2u + p->fin;
		o->nheads++;
	} else if (ev->kind == KV_WS_DATA) {
		if (ev->len == 0 || ev->off + ev->len > p->len)
			abort();
		if (p->masked)
			kv_ws_mask(p->mask, ev->off, ev->data, ev->len);
		memcpy(o->payload + o->plen, ev->data, ev->len);
		o->plen += ev->len;
	}
}

/* Feed one read (an exact-size copy: ASan sees a read past its end). */
static void
feed_piece(struct kv_ws_parser *p, const uint8_t *in, size_t len,
    struct outcome *o)
{
	struct kv_ws_event ev;
	uint8_t *piece;
	size_t off = 0, n;

	if (len == 0 || o->err)
		return;
	if ((piece = malloc(len)) == NULL)
		abort();
	memcpy(piece, in, len);
	while (off < len) {
		n = kv_ws_feed(p, piece + off, len - off, &ev);
		if (n > len - off || (n == 0 && ev.kind != KV_WS_ERR))
			abort();
		if (ev.kind == KV_WS_ERR) {
			o->err = (int)ev.err;
			break;
		}
		if (ev.kind == KV_WS_NEED && n != len - off)
			abort();
		take(p, &ev, o);
		off += n;
	}
	free(piece);
}

static void
parse(const uint8_t *data, size_t size, const size_t *cuts, size_t ncut,
    struct outcome *o)
{
	struct kv_ws_parser p;
	size_t start = 1, end, i;

	memset(o, 0, sizeof(*o));
	if ((o->payload = malloc(size + 1)) == NULL)
		abort();
	kv_ws_init(&p, data[0] & 1 ? KV_WS_FROM_CLIENT : KV_WS_FROM_SERVER);
	for (i = 0; i <= ncut; i++, start = end) {
		end = i < ncut ? cuts[i] : size;
		feed_piece(&p, data + start, end - start, o);
	}
}

static void
same(const struct outcome *a, const struct outcome *b)
{
	if (a->err != b->err || a->heads != b->heads || a->nheads != b->nheads ||
	    a->plen != b->plen || memcmp(a->payload, b->payload, a->plen) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome whole, other;
	size_t cuts[4096], i;

	if (size < 1)
		return 0;
	parse(data, size, NULL, 0, &whole);
	cuts[0] = 1 + data[0] % size;
	cuts[1] = cuts[0] + (size - cuts[0]) / 2;
	parse(data, size, cuts, 2, &other);
	same(&whole, &other);
	free(other.payload);
	if (size <= 4096) {
		for (i = 2; i < size; i++)
			cuts[i - 2] = i;
		parse(data, size, cuts, size > 2 ? size - 2 : 0, &other);
		same(&whole, &other);
		free(other.payload);
	}
	free(whole.payload);
	return 0;
}

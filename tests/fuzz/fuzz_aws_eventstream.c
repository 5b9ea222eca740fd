/* libFuzzer target: the AWS event-stream decoder (worker/aws_eventstream.h)
 * with the chunk-payload decoder (worker/aws_chunk.h) behind it, as the
 * relay will run them on whatever each read() returned. What they report
 * must not depend on where reads split the stream: decoding whole, cut at
 * two points picked from the input, and byte by byte must give the same
 * trace (each message's sizes and headers, a CRC of its payload and of its
 * decoded chunk, the error and its offset). The first input byte picks a
 * mode: odd, the CRCs of the rest are fixed up first so that the fuzzer
 * reaches the headers and payloads past them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32.h"
#include "tests/fuzz/aes_crcs.h"
#include "worker/aws_chunk.h"
#include "worker/aws_eventstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What the decoders reported, folded into a few numbers. */
struct trace {
	uint32_t	 events;	/* CRC over every event's description */
	uint32_t	 payload, inner;	/* of the current message */
	int		 is_chunk, chunk_bad;
	uint64_t	 nmsg;
	struct kv_aws_chunk chunk;
	int		 rc;
	enum kv_aes_err	 err;
	uint64_t	 offset;
};

static void
note(struct trace *t, const void *p, size_t n)
{
	t->events = kv_crc32(t->events, p, n);
}

static int
on_inner(void *arg, const char *p, size_t len)
{
	struct trace *t = arg;

	if (len == 0 || len > KV_AWS_CHUNK_OUT)
		abort();
	t->inner = kv_crc32(t->inner, p, len);
	return 0;
}

static int
on_head(void *arg, const struct kv_aes_msg *m)
{
	struct trace *t = arg;
	struct kv_aes_header h;
	size_t pos = 0, count = 0;
	int rc;

	note(t, "H", 1);
	note(t, &m->total_len, sizeof(m->total_len));
	note(t, &m->payload_len, sizeof(m->payload_len));
	while ((rc = kv_aes_header_next(m, &pos, &h)) == 1) {
		count++;
		if (pos > m->headers_len || h.type > KV_AES_UUID)
			abort();
		note(t, h.name, h.name_len);
		note(t, &h.type, sizeof(h.type));
		note(t, &h.num, sizeof(h.num));
		note(t, h.bytes, h.bytes_len);
		note(t, h.uuid, sizeof(h.uuid));
	}
	if (rc != 0 || pos != m->headers_len)
		abort();	/* head must only see well-formed headers */
	note(t, &count, sizeof(count));
	t->is_chunk = kv_aes_header_find(m, ":event-type", &h) && kv_aes_header_is(&h, "chunk");
	t->payload = t->inner = 0;
	t->chunk_bad = 0;
	kv_aws_chunk_init(&t->chunk, on_inner, t);
	return 0;
}

static int
on_payload(void *arg, const struct kv_aes_msg *m, const char *p, size_t len)
{
	struct trace *t = arg;

	if (len == 0 || len > m->payload_len)
		abort();
	t->payload = kv_crc32(t->payload, p, len);
	if (t->is_chunk && !t->chunk_bad && kv_aws_chunk_feed(&t->chunk, p, len) == -1)
		t->chunk_bad = 1;
	return 0;
}

static int
on_end(void *arg, const struct kv_aes_msg *m)
{
	struct trace *t = arg;
	int ok = t->is_chunk && !t->chunk_bad && kv_aws_chunk_finish(&t->chunk) == 0;

	(void)m;
	note(t, "E", 1);
	note(t, &t->payload, sizeof(t->payload));
	note(t, &ok, sizeof(ok));
	note(t, &t->inner, sizeof(t->inner));
	return 0;
}

static const struct kv_aes_ops ops = { on_head, on_payload, on_end };

/* Decode DATA with read boundaries at cuts[0..ncut) (ascending); each piece
 * an exact-size copy so ASan sees any read past a read's end. */
static void
decode(const uint8_t *data, size_t size, const size_t *cuts, size_t ncut, struct trace *t)
{
	struct kv_aes_dec d;
	size_t start = 0, end, i;
	char *piece;

	memset(t, 0, sizeof(*t));
	kv_aes_init(&d, &ops, t);
	t->rc = 0;
	for (i = 0; i <= ncut && t->rc == 0; i++, start = end) {
		end = i < ncut ? cuts[i] : size;
		if ((piece = malloc(end - start + 1)) == NULL)
			abort();
		memcpy(piece, data + start, end - start);
		t->rc = kv_aes_feed(&d, end > start ? piece : NULL, end - start);
		free(piece);
	}
	if (t->rc == 0)
		t->rc = kv_aes_finish(&d);
	if ((t->rc == 0) != (d.err == KV_AES_E_NONE) || d.offset > size)
		abort();
	t->err = d.err;
	t->offset = d.offset;
	kv_aes_release(&d);
	t->nmsg = d.messages;
}

static void
same(const struct trace *a, const struct trace *b)
{
	if (a->events != b->events || a->rc != b->rc || a->err != b->err ||
	    a->offset != b->offset || a->nmsg != b->nmsg)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace whole, cut;
	size_t cuts[2], *each;
	uint8_t *in;

	if (size < 1)
		return 0;
	in = aes_input(data, size, &size, cuts);
	decode(in, size, NULL, 0, &whole);
	decode(in, size, cuts, 2, &cut);
	same(&whole, &cut);
	if ((each = aes_every_byte(size)) != NULL) {
		decode(in, size, each, size - 1, &cut);
		same(&whole, &cut);
		free(each);
	}
	free(in);
	return 0;
}

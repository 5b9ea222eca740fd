/* The AWS event-stream decoder and the chunk-payload decoder against a
 * stream made by AWS's own codec (tests/data/eventstream.bin, written with
 * what it must decode to by tests/sdk/eventstream_frames.mjs): decoded
 * whole, a byte at a time, cut at every point and cut at random, the
 * rendering must equal tests/data/eventstream.txt. Then every bit flipped
 * and every truncation must be refused, and each error hand-built. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/crc32.h"
#include "tests/aes_frame.h"
#include "tests/unit.h"
#include "worker/aws_chunk.h"
#include "worker/aws_eventstream.h"

/* ---- rendering what the decoder hands out ------------------------------- */

struct sink {
	char	*text;
	size_t	 len, cap;
	int	 is_chunk;	/* the message is a chunk event */
	int	 chunk_failed;
	struct kv_aws_chunk chunk;
	char	*payload_hex, *inner_hex;	/* pending for the end line */
	size_t	 plen, ilen, pcap, icap;
};

static void
grow(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*buf = realloc(*buf, *cap);
		if (*buf == NULL)
			abort();
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static void
put(struct sink *s, const char *str)
{
	grow(&s->text, &s->len, &s->cap, str, strlen(str));
}

static void
put_hex(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char h[2];
	size_t i;

	for (i = 0; i < n; i++) {
		h[0] = digits[(unsigned char)p[i] >> 4];
		h[1] = digits[p[i] & 15];
		grow(buf, len, cap, h, 2);
	}
}

static void
put_value(struct sink *s, const struct kv_aes_header *h)
{
	static const char *names[] = { "bool", "bool", "byte", "short", "int", "long",
		"bytes", "string", "timestamp", "uuid" };
	char num[64];
	int i;

	put(s, names[h->type]);
	put(s, " ");
	if (h->type == KV_AES_BYTES || h->type == KV_AES_STRING) {
		put_hex(&s->text, &s->len, &s->cap, h->bytes, h->bytes_len);
	} else if (h->type == KV_AES_UUID) {
		for (i = 0; i < 16; i++) {
			snprintf(num, sizeof(num), "%02x", h->uuid[i]);
			put(s, num);
		}
	} else {
		snprintf(num, sizeof(num), "%" PRId64, h->num);
		put(s, num);
	}
}

static int
on_inner(void *arg, const char *p, size_t len)
{
	struct sink *s = arg;

	CHECK(len > 0 && len <= KV_AWS_CHUNK_OUT);
	put_hex(&s->inner_hex, &s->ilen, &s->icap, p, len);
	return 0;
}

static int
on_head(void *arg, const struct kv_aes_msg *m)
{
	struct sink *s = arg;
	struct kv_aes_header h;
	size_t pos = 0;
	char line[96];

	snprintf(line, sizeof(line), "message %" PRIu32 " %" PRIu32 " %" PRIu32 "\n",
	    m->total_len, m->headers_len, m->payload_len);
	put(s, line);
	while (kv_aes_header_next(m, &pos, &h) == 1) {
		put(s, "header ");
		put_hex(&s->text, &s->len, &s->cap, h.name, h.name_len);
		put(s, " ");
		put_value(s, &h);
		put(s, "\n");
	}
	s->is_chunk = kv_aes_header_find(m, ":event-type", &h) && kv_aes_header_is(&h, "chunk");
	s->plen = s->ilen = 0;
	s->chunk_failed = 0;
	kv_aws_chunk_init(&s->chunk, on_inner, s);
	return 0;
}

static int
on_payload(void *arg, const struct kv_aes_msg *m, const char *p, size_t len)
{
	struct sink *s = arg;

	(void)m;
	CHECK(len > 0);
	put_hex(&s->payload_hex, &s->plen, &s->pcap, p, len);
	if (s->is_chunk && kv_aws_chunk_feed(&s->chunk, p, len) == -1)
		s->chunk_failed = 1;
	return 0;
}

static int
on_end(void *arg, const struct kv_aes_msg *m)
{
	struct sink *s = arg;

	(void)m;
	put(s, "payload ");
	if (s->plen)
		put(s, s->payload_hex);
	put(s, "\n");
	if (s->is_chunk) {
		CHECK(!s->chunk_failed && kv_aws_chunk_finish(&s->chunk) == 0);
		put(s, "chunk ");
		if (s->ilen)
			put(s, s->inner_hex);
		put(s, "\n");
	}
	return 0;
}

static const struct kv_aes_ops ops = { on_head, on_payload, on_end };

static void
sink_free(struct sink *s)
{
	free(s->text);
	free(s->payload_hex);
	free(s->inner_hex);
	memset(s, 0, sizeof(*s));
}

/* Decode BUF[0..N) fed in pieces ending at CUTS[0..NCUTS) (ascending,
 * the last N); the rendering goes to S. Returns feed/finish's result. */
static int
decode(struct sink *s, const char *buf, size_t n, const size_t *cuts, size_t ncuts)
{
	struct kv_aes_dec d;
	size_t i, at = 0;

	memset(s, 0, sizeof(*s));
	put(s, "");
	kv_aes_init(&d, &ops, s);
	for (i = 0; i < ncuts; i++) {
		if (kv_aes_feed(&d, buf + at, cuts[i] - at) == -1)
			return -1;
		at = cuts[i];
	}
	(void)n;
	return kv_aes_finish(&d);
}

/* ---- the AWS-made stream under every cut --------------------------------- */

/* Every cut point, flip and truncation of the checked-in stream (2 KB) is
 * tried; of a longer one (t_eventstream.sh's random streams) about 300. */
static size_t
stride(size_t n)
{
	return n <= 4096 ? 1 : n / 300 + 1;
}

static int
same(const struct sink *s, const char *want)
{
	return s->text != NULL && strcmp(s->text, want) == 0;
}

static void
test_fixture(const char *bin, size_t n, const char *want)
{
	struct sink s;
	size_t *cuts = malloc((n + 1) * sizeof(*cuts)), i, k, bad;
	uint32_t seed = 12345;

	if (cuts == NULL)
		abort();
	cuts[0] = n;
	CHECK_INT(decode(&s, bin, n, cuts, 1), 0);
	CHECK(same(&s, want));
	if (!same(&s, want))
		fprintf(stderr, "got:\n%s\nwant:\n%s\n", s.text, want);
	sink_free(&s);
	for (i = 0; i < n; i++)
		cuts[i] = i + 1;
	CHECK_INT(decode(&s, bin, n, cuts, n), 0);
	CHECK(same(&s, want));
	sink_free(&s);
	for (bad = 0, i = 0; i <= n; i += stride(n)) {
		size_t two[2] = { i, n };
		if (decode(&s, bin, n, two, 2) != 0 || !same(&s, want))
			bad++;
		sink_free(&s);
	}
	CHECK_INT(bad, 0);
	for (bad = 0, k = 0; k < 300; k++) {
		size_t nc = 0, at = 0;
		while (at < n) {
			seed = seed * 1103515245 + 12345;
			at += 1 + (seed >> 16) % 97;
			cuts[nc++] = at < n ? at : n;
		}
		if (decode(&s, bin, n, cuts, nc) != 0 || !same(&s, want))
			bad++;
		sink_free(&s);
	}
	CHECK_INT(bad, 0);
	free(cuts);
}

/* Every single bit flipped anywhere is refused (CRC-32 catches every
 * one-bit error), and the messages before the flipped one still decode. */
static void
test_bit_flips(const char *bin, size_t n)
{
	char *copy = malloc(n);
	struct kv_aes_dec d;
	size_t i, bad = 0;
	int bit;

	if (copy == NULL)
		abort();
	for (i = 0; i < n; i += stride(n))
		for (bit = 0; bit < 8; bit++) {
			memcpy(copy, bin, n);
			copy[i] ^= (char)(1 << bit);
			kv_aes_init(&d, NULL, NULL);
			if (kv_aes_feed(&d, copy, n) == 0 && kv_aes_finish(&d) == 0)
				bad++;
			else if (d.err == KV_AES_E_NONE)
				bad++;
		}
	CHECK_INT(bad, 0);
	free(copy);
}

/* 1 when BIN[0..N) decodes to a truncation error. */
static int
truncated(const char *bin, size_t n)
{
	struct kv_aes_dec d;

	kv_aes_init(&d, NULL, NULL);
	return kv_aes_feed(&d, bin, n) == 0 && kv_aes_finish(&d) == -1 &&
	    d.err == KV_AES_E_TRUNCATED;
}

/* A stream cut short is refused unless cut between messages: at each
 * message's end (the sizes the .txt gives) it ends cleanly; one byte
 * before and after, and at every stride, it is truncated. */
static void
test_truncations(const char *bin, size_t n, const char *want)
{
	struct kv_aes_dec d;
	const char *line;
	size_t at = 0, i, next, bad = 0, nmsg = 0, clean = 0;
	unsigned long total;

	for (line = want; line != NULL; line = strchr(line, '\n')) {
		line += *line == '\n';
		if (sscanf(line, "message %lu", &total) != 1)
			continue;
		nmsg++;
		next = at + total;
		bad += !truncated(bin, at + 1) + !truncated(bin, next - 1);
		for (i = at + 2; i < next - 1; i++)
			if (i % stride(n) == 0)
				bad += !truncated(bin, i);
		at = next;
		kv_aes_init(&d, NULL, NULL);
		clean += kv_aes_feed(&d, bin, at) == 0 && kv_aes_finish(&d) == 0 &&
		    d.messages == nmsg;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(at, n);
	CHECK(nmsg > 0);
	CHECK_INT(clean, nmsg);
}

/* ---- hand-built frames for each error ------------------------------------ */

/* Feed BUF[0..N) whole and a byte at a time: both must fail with ERR, at
 * the same offset. */
static void
expect_err(const unsigned char *buf, size_t n, enum kv_aes_err err)
{
	struct kv_aes_dec d, e;
	size_t i;
	int rc = 0;

	kv_aes_init(&d, NULL, NULL);
	if (kv_aes_feed(&d, (const char *)buf, n) == 0)
		kv_aes_finish(&d);
	CHECK_INT(d.err, err);
	kv_aes_init(&e, NULL, NULL);
	for (i = 0; i < n && rc == 0; i++)
		rc = kv_aes_feed(&e, (const char *)buf + i, 1);
	if (rc == 0)
		kv_aes_finish(&e);
	CHECK_INT(e.err, err);
	CHECK_INT(e.offset, d.offset);
	/* once failed, always failed */
	CHECK_INT(kv_aes_feed(&d, "", 0), -1);
	CHECK_INT(kv_aes_finish(&d), -1);
	CHECK_INT(d.err, err);
}

static int
stop_head(void *arg, const struct kv_aes_msg *m)
{
	(void)arg;
	(void)m;
	return -1;
}

static void
test_errors(void)
{
	static unsigned char b[4096];
	static const char hdr_ok[] = "\x01" "a" "\x07" "\x00\x01" "x";
	static const char hdr_type[] = "\x01" "a" "\x0a" "\x00\x01" "x";
	static const char hdr_short[] = "\x01" "a" "\x04" "\x00\x01";
	static const char hdr_str[] = "\x01" "a" "\x07" "\x00\x09" "x";
	static const char hdr_name[] = "\x09" "a" "\x07";
	static const struct kv_aes_ops stop = { stop_head, NULL, NULL };
	struct kv_aes_dec d;
	size_t n;

	n = aes_frame(b, 16, 0, "", 0, "", 0);
	kv_aes_init(&d, NULL, NULL);
	CHECK_INT(kv_aes_feed(&d, (const char *)b, n), 0);
	CHECK_INT(kv_aes_finish(&d), 0);
	CHECK_INT(d.messages, 1);
	n = aes_frame(b, 16 + 6 + 3, 6, hdr_ok, 6, "abc", 3);
	kv_aes_init(&d, NULL, NULL);
	CHECK_INT(kv_aes_feed(&d, (const char *)b, n), 0);
	CHECK_INT(kv_aes_finish(&d), 0);

	n = aes_frame(b, 15, 0, "", 0, "", 0);
	expect_err(b, n, KV_AES_E_LENGTH);
	n = aes_frame(b, KV_AES_MESSAGE_MAX + 1, 0, "", 0, "", 0);
	expect_err(b, n, KV_AES_E_LENGTH);
	n = aes_frame(b, 20, 5, "abcd", 4, "", 0);
	expect_err(b, n, KV_AES_E_HEADERS_LENGTH);
	n = aes_frame(b, 16 + KV_AES_HEADERS_MAX + 1, KV_AES_HEADERS_MAX + 1, "", 0, "", 0);
	expect_err(b, 12, KV_AES_E_HEADERS_MAX);
	n = aes_frame(b, 16 + 6, 6, hdr_type, 6, "", 0);
	expect_err(b, n, KV_AES_E_HEADER_TYPE);
	n = aes_frame(b, 16 + 5, 5, hdr_short, 5, "", 0);
	expect_err(b, n, KV_AES_E_HEADER_TRUNCATED);
	n = aes_frame(b, 16 + 6, 6, hdr_str, 6, "", 0);
	expect_err(b, n, KV_AES_E_HEADER_TRUNCATED);
	n = aes_frame(b, 16 + 3, 3, hdr_name, 3, "", 0);
	expect_err(b, n, KV_AES_E_HEADER_TRUNCATED);
	n = aes_frame(b, 16 + 1, 1, "\x00", 1, "", 0);	/* empty name, no type */
	expect_err(b, n, KV_AES_E_HEADER_TRUNCATED);
	n = aes_frame(b, 16 + 2, 2, "\x00\x00", 2, "", 0);	/* empty name, true: taken */
	kv_aes_init(&d, NULL, NULL);
	CHECK_INT(kv_aes_feed(&d, (const char *)b, n), 0);
	n = aes_frame(b, 16 + 3, 0, "", 0, "abc", 3);
	b[n - 1] ^= 1;
	expect_err(b, n, KV_AES_E_MESSAGE_CRC);
	n = aes_frame(b, 16, 0, "", 0, "", 0);
	b[8] ^= 0x80;
	expect_err(b, n, KV_AES_E_PRELUDE_CRC);
	n = aes_frame(b, 16 + 3, 0, "", 0, "abc", 3);
	expect_err(b, n - 1, KV_AES_E_TRUNCATED);

	n = aes_frame(b, 16, 0, "", 0, "", 0);
	kv_aes_init(&d, &stop, NULL);
	CHECK_INT(kv_aes_feed(&d, (const char *)b, n), -1);
	CHECK_INT(d.err, KV_AES_E_STOPPED);
	CHECK_INT(kv_aes_feed(&d, (const char *)b, n), -1);
	CHECK(strcmp(kv_aes_strerror(KV_AES_E_MESSAGE_CRC), "message CRC mismatch") == 0);
}

/* ---- a headers block longer than the decoder holds inline ---------------- */

static int
long_head(void *arg, const struct kv_aes_msg *m)
{
	struct kv_aes_header h;

	if (kv_aes_header_find(m, "x-long", &h) && h.type == KV_AES_STRING &&
	    h.bytes_len == 900 && h.bytes[0] == 'a' && h.bytes[899] == 'z' &&
	    kv_aes_header_find(m, ":message-type", &h) && kv_aes_header_is(&h, "event"))
		(*(int *)arg)++;
	return 0;
}

/* A 926-byte headers block (past KV_AES_HEADERS_INLINE, within MAX) is
 * handed out whole under any cut, twice in a row; a decoder dropped inside
 * one frees it (LeakSanitizer checks), and one flipped bit in it fails. */
static void
test_long_headers(void)
{
	static unsigned char b[4096], two[8192];
	static char hdr[1024];
	static const struct kv_aes_ops ops_long = { long_head, NULL, NULL };
	struct kv_aes_dec d;
	size_t hl = 0, n, i;
	int seen = 0, rc = 0;

	hl += (size_t)snprintf(hdr, sizeof(hdr), "%c:message-type%c%c%cevent", 13, 7, 0, 5);
	hl += (size_t)snprintf(hdr + hl, sizeof(hdr) - hl, "%cx-long%c%c%c", 6, 7, 900 >> 8, 900 & 255);
	memset(hdr + hl, 'm', 900);
	hdr[hl] = 'a';
	hdr[hl + 899] = 'z';
	hl += 900;
	CHECK(hl > KV_AES_HEADERS_INLINE && hl <= KV_AES_HEADERS_MAX);
	n = aes_frame(b, 16 + (uint32_t)hl + 3, (uint32_t)hl, hdr, hl, "abc", 3);
	memcpy(two, b, n);
	memcpy(two + n, b, n);
	kv_aes_init(&d, &ops_long, &seen);
	CHECK_INT(kv_aes_feed(&d, (const char *)two, 2 * n), 0);
	CHECK_INT(kv_aes_finish(&d), 0);
	CHECK_INT(seen, 2);
	CHECK(d.heap == NULL);
	kv_aes_init(&d, &ops_long, &seen);
	for (i = 0; i < 2 * n && rc == 0; i++)
		rc = kv_aes_feed(&d, (const char *)two + i, 1);
	CHECK_INT(rc, 0);
	CHECK_INT(kv_aes_finish(&d), 0);
	CHECK_INT(seen, 4);
	kv_aes_init(&d, &ops_long, &seen);
	CHECK_INT(kv_aes_feed(&d, (const char *)b, 12 + hl / 2), 0);
	CHECK(d.heap != NULL);
	kv_aes_release(&d);
	CHECK(d.heap == NULL);
	CHECK_INT(kv_aes_feed(&d, (const char *)b, 1), -1);
	kv_aes_release(&d);
	b[12 + hl - 1] ^= 1;
	expect_err(b, n, KV_AES_E_MESSAGE_CRC);
}

int
main(void)
{
	size_t n, tn;
	char *bin = unit_data("eventstream.bin", &n);
	char *want = unit_data("eventstream.txt", &tn);

	CHECK_INT(kv_crc32(0, "123456789", 9), 0xCBF43926u);
	CHECK_INT(kv_crc32(kv_crc32(0, "1234", 4), "56789", 5), 0xCBF43926u);
	test_fixture(bin, n, want);
	test_long_headers();
	test_bit_flips(bin, n);
	test_truncations(bin, n, want);
	test_errors();
	free(bin);
	free(want);
	return unit_done();
}

/* The AWS event-stream usage filter (worker/aws_stream_filter.c) on Bedrock
 * streams made by AWS's own codec (tests/data/bedrock_*.bin, from
 * tests/sdk/bedrock_streams.mjs, with the usage each must give in
 * bedrock_*.txt): whole, a byte at a time, cut at every point and 300
 * random ways; truncated and bit-flipped at every byte (a cut, the broken
 * message void); a chunk that is not base64 JSON; and Bedrock's usage
 * outside a stream (Converse's JSON body, InvokeModel's count headers). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/aes_frame.h"
#include "tests/unit.h"
#include "worker/aws_stream_filter.h"
#include "worker/usage.h"

/* What the filter left in the scanner, as bedrock_*.txt writes it. */
static void
render(const struct kv_usage_scanner *s, int cut, char *out, size_t n)
{
	const struct kv_usage *u = kv_usage_result(s);

	snprintf(out, n, "usage %lld %lld %lld %lld %d %d %lld %d\n", (long long)u->input,
	    (long long)u->output, (long long)u->cached_input, (long long)u->cache_write,
	    u->found, s->final, (long long)s->output_bytes, cut);
}

/* Feed BUF[0..LEN) cut at CUTS[0..NCUTS) (ascending), then end it. */
static void
run(enum kv_api api, const char *buf, size_t len, const size_t *cuts, size_t ncuts,
    char *out, size_t n)
{
	struct kv_usage_scanner s;
	struct kv_aws_stream *a;
	size_t i, at = 0;

	kv_usage_init(&s, api, 1);
	if ((a = kv_aws_stream_new(&s)) == NULL)
		abort();
	for (i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : len;

		kv_aws_stream_feed(a, buf + at, to - at);
		at = to;
	}
	kv_aws_stream_end(a);
	kv_aws_stream_end(a);	/* idempotent */
	render(&s, (int)a->cut, out, n);
	kv_aws_stream_free(a);
}

static void
run_whole(enum kv_api api, const char *buf, size_t len, char *out, size_t n)
{
	run(api, buf, len, NULL, 0, out, n);
}

static int
cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* Whole, byte by byte, at every single point, and 300 random ways. */
static void
every_cut(enum kv_api api, const char *buf, size_t len, const char *want)
{
	char got[256];
	size_t *cuts = malloc(len * sizeof(*cuts)), i, k, bad = 0;

	run_whole(api, buf, len, got, sizeof(got));
	CHECK_STR(got, want);
	for (i = 0; i + 1 < len; i++)
		cuts[i] = i + 1;
	run(api, buf, len, cuts, len - 1, got, sizeof(got));
	CHECK_STR(got, want);
	for (i = 1; i < len; i++) {
		run(api, buf, len, &i, 1, got, sizeof(got));
		bad += strcmp(got, want) != 0;
	}
	srand(35);
	for (k = 0; k < 300; k++) {
		size_t n = (size_t)rand() % 40 + 1;

		for (i = 0; i < n; i++)
			cuts[i] = (size_t)rand() % (len - 1) + 1;
		qsort(cuts, n, sizeof(*cuts), cmp_size);
		run(api, buf, len, cuts, n, got, sizeof(got));
		bad += strcmp(got, want) != 0;
	}
	CHECK_INT(bad, 0);
	free(cuts);
}

/* The usage line without its cut field. */
static size_t
usage_part(const char *line)
{
	return (size_t)(strrchr(line, ' ') - line);
}

/* The final field of a usage line. */
static int
final_of(const char *line)
{
	long long in, out, rd, wr, text;
	int found, final, cut;

	if (sscanf(line, "usage %lld %lld %lld %lld %d %d %lld %d", &in, &out, &rd, &wr, &found,
	    &final, &text, &cut) != 8)
		return -1;
	return final;
}

/* Offset of the message holding byte AT (the message boundary at or
 * before it), read off the preludes. */
static size_t
message_start(const char *buf, size_t at)
{
	size_t m = 0, total;

	for (;;) {
		total = (size_t)(unsigned char)buf[m] << 24 | (size_t)(unsigned char)buf[m + 1] << 16 |
		    (size_t)(unsigned char)buf[m + 2] << 8 | (unsigned char)buf[m + 3];
		if (m + total > at)
			return m;
		m += total;
	}
}

/* Truncated at, or one bit flipped in, any byte: a cut, and the usage is
 * what the messages before the broken one gave (it is void). */
static void
every_break(enum kv_api api, const char *buf, size_t len, int exception)
{
	char got[256], before[256], *copy = malloc(len);
	size_t i, m, bad_cut = 0, bad_usage = 0, bad_final = 0;

	for (i = 1; i < len; i++) {
		m = message_start(buf, i);
		run_whole(api, buf, m, before, sizeof(before));
		run_whole(api, buf, i, got, sizeof(got));
		if (i == m) {
			bad_cut += strcmp(got, before) != 0;
			continue;
		}
		bad_cut += got[strlen(got) - 2] != '0' + KV_AWS_CUT_TRUNCATED &&
		    !(exception && got[strlen(got) - 2] == '0' + KV_AWS_CUT_EXCEPTION);
		bad_usage += usage_part(got) != usage_part(before) ||
		    memcmp(got, before, usage_part(got)) != 0;
	}
	for (i = 0; i < len; i++) {
		m = message_start(buf, i);
		run_whole(api, buf, m, before, sizeof(before));
		memcpy(copy, buf, len);
		copy[i] ^= (char)(1 << (i % 8));
		run_whole(api, copy, len, got, sizeof(got));
		bad_cut += got[strlen(got) - 2] == '0';
		bad_final += final_of(got) != 0;
		bad_usage += usage_part(got) != usage_part(before) ||
		    memcmp(got, before, usage_part(got)) != 0;
	}
	CHECK_INT(bad_cut, 0);
	CHECK_INT(bad_usage, 0);
	CHECK_INT(bad_final, 0);
	free(copy);
}

static void
fixture(const char *name, enum kv_api api, int exception)
{
	char bin[64], txt[64];
	size_t len, wlen;
	char *buf, *want;

	snprintf(bin, sizeof(bin), "%s.bin", name);
	snprintf(txt, sizeof(txt), "%s.txt", name);
	buf = unit_data(bin, &len);
	want = unit_data(txt, &wlen);
	every_cut(api, buf, len, want);
	every_break(api, buf, len, exception);
	free(buf);
	free(want);
}

/* ---- hand-made messages (the CRCs computed here) ------------------------ */

static size_t
put_header(unsigned char *p, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	p[0] = (unsigned char)nl;
	memcpy(p + 1, name, nl);
	p[1 + nl] = 7;	/* string */
	p[2 + nl] = (unsigned char)(vl >> 8);
	p[3 + nl] = (unsigned char)vl;
	memcpy(p + 4 + nl, value, vl);
	return 4 + nl + vl;
}

/* An event message of EVENT_TYPE with PAYLOAD into OUT; returns its length. */
static size_t
message(unsigned char *out, const char *event_type, const char *payload)
{
	unsigned char h[256];
	size_t hl = 0, pl = strlen(payload);

	hl += put_header(h + hl, ":event-type", event_type);
	hl += put_header(h + hl, ":content-type", "application/json");
	hl += put_header(h + hl, ":message-type", "event");
	return aes_frame(out, (uint32_t)(16 + hl + pl), (uint32_t)hl, h, hl, payload, pl);
}

/* A chunk whose CRCs are right but whose payload is not {"bytes": base64}:
 * a cut, and what it fed is void. */
static void
bad_chunk(void)
{
	static const char start[] = "{\"type\":\"message_start\",\"message\":{\"usage\":"
	    "{\"input_tokens\":7,\"output_tokens\":1}}}";
	unsigned char buf[2048];
	char b64[512], got[256], p[600];
	size_t n, i, o = 0;
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (i = 0; i < sizeof(start) - 1; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)start[i] << 16 |
		    (i + 1 < sizeof(start) - 1 ? (uint32_t)(unsigned char)start[i + 1] << 8 : 0) |
		    (i + 2 < sizeof(start) - 1 ? (unsigned char)start[i + 2] : 0);

		b64[o++] = tab[v >> 18];
		b64[o++] = tab[(v >> 12) & 63];
		b64[o++] = i + 1 < sizeof(start) - 1 ? tab[(v >> 6) & 63] : '=';
		b64[o++] = i + 2 < sizeof(start) - 1 ? tab[v & 63] : '=';
	}
	b64[o] = '\0';
	snprintf(p, sizeof(p), "{\"bytes\":\"%s\"}", b64);
	n = message(buf, "chunk", p);
	run_whole(KV_API_ANTHROPIC_MESSAGES, (char *)buf, n, got, sizeof(got));
	CHECK_STR(got, "usage 7 1 0 0 1 0 0 0\n");
	/* the same usage, then a chunk whose base64 is broken halfway */
	snprintf(p, sizeof(p), "{\"bytes\":\"%.*s!%s\"}", (int)(o / 2), b64, b64 + o / 2);
	n += message(buf + n, "chunk", p);
	run_whole(KV_API_ANTHROPIC_MESSAGES, (char *)buf, n, got, sizeof(got));
	CHECK_STR(got, "usage 7 1 0 0 1 0 0 3\n");
	/* a chunk with no "bytes" at all, first: nothing is taken */
	n = message(buf, "chunk", "{\"p\":\"abc\"}");
	n += message(buf + n, "chunk", p);
	run_whole(KV_API_ANTHROPIC_MESSAGES, (char *)buf, n, got, sizeof(got));
	CHECK_STR(got, "usage 0 0 0 0 0 0 0 3\n");
	/* events other than chunks are skipped on an InvokeModel stream */
	n = message(buf, "other", "{\"usage\":{\"input_tokens\":9}}");
	run_whole(KV_API_ANTHROPIC_MESSAGES, (char *)buf, n, got, sizeof(got));
	CHECK_STR(got, "usage 0 0 0 0 0 0 0 0\n");
}

static void
exception_named(void)
{
	struct kv_usage_scanner s;
	struct kv_aws_stream *a;
	size_t len;
	char *buf = unit_data("bedrock_exception.bin", &len);

	kv_usage_init(&s, KV_API_ANTHROPIC_MESSAGES, 1);
	a = kv_aws_stream_new(&s);
	kv_aws_stream_feed(a, buf, len);
	kv_aws_stream_end(a);
	CHECK_INT(a->cut, KV_AWS_CUT_EXCEPTION);
	CHECK_STR(a->exception, "modelStreamErrorException");
	CHECK_STR(kv_aws_stream_why(a), "an exception message");
	kv_aws_stream_free(a);
	free(buf);
}

/* ---- Bedrock's usage outside an event stream ---------------------------- */

static void
body(enum kv_api api, const char *json, const char *want)
{
	struct kv_usage_scanner s;
	char got[256];
	size_t i, len = strlen(json);

	for (i = 0; i <= len; i++) {
		kv_usage_init(&s, api, 0);
		kv_usage_feed(&s, json, i);
		kv_usage_feed(&s, json + i, len - i);
		render(&s, 0, got, sizeof(got));
		if (strcmp(got, want) != 0)
			break;
	}
	CHECK_STR(got, want);
}

/* A Converse body's 1-hour cache writes: WANT, under every split. */
static void
cache_details(const char *json, int64_t want)
{
	struct kv_usage_scanner s;
	size_t i, len = strlen(json), bad = 0;

	for (i = 0; i <= len; i++) {
		kv_usage_init(&s, KV_API_BEDROCK_CONVERSE, 0);
		kv_usage_feed(&s, json, i);
		kv_usage_feed(&s, json + i, len - i);
		bad += kv_usage_result(&s)->cache_write_1h != want || !kv_usage_result(&s)->found;
	}
	CHECK_INT(bad, 0);
	/* the same usage as a ConverseStream's metadata event */
	kv_usage_init(&s, KV_API_BEDROCK_CONVERSE, 1);
	kv_usage_feed_event(&s, json, len);
	kv_usage_end_event(&s);
	CHECK_INT(kv_usage_result(&s)->cache_write_1h, want);
}

static void
outside_streams(void)
{
	struct kv_usage_scanner s;
	char got[256];
	const int64_t heads[4] = { 25, 42, 1200, 300 }, none[4] = { -1, -1, -1, -1 };

	/* Converse: input without the cache's, as Anthropic's */
	body(KV_API_BEDROCK_CONVERSE, "{\"output\":{\"message\":{\"role\":\"assistant\",\"content\":"
	    "[{\"text\":\"Hi \\\"you\\\"\"},{\"toolUse\":{\"toolUseId\":\"t\",\"name\":\"f\",\"input\":"
	    "{\"a\":\"b\"}}}]}},\"stopReason\":\"end_turn\",\"usage\":{\"inputTokens\":30,"
	    "\"outputTokens\":17,\"totalTokens\":2607,\"cacheReadInputTokens\":2048,"
	    "\"cacheWriteInputTokens\":512},\"metrics\":{\"latencyMs\":420}}",
	    "usage 2590 17 2048 512 1 1 10 0\n");
	body(KV_API_BEDROCK_CONVERSE, "{\"usage\":{\"inputTokens\":3,\"outputTokens\":4,"
	    "\"totalTokens\":7}}", "usage 3 4 0 0 1 1 0 0\n");
	/* Anthropic's names mean nothing on Converse, Bedrock's nothing on OpenAI */
	body(KV_API_BEDROCK_CONVERSE, "{\"usage\":{\"input_tokens\":3}}", "usage 0 0 0 0 0 0 0 0\n");
	body(KV_API_OPENAI_CHAT, "{\"usage\":{\"inputTokens\":3}}", "usage 0 0 0 0 0 0 0 0\n");
	/* Converse's cacheDetails: the 1-hour writes among the writes, under
	 * any split, in either member order, however the TTLs are listed */
	cache_details("{\"usage\":{\"inputTokens\":30,\"outputTokens\":17,\"cacheWriteInputTokens\":512,"
	    "\"cacheDetails\":[{\"inputTokens\":300,\"ttl\":\"1h\"},{\"ttl\":\"5m\",\"inputTokens\":212}]}}",
	    300);
	cache_details("{\"usage\":{\"cacheDetails\":[{\"ttl\":\"1h\",\"inputTokens\":100},{\"ttl\":\"1h\","
	    "\"inputTokens\":50},{\"inputTokens\":7,\"ttl\":\"5m\"}],\"inputTokens\":3,\"outputTokens\":4,"
	    "\"cacheWriteInputTokens\":157}}", 150);
	cache_details("{\"usage\":{\"inputTokens\":3,\"outputTokens\":4,\"cacheWriteInputTokens\":9,"
	    "\"cacheDetails\":[]}}", 0);
	/* more 1-hour writes than writes: capped */
	cache_details("{\"usage\":{\"cacheWriteInputTokens\":9,\"cacheDetails\":[{\"inputTokens\":10,"
	    "\"ttl\":\"1h\"}]}}", 9);
	/* InvokeModel's count headers replace what the body says */
	kv_usage_init(&s, KV_API_ANTHROPIC_MESSAGES, 0);
	kv_usage_bedrock_counts(&s, heads);
	render(&s, 0, got, sizeof(got));
	CHECK_STR(got, "usage 1525 42 1200 300 1 1 0 0\n");
	kv_usage_feed(&s, "{\"usage\":{\"input_tokens\":5,\"output_tokens\":6}}", 46);
	render(&s, 0, got, sizeof(got));
	CHECK_STR(got, "usage 1525 42 1200 300 1 1 0 0\n");
	kv_usage_init(&s, KV_API_ANTHROPIC_MESSAGES, 0);
	kv_usage_bedrock_counts(&s, none);
	kv_usage_feed(&s, "{\"usage\":{\"input_tokens\":5,\"output_tokens\":6}}", 46);
	render(&s, 0, got, sizeof(got));
	CHECK_STR(got, "usage 5 6 0 0 1 1 0 0\n");
	kv_usage_init(&s, KV_API_OPENAI_CHAT, 0);
	kv_usage_bedrock_counts(&s, heads);
	CHECK_INT(kv_usage_result(&s)->found, 0);
}

int
main(void)
{
	/* the bound: 5 KiB a stream, allocated for these alone */
	CHECK(sizeof(struct kv_aws_stream) <= 5 * 1024);
	printf("state a stream: %zu bytes (decoder %zu, chunk decoder %zu, scanner mark %zu)\n",
	    sizeof(struct kv_aws_stream), sizeof(struct kv_aes_dec), sizeof(struct kv_aws_chunk),
	    sizeof(struct kv_usage_mark));
	fixture("bedrock_invoke", KV_API_ANTHROPIC_MESSAGES, 0);
	fixture("bedrock_metrics", KV_API_ANTHROPIC_MESSAGES, 0);
	fixture("bedrock_converse", KV_API_BEDROCK_CONVERSE, 0);
	fixture("bedrock_exception", KV_API_ANTHROPIC_MESSAGES, 1);
	bad_chunk();
	exception_named();
	outside_streams();
	return unit_done();
}

/* bench_frames: the events of benchmock's paced streams, framed as each
 * provider sends them: OpenAI's SSE chat completion chunks, and Bedrock's
 * event stream messages (a prelude of total and header lengths with its
 * CRC-32, string headers, the payload, the message's CRC-32), Invoke's
 * wrapping each Anthropic Messages event base64 in {"bytes":..,"p":..}.
 * The "p" padding varies with the event's number, as AWS's does. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "bench_frames.h"
#include "common/crc32.h"

#define PAD	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define CHUNK	"{\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion.chunk\"," \
	"\"created\":1796171434,\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":"
#define IN_TOKENS	23

enum kv_bench_kind
kv_bench_kind(const char *p, size_t n)
{
	const char *eol = memchr(p, '\n', n), *sp;
	size_t l;

	if (eol == NULL || (sp = memchr(p, ' ', (size_t)(eol - p))) == NULL)
		return KV_BENCH_SSE;
	l = (size_t)(eol - sp);
	if (memmem(sp, l, "/invoke-with-response-stream ", 29) != NULL)
		return KV_BENCH_INVOKE;
	if (memmem(sp, l, "/converse-stream ", 17) != NULL)
		return KV_BENCH_CONVERSE;
	return KV_BENCH_SSE;
}

size_t
kv_bench_head(const struct kv_bench_stream *s, char *out, size_t cap)
{
	int n = snprintf(out, cap, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n%s"
	    "Transfer-Encoding: chunked\r\n\r\n",
	    s->kind == KV_BENCH_SSE ? "text/event-stream" : "application/vnd.amazon.eventstream",
	    s->kind == KV_BENCH_SSE ? "x-request-id: req_mock\r\n" :
	    "x-amzn-requestid: 5f7c1d1e-bench\r\n");

	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static void
be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* One string header: name length, name, type 7, value length, value. */
static size_t
header(unsigned char *p, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	p[0] = (unsigned char)nl;
	memcpy(p + 1, name, nl);
	p[1 + nl] = 7;
	p[2 + nl] = (unsigned char)(vl >> 8);
	p[3 + nl] = (unsigned char)vl;
	memcpy(p + 4 + nl, value, vl);
	return 4 + nl + vl;
}

/* An event stream message of event type `type` around payload [pl, pl +
 * plen) at out; its length. */
static size_t
aws_message(unsigned char *out, const char *type, const char *pl, size_t plen)
{
	size_t hl = 0, total;

	hl += header(out + 12 + hl, ":event-type", type);
	hl += header(out + 12 + hl, ":content-type", "application/json");
	hl += header(out + 12 + hl, ":message-type", "event");
	total = 12 + hl + plen + 4;
	be32(out, (uint32_t)total);
	be32(out + 4, (uint32_t)hl);
	be32(out + 8, kv_crc32(0, out, 8));
	memcpy(out + 12 + hl, pl, plen);
	be32(out + 12 + hl + plen, kv_crc32(0, out, 12 + hl + plen));
	return total;
}

/* The Anthropic Messages event number seq of an Invoke stream. */
static int
invoke_event(const struct kv_bench_stream *s, char *j, size_t cap)
{
	long t = s->tokens, q = s->seq;

	if (q == 0)
		return snprintf(j, cap, "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_bdrk_01\","
		    "\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5-20250929\","
		    "\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":"
		    "{\"input_tokens\":%d,\"output_tokens\":1}}}", IN_TOKENS);
	if (q == 1)
		return snprintf(j, cap, "{\"type\":\"content_block_start\",\"index\":0,"
		    "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}");
	if (q < t + 2)
		return snprintf(j, cap, "{\"type\":\"content_block_delta\",\"index\":0,"
		    "\"delta\":{\"type\":\"text_delta\",\"text\":\"tok%ld \"}}", q - 1);
	if (q == t + 2)
		return snprintf(j, cap, "{\"type\":\"content_block_stop\",\"index\":0}");
	if (q == t + 3)
		return snprintf(j, cap, "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
		    "\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%ld}}", t);
	return snprintf(j, cap, "{\"type\":\"message_stop\",\"amazon-bedrock-invocationMetrics\":"
	    "{\"inputTokenCount\":%d,\"outputTokenCount\":%ld,\"invocationLatency\":812,"
	    "\"firstByteLatency\":301}}", IN_TOKENS, t);
}

/* The ConverseStream event number seq: its type and payload. */
static int
converse_event(const struct kv_bench_stream *s, const char **type, const char *pad,
    char *j, size_t cap)
{
	long t = s->tokens, q = s->seq;

	*type = q == 0 ? "messageStart" : q <= t ? "contentBlockDelta" :
	    q == t + 1 ? "contentBlockStop" : q == t + 2 ? "messageStop" : "metadata";
	if (q == 0)
		return snprintf(j, cap, "{\"p\":\"%s\",\"role\":\"assistant\"}", pad);
	if (q <= t)
		return snprintf(j, cap, "{\"contentBlockIndex\":0,\"delta\":{\"text\":\"tok%ld \"},"
		    "\"p\":\"%s\"}", q, pad);
	if (q == t + 1)
		return snprintf(j, cap, "{\"contentBlockIndex\":0,\"p\":\"%s\"}", pad);
	if (q == t + 2)
		return snprintf(j, cap, "{\"p\":\"%s\",\"stopReason\":\"end_turn\"}", pad);
	return snprintf(j, cap, "{\"metrics\":{\"latencyMs\":812},\"p\":\"%s\",\"usage\":"
	    "{\"inputTokens\":%d,\"outputTokens\":%ld,\"totalTokens\":%ld}}", pad, IN_TOKENS, t,
	    t + IN_TOKENS);
}

/* The SSE event number seq: content deltas, the finish, usage and [DONE]. */
static int
sse_event(const struct kv_bench_stream *s, char *j, size_t cap)
{
	long t = s->tokens, q = s->seq;

	if (q < t)
		return snprintf(j, cap, "data: " CHUNK "[{\"index\":0,\"delta\":{\"content\":"
		    "\"tok%ld \"},\"logprobs\":null,\"finish_reason\":null}]}\n\n", q + 1);
	if (q == t)
		return snprintf(j, cap, "data: " CHUNK "[{\"index\":0,\"delta\":{},"
		    "\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n");
	return snprintf(j, cap, "data: " CHUNK "[],\"usage\":{\"prompt_tokens\":%d,"
	    "\"completion_tokens\":%ld,\"total_tokens\":%ld}}\n\ndata: [DONE]\n\n", IN_TOKENS,
	    t, t + IN_TOKENS);
}

/* Stream s's event number s->seq, unframed by HTTP, at body; its length. */
static size_t
event_body(const struct kv_bench_stream *s, unsigned char *body)
{
	char j[768], pad[64], pl[1280];
	const char *type = "chunk";
	int n;

	snprintf(pad, sizeof(pad), "%.*s", (int)(1 + s->seq % 52), PAD);
	if (s->kind == KV_BENCH_SSE) {
		n = sse_event(s, (char *)body, 1024);
		return n > 0 ? (size_t)n : 0;
	}
	if (s->kind == KV_BENCH_CONVERSE) {
		n = converse_event(s, &type, pad, pl, sizeof(pl));
		return aws_message(body, type, pl, (size_t)n);
	}
	n = invoke_event(s, j, sizeof(j));
	memcpy(pl, "{\"bytes\":\"", 10);
	n = 10 + EVP_EncodeBlock((unsigned char *)pl + 10, (unsigned char *)j, n);
	n += snprintf(pl + n, sizeof(pl) - (size_t)n, "\",\"p\":\"%s\"}", pad);
	return aws_message(body, type, pl, (size_t)n);
}

size_t
kv_bench_event(struct kv_bench_stream *s, char *out, size_t cap, int *last)
{
	unsigned char body[1536];
	size_t n = event_body(s, body);
	long events = s->tokens + (s->kind == KV_BENCH_INVOKE ? 5 : s->kind == KV_BENCH_CONVERSE ? 4 : 2);
	int h = snprintf(out, cap, "%zx\r\n", n);

	memcpy(out + h, body, n);
	memcpy(out + h + n, "\r\n", 2);
	n += (size_t)h + 2;
	*last = ++s->seq >= events;
	if (*last) {
		memcpy(out + n, "0\r\n\r\n", 5);
		n += 5;
	}
	return n;
}

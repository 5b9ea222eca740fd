/* The usage scanner: table-driven vectors for every wire format (JSON and
 * SSE), each fed whole, byte by byte and split at every position; the
 * request scanner; the usage-only chunk test; and a differential test
 * against jansson on generated documents. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "worker/reqscan.h"
#include "worker/usage.h"
#include "worker/usage_json.h"
#include "worker/sse_filter.h"
#include "tests/unit.h"

/* ---- helpers ----------------------------------------------------------- */

struct result {
	struct kv_usage	u;
	char		model[KV_SCAN_MODEL];
	int64_t		output_bytes;
	int64_t		output_est;	/* kv_usage_output_estimate */
	int		final;
};

static void
scan_result(const struct kv_usage_scanner *s, struct result *r)
{
	memset(r, 0, sizeof(*r));
	r->u = *kv_usage_result(s);
	memcpy(r->model, s->model, sizeof(r->model));
	r->output_bytes = s->output_bytes;
	r->output_est = kv_usage_output_estimate(s);
	r->final = s->final;
}

/* Scan BODY fed in pieces at the cut points CUTS[0..ncuts). */
static void
scan_cuts(enum kv_api api, int sse, const char *body, size_t len,
    const size_t *cuts, size_t ncuts, struct result *r)
{
	struct kv_usage_scanner s;
	size_t i, at = 0;

	kv_usage_init(&s, api, sse);
	for (i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		kv_usage_feed(&s, body + at, end - at);
		at = end;
	}
	scan_result(&s, r);
}

static void
scan_whole(enum kv_api api, int sse, const char *body, size_t len, struct result *r)
{
	scan_cuts(api, sse, body, len, NULL, 0, r);
}

static int
result_eq(const struct result *a, const struct result *b)
{
	return a->u.input == b->u.input && a->u.output == b->u.output &&
	    a->u.cached_input == b->u.cached_input &&
	    a->u.cache_write == b->u.cache_write && a->u.found == b->u.found &&
	    a->u.estimated == b->u.estimated &&
	    strcmp(a->model, b->model) == 0 && a->output_bytes == b->output_bytes &&
	    a->u.web_search == b->u.web_search && a->u.web_fetch == b->u.web_fetch &&
	    a->u.code_exec_ms == b->u.code_exec_ms &&
	    a->output_est == b->output_est && a->final == b->final;
}

static void
result_print(const char *what, const struct result *r)
{
	fprintf(stderr, "  %s: found=%d in=%" PRId64 " out=%" PRId64
	    " cached=%" PRId64 " write=%" PRId64 " model=\"%s\" bytes=%" PRId64 "\n",
	    what, r->u.found, r->u.input, r->u.output, r->u.cached_input,
	    r->u.cache_write, r->model, r->output_bytes);
}

/* Every two-way split and the byte-by-byte feed equal the whole feed. */
static int
split_invariant(enum kv_api api, int sse, const char *body, size_t len)
{
	struct result whole, part;
	size_t *cuts, i;
	int ok = 1;

	scan_whole(api, sse, body, len, &whole);
	for (i = 0; i <= len && ok; i++) {
		scan_cuts(api, sse, body, len, &i, 1, &part);
		if (!result_eq(&whole, &part)) {
			fprintf(stderr, "split at %zu differs\n", i);
			result_print("whole", &whole);
			result_print("split", &part);
			ok = 0;
		}
	}
	cuts = malloc((len + 1) * sizeof(*cuts));
	if (cuts == NULL)
		abort();
	for (i = 0; i < len; i++)
		cuts[i] = i;
	scan_cuts(api, sse, body, len, cuts, len, &part);
	free(cuts);
	if (ok && !result_eq(&whole, &part)) {
		fprintf(stderr, "byte-by-byte feed differs\n");
		ok = 0;
	}
	return ok;
}

/* ---- vectors ----------------------------------------------------------- */

struct vec {
	const char	*name;
	enum kv_api	 api;
	int		 sse;
	const char	*body;
	int		 found;
	int64_t		 input, output, cached, write;
	const char	*model;
	int64_t		 bytes;		/* expected output_bytes, -1: don't care */
};

#define CHAT		KV_API_OPENAI_CHAT
#define RESP		KV_API_OPENAI_RESPONSES
#define ANTH		KV_API_ANTHROPIC_MESSAGES
#define MINI		"gpt-4o-mini-2024-07-18"
#define SONNET		"claude-sonnet-4-20250514"

#define CHUNK(choices, usage) \
	"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\"," \
	"\"created\":1,\"model\":\"" MINI "\",\"system_fingerprint\":\"fp_1\"," \
	"\"choices\":" choices ",\"usage\":" usage "}\n\n"
#define DELTA(text) \
	"[{\"index\":0,\"delta\":{\"content\":\"" text "\"},\"logprobs\":null," \
	"\"finish_reason\":null}]"
#define CHAT_USAGE(p, c, cached, r) \
	"{\"prompt_tokens\":" #p ",\"completion_tokens\":" #c ",\"total_tokens\":0," \
	"\"prompt_tokens_details\":{\"cached_tokens\":" #cached ",\"audio_tokens\":0}," \
	"\"completion_tokens_details\":{\"reasoning_tokens\":" #r ",\"audio_tokens\":0," \
	"\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}"

#define RESP_USAGE(i, c, o, r) \
	"{\"input_tokens\":" #i ",\"input_tokens_details\":{\"cached_tokens\":" #c "}," \
	"\"output_tokens\":" #o ",\"output_tokens_details\":{\"reasoning_tokens\":" #r "}," \
	"\"total_tokens\":0}"
#define RESP_OBJ(status, usage) \
	"{\"id\":\"resp_1\",\"object\":\"response\",\"created_at\":1741476542," \
	"\"status\":\"" status "\",\"error\":null,\"model\":\"gpt-4.1-2025-04-14\"," \
	"\"output\":[{\"type\":\"message\",\"id\":\"msg_1\",\"status\":\"completed\"," \
	"\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\"," \
	"\"text\":\"Hi there\",\"annotations\":[]}]}],\"usage\":" usage "}"
#define RESP_EV(type, body) \
	"event: " type "\ndata: {\"type\":\"" type "\",\"sequence_number\":1," body "}\n\n"
#define RESP_START \
	RESP_EV("response.created", "\"response\":{\"id\":\"resp_1\",\"object\":\"response\"," \
	    "\"status\":\"in_progress\",\"model\":\"gpt-4.1-2025-04-14\",\"output\":[],\"usage\":null}") \
	RESP_EV("response.in_progress", "\"response\":{\"id\":\"resp_1\",\"usage\":null}") \
	RESP_EV("response.output_text.delta", "\"item_id\":\"msg_1\",\"output_index\":0," \
	    "\"content_index\":0,\"delta\":\"Hi\"") \
	RESP_EV("response.output_text.delta", "\"item_id\":\"msg_1\",\"output_index\":0," \
	    "\"content_index\":0,\"delta\":\" there\"") \
	RESP_EV("response.output_text.done", "\"item_id\":\"msg_1\",\"output_index\":0," \
	    "\"content_index\":0,\"text\":\"Hi there\"")

#define ANTH_START(i, w, r, o) \
	"event: message_start\n" \
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\"," \
	"\"role\":\"assistant\",\"content\":[],\"model\":\"" SONNET "\",\"stop_reason\":null," \
	"\"stop_sequence\":null,\"usage\":{\"input_tokens\":" #i "," \
	"\"cache_creation_input_tokens\":" #w ",\"cache_read_input_tokens\":" #r "," \
	"\"output_tokens\":" #o "}}}\n\n"
#define ANTH_TEXT(t) \
	"event: content_block_delta\n" \
	"data: {\"type\":\"content_block_delta\",\"index\":0," \
	"\"delta\":{\"type\":\"text_delta\",\"text\":\"" t "\"}}\n\n"
#define ANTH_DELTA(usage) \
	"event: message_delta\n" \
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"," \
	"\"stop_sequence\":null},\"usage\":" usage "}\n\n"
#define ANTH_BLOCKS \
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0," \
	"\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" \
	"event: ping\ndata: {\"type\": \"ping\"}\n\n"
#define ANTH_STOP \
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" \
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

static const struct vec vecs[] = {
	/* ---- OpenAI chat completions, JSON ---- */
	{ "chat json", CHAT, 0,
	  "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1,"
	  "\"model\":\"" MINI "\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
	  "\"assistant\",\"content\":\"Hello \\\"w\\\" \\\\ \\u00e9\",\"refusal\":null},"
	  "\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":" CHAT_USAGE(19, 10, 0, 0)
	  ",\"service_tier\":\"default\",\"system_fingerprint\":\"fp_1\"}\n",
	  1, 19, 10, 0, 0, MINI, 21 },
	{ "chat json cached+reasoning", CHAT, 0,
	  "{\"model\":\"o3-mini\",\"usage\":" CHAT_USAGE(2006, 300, 1920, 256) "}",
	  1, 2006, 300, 1920, 0, "o3-mini", 0 },
	{ "chat json usage first, nested decoys", CHAT, 0,
	  "{ \"usage\" : { \"completion_tokens\" : 2 , \"prompt_tokens\" : 1 } ,"
	  "\"choices\":[{\"message\":{\"content\":\"x\",\"usage\":{\"prompt_tokens\":999}}}],"
	  "\"metadata\":{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}},"
	  "\"model\":\"m\"}",
	  1, 1, 2, 0, 0, "m", 1 },
	{ "chat json usage in a string", CHAT, 0,
	  "{\"model\":\"x\",\"choices\":[{\"message\":{\"content\":"
	  "\"fake \\\"usage\\\":{\\\"prompt_tokens\\\":99} \\\\\"}}],"
	  "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
	  1, 1, 2, 0, 0, "x", 40 },
	{ "chat json escaped key and model", CHAT, 0,
	  "{\"mod\\u0065l\":\"gpt\\u002d4o\\/x\",\"us\\u0061ge\":{\"prompt_tokens\":4,"
	  "\"completion_tokens\":5}}",
	  1, 4, 5, 0, 0, "gpt-4o/x", 0 },
	{ "chat json unicode model", CHAT, 0,
	  "{\"model\":\"m\\u00e9\\ud83d\\ude00\",\"usage\":{\"prompt_tokens\":1}}",
	  1, 1, 0, 0, 0, "m\xc3\xa9\xf0\x9f\x98\x80", 0 },
	{ "chat json model too long", CHAT, 0,
	  "{\"model\":\"0123456789012345678901234567890123456789012345678901234567890"
	  "12345678901234567890123456789012345\",\"usage\":{\"prompt_tokens\":1}}",
	  1, 1, 0, 0, 0, "", 0 },
	{ "chat json cached > prompt clamps", CHAT, 0,
	  "{\"usage\":{\"prompt_tokens\":10,\"prompt_tokens_details\":{\"cached_tokens\":50}}}",
	  1, 10, 0, 10, 0, "", 0 },
	{ "chat json usage null", CHAT, 0,
	  "{\"model\":\"m\",\"usage\":null}", 0, 0, 0, 0, 0, "m", 0 },
	{ "chat json usage as array", CHAT, 0,
	  "{\"usage\":[{\"prompt_tokens\":7}]}", 0, 0, 0, 0, 0, "", 0 },
	{ "chat json non-integer counts ignored", CHAT, 0,
	  "{\"usage\":{\"prompt_tokens\":1.5,\"completion_tokens\":-3,"
	  "\"total_tokens\":1e3}}", 0, 0, 0, 0, 0, "", 0 },
	{ "chat json -0 is zero", CHAT, 0,
	  "{\"usage\":{\"prompt_tokens\":-0,\"completion_tokens\":0}}", 1, 0, 0, 0, 0, "", 0 },
	{ "chat json cut inside usage", CHAT, 0,
	  "{\"model\":\"m\",\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3",
	  0, 0, 0, 0, 0, "m", 0 },
	{ "chat json usage closed, doc cut", CHAT, 0,
	  "{\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3},\"x\":",
	  0, 0, 0, 0, 0, "", 0 },
	{ "chat json malformed before usage", CHAT, 0,
	  "{\"model\":\"m\",\"a\":tru,\"usage\":{\"prompt_tokens\":5}}",
	  0, 0, 0, 0, 0, "m", 0 },
	{ "chat json huge count saturates nothing", CHAT, 0,
	  "{\"usage\":{\"prompt_tokens\":9223372036854775807,"
	  "\"completion_tokens\":9223372036854775808}}",
	  1, INT64_MAX, 0, 0, 0, "", 0 },
	{ "other api finds nothing", KV_API_OTHER, 0,
	  "{\"usage\":{\"prompt_tokens\":5}}", 0, 0, 0, 0, 0, "", 0 },

	/* ---- OpenAI chat completions, SSE ---- */
	{ "chat sse", CHAT, 1,
	  CHUNK("[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\","
	      "\"refusal\":null},\"finish_reason\":null}]", "null")
	  ": keepalive\n\n"
	  CHUNK(DELTA("Hi"), "null")
	  CHUNK(DELTA(" there\\n"), "null")
	  CHUNK("[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]", "null")
	  CHUNK("[]", CHAT_USAGE(8, 2, 3, 0))
	  "data: [DONE]\n\n",
	  1, 8, 2, 3, 0, MINI, 10 },
	{ "chat sse crlf, no space, comments", CHAT, 1,
	  ": OPENROUTER PROCESSING\r\n\r\n"
	  "data:{\"model\":\"m1\",\"choices\":[{\"delta\":{\"content\":\"ab\"}}],\"usage\":null}\r\n\r\n"
	  ":keepalive\r\n"
	  "data:{\"model\":\"m1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\r\n\r\n"
	  "data:[DONE]\r\n\r\n",
	  1, 3, 4, 0, 0, "m1", 2 },
	{ "chat sse bare CR line ends", CHAT, 1,
	  "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\r\r"
	  "data: [DONE]\r\r",
	  1, 3, 4, 0, 0, "", 0 },
	{ "chat sse usage on non-empty choices, then null", CHAT, 1,
	  CHUNK(DELTA("x"), "null")
	  CHUNK("[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]", CHAT_USAGE(11, 22, 0, 5))
	  CHUNK("[]", "null")
	  "data: [DONE]\n\n",
	  1, 11, 22, 0, 0, MINI, 1 },
	{ "chat sse last usage wins", CHAT, 1,
	  CHUNK(DELTA("x"), "{\"prompt_tokens\":5,\"completion_tokens\":1}")
	  CHUNK(DELTA("y"), "{\"prompt_tokens\":5,\"completion_tokens\":2}")
	  CHUNK("[]", "null"),
	  1, 5, 2, 0, 0, MINI, 2 },
	{ "chat sse multi-line data", CHAT, 1,
	  "event: chunk\n"
	  "data: {\"model\":\"m2\",\n"
	  "data: \"usage\":{\"prompt_tokens\":3,\n"
	  "data:\"completion_tokens\":4}}\n\n",
	  1, 3, 4, 0, 0, "m2", 0 },
	{ "chat sse no usage (client did not ask)", CHAT, 1,
	  CHUNK(DELTA("Hello"), "null") CHUNK(DELTA(" world"), "null") "data: [DONE]\n\n",
	  0, 0, 0, 0, 0, MINI, 11 },
	{ "chat sse cut mid stream", CHAT, 1,
	  CHUNK(DELTA("Hello"), "null") "data: {\"choices\":[{\"delta\":{\"content\":\"wor",
	  0, 0, 0, 0, 0, MINI, 8 },
	{ "chat sse event without blank line at end", CHAT, 1,
	  "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}",
	  1, 1, 1, 0, 0, "", 0 },
	{ "chat sse garbage event does not poison next", CHAT, 1,
	  "data: {\"broken\n\n"
	  "data: {\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":9}}\n\n",
	  1, 2, 9, 0, 0, "", 0 },
	{ "chat sse tool call arguments", CHAT, 1,
	  CHUNK("[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
	      "{\"arguments\":\"{\\\"a\\\":1}\"}}]}}]", "null"),
	  0, 0, 0, 0, 0, MINI, 9 },

	/* ---- legacy completions and embeddings ---- */
	{ "completions json", KV_API_OPENAI_COMPLETIONS, 0,
	  "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,"
	  "\"model\":\"gpt-3.5-turbo-instruct\",\"choices\":[{\"text\":\"abc\",\"index\":0,"
	  "\"logprobs\":null,\"finish_reason\":\"length\"}],"
	  "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7,\"total_tokens\":12}}",
	  1, 5, 7, 0, 0, "gpt-3.5-turbo-instruct", 3 },
	{ "completions sse", KV_API_OPENAI_COMPLETIONS, 1,
	  "data: {\"model\":\"i\",\"choices\":[{\"text\":\"ab\",\"index\":0}],\"usage\":null}\n\n"
	  "data: {\"model\":\"i\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,"
	  "\"completion_tokens\":7,\"total_tokens\":12}}\n\ndata: [DONE]\n\n",
	  1, 5, 7, 0, 0, "i", 2 },
	{ "embeddings json", KV_API_OPENAI_EMBEDDINGS, 0,
	  "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,"
	  "\"embedding\":[0.0023064255,-0.009327292,1e-5,-2E+3,0]}],"
	  "\"model\":\"text-embedding-3-small\",\"usage\":{\"prompt_tokens\":8,\"total_tokens\":8}}",
	  1, 8, 0, 0, 0, "text-embedding-3-small", 0 },

	/* ---- Responses API ---- */
	{ "responses json", RESP, 0,
	  RESP_OBJ("completed", RESP_USAGE(36, 10, 87, 64)),
	  1, 36, 87, 10, 0, "gpt-4.1-2025-04-14", 8 },
	{ "responses sse completed", RESP, 1,
	  RESP_START
	  RESP_EV("response.completed", "\"response\":" RESP_OBJ("completed", RESP_USAGE(36, 0, 87, 0))),
	  1, 36, 87, 0, 0, "gpt-4.1-2025-04-14", 8 },
	{ "responses sse incomplete", RESP, 1,
	  RESP_START
	  RESP_EV("response.incomplete", "\"response\":" RESP_OBJ("incomplete", RESP_USAGE(40, 30, 16, 16))),
	  1, 40, 16, 30, 0, "gpt-4.1-2025-04-14", 8 },
	{ "responses sse failed", RESP, 1,
	  RESP_START
	  RESP_EV("response.failed", "\"response\":" RESP_OBJ("failed", RESP_USAGE(12, 0, 0, 0))),
	  1, 12, 0, 0, 0, "gpt-4.1-2025-04-14", 8 },
	{ "responses sse type after response", RESP, 1,
	  "data: {\"response\":{\"model\":\"r\",\"usage\":" RESP_USAGE(3, 1, 4, 0)
	  "},\"type\":\"response.completed\"}\n\n",
	  1, 3, 4, 1, 0, "r", 0 },
	{ "responses sse usage on other event ignored", RESP, 1,
	  RESP_EV("response.output_item.done", "\"response\":{\"model\":\"r\",\"usage\":"
	      RESP_USAGE(3, 1, 4, 0) "}"),
	  0, 0, 0, 0, 0, "r", 0 },
	{ "responses sse in_progress usage: the opening figures", RESP, 1,
	  RESP_EV("response.in_progress", "\"response\":{\"model\":\"r\",\"usage\":"
	      RESP_USAGE(3, 1, 4, 0) "}"),
	  1, 3, 4, 1, 0, "r", 0 },
	{ "responses sse cut before completed", RESP, 1,
	  RESP_START "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{",
	  0, 0, 0, 0, 0, "gpt-4.1-2025-04-14", 8 },

	/* ---- Anthropic Messages ---- */
	{ "anthropic json", ANTH, 0,
	  "{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"" SONNET "\","
	  "\"content\":[{\"type\":\"text\",\"text\":\"Hello!\"}],\"stop_reason\":\"end_turn\","
	  "\"stop_sequence\":null,\"usage\":{\"input_tokens\":2095,"
	  "\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":1000,"
	  "\"cache_creation\":{\"ephemeral_5m_input_tokens\":100,\"ephemeral_1h_input_tokens\":0},"
	  "\"output_tokens\":503,\"service_tier\":\"standard\"}}",
	  1, 3195, 503, 1000, 100, SONNET, 6 },
	{ "anthropic json no cache fields", ANTH, 0,
	  "{\"type\":\"message\",\"model\":\"claude-3-5-haiku-20241022\","
	  "\"usage\":{\"input_tokens\":10,\"output_tokens\":20}}",
	  1, 10, 20, 0, 0, "claude-3-5-haiku-20241022", 0 },
	{ "anthropic sse cumulative deltas", ANTH, 1,
	  ANTH_START(25, 10, 20, 1) ANTH_BLOCKS ANTH_TEXT("Hello") ANTH_TEXT(" \\\"you\\\"")
	  ANTH_DELTA("{\"output_tokens\":7}") ANTH_DELTA("{\"output_tokens\":15}") ANTH_STOP,
	  1, 55, 15, 20, 10, SONNET, 13 },
	{ "anthropic sse delta repeats input fields", ANTH, 1,
	  ANTH_START(25, 10, 20, 1) ANTH_TEXT("Hi")
	  ANTH_DELTA("{\"input_tokens\":30,\"cache_creation_input_tokens\":11,"
	      "\"cache_read_input_tokens\":21,\"output_tokens\":15,"
	      "\"server_tool_use\":{\"web_search_requests\":1}}") ANTH_STOP,
	  1, 62, 15, 21, 11, SONNET, 2 },
	{ "anthropic sse cut after message_start", ANTH, 1,
	  ANTH_START(25, 0, 0, 1) ANTH_TEXT("Hello") "event: content_block_delta\ndata: {\"ty",
	  1, 25, 1, 0, 0, SONNET, 5 },
	{ "anthropic sse thinking and tool input", ANTH, 1,
	  ANTH_START(5, 0, 0, 1)
	  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
	  "\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n"
	  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,"
	  "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"x\\\": 1\"}}\n\n"
	  ANTH_DELTA("{\"output_tokens\":9}"),
	  1, 5, 9, 0, 0, SONNET, 12 },
	{ "anthropic sse error event", ANTH, 1,
	  "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
	  "\"message\":\"Overloaded\"}}\n\n",
	  0, 0, 0, 0, 0, "", 0 },
	{ "anthropic message.usage needs message_start", ANTH, 1,
	  "data: {\"type\":\"message_delta\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n",
	  0, 0, 0, 0, 0, "", 0 },
	{ "anthropic sse crlf and no space", ANTH, 1,
	  "event:message_start\r\ndata:{\"type\":\"message_start\",\"message\":{\"model\":\"c\","
	  "\"usage\":{\"input_tokens\":4,\"output_tokens\":1}}}\r\n\r\n"
	  "event:message_delta\r\ndata:{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":6}}\r\n\r\n",
	  1, 4, 6, 0, 0, "c", 0 },
};

static void
test_vectors(void)
{
	size_t i;

	for (i = 0; i < sizeof(vecs) / sizeof(vecs[0]); i++) {
		const struct vec *v = &vecs[i];
		size_t len = strlen(v->body);
		struct result r;
		int before = unit_fail;

		scan_whole(v->api, v->sse, v->body, len, &r);
		CHECK_INT(r.u.found, v->found);
		CHECK_INT(r.u.input, v->input);
		CHECK_INT(r.u.output, v->output);
		CHECK_INT(r.u.cached_input, v->cached);
		CHECK_INT(r.u.cache_write, v->write);
		CHECK_INT(r.u.estimated, 0);
		CHECK_STR(r.model, v->model);
		if (v->bytes >= 0)
			CHECK_INT(r.output_bytes, v->bytes);
		CHECK(split_invariant(v->api, v->sse, v->body, len));
		if (unit_fail != before)
			fprintf(stderr, "  ^ in vector \"%s\"\n", v->name);
	}
}

/* Deep nesting past the remembered key levels still parses; past the
 * nesting limit the document counts as malformed. A long string costs no
 * memory and is counted. */
static void
test_deep_and_long(void)
{
	static const char tail[] = "\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":8}}";
	size_t n, i, at;
	char *buf = malloc(4 * 1024 * 1024);
	struct result r;

	if (buf == NULL)
		abort();
	for (n = 100; n <= 600; n += 500) {
		at = (size_t)sprintf(buf, "{\"a\":");
		for (i = 0; i < n; i++) {
			if (i % 2) {
				buf[at++] = '[';
			} else {
				buf[at++] = '{';
				at += (size_t)sprintf(buf + at, "\"k\":");
			}
		}
		buf[at++] = '1';
		for (i = n; i-- > 0;)
			buf[at++] = i % 2 ? ']' : '}';
		at += (size_t)sprintf(buf + at, ",%s", tail);
		scan_whole(CHAT, 0, buf, at, &r);
		CHECK_INT(r.u.found, n < KV_SCAN_NEST);
		CHECK_INT(r.u.input, n < KV_SCAN_NEST ? 7 : 0);
	}
	at = (size_t)sprintf(buf, "{\"choices\":[{\"message\":{\"content\":\"");
	for (i = 0; i < 3 * 1024 * 1024; i++) {
		if (i % 1000 == 999)
			buf[at++] = '\\';	/* an escape every 1000 bytes */
		buf[at++] = i % 1000 == 999 ? 'n' : 'x';
	}
	at += (size_t)sprintf(buf + at, "\"}}],%s", tail);
	scan_whole(CHAT, 0, buf, at, &r);
	CHECK_INT(r.u.found, 1);
	CHECK_INT(r.u.output, 8);
	CHECK_INT(r.output_bytes, 3 * 1024 * 1024 + 3 * 1024 * 1024 / 1000);
	free(buf);
}

/* ---- request scanner --------------------------------------------------- */

/* ---- usage-only chunks and paths ----------------------------------------- */

static void
test_usage_only(void)
{
	static const struct { const char *json; int want; } v[] = {
		{ "{\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":1}}", 1 },
		{ "{\"usage\":{\"prompt_tokens\":1},\"choices\":[ ]}\n", 1 },
		{ "{\"choices\":[{\"delta\":{}}],\"usage\":{\"prompt_tokens\":1}}", 0 },
		{ "{\"choices\":[],\"usage\":null}", 0 },
		{ "{\"choices\":[]}", 0 },
		{ "{\"usage\":{\"prompt_tokens\":1}}", 0 },
		{ "{\"choices\":null,\"usage\":{}}", 0 },
		{ "{\"choices\":[],\"usage\":{}", 0 },
		{ "{\"x\":{\"choices\":[],\"usage\":{}}}", 0 },
		{ "{\"choices\":[[]],\"usage\":{}}", 0 },
		{ "{\"choices\":[],\"usage\":{}}x", 0 },
		{ "[DONE]", 0 },
		{ "", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		int got = kv_sse_is_usage_only(v[i].json, strlen(v[i].json));

		if (got != v[i].want)
			fprintf(stderr, "usage-only: %s\n", v[i].json);
		CHECK_INT(got, v[i].want);
	}
}

/* ---- what a cut is charged from: final figures, tiers, 1-hour writes ------ */

static void
scan_str(struct kv_usage_scanner *sc, enum kv_api api, int sse, const char *body)
{
	size_t i, n = strlen(body);

	kv_usage_init(sc, api, sse);
	for (i = 0; i < n; i++)	/* bytewise: every split point */
		kv_usage_feed(sc, body + i, 1);
}

static void
test_final_tiers(void)
{
	struct kv_usage_scanner sc;
	const char *start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":"
	    "{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":10,"
	    "\"cache_creation_input_tokens\":20,\"cache_read_input_tokens\":5,"
	    "\"cache_creation\":{\"ephemeral_5m_input_tokens\":12,"
	    "\"ephemeral_1h_input_tokens\":8},\"output_tokens\":1}}}\n\n";
	const char *delta = "event: message_delta\ndata: {\"type\":\"message_delta\","
	    "\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":50}}\n\n";
	const char *stop = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
	char buf[2048];

	/* Anthropic: the opening figures are exact input, not final */
	scan_str(&sc, KV_API_ANTHROPIC_MESSAGES, 1, start);
	CHECK_INT(sc.final, 0);
	CHECK_INT(sc.usage.input, 35);
	CHECK_INT(sc.usage.cached_input, 5);
	CHECK_INT(sc.usage.cache_write, 20);
	CHECK_INT(sc.usage.cache_write_1h, 8);
	snprintf(buf, sizeof(buf), "%s%s", start, delta);
	scan_str(&sc, KV_API_ANTHROPIC_MESSAGES, 1, buf);
	CHECK_INT(sc.final, 0);
	CHECK_INT(sc.usage.output, 50);
	CHECK_INT(sc.usage.cache_write_1h, 8);
	/* message_stop makes them final (the model being known takes the
	 * fast path for it: it must still be read) */
	snprintf(buf, sizeof(buf), "%s%s%s", start, delta, stop);
	scan_str(&sc, KV_API_ANTHROPIC_MESSAGES, 1, buf);
	CHECK_INT(sc.final, 1);
	CHECK_INT(sc.usage.output, 50);
	/* a non-streamed message is final */
	scan_str(&sc, KV_API_ANTHROPIC_MESSAGES, 0, "{\"type\":\"message\",\"usage\":"
	    "{\"input_tokens\":3,\"output_tokens\":4,\"cache_creation_input_tokens\":2,"
	    "\"cache_creation\":{\"ephemeral_1h_input_tokens\":2}}}");
	CHECK_INT(sc.final, 1);
	CHECK_INT(sc.usage.cache_write_1h, 2);
	CHECK_INT(sc.usage.input, 5);
	/* OpenAI: the tier the response reports */
	scan_str(&sc, KV_API_OPENAI_CHAT, 0, "{\"model\":\"gpt-5\",\"service_tier\":"
	    "\"priority\",\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}");
	CHECK_INT(sc.final, 1);
	CHECK_INT(sc.usage.tier, KV_TIER_PRIORITY);
	CHECK_STR(sc.model, "gpt-5");
	scan_str(&sc, KV_API_OPENAI_CHAT, 1, "data: {\"model\":\"gpt-5\",\"service_tier\":"
	    "\"flex\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n");
	CHECK_INT(sc.final, 0);
	CHECK_INT(sc.usage.found, 0);
	scan_str(&sc, KV_API_OPENAI_CHAT, 1, "data: {\"model\":\"gpt-5\",\"service_tier\":"
	    "\"flex\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":"
	    "3}}\n\ndata: [DONE]\n\n");
	CHECK_INT(sc.final, 1);
	CHECK_INT(sc.usage.tier, KV_TIER_FLEX);
	scan_str(&sc, KV_API_OPENAI_CHAT, 0, "{\"service_tier\":\"scale\",\"usage\":"
	    "{\"prompt_tokens\":1,\"completion_tokens\":1}}");
	CHECK_INT(sc.usage.tier, KV_TIER_OTHER);
	scan_str(&sc, KV_API_OPENAI_CHAT, 0, "{\"service_tier\":\"default\",\"usage\":"
	    "{\"prompt_tokens\":1,\"completion_tokens\":1}}");
	CHECK_INT(sc.usage.tier, KV_TIER_STANDARD);
	/* Responses: response.completed's response.service_tier; a later
	 * opening event never replaces final figures */
	scan_str(&sc, KV_API_OPENAI_RESPONSES, 1, "event: response.created\ndata: {\"type\":"
	    "\"response.created\",\"response\":{\"usage\":{\"input_tokens\":9,"
	    "\"output_tokens\":0}}}\n\n");
	CHECK_INT(sc.final, 0);
	CHECK_INT(sc.usage.input, 9);
	scan_str(&sc, KV_API_OPENAI_RESPONSES, 1, "event: response.completed\ndata: {\"type\":"
	    "\"response.completed\",\"response\":{\"service_tier\":\"priority\",\"usage\":"
	    "{\"input_tokens\":9,\"output_tokens\":30}}}\n\n"
	    "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"response\":"
	    "{\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n");
	CHECK_INT(sc.final, 1);
	CHECK_INT(sc.usage.output, 30);
	CHECK_INT(sc.usage.input, 9);
	CHECK_INT(sc.usage.tier, KV_TIER_PRIORITY);
}

/* ---- issue 20: server-tool calls, error events, the text estimate ---------- */

/* BODY scanned whole equals every split of it; its result in *r. */
static void
scan_split(enum kv_api api, int sse, const char *body, struct result *r)
{
	CHECK(split_invariant(api, sse, body, strlen(body)));
	scan_whole(api, sse, body, strlen(body), r);
}

static void
test_server_tools(void)
{
	struct result r;
	char buf[4096];

	/* Anthropic JSON: usage.server_tool_use */
	scan_split(KV_API_ANTHROPIC_MESSAGES, 0, "{\"type\":\"message\",\"content\":[{\"type\":"
	    "\"server_tool_use\",\"name\":\"web_search\",\"input\":{\"query\":\"q\"}}],"
	    "\"usage\":{\"input_tokens\":100,\"output_tokens\":20,\"server_tool_use\":"
	    "{\"web_search_requests\":25,\"web_fetch_requests\":2}}}", &r);
	CHECK_INT(r.u.web_search, 25);
	CHECK_INT(r.u.web_fetch, 2);
	CHECK_INT(r.u.input, 100);
	CHECK_INT(r.final, 1);
	/* not under usage: not a count */
	scan_split(KV_API_ANTHROPIC_MESSAGES, 0, "{\"server_tool_use\":{\"web_search_requests\":"
	    "9},\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}", &r);
	CHECK_INT(r.u.web_search, 0);
	/* Anthropic stream: message_delta's cumulative figures */
	snprintf(buf, sizeof(buf), "event: message_start\ndata: {\"type\":\"message_start\","
	    "\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":10,"
	    "\"output_tokens\":1,\"server_tool_use\":{\"web_search_requests\":0}}}}\n\n"
	    "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":"
	    "5,\"server_tool_use\":{\"web_search_requests\":3}}}\n\n"
	    "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":"
	    "9,\"server_tool_use\":{\"web_search_requests\":7}}}\n\n"
	    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
	scan_split(KV_API_ANTHROPIC_MESSAGES, 1, buf, &r);
	CHECK_INT(r.u.web_search, 7);
	CHECK_INT(r.u.output, 9);
	CHECK_INT(r.final, 1);

	/* Responses JSON: web_search_call items in the top-level output */
	scan_split(KV_API_OPENAI_RESPONSES, 0, "{\"object\":\"response\",\"model\":\"gpt-5\","
	    "\"output\":[{\"type\":\"web_search_call\",\"id\":\"ws_1\"},{\"type\":"
	    "\"reasoning\"},{\"type\":\"web_search_call\",\"id\":\"ws_2\"},{\"type\":\"message\","
	    "\"content\":[{\"type\":\"web_search_call\"}]}],\"usage\":{\"input_tokens\":5,"
	    "\"output_tokens\":6}}", &r);
	CHECK_INT(r.u.web_search, 2);	/* a nested "type" is not an item */
	CHECK_INT(r.u.output, 6);
	/* Responses stream: items added, then listed again in the final
	 * response: counted once */
	snprintf(buf, sizeof(buf),
	    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
	    "\"item\":{\"type\":\"web_search_call\",\"status\":\"in_progress\"}}\n\n"
	    "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
	    "\"item\":{\"type\":\"web_search_call\",\"status\":\"completed\"}}\n\n"
	    "event: response.output_item.added\ndata: {\"item\":{\"type\":\"web_search_call\"},"
	    "\"type\":\"response.output_item.added\"}\n\n"
	    "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
	    "\"item\":{\"type\":\"message\"}}\n\n"
	    "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
	    "\"delta\":\"hi\"}\n\n");
	scan_split(KV_API_OPENAI_RESPONSES, 1, buf, &r);
	CHECK_INT(r.u.web_search, 2);	/* cut here: the added items count */
	CHECK_INT(r.final, 0);
	strcat(buf, "event: response.completed\ndata: {\"type\":\"response.completed\","
	    "\"response\":{\"output\":[{\"type\":\"web_search_call\"},{\"type\":"
	    "\"web_search_call\"},{\"type\":\"web_search_call\"},{\"type\":\"message\"}],"
	    "\"usage\":{\"input_tokens\":4,\"output_tokens\":8}}}\n\n");
	scan_split(KV_API_OPENAI_RESPONSES, 1, buf, &r);
	CHECK_INT(r.u.web_search, 3);	/* the final list has more: it wins */
	CHECK_INT(r.final, 1);
	/* Anthropic code execution: a container named, its 5-minute minimum */
	scan_split(KV_API_ANTHROPIC_MESSAGES, 0, "{\"type\":\"message\",\"container\":{\"id\":"
	    "\"container_1\",\"expires_at\":\"2026-01-01T00:00:00Z\"},\"usage\":"
	    "{\"input_tokens\":1,\"output_tokens\":1}}", &r);
	CHECK_INT(r.u.code_exec_ms, 300000);
	scan_split(KV_API_ANTHROPIC_MESSAGES, 1, "event: message_delta\ndata: {\"type\":"
	    "\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"container\":{\"id\":"
	    "\"c\"}},\"usage\":{\"output_tokens\":3}}\n\n", &r);
	CHECK_INT(r.u.code_exec_ms, 300000);
	scan_split(KV_API_ANTHROPIC_MESSAGES, 0, "{\"type\":\"message\",\"container\":null,"
	    "\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}", &r);
	CHECK_INT(r.u.code_exec_ms, 0);
	/* other APIs never count items */
	scan_split(KV_API_OPENAI_CHAT, 0, "{\"output\":[{\"type\":\"web_search_call\"}],"
	    "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}", &r);
	CHECK_INT(r.u.web_search, 0);
}

static void
test_error_event(void)
{
	struct result r;
	char buf[4096];
	const char *start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":"
	    "{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":10,"
	    "\"output_tokens\":1}}}\n\n";
	const char *d = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
	    "\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ab\"}}\n\n";
	const char *err = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
	    "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";

	snprintf(buf, sizeof(buf), "%s%s%s%s%s", start, d, d, d, err);
	scan_split(KV_API_ANTHROPIC_MESSAGES, 1, buf, &r);
	CHECK_INT(r.final, 0);
	CHECK_INT(r.u.input, 10);
	CHECK_INT(r.output_est, 3);	/* one token per delta, at least */
	/* nothing after the error makes it final */
	strcat(buf, "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":"
	    "{\"output_tokens\":2}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
	scan_split(KV_API_ANTHROPIC_MESSAGES, 1, buf, &r);
	CHECK_INT(r.final, 0);
}

static void
test_output_estimate(void)
{
	struct result r;
	char buf[8192];
	size_t i, n = 0;

	/* CJK: 3 bytes a character, a token each (bytes / 4 said 0.75) */
	scan_split(KV_API_OPENAI_CHAT, 0, "{\"choices\":[{\"message\":{\"content\":"
	    "\"\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97\xe7\xac\xa6\"}}]}", &r);
	CHECK_INT(r.output_bytes, 12);
	CHECK_INT(r.output_est, 4);
	/* a 4-byte script (byte fallback): one token a character, not 0.25 */
	scan_split(KV_API_OPENAI_CHAT, 0, "{\"choices\":[{\"message\":{\"content\":"
	    "\"\xf0\x92\x80\x80\xf0\x92\x80\x81\"}}]}", &r);
	CHECK_INT(r.output_est, 2);
	/* ASCII: bytes / 4, rounded up */
	scan_split(KV_API_OPENAI_CHAT, 0, "{\"choices\":[{\"message\":{\"content\":"
	    "\"hello\"}}]}", &r);
	CHECK_INT(r.output_est, 2);
	/* a stream: at least one token per chunk that carried text (one-byte
	 * tokens: bytes / 4 said a quarter); the opening role chunk's empty
	 * content is no token; whole one-line events take the fast path */
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "data: {\"model\":\"m\",\"choices\":"
	    "[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n");
	for (i = 0; i < 40; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "data: {\"model\":\"m\","
		    "\"choices\":[{\"delta\":{\"content\":\"%c\"}}]}\n\n", 'a' + (int)(i % 26));
	scan_split(KV_API_OPENAI_CHAT, 1, buf, &r);
	CHECK_INT(r.output_bytes, 40);
	CHECK_INT(r.output_est, 40);
	/* CJK deltas through the fast path */
	n = 0;
	for (i = 0; i < 10; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "data: {\"model\":\"m\","
		    "\"choices\":[{\"delta\":{\"content\":\"\xe4\xb8\xad\xe6\x96\x87\"}}]}\n\n");
	scan_split(KV_API_OPENAI_CHAT, 1, buf, &r);
	CHECK_INT(r.output_est, 20);
}

/* ---- differential test against jansson ------------------------------------ */

struct gen {
	char		*buf;
	size_t		 len, cap;
	uint64_t	 rng;
	enum kv_api	 api;
};

static uint64_t
rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static unsigned
pick(struct gen *g, unsigned n)
{
	return (unsigned)(rnd(g) % n);
}

static void
emit(struct gen *g, const char *s)
{
	size_t n = strlen(s);

	if (g->len + n + 1 > g->cap) {
		g->cap = (g->cap + n) * 2;
		g->buf = realloc(g->buf, g->cap);
		if (g->buf == NULL)
			abort();
	}
	memcpy(g->buf + g->len, s, n + 1);
	g->len += n;
}

static void
ws(struct gen *g)
{
	static const char *const w[] = { "", "", "", " ", "\n", "\t", " \n  " };

	emit(g, w[pick(g, 7)]);
}

static void
gen_string(struct gen *g, unsigned maxlen)
{
	static const char *const parts[] = {
		"a", "b", "Z", "0", " ", "-", "usage", "\\\"", "\\\\", "\\/", "\\b", "\\f",
		"\\n", "\\r", "\\t", "\\u0041", "\\u00e9", "\\u20AC", "\\ud83d\\ude00",
		"\xc3\xa9", "\xe2\x82\xac", "{", "}", "[", "]", ":", ",", "'",
	};
	unsigned n = pick(g, maxlen + 1), i;

	emit(g, "\"");
	for (i = 0; i < n; i++)
		emit(g, parts[pick(g, sizeof(parts) / sizeof(parts[0]))]);
	emit(g, "\"");
}

static void
gen_number(struct gen *g)
{
	static const char *const nums[] = {
		"0", "-0", "7", "-45", "3.14", "1e5", "-2.5E-3", "0.0", "1E+2", "10.5e1",
		"12345678901234", "999",
	};
	char tmp[32];

	if (pick(g, 3) == 0) {
		snprintf(tmp, sizeof(tmp), "%u", (unsigned)pick(g, 1000000));
		emit(g, tmp);
	} else {
		emit(g, nums[pick(g, sizeof(nums) / sizeof(nums[0]))]);
	}
}

static void gen_value(struct gen *g, int depth);
static void gen_usage(struct gen *g, int depth);

/* Member keys of one object are unique: noise keys carry their index. */
static void
gen_key(struct gen *g, const char *name, unsigned idx)
{
	char tmp[48];

	if (name == NULL) {
		snprintf(tmp, sizeof(tmp), "\"k%u%s\"", idx, pick(g, 4) ? "" : "\\u00e9x");
		emit(g, tmp);
	} else {
		snprintf(tmp, sizeof(tmp), "\"%s\"", name);
		emit(g, tmp);
	}
	ws(g);
	emit(g, ":");
	ws(g);
}

static void
gen_object(struct gen *g, int depth)
{
	unsigned n = pick(g, 5), i;

	emit(g, "{");
	ws(g);
	for (i = 0; i < n; i++) {
		if (i > 0) {
			emit(g, ",");
			ws(g);
		}
		/* a usage object nested under unrelated keys must be ignored */
		if (pick(g, 6) == 0) {
			gen_key(g, i == 0 ? "usage" : NULL, i);
			gen_usage(g, depth + 1);
		} else {
			gen_key(g, NULL, i);
			gen_value(g, depth + 1);
		}
		ws(g);
	}
	emit(g, "}");
}

static void
gen_array(struct gen *g, int depth)
{
	unsigned n = pick(g, 4), i;

	emit(g, "[");
	ws(g);
	for (i = 0; i < n; i++) {
		if (i > 0) {
			emit(g, ",");
			ws(g);
		}
		if (pick(g, 8) == 0)
			gen_usage(g, depth + 1);
		else
			gen_value(g, depth + 1);
		ws(g);
	}
	emit(g, "]");
}

static void
gen_value(struct gen *g, int depth)
{
	static const char *const lits[] = { "true", "false", "null" };
	unsigned k = pick(g, depth > 5 ? 6 : 9);

	if (k < 2)
		gen_string(g, 12);
	else if (k < 4)
		gen_number(g);
	else if (k < 6)
		emit(g, lits[pick(g, 3)]);
	else if (k < 8)
		gen_object(g, depth);
	else
		gen_array(g, depth);
}

static const char *const usage_keys[] = {
	"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens",
	"output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
	"prompt_tokens_details", "input_tokens_details", "completion_tokens_details",
	"cached_tokens", "pr\\u006fmpt_tokens",
};

static void
gen_count(struct gen *g, int depth)
{
	char tmp[32];

	switch (pick(g, 10)) {
	case 0:
		gen_value(g, depth);
		break;
	case 1:
		emit(g, pick(g, 2) ? "-3" : "2.0");
		break;
	case 2:
		snprintf(tmp, sizeof(tmp), "%" PRIu64, rnd(g) % UINT64_C(4000000000000000));
		emit(g, tmp);
		break;
	default:
		snprintf(tmp, sizeof(tmp), "%u", (unsigned)pick(g, 100000));
		emit(g, tmp);
	}
}

static void
gen_details(struct gen *g, int depth)
{
	if (pick(g, 5) == 0) {
		gen_value(g, depth);
		return;
	}
	emit(g, "{");
	if (pick(g, 2))
		emit(g, "\"audio_tokens\":0,");
	gen_key(g, pick(g, 6) ? "cached_tokens" : "reasoning_tokens", 0);
	gen_count(g, depth + 1);
	emit(g, "}");
}

/* A usage-shaped object: known keys in random order, noise between them,
 * each key at most once (the canonical and the escaped spelling of
 * prompt_tokens share a bit). */
static void
gen_usage(struct gen *g, int depth)
{
	const unsigned nk = sizeof(usage_keys) / sizeof(usage_keys[0]);
	unsigned used = 0, i, n = pick(g, 8), first = 1;

	emit(g, "{");
	ws(g);
	for (i = 0; i < n; i++) {
		unsigned k = pick(g, nk + 1);
		unsigned bit = k == nk - 1 ? 0 : k;

		if (k < nk && (used & (1u << bit)))
			continue;
		if (!first) {
			emit(g, ",");
			ws(g);
		}
		first = 0;
		if (k == nk) {
			gen_key(g, NULL, i);
			gen_value(g, depth + 1);
		} else {
			used |= 1u << bit;
			gen_key(g, usage_keys[k], 0);
			if (strstr(usage_keys[k], "details"))
				gen_details(g, depth + 1);
			else
				gen_count(g, depth + 1);
		}
		ws(g);
	}
	emit(g, "}");
}

static void
gen_model(struct gen *g)
{
	static const char *const models[] = {
		"\"gpt-4o-mini\"", "\"claude-sonnet-4-20250514\"", "\"\"", "null",
		"\"m\\u00e9\\ud83d\\ude00\"", "\"a\\\"b\\\\c\"", "42",
		"\"0123456789012345678901234567890123456789012345678901234567890123456789"
		"0123456789012345678901234\"",	/* 95 chars: fits */
		"\"0123456789012345678901234567890123456789012345678901234567890123456789"
		"01234567890123456789012345\"",	/* 96 chars: too long */
	};

	if (pick(g, 4) == 0)
		gen_string(g, 30);
	else
		emit(g, models[pick(g, sizeof(models) / sizeof(models[0]))]);
}

static void
gen_type(struct gen *g)
{
	static const char *const types[] = {
		"\"message_start\"", "\"message_delta\"", "\"response.completed\"",
		"\"response.incomplete\"", "\"response.failed\"", "\"response.created\"",
		"\"message\"", "\"message_st\\u0061rt\"", "null",
	};

	emit(g, types[pick(g, sizeof(types) / sizeof(types[0]))]);
}

/* The wrapper object of a nested usage: message (Anthropic) or response. */
static void
gen_wrapper(struct gen *g)
{
	emit(g, "{");
	ws(g);
	if (pick(g, 2)) {
		gen_key(g, "model", 0);
		gen_model(g);
		emit(g, ",");
	}
	gen_key(g, NULL, 1);
	gen_value(g, 2);
	emit(g, ",");
	gen_key(g, "usage", 0);
	if (pick(g, 5) == 0)
		emit(g, "null");
	else
		gen_usage(g, 2);
	emit(g, "}");
}

/* A top-level document: the interesting keys in random order, each at
 * most once, among noise keys. */
static void
gen_doc(struct gen *g)
{
	static const char *const top[] = {
		"model", "usage", "type", "message", "response", "choices",
		"stream", "stream_options", "max_tokens", "max_completion_tokens",
		"max_output_tokens", NULL,
	};
	unsigned n = pick(g, 10), i, used = 0;

	g->len = 0;
	ws(g);
	emit(g, "{");
	ws(g);
	for (i = 0; i < n; i++) {
		unsigned k = pick(g, sizeof(top) / sizeof(top[0]));
		const char *name = top[k];

		if (name != NULL && (used & (1u << k)))
			name = NULL;
		used |= name ? 1u << k : 0;
		if (i > 0) {
			emit(g, ",");
			ws(g);
		}
		gen_key(g, name, i);
		if (name == NULL)
			gen_value(g, 1);
		else if (strcmp(name, "model") == 0)
			gen_model(g);
		else if (strcmp(name, "usage") == 0)
			pick(g, 5) ? gen_usage(g, 1) : gen_value(g, 1);
		else if (strcmp(name, "type") == 0)
			gen_type(g);
		else if (strcmp(name, "message") == 0 || strcmp(name, "response") == 0)
			pick(g, 4) ? gen_wrapper(g) : gen_value(g, 1);
		else if (strcmp(name, "stream_options") == 0 && pick(g, 2))
			emit(g, pick(g, 2) ? "{\"include_usage\":true}" :
			    "{\"x\":[],\"include_usage\":false}");
		else if (strncmp(name, "stream", 6) == 0 && pick(g, 2))
			emit(g, pick(g, 2) ? "true" : "false");
		else if (strncmp(name, "max_", 4) == 0 && pick(g, 2))
			gen_count(g, 1);
		else
			gen_value(g, 1);
		ws(g);
	}
	emit(g, "}");
	ws(g);
}

/* ---- the reference: what jansson says the scanner must find ---- */

static int64_t
ref_count(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	return json_integer_value(v);
}

static int64_t
ref_cached(json_t *usage, const char *details)
{
	json_t *d = json_object_get(usage, details);

	return json_is_object(d) ? ref_count(d, "cached_tokens") : -1;
}

static int64_t
first_set(int64_t a, int64_t b)
{
	return a >= 0 ? a : b >= 0 ? b : 0;
}

static void
ref_openai(json_t *usage, struct kv_usage *u)
{
	int64_t p = ref_count(usage, "prompt_tokens"), i = ref_count(usage, "input_tokens");
	int64_t c = ref_count(usage, "completion_tokens"), o = ref_count(usage, "output_tokens");

	if (p < 0 && i < 0 && c < 0 && o < 0)
		return;
	u->found = 1;
	u->input = first_set(p, i);
	u->output = first_set(c, o);
	u->cached_input = first_set(ref_cached(usage, "prompt_tokens_details"),
	    ref_cached(usage, "input_tokens_details"));
	if (u->cached_input > u->input)
		u->cached_input = u->input;
}

static int64_t
ref_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static void
ref_anthropic(json_t *usage, struct kv_usage *u)
{
	int64_t in = ref_count(usage, "input_tokens");
	int64_t w = ref_count(usage, "cache_creation_input_tokens");
	int64_t r = ref_count(usage, "cache_read_input_tokens");
	int64_t o = ref_count(usage, "output_tokens");

	if (in < 0 && w < 0 && r < 0 && o < 0)
		return;
	u->found = 1;
	u->cached_input = r < 0 ? 0 : r;
	u->cache_write = w < 0 ? 0 : w;
	u->input = ref_add(ref_add(in < 0 ? 0 : in, u->cached_input), u->cache_write);
	u->output = o < 0 ? 0 : o;
}

static int
type_is(json_t *root, const char *const *types)
{
	const char *t = json_string_value(json_object_get(root, "type"));

	for (; t != NULL && *types != NULL; types++)
		if (strcmp(t, *types) == 0)
			return 1;
	return 0;
}

/* The usage object the scanner must use; NULL for none. The generator
 * never puts both a top-level and a nested one in the same document
 * (see model_ambiguous for the analogous model case). */
static json_t *
ref_usage_obj(json_t *root, enum kv_api api, int *ambiguous)
{
	static const char *const start[] = { "message_start", NULL };
	/* a stream's opening events count too: their figures are exact
	 * for input, and a later final one replaces them */
	static const char *const done[] = {
		"response.completed", "response.incomplete", "response.failed",
		"response.created", "response.in_progress", NULL,
	};
	const char *wrap = api == KV_API_ANTHROPIC_MESSAGES ? "message" :
	    api == KV_API_OPENAI_RESPONSES ? "response" : NULL;
	json_t *top = json_object_get(root, "usage"), *nested = NULL;

	if (wrap != NULL) {
		nested = json_object_get(json_object_get(root, wrap), "usage");
		if (!json_is_object(nested))
			nested = NULL;
	}
	if (!json_is_object(top))
		top = NULL;
	/* both present: which one wins depends on document order */
	*ambiguous = top != NULL && nested != NULL;
	if (top != NULL)
		return top;
	if (nested != NULL && type_is(root, api == KV_API_ANTHROPIC_MESSAGES ? start : done))
		return nested;
	return NULL;
}

static void
ref_model(json_t *root, enum kv_api api, char *out, int *ambiguous)
{
	const char *wrap = api == KV_API_ANTHROPIC_MESSAGES ? "message" :
	    api == KV_API_OPENAI_RESPONSES ? "response" : NULL;
	json_t *m[2] = { json_object_get(root, "model"), NULL };
	int i, n = 0;

	if (wrap != NULL)
		m[1] = json_object_get(json_object_get(root, wrap), "model");
	out[0] = '\0';
	for (i = 0; i < 2; i++) {
		size_t len = json_string_length(m[i]);

		if (!json_is_string(m[i]) || len == 0 || len >= KV_SCAN_MODEL)
			continue;
		memcpy(out, json_string_value(m[i]), len + 1);
		n++;
	}
	*ambiguous = n > 1;
}

/* Wrap a document as one SSE event; its raw newlines become more data
 * lines with mixed line endings. */
static char *
sse_wrap(struct gen *g, size_t *outlen)
{
	char *out = malloc(g->len * 8 + 32);
	size_t o = 0, i;

	if (out == NULL)
		abort();
	o += (size_t)sprintf(out, ": ping\r\nevent: x\ndata: ");
	for (i = 0; i < g->len; i++) {
		if (g->buf[i] != '\n') {
			out[o++] = g->buf[i];
			continue;
		}
		o += (size_t)sprintf(out + o, "%s", pick(g, 2) ? "\r\ndata:" : "\ndata: ");
	}
	o += (size_t)sprintf(out + o, "\n\ndata: [DONE]\n\n");
	*outlen = o;
	return out;
}

struct diffstats {
	int docs, found, models, checked;
};

static int
usage_eq(const struct kv_usage *a, const struct kv_usage *b)
{
	return a->found == b->found && (!a->found || (a->input == b->input &&
	    a->output == b->output && a->cached_input == b->cached_input &&
	    a->cache_write == b->cache_write));
}

static void
diff_one(struct gen *g, json_t *root, struct diffstats *st)
{
	struct kv_usage want = { .found = 0 };
	struct result whole, split;
	char model[KV_SCAN_MODEL];
	json_t *uo;
	int amb_u, amb_m, sse = (int)pick(g, 2);
	size_t cuts[3], len = g->len, i;
	char *body = g->buf;
	int before = unit_fail;

	uo = ref_usage_obj(root, g->api, &amb_u);
	if (uo != NULL && g->api == KV_API_ANTHROPIC_MESSAGES)
		ref_anthropic(uo, &want);
	else if (uo != NULL)
		ref_openai(uo, &want);
	ref_model(root, g->api, model, &amb_m);
	if (sse)
		body = sse_wrap(g, &len);
	scan_whole(g->api, sse, body, len, &whole);
	for (i = 0; i < 3; i++)
		cuts[i] = len ? rnd(g) % len : 0;
	if (cuts[0] > cuts[1]) { size_t t = cuts[0]; cuts[0] = cuts[1]; cuts[1] = t; }
	if (cuts[1] > cuts[2]) { size_t t = cuts[1]; cuts[1] = cuts[2]; cuts[2] = t; }
	if (cuts[0] > cuts[1]) { size_t t = cuts[0]; cuts[0] = cuts[1]; cuts[1] = t; }
	scan_cuts(g->api, sse, body, len, cuts, 3, &split);
	st->docs++;
	st->found += want.found;
	CHECK(result_eq(&whole, &split));
	if (!amb_u) {
		st->checked++;
		CHECK(usage_eq(&whole.u, &want));
	}
	if (!amb_m) {
		st->models += model[0] != '\0';
		CHECK_STR(whole.model, model);
	}
	if (unit_fail != before && unit_fail < 5) {
		fprintf(stderr, "  doc (api %d, sse %d): %.*s\n", g->api, sse, (int)len, body);
		fprintf(stderr, "  want found=%d in=%" PRId64 " out=%" PRId64 " cached=%"
		    PRId64 " write=%" PRId64 "\n", want.found, want.input, want.output,
		    want.cached_input, want.cache_write);
		result_print("got", &whole);
	}
	if (sse)
		free(body);
}

/* An output limit as admission reads it: any integer-valued number. */
static int64_t
ref_limit(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	double d;

	if (json_is_integer(v))
		return json_integer_value(v) < 0 ? -1 : json_integer_value(v);
	if (!json_is_real(v))
		return -1;
	d = json_real_value(v);
	return d >= 0 && d < 2147483648.0 && d == (double)(int64_t)d ? (int64_t)d : -1;
}

/* The request scanner reads what jansson reads (the generator writes
 * valid JSON, model names and limits included). */
static void
diff_request(struct gen *g, json_t *root)
{
	static const char *const maxk[] = {
		"max_tokens", "max_completion_tokens", "max_output_tokens",
	};
	struct kv_reqscan rs;
	const struct kv_request_info *ri = &rs.ri;
	json_t *so = json_object_get(root, "stream_options");
	char model[KV_SCAN_MODEL];
	int64_t max = -1;
	int amb, i;

	kv_reqscan_init(&rs, KV_API_OPENAI_CHAT);
	if (kv_reqscan_feed(&rs, g->buf, g->len) == -1 || kv_reqscan_finish(&rs) == -1) {
		/* only what the strict rules refuse and jansson takes */
		CHECK(strstr(rs.err, "model") != NULL || strstr(rs.err, "max_") != NULL ||
		    strstr(rs.err, "stream") != NULL);
		return;
	}
	ref_model(root, KV_API_OPENAI_CHAT, model, &amb);
	CHECK_STR(ri->model, model);
	CHECK_INT(ri->stream, json_is_true(json_object_get(root, "stream")));
	CHECK_INT(ri->has_stream_options, so != NULL);
	CHECK_INT(ri->include_usage, json_is_true(json_object_get(so, "include_usage")));
	for (i = 0; i < 3; i++) {
		int64_t v = ref_limit(root, maxk[i]);

		if (v > max)
			max = v;
	}
	CHECK_INT(ri->max_output, max);
	CHECK_INT(g->buf[ri->obj_end], '}');
}

static void
test_differential(void)
{
	static const enum kv_api apis[] = {
		KV_API_OPENAI_CHAT, KV_API_OPENAI_RESPONSES, KV_API_ANTHROPIC_MESSAGES,
	};
	struct gen g = { NULL, 0, 0, 0x9e3779b97f4a7c15ULL, KV_API_OPENAI_CHAT };
	struct diffstats st = { 0, 0, 0, 0 };
	const char *env = getenv("KV_DIFF_DOCS");
	int n = env ? atoi(env) : 20000, i, bad = 0;

	for (i = 0; i < n; i++) {
		json_error_t err;
		json_t *root;

		g.api = apis[i % 3];
		gen_doc(&g);
		root = json_loadb(g.buf, g.len, 0, &err);
		if (root == NULL) {
			/* the generator must only make valid JSON */
			if (bad++ == 0)
				fprintf(stderr, "jansson: %s: %.*s\n", err.text, (int)g.len, g.buf);
			continue;
		}
		diff_one(&g, root, &st);
		diff_request(&g, root);
		json_decref(root);
	}
	CHECK_INT(bad, 0);
	/* the generator must exercise both outcomes, or the test proves little */
	CHECK(st.found > n / 10);
	CHECK(st.found < st.docs - n / 10);
	CHECK(st.models > n / 10);
	CHECK(st.checked > n / 2);
	printf("differential: %d documents, %d with usage, %d with a model\n",
	    st.docs, st.found, st.models);
	free(g.buf);
}

/* OpenAI's token details: audio tokens in prompt/completion_tokens_details,
 * reasoning tokens in completion/output_tokens_details, kept for money.c
 * (which prices them apart where the catalogue does). */
static void
test_token_details(void)
{
	static const char chat[] = "{\"model\":\"gpt-4o-audio-preview\",\"usage\":"
	    "{\"prompt_tokens\":1500,\"completion_tokens\":500,\"prompt_tokens_details\":"
	    "{\"cached_tokens\":100,\"audio_tokens\":500},\"completion_tokens_details\":"
	    "{\"reasoning_tokens\":50,\"audio_tokens\":300}}}";
	static const char resp[] = "{\"object\":\"response\",\"usage\":"
	    "{\"input_tokens\":10,\"output_tokens\":40,\"output_tokens_details\":"
	    "{\"reasoning_tokens\":30}}}";
	/* more audio than the uncached input: capped, never a refused charge */
	static const char odd[] = "{\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,"
	    "\"prompt_tokens_details\":{\"cached_tokens\":4,\"audio_tokens\":9},"
	    "\"completion_tokens_details\":{\"reasoning_tokens\":3,\"audio_tokens\":4}}}";
	struct result r;

	scan_whole(KV_API_OPENAI_CHAT, 0, chat, sizeof(chat) - 1, &r);
	CHECK_INT(r.u.input, 1500);
	CHECK_INT(r.u.audio_input, 500);
	CHECK_INT(r.u.output, 500);
	CHECK_INT(r.u.audio_output, 300);
	CHECK_INT(r.u.reasoning, 50);
	scan_whole(KV_API_OPENAI_RESPONSES, 0, resp, sizeof(resp) - 1, &r);
	CHECK_INT(r.u.output, 40);
	CHECK_INT(r.u.reasoning, 30);
	CHECK_INT(r.u.audio_input, 0);
	scan_whole(KV_API_OPENAI_CHAT, 0, odd, sizeof(odd) - 1, &r);
	CHECK_INT(r.u.audio_input, 6);
	CHECK_INT(r.u.audio_output, 4);
	CHECK_INT(r.u.reasoning, 1);
}

/* The lexer's whole-token path (usage_json_run) against its byte-at-a-time
 * step: each document fed whole (tokens taken whole) and byte by byte
 * (every token but a one-byte one goes through the step) leaves the lexer
 * in the same state, byte for byte but for the bytes of the last key name
 * (a whole one is interned from the input, not copied), and the same
 * result. The documents
 * are the edges of each token: numbers (signs, leading zeros, fractions,
 * exponents, overflow), literals (cut, misspelt), keys (escaped, long,
 * empty), whitespace, mismatched brackets, several documents. */
static void
test_token_run(void)
{
	static const char *const val[] = {
		"0", "-0", "-1", "7", "01", "-01", "1.5", "1e3", "1E+3", "0.0", "-", "--1",
		"9223372036854775807", "9223372036854775808", "99999999999999999999999",
		"-9223372036854775808", "12a", "1 2", "true", "false", "null", "nul", "tru",
		"nullx", "fals", "\"x\"", "\"\"", "\"a\\\"b\"", "\"\\u00e9\"", "\"\\ud83d\\ude00\"",
		"\"\\ud83d\"", "[]", "[1,2]", "[1,]", "{}", "{\"a\":1}", "{\"a\" : 1 }", "[}",
		"{]", "{\"a\"1}", "{,}", "[,1]", " \t\r\n 5 \n", "{\"cached_tokens\":3}",
	};
	static const char *const key[] = {
		"prompt_tokens", "prompt_\\u0074okens", "", "a_key_longer_than_the_forty_bytes_kept_xxxxxx",
		"content", "con\\ntent", "model",
	};
	static const enum kv_api apis[] = {
		KV_API_OPENAI_CHAT, KV_API_OPENAI_RESPONSES, KV_API_ANTHROPIC_MESSAGES,
	};
	char doc[512];
	size_t v, k, a, i, len;

	for (v = 0; v < sizeof(val) / sizeof(val[0]); v++) {
		for (k = 0; k < sizeof(key) / sizeof(key[0]); k++) {
			for (a = 0; a < 3; a++) {
				struct kv_usage_scanner w, b;
				struct result rw, rb;

				len = (size_t)snprintf(doc, sizeof(doc), "{\"model\":\"m\",\"usage\":"
				    "{\"%s\":%s,\"completion_tokens\":5},\"content\":%s}\n{\"usage\""
				    ":{\"prompt_tokens\":2}} %s", key[k], val[v], val[v], val[v]);
				kv_usage_init(&w, apis[a], 0);
				kv_usage_feed(&w, doc, len);
				kv_usage_init(&b, apis[a], 0);
				for (i = 0; i < len; i++)
					kv_usage_feed(&b, doc + i, 1);
				scan_result(&w, &rw);
				scan_result(&b, &rb);
				memset(w.json.key, 0, sizeof(w.json.key));
				memset(b.json.key, 0, sizeof(b.json.key));
				CHECK(result_eq(&rw, &rb));
				CHECK(memcmp(&w.json, &b.json, sizeof(w.json)) == 0);
				if (!result_eq(&rw, &rb) || memcmp(&w.json, &b.json, sizeof(w.json)) != 0)
					fprintf(stderr, "  api %zu: %s\n", a, doc);
			}
		}
	}
}

/* Scan BODY whole, byte by byte (the step, but for one-byte tokens) and
 * split at every offset: the same result and the same lexer state (but
 * for the bytes of the last key name, which a whole one is interned from
 * the input, not copied). Returns 1 when all agree. */
static int
scan_agree(enum kv_api api, int sse, const char *body, size_t len)
{
	struct kv_usage_scanner w, b, c;
	struct result rw, rb, rc;
	size_t i, cut;
	int ok = 1;

	kv_usage_init(&w, api, sse);
	kv_usage_feed(&w, body, len);
	scan_result(&w, &rw);
	memset(w.json.key, 0, sizeof(w.json.key));
	/* the reference: every event reported, on_string_begin for every
	 * string (the mask must only leave out strings it does nothing for) */
	kv_usage_init(&b, api, sse);
	b.run_want = USAGE_WANT_ALL;
	for (i = 0; i < len; i++)
		kv_usage_feed(&b, body + i, 1);
	scan_result(&b, &rb);
	b.run_want = w.run_want;
	memset(b.json.key, 0, sizeof(b.json.key));
	ok &= result_eq(&rw, &rb) && memcmp(&w.json, &b.json, sizeof(w.json)) == 0;
	for (cut = 1; cut < len && ok; cut++) {
		kv_usage_init(&c, api, sse);
		kv_usage_feed(&c, body, cut);
		kv_usage_feed(&c, body + cut, len - cut);
		scan_result(&c, &rc);
		memset(c.json.key, 0, sizeof(c.json.key));
		ok &= result_eq(&rw, &rc) && memcmp(&w.json, &c.json, sizeof(w.json)) == 0;
	}
	if (!ok)
		fprintf(stderr, "  api %d sse %d: %.*s\n", (int)api, sse, (int)len, body);
	return ok;
}

/* The run takes a string value no client acts on whole, without an event
 * (usage_json_run's WANT), and arrays and literals quietly: whatever such
 * a string holds (a kept key's name, a usage object's text, escapes,
 * brackets) never counts, a kept key deeper than it is kept never counts,
 * and every document (the generator's, and the same with one byte
 * changed, most of them malformed) gives the same result and lexer state
 * fed whole, byte by byte and split anywhere, as JSON and as SSE. */
static void
test_quiet_skip(void)
{
	static const char nested[] = "{\"choices\":[{\"message\":{\"content\":"
	    "\"\\\"usage\\\":{\\\"prompt_tokens\\\":9}\",\"usage\":{\"prompt_tokens\":7},"
	    "\"model\":\"deep\"}}],\"x\":\"\\\"model\\\":\\\"evil\\\"\",\"usage\":"
	    "{\"prompt_tokens\":3,\"completion_tokens\":1},\"id\":[\"usage\",true,null,"
	    "[\"model\"]],\"model\":\"good\"}";
	static const char marks[] = "\"\\{}[],: 0a-eu\n";
	static const enum kv_api apis[] = {
		KV_API_OPENAI_CHAT, KV_API_OPENAI_RESPONSES, KV_API_ANTHROPIC_MESSAGES,
		KV_API_OTHER,
	};
	struct gen g = { NULL, 0, 0, 0x2545f4914f6cdd1dULL, KV_API_OPENAI_CHAT };
	const char *env = getenv("KV_QUIET_DOCS");
	int n = env ? atoi(env) : 1500, i, m;
	struct result r;
	char *sse;

	scan_whole(KV_API_OPENAI_CHAT, 0, nested, sizeof(nested) - 1, &r);
	CHECK_INT(r.u.found, 1);
	CHECK_INT(r.u.input, 3);
	CHECK_INT(r.u.output, 1);
	CHECK_STR(r.model, "good");
	CHECK(scan_agree(KV_API_OPENAI_CHAT, 0, nested, sizeof(nested) - 1));
	for (i = 0; i < n; i++) {
		g.api = apis[i % 4];
		gen_doc(&g);
		for (m = 0; m < 3; m++) {
			if (m > 0 && g.len > 0)	/* one byte changed */
				g.buf[pick(&g, (unsigned)g.len)] = marks[pick(&g, sizeof(marks) - 1)];
			CHECK(scan_agree(g.api, 0, g.buf, g.len));
			if ((sse = malloc(g.len + 16)) == NULL)
				abort();
			memcpy(sse, "data: ", 6);
			memcpy(sse + 6, g.buf, g.len);
			memcpy(sse + 6 + g.len, "\n\n", 2);
			CHECK(scan_agree(g.api, 1, sse, g.len + 8));
			free(sse);
		}
	}
	free(g.buf);
}

/* A stream's one-line events are counted without lexing once the model
 * is known (usage.c, sse_skip_event): not one that names another tier
 * than the one taken, nor an Anthropic container, which the lexer takes
 * (the result must not depend on where the stream was cut). */
static void
test_skip_event_keeps(void)
{
	static const char tier[] =
	    "data: {\"model\":\"gpt-4o\",\"service_tier\":\"default\",\"choices\":[]}\n\n"
	    "data: {\"model\":\"gpt-4o\",\"service_tier\":\"default\",\"choices\":"
	    "[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
	    "data: {\"model\":\"gpt-4o\",\"service_tier\":\"priority\",\"choices\":"
	    "[{\"delta\":{\"content\":\"yo\"}}]}\n\n"
	    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n"
	    "data: [DONE]\n\n";
	static const char container[] =
	    "data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":"
	    "{\"input_tokens\":5,\"output_tokens\":1}}}\n\n"
	    "data: {\"type\":\"message_delta\",\"delta\":{\"container\":{\"id\":\"c1\"}}}\n\n"
	    "data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n"
	    "data: {\"type\":\"message_stop\"}\n\n";
	struct result r;

	scan_whole(KV_API_OPENAI_CHAT, 1, tier, sizeof(tier) - 1, &r);
	CHECK_INT(r.u.tier, KV_TIER_PRIORITY);
	CHECK_INT(r.u.input, 3);
	CHECK(scan_agree(KV_API_OPENAI_CHAT, 1, tier, sizeof(tier) - 1));
	scan_whole(KV_API_ANTHROPIC_MESSAGES, 1, container, sizeof(container) - 1, &r);
	CHECK_INT(r.u.code_exec_ms, 300000);
	CHECK_INT(r.u.output, 7);
	CHECK(scan_agree(KV_API_ANTHROPIC_MESSAGES, 1, container, sizeof(container) - 1));
}

int
main(void)
{
	test_skip_event_keeps();
	test_quiet_skip();
	test_token_run();
	test_vectors();
	test_token_details();
	test_final_tiers();
	test_server_tools();
	test_error_event();
	test_output_estimate();
	test_deep_and_long();
	test_usage_only();
	test_differential();
	return unit_done();
}

/* Unit tests for the strict JSON validator and the request scanner: what
 * is refused (and the reason given), what a valid body says, and that
 * neither depends on how the body is split. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/reqscan.h"
#include "worker/tool_prompts.h"
#include "tests/unit.h"

/* b must agree with r: the verdict, the reason, what the body says. */
static void
agree(const struct kv_reqscan *r, int ok1, const struct kv_reqscan *b, int ok2)
{
	CHECK_INT(ok1, ok2);
	CHECK_STR(b->err, r->err);
	if (ok1 && ok2)
		CHECK(memcmp(&b->ri, &r->ri, sizeof(r->ri)) == 0);
}

/* A scan of a body to API; for a Bedrock path, MODEL is its model. */
static void
start(struct kv_reqscan *r, enum kv_api api, const char *model)
{
	kv_reqscan_init(r, api);
	if (model != NULL)
		CHECK_INT(kv_reqscan_model(r, model, strlen(model)), 0);
}

/* Scan body whole, then in two pieces cut at every offset, then a byte at
 * a time (the validator's whole-token fast paths against its byte-wise
 * path): all must agree. Returns 0/-1. */
static int
scan_model(const char *body, size_t len, enum kv_api api, const char *model,
    struct kv_reqscan *r)
{
	static struct kv_reqscan b;
	size_t i;
	int ok1, ok2;

	start(r, api, model);
	ok1 = kv_reqscan_feed(r, body, len) == 0 && kv_reqscan_finish(r) == 0;
	for (i = 0; i <= len; i++) {
		start(&b, api, model);
		ok2 = kv_reqscan_feed(&b, body, i) == 0 &&
		    kv_reqscan_feed(&b, body + i, len - i) == 0 && kv_reqscan_finish(&b) == 0;
		agree(r, ok1, &b, ok2);
	}
	start(&b, api, model);
	for (ok2 = 1, i = 0; i < len && ok2; i++)
		ok2 = kv_reqscan_feed(&b, body + i, 1) == 0;
	ok2 = ok2 && kv_reqscan_finish(&b) == 0;
	agree(r, ok1, &b, ok2);
	return ok1 ? 0 : -1;
}

static int
scan(const char *body, size_t len, enum kv_api api, struct kv_reqscan *r)
{
	return scan_model(body, len, api, NULL, r);
}

static const struct { const char *body; const char *why; } bad[] = {
	{ "\xef\xbb\xbf{}", "byte order mark" },
	{ "{\"t\":NaN}", "NaN and Infinity" },
	{ "{\"t\":-Infinity}", "bad number" },
	{ "{\"t\":Infinity}", "NaN and Infinity" },
	{ "{\"a\":\"\xff\"}", "invalid UTF-8 (byte 0xff) at byte 6" },
	{ "{\"a\":\"\xc0\xaf\"}", "invalid UTF-8" },		/* overlong '/' */
	{ "{\"mo\x91\":5}", "invalid UTF-8 (byte 0x91) at byte 4" },	/* same offset split */
	{ "{\"a\":\"\xed\xa0\x80\"}", "invalid UTF-8" },	/* a raw surrogate */
	{ "{\"a\":\"\xf4\x90\x80\x80\"}", "invalid UTF-8" },	/* past U+10FFFF */
	{ "{\"a\":\"\xe2\x82\"}", "invalid UTF-8" },		/* cut short */
	{ "{\"a\":\"\x01\"}", "control character" },
	{ "{\"a\":\"\\x\"}", "bad escape" },
	{ "{\"a\":\"\\u12g4\"}", "bad \\u escape" },
	{ "{\"a\":1,}", "expected a member name" },
	{ "{\"a\":[1,]}", "expected a value" },
	{ "{\"a\":01}", "leading zero" },
	{ "{\"a\":1.}", "bad number" },
	{ "{\"a\":.5}", "expected a value" },
	{ "{\"a\":+1}", "expected a value" },
	{ "{\"a\" 1}", "expected ':'" },
	{ "{\"a\":1]", "mismatched bracket" },
	{ "{\"a\":tru}", "expected true, false or null" },
	{ "{'a':1}", "expected a member name" },
	{ "{} x", "data after the JSON value" },
	{ "{}{}", "data after the JSON value" },
	{ "{\"a\":1", "ends inside the JSON value" },
	{ "", "the body is empty" },
	{ "[1]", "not a JSON object" },
	{ "\"x\"", "not a JSON object" },
	{ "{\"model\":5}", "model must be a string" },
	{ "{\"model\":\"0123456789012345678901234567890123456789012345678901234567890"
	  "1234567890123456789012345678901234567\"}", "not a model name" },
	{ "{\"model\":\"a\\u0000b\"}", "not a model name" },
	{ "{\"stream\":\"true\"}", "stream must be true or false" },
	{ "{\"stream_options\":true}", "stream_options must be an object" },
	{ "{\"max_tokens\":\"8192\"}", "max_tokens must be an integer" },
	{ "{\"max_tokens\":true}", "max_tokens must be an integer" },
	{ "{\"max_tokens\":1.5}", "max_tokens is not an integer" },
	{ "{\"max_tokens\":8.1925e3}", "max_tokens is not an integer" },
	{ "{\"max_tokens\":1e-400}", "max_tokens is not an integer" },
	{ "{\"max_tokens\":-1}", "max_tokens is negative" },
	{ "{\"max_completion_tokens\":2147483648}", "max_completion_tokens is out of range" },
	{ "{\"max_output_tokens\":1e300}", "max_output_tokens is out of range" },
	{ "{\"n\":2.5}", "n is not an integer" },
	{ "{\"best_of\":-3}", "best_of is negative" },
};

static void
test_refused(void)
{
	struct kv_reqscan r;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int before = unit_fail;

		CHECK_INT(scan(bad[i].body, strlen(bad[i].body), KV_API_OPENAI_CHAT, &r), -1);
		CHECK(strstr(r.err, bad[i].why) != NULL);
		if (unit_fail != before)
			fprintf(stderr, "  ^ body %zu: %s -> %s\n", i, bad[i].body, r.err);
	}
}

static void
test_depth(void)
{
	struct kv_reqscan r;
	char body[600];
	int d;

	for (d = 127; d <= 128; d++) {
		memset(body, '[', (size_t)d);
		body[0] = '{';
		memcpy(body + 1, "\"a\":", 4);
		memset(body + 5, '[', (size_t)d - 1);
		memset(body + 4 + d, ']', (size_t)d - 1);
		body[3 + 2 * d] = '}';
		/* d - 1 arrays inside the object: d levels in all */
		CHECK_INT(scan(body, (size_t)(4 + 2 * d), KV_API_OPENAI_CHAT, &r), 0);
	}
	memset(body, '[', 129);
	body[0] = '{';
	memcpy(body + 1, "\"a\":", 4);
	memset(body + 5, '[', 129);
	CHECK_INT(scan(body, 134, KV_API_OPENAI_CHAT, &r), -1);
	CHECK(strstr(r.err, "nesting deeper than 128") != NULL);
}

static void
test_fields(void)
{
	static const char body[] = " {\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9\","
	    "\"model\":\"nested\",\"max_tokens\":9}],\"m\\u006fdel\":\"gpt-4o\",\"model\":\"llama-3\","
	    "\"stream\":true,\"stream_options\":{\"include_usage\":true},"
	    "\"stream_options\":{\"include_obfuscation\":false,\"include_usage\":false},"
	    "\"max_tokens\":100,\"max_completion_tokens\":8.192e3,\"max_output_tokens\":8192.0,"
	    "\"n\":3,\"best_of\":5} \n";
	struct kv_reqscan r;
	const struct kv_request_info *ri = &r.ri;

	CHECK_INT(scan(body, strlen(body), KV_API_OPENAI_CHAT, &r), 0);
	CHECK_STR(ri->model, "llama-3");		/* the last top-level one */
	CHECK_INT(ri->stream, 1);
	CHECK_INT(ri->has_stream_options, 1);
	CHECK_INT(ri->include_usage, 0);		/* the last stream_options */
	CHECK_INT(ri->so_members, 2);
	CHECK_INT(body[ri->so_start], '{');
	CHECK_INT(body[ri->so_end], '}');
	CHECK(memcmp(body + ri->so_start, "{\"include_obfuscation\"", 22) == 0);
	CHECK_INT(ri->max_output, 8192);
	CHECK_INT(ri->mult, 5);
	CHECK_INT(body[ri->obj_end], '}');
	CHECK_INT(ri->obj_end, strlen(body) - 3);
	CHECK_INT(ri->members, 11);
	CHECK_STR(ri->fetches, "");
}

static void
test_absent(void)
{
	static const char *const bodies[] = {
		"{}", "{\"max_tokens\":null,\"n\":null,\"stream\":null,\"model\":\"m\"}",
		"{\"max_tokens\":5,\"max_tokens\":null}", "{\"n\":0,\"best_of\":1}",
	};
	struct kv_reqscan r;
	size_t i;

	for (i = 0; i < 4; i++) {
		CHECK_INT(scan(bodies[i], strlen(bodies[i]), KV_API_OPENAI_CHAT, &r), 0);
		CHECK_INT(r.ri.max_output, -1);
		CHECK_INT(r.ri.mult, 1);
		CHECK_INT(r.ri.stream, 0);
	}
	CHECK_INT(scan("{\"max_tokens\":0}", 16, KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.max_output, 0);
	CHECK_INT(scan("{\"max_tokens\":-0.0e5}", 21, KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.max_output, 0);
	CHECK_INT(scan("{\"max_tokens\":2147483647}", 25, KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.max_output, 2147483647);
	CHECK_INT(scan("{\"stream_options\":null}", 23, KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.has_stream_options, 1);
	CHECK_INT(r.ri.so_start, 0);
}

static const struct { enum kv_api api; const char *body; const char *fetches; } refs[] = {
	{ KV_API_OPENAI_CHAT, "{\"messages\":[{\"content\":[{\"type\":\"image_url\","
	  "\"image_url\":{\"url\":\"https://e.x/a.png\"}}]}]}", "a URL to fetch" },
	{ KV_API_OPENAI_CHAT, "{\"messages\":[{\"content\":[{\"type\":\"image_url\","
	  "\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}}]}]}", "" },
	{ KV_API_OPENAI_RESPONSES, "{\"input\":[{\"content\":[{\"type\":\"input_image\","
	  "\"image_url\":\"https://e.x/a.png\"}]}]}", "a URL to fetch" },
	{ KV_API_OPENAI_RESPONSES, "{\"input\":[{\"content\":[{\"type\":\"input_file\","
	  "\"file_id\":\"file-1\"}]}]}", "a input_file block or tool" },
	{ KV_API_OPENAI_CHAT, "{\"messages\":[{\"content\":[{\"type\":\"file\","
	  "\"file\":{\"file_id\":\"file-1\"}}]}]}", "file_id" },
	{ KV_API_ANTHROPIC_MESSAGES, "{\"messages\":[{\"content\":[{\"type\":\"document\","
	  "\"source\":{\"type\":\"url\",\"url\":\"https://e.x/a.pdf\"}}]}]}",
	  "a document block or tool" },
	{ KV_API_ANTHROPIC_MESSAGES, "{\"messages\":[{\"content\":[{\"type\":\"image\","
	  "\"source\":{\"type\":\"url\",\"url\":\"https://e.x/a.png\"}}]}]}", "a URL to fetch" },
	{ KV_API_OPENAI_RESPONSES, "{\"previous_response_id\":\"resp_1\"}", "previous_response_id" },
	{ KV_API_OPENAI_RESPONSES, "{\"previous_response_id\":null}", "" },
	{ KV_API_OPENAI_RESPONSES, "{\"conversation\":\"conv_1\"}", "conversation" },
	{ KV_API_OPENAI_RESPONSES, "{\"prompt\":{\"id\":\"pmpt_1\"}}", "prompt" },
	{ KV_API_OPENAI_COMPLETIONS, "{\"prompt\":\"Say hi\"}", "" },
	{ KV_API_OPENAI_RESPONSES, "{\"tools\":[{\"type\":\"web_search_preview\"}]}",
	  "a web_search_preview block or tool" },
	{ KV_API_ANTHROPIC_MESSAGES, "{\"tools\":[{\"type\":\"web_fetch_20250910\","
	  "\"name\":\"web_fetch\"}]}", "a web_fetch_20250910 block or tool" },
	{ KV_API_OPENAI_RESPONSES, "{\"tools\":[{\"type\":\"file_search\"}]}",
	  "a file_search block or tool" },
	{ KV_API_OPENAI_CHAT, "{\"web_search_options\":{}}", "web_search_options" },
	{ KV_API_OPENAI_CHAT, "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
	  "\"web_search\",\"parameters\":{\"type\":\"object\",\"properties\":{\"url\":"
	  "{\"type\":\"string\"}}}}}]}", "" },
};

static void
test_fetches(void)
{
	struct kv_reqscan r;
	size_t i;

	for (i = 0; i < sizeof(refs) / sizeof(refs[0]); i++) {
		int before = unit_fail;

		CHECK_INT(scan(refs[i].body, strlen(refs[i].body), refs[i].api, &r), 0);
		CHECK_STR(r.ri.fetches, refs[i].fetches);
		if (unit_fail != before)
			fprintf(stderr, "  ^ body %zu: %s\n", i, refs[i].body);
	}
}

static void
test_intval(void)
{
	static const struct { const char *s; int ok; int64_t v; } v[] = {
		{ "8192", 1, 8192 }, { "8192.0", 1, 8192 }, { "8.192e3", 1, 8192 },
		{ "81920e-1", 1, 8192 }, { "0.08192E+5", 1, 8192 }, { "0", 1, 0 },
		{ "-0", 1, 0 }, { "0e99999999", 1, 0 }, { "1e9", 1, 1000000000 },
		{ "1e10", 0, 0 }, { "0.5", 0, 0 }, { "-2", 0, 0 }, { "12.30", 0, 0 },
		{ "2147483647", 1, 2147483647 }, { "2147483648", 0, 0 },
		{ "99999999999999999999999", 0, 0 },
	};
	const char *why;
	int64_t out;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		out = -7;
		CHECK_INT(kv_reqscan_intval(v[i].s, strlen(v[i].s), KV_REQ_LIMIT_MAX, &out,
		    &why) == 0, v[i].ok);
		if (v[i].ok)
			CHECK_INT(out, v[i].v);
	}
}

/* A 2 MB body with the fields last, in pieces of every small size. */
static void
test_large(void)
{
	static const char tail[] = "\"}],\"model\":\"llama-3\",\"max_tokens\":50,\"stream\":true}";
	size_t n = 2 << 20, len, i, step;
	char *body = malloc(n + 64);
	struct kv_reqscan r;
	int ok = 1;

	if (body == NULL)
		abort();
	len = (size_t)sprintf(body, "{\"messages\":[{\"role\":\"user\",\"content\":\"");
	memset(body + len, 'x', n - len);
	memcpy(body + n, tail, sizeof(tail));
	len = n + sizeof(tail) - 1;
	kv_reqscan_init(&r, KV_API_OPENAI_CHAT);
	for (i = 0, step = 1; i < len && ok; i += step, step = step % 7919 + 13)
		ok = kv_reqscan_feed(&r, body + i, step < len - i ? step : len - i) == 0;
	CHECK(ok && kv_reqscan_finish(&r) == 0);
	CHECK_STR(r.ri.model, "llama-3");
	CHECK_INT(r.ri.max_output, 50);
	CHECK_INT(r.ri.stream, 1);
	CHECK_INT(r.ri.obj_end, len - 1);
	free(body);
}

/* A string long enough for the validator's 16- and 8-byte scans, with a
 * byte or sequence put at every position: the whole feed (the wide scans)
 * must say what the byte-wise one says (scan() checks), valid or not, and
 * refuse at the same offset. Numbers too: a number's run cut anywhere. */
static void
test_runs(void)
{
	static const struct { const char *ins; int valid; } ins[] = {
		{ "\x01", 0 }, { "\x1f", 0 }, { "\x7f", 1 }, { "\x80", 0 }, { "\xff", 0 },
		{ "\xc0\xaf", 0 }, { "\xc3\xa9", 1 }, { "\xe2\x82\xac", 1 }, { "\xe2\x82", 0 },
		{ "\xed\xa0\x80", 0 }, { "\xf0\x9f\x98\x80", 1 }, { "\xf4\x90\x80\x80", 0 },
		{ "\\n", 1 }, { "\\u00e9", 1 }, { "\\ud83d\\ude00", 1 }, { "\\ud83d", 1 },
		{ "\\q", 0 }, { "\"", 0 }, { "\"\"", 0 },
	};
	static const char *const nums[] = { "0", "-0", "12345678901234", "1.5e+3", "-0.25E-2",
	    "01", "1.", "1e", "-", "1.2.3", "2147483647", "2147483648" };
	struct kv_reqscan r;
	char body[160], want[160];
	size_t i, k, n;

	for (i = 0; i < sizeof(ins) / sizeof(ins[0]); i++)
		for (k = 0; k <= 40; k++) {
			n = (size_t)snprintf(body, sizeof(body),
			    "{\"model\":\"%.*s%s%.*s\",\"messages\":[]}", (int)k,
			    "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH", ins[i].ins, (int)(40 - k),
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefgh");
			CHECK_INT(scan(body, n, KV_API_OPENAI_CHAT, &r), ins[i].valid ? 0 : -1);
		}
	/* a model name of 40 letters with a multi-byte character is kept whole */
	n = (size_t)snprintf(body, sizeof(body), "{\"model\":\"%s\xc3\xa9%s\"}",
	    "abcdefghijklmnopqrst", "uvwxyz0123456789ABCD");
	CHECK_INT(scan(body, n, KV_API_OPENAI_CHAT, &r), 0);
	CHECK_STR(r.ri.model, "abcdefghijklmnopqrst\xc3\xa9uvwxyz0123456789ABCD");
	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		n = (size_t)snprintf(body, sizeof(body), "{\"max_tokens\":%s,\"n\":%s}",
		    nums[i], nums[i]);
		(void)scan(body, n, KV_API_OPENAI_CHAT, &r);
		n = (size_t)snprintf(body, sizeof(body), "[%s]", nums[i]);
		(void)scan(body, n, KV_API_OPENAI_CHAT, &r);
		n = (size_t)snprintf(body, sizeof(body), "%s", nums[i]);
		(void)scan(body, n, KV_API_OPENAI_CHAT, &r);
	}
	n = (size_t)snprintf(want, sizeof(want), "{\"max_tokens\":12345678,\"model\":\"m\"}");
	CHECK_INT(scan(want, n, KV_API_OPENAI_CHAT, &r), 0);
	CHECK_INT(r.ri.max_output, 12345678);
}

/* Image headers as base64: a 1000 x 500 PNG, a 400 x 300 JPEG. */
#define PNG_B64		"iVBORw0KGgoAAAANSUhEUgAAA+gAAAH0CAIAAAAAAAAA"
#define JPEG_B64	"/9j/4AAQSkZJRgABAQAAAQABAAD/wAARCAEsAZADASIA"
#define CLAUDE		"us.anthropic.claude-sonnet-4-20250514-v1:0"

/* Bedrock's InvokeModel of Claude: the Messages body without a model (the
 * path names it) and with anthropic_version and anthropic_beta, read by
 * the Messages rules: every bound as on Anthropic's own API. */
static void
test_bedrock_invoke(void)
{
	static const char body[] = "{\"anthropic_version\":\"bedrock-2023-05-31\","
	    "\"anthropic_beta\":[\"computer-use-2025-01-24\"],\"max_tokens\":2048,"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},"
	    "\"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}],"
	    "\"tools\":[{\"type\":\"computer_20250124\",\"name\":\"computer\","
	    "\"display_width_px\":1024,\"display_height_px\":768},"
	    "{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}],"
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\",\"source\":"
	    "{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"" PNG_B64 "\"}},"
	    "{\"type\":\"text\",\"text\":\"hi\"}]}]}";
	static const char named[] = "{\"model\":\"claude-x\",\"max_tokens\":5}";
	static const char after[] = "{\"tools\":[{\"name\":\"f\"}],\"type\":\"computer_20250124\"}";
	struct kv_reqscan r;
	const struct kv_request_info *ri = &r.ri;

	CHECK_INT(scan_model(body, strlen(body), KV_API_ANTHROPIC_MESSAGES, CLAUDE, &r), 0);
	CHECK_STR(ri->model, CLAUDE);
	CHECK_INT(ri->stream, 0);		/* the path says it */
	CHECK_INT(ri->max_output, 2048);
	CHECK_INT(ri->thinking, 1024);
	CHECK_INT(ri->images, 1);
	CHECK_INT(ri->img_tok[KV_IMG_ANTHROPIC], kv_media_image_tokens(KV_IMG_ANTHROPIC, 1000, 500));
	CHECK_INT(ri->img_tok[KV_IMG_ANTHROPIC], 667);
	CHECK_INT(ri->hidden, 735 + 499 + KV_TOOL_PROMPT_BASE);
	CHECK_INT(ri->cache_ctl, 1);
	CHECK_INT(ri->cache_1h, 1);
	CHECK_STR(ri->fetches, "");
	/* Bedrock refuses a model in the body; so does kilovolt, rather than
	 * price a name that is not the one served */
	CHECK_INT(scan_model(named, strlen(named), KV_API_ANTHROPIC_MESSAGES, CLAUDE, &r), -1);
	CHECK(strstr(r.err, "the path names the model") != NULL);
	CHECK_INT(scan(named, strlen(named), KV_API_ANTHROPIC_MESSAGES, &r), 0);
	CHECK_STR(ri->model, "claude-x");
	/* a "type" after the tools is not a tool's */
	CHECK_INT(scan(after, strlen(after), KV_API_ANTHROPIC_MESSAGES, &r), 0);
	CHECK_INT(ri->hidden, KV_TOOL_PROMPT_BASE);
}

/* A Converse body with every kind of block: what it asks for. The client's
 * own JSON (a tool's input and schema, a json result) is not read as
 * blocks, whatever names it uses. */
static void
test_converse_fields(void)
{
	static const char body[] = "{\"system\":[{\"text\":\"be brief\"},"
	    "{\"cachePoint\":{\"type\":\"default\",\"ttl\":\"1h\"}}],"
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"look\"},"
	    "{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":\"" PNG_B64 "\"}}},"
	    "{\"cachePoint\":{\"type\":\"default\"}}]},"
	    "{\"role\":\"assistant\",\"content\":[{\"reasoningContent\":{\"reasoningText\":"
	    "{\"text\":\"hm\",\"signature\":\"c2ln\"}}},{\"toolUse\":{\"toolUseId\":\"t1\","
	    "\"name\":\"f\",\"input\":{\"content\":[{\"document\":{\"source\":{\"s3Location\":"
	    "{\"uri\":\"s3://b/k\"}}}}],\"cachePoint\":{}}}}]},"
	    "{\"role\":\"user\",\"content\":[{\"toolResult\":{\"toolUseId\":\"t1\",\"content\":"
	    "[{\"json\":{\"video\":1,\"s3Location\":2}},{\"text\":\"ok\"},{\"image\":{\"format\":"
	    "\"jpeg\",\"source\":{\"bytes\":\"" JPEG_B64 "\"}}}]}}]}],"
	    "\"inferenceConfig\":{\"maxTokens\":4096,\"temperature\":0.5,\"topP\":0.9,"
	    "\"stopSequences\":[\"x\"]},"
	    "\"toolConfig\":{\"tools\":[{\"toolSpec\":{\"name\":\"f\",\"description\":\"d\","
	    "\"inputSchema\":{\"json\":{\"type\":\"object\",\"properties\":{\"document\":"
	    "{\"type\":\"web_search_20250305\"}}}}}},{\"cachePoint\":{\"type\":\"default\"}}],"
	    "\"toolChoice\":{\"auto\":{}}},"
	    "\"additionalModelRequestFields\":{\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":2048},\"anthropic_beta\":[\"interleaved-thinking-2025-05-14\"]},"
	    "\"additionalModelResponseFieldPaths\":[\"/stop_sequence\"],"
	    "\"requestMetadata\":{\"team\":\"a\"},\"serviceTier\":{\"type\":\"default\"},"
	    "\"performanceConfig\":{\"latency\":\"standard\"},\"outputConfig\":null}";
	struct kv_reqscan r;
	const struct kv_request_info *ri = &r.ri;
	int i;

	CHECK_INT(scan_model(body, strlen(body), KV_API_BEDROCK_CONVERSE, CLAUDE, &r), 0);
	CHECK_STR(ri->model, CLAUDE);
	CHECK_INT(ri->max_output, 4096);
	CHECK_INT(ri->thinking, 2048);
	CHECK_INT(ri->images, 2);
	for (i = 0; i < KV_IMG_NRULES; i++)
		CHECK_INT(ri->img_tok[i], kv_media_image_tokens(i, 1000, 500) +
		    kv_media_image_tokens(i, 400, 300));
	CHECK_INT(ri->img_tok[KV_IMG_ANTHROPIC], 667 + 160);
	CHECK_INT(ri->cache_ctl, 1);
	CHECK_INT(ri->cache_1h, 1);
	CHECK_INT(ri->hidden, KV_TOOL_PROMPT_BASE);	/* one toolSpec */
	CHECK_INT(ri->tools_unbounded, 0);
	CHECK_INT(ri->tier, KV_TIER_STANDARD);
	CHECK_STR(ri->dim_other, "");
	CHECK_STR(ri->fetches, "");
	CHECK_INT(ri->mult, 1);
	CHECK_INT(ri->members, 10);
}

/* What is absent: no output limit (the model's own applies), no cache
 * write, no image; bytes that are no image header are the dearest image;
 * a max_tokens among the model's own fields raises the bound. */
static void
test_converse_absent(void)
{
	static const char *const bodies[] = {
		"{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}]}",
		"{\"messages\":null,\"inferenceConfig\":{\"maxTokens\":null},\"system\":[],"
		"\"toolConfig\":{\"tools\":[]},\"serviceTier\":null}",
		"{\"inferenceConfig\":{\"temperature\":1},\"additionalModelRequestFields\":"
		"{\"thinking\":{\"type\":\"disabled\"},\"top_k\":5}}",
	};
	static const char odd[] = "{\"messages\":[{\"role\":\"user\",\"content\":[{\"image\":"
	    "{\"format\":\"png\",\"source\":{\"bytes\":\"AAAAAAAA\"}}}]}]}";
	static const char both[] = "{\"inferenceConfig\":{\"maxTokens\":100},"
	    "\"additionalModelRequestFields\":{\"max_tokens\":300,\"reasoning_config\":"
	    "{\"type\":\"enabled\",\"budget_tokens\":200}}}";
	struct kv_reqscan r;
	size_t i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		CHECK_INT(scan(bodies[i], strlen(bodies[i]), KV_API_BEDROCK_CONVERSE, &r), 0);
		CHECK_INT(r.ri.max_output, -1);
		CHECK_INT(r.ri.thinking, -1);
		CHECK_INT(r.ri.cache_ctl, 0);
		CHECK_INT(r.ri.images, 0);
		CHECK_INT(r.ri.hidden, 0);
		CHECK_STR(r.ri.fetches, "");
		CHECK_STR(r.ri.model, "");
	}
	CHECK_INT(scan(odd, strlen(odd), KV_API_BEDROCK_CONVERSE, &r), 0);
	CHECK_INT(r.ri.images, 1);
	CHECK_INT(r.ri.img_tok[KV_IMG_ANTHROPIC], kv_media_image_tokens(KV_IMG_ANTHROPIC, 0, 0));
	CHECK_INT(scan(both, strlen(both), KV_API_BEDROCK_CONVERSE, &r), 0);
	CHECK_INT(r.ri.max_output, 300);
	CHECK_INT(r.ri.thinking, 200);
}

#define MSG(blocks) "{\"messages\":[{\"role\":\"user\",\"content\":[" blocks "]}]}"

static const struct { const char *body; const char *fetches; } cv_refs[] = {
	{ MSG("{\"document\":{\"format\":\"pdf\",\"name\":\"a\",\"source\":{\"bytes\":\"JVBE\"}}}"),
	  "a document block" },
	{ MSG("{\"document\":{\"format\":\"txt\",\"name\":\"a\",\"source\":{\"text\":\"x\"}}}"),
	  "a document block" },
	{ MSG("{\"video\":{\"format\":\"mp4\",\"source\":{\"bytes\":\"AAAA\"}}}"), "a video block" },
	{ MSG("{\"audio\":{\"format\":\"mp3\",\"source\":{\"bytes\":\"AAAA\"}}}"), "an audio block" },
	{ MSG("{\"image\":{\"format\":\"png\",\"source\":{\"s3Location\":{\"uri\":\"s3://b/k\"}}}}"),
	  "an s3Location (an object in S3)" },
	{ MSG("{\"toolResult\":{\"toolUseId\":\"t\",\"content\":[{\"image\":{\"format\":\"png\","
	  "\"source\":{\"s3Location\":{\"uri\":\"s3://b/k\"}}}}]}}"), "an s3Location (an object in S3)" },
	{ MSG("{\"toolResult\":{\"toolUseId\":\"t\",\"content\":[{\"document\":{}}]}}"),
	  "a document block" },
	{ "{\"promptVariables\":{\"topic\":{\"text\":\"x\"}}}", "promptVariables (a managed prompt)" },
	{ "{\"promptVariables\":null}", "" },
	{ "{\"additionalModelRequestFields\":{\"tools\":[{\"type\":\"web_search_20250305\","
	  "\"name\":\"web_search\",\"max_uses\":3}]}}", "a web_search_20250305 block or tool" },
	{ MSG("{\"toolUse\":{\"toolUseId\":\"t\",\"name\":\"f\",\"input\":{\"video\":{}}}}"), "" },
};

static void
test_converse_fetches(void)
{
	static const char arn[] = "arn:aws:bedrock:us-east-1:123456789012:prompt/PROMPT12345:1";
	static const char tools[] = "{\"additionalModelRequestFields\":{\"tools\":["
	    "{\"type\":\"computer_20250124\",\"name\":\"computer\"},{\"type\":\"web_search_20250305\","
	    "\"name\":\"web_search\",\"max_uses\":3},{\"type\":\"web_fetch_20250910\","
	    "\"name\":\"web_fetch\"}],\"anthropic_beta\":[\"computer-use-2025-01-24\"]}}";
	struct kv_reqscan r;
	size_t i;

	for (i = 0; i < sizeof(cv_refs) / sizeof(cv_refs[0]); i++) {
		int before = unit_fail;

		CHECK_INT(scan(cv_refs[i].body, strlen(cv_refs[i].body), KV_API_BEDROCK_CONVERSE,
		    &r), 0);
		CHECK_STR(r.ri.fetches, cv_refs[i].fetches);
		if (unit_fail != before)
			fprintf(stderr, "  ^ body %zu: %s\n", i, cv_refs[i].body);
	}
	CHECK_INT(scan(cv_refs[3].body, strlen(cv_refs[3].body), KV_API_BEDROCK_CONVERSE, &r), 0);
	CHECK_INT(r.ri.audio_in, 1);
	/* a prompt from Prompt management as the model */
	CHECK_INT(scan_model("{}", 2, KV_API_BEDROCK_CONVERSE, arn, &r), 0);
	CHECK_STR(r.ri.fetches, "a managed prompt (the model ARN)");
	CHECK_STR(r.ri.model, arn);
	/* Anthropic's own tools among the model's fields: as on its API */
	CHECK_INT(scan(tools, strlen(tools), KV_API_BEDROCK_CONVERSE, &r), 0);
	CHECK_INT(r.ri.hidden, 735 + 499 + KV_TOOL_PROMPT_BASE);
	CHECK_INT(r.ri.tool_uses, 3);
	CHECK_INT(r.ri.ws_uses, 3);
	CHECK_INT(r.ri.tools_unbounded, 1);
	CHECK_INT(r.ri.wf_unbounded, 1);
}

/* The price dimensions a Converse body asks for. */
static void
test_converse_dims(void)
{
	static const struct { const char *body; int tier; const char *other; } d[] = {
		{ "{\"serviceTier\":{\"type\":\"priority\"}}", KV_TIER_PRIORITY, "" },
		{ "{\"serviceTier\":{\"type\":\"flex\"}}", KV_TIER_FLEX, "" },
		{ "{\"serviceTier\":{\"type\":\"reserved\"}}", KV_TIER_OTHER,
		  "serviceTier \"reserved\"" },
		{ "{\"performanceConfig\":{\"latency\":\"optimized\"}}", KV_TIER_STANDARD,
		  "performanceConfig.latency \"optimized\"" },
		{ "{\"guardrailConfig\":{\"guardrailIdentifier\":\"g\",\"guardrailVersion\":\"1\"}}",
		  KV_TIER_STANDARD, "guardrailConfig" },
		{ "{\"guardrailConfig\":null}", KV_TIER_STANDARD, "" },
	};
	struct kv_reqscan r;
	size_t i;

	for (i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		CHECK_INT(scan(d[i].body, strlen(d[i].body), KV_API_BEDROCK_CONVERSE, &r), 0);
		CHECK_INT(r.ri.tier, d[i].tier);
		CHECK_STR(r.ri.dim_other, d[i].other);
	}
}

static const struct { const char *body; const char *why; } cv_bad[] = {
	{ "{\"model\":\"m\"}", "top-level member the Converse API does not define" },
	{ "{\"stream\":true}", "top-level member the Converse API does not define" },
	{ "{\"messages\":{}}", "messages must be an array" },
	{ "{\"inferenceConfig\":[]}", "inferenceConfig must be an object" },
	{ "{\"inferenceConfig\":{\"maxTokens\":\"5\"}}", "inferenceConfig.maxTokens must be an integer" },
	{ "{\"inferenceConfig\":{\"maxTokens\":-1}}", "inferenceConfig.maxTokens is negative" },
	{ "{\"inferenceConfig\":{\"maxTokens\":1e12}}", "inferenceConfig.maxTokens is out of range" },
	{ "{\"additionalModelRequestFields\":{\"thinking\":{\"budget_tokens\":1.5}}}",
	  "thinking.budget_tokens is not an integer" },
	{ "{\"additionalModelRequestFields\":{\"max_tokens\":true}}",
	  "additionalModelRequestFields.max_tokens must be an integer" },
	{ "{\"additionalModelRequestFields\":{\"anthropic_beta\":\"x\"}}",
	  "anthropic_beta must be an array" },
	{ "{\"additionalModelRequestFields\":{\"anthropic_beta\":[1]}}",
	  "anthropic_beta must hold strings" },
	{ "{\"additionalModelRequestFields\":{\"tools\":[{\"type\":\"advisor_20260301\"}]}}",
	  "cannot price what \"advisor_20260301\"" },
	{ MSG("{\"hologram\":{}}"), "a content block the Converse API does not define" },
	{ "{\"system\":[{\"text\":\"a\"},{\"prompt\":\"b\"}]}",
	  "a content block the Converse API does not define" },
	{ "{\"toolConfig\":{\"tools\":[{\"systemTool\":{\"name\":\"nova_grounding\"}}]}}",
	  "a systemTool" },
	{ "{\"toolConfig\":{\"tools\":[{\"function\":{}}]}}", "a tool the Converse API" },
	{ "{\"toolConfig\":{\"tools\":[5]}}", "an element is not an object" },
	{ "{\"serviceTier\":{\"type\":1}}", "serviceTier.type must be a string" },
	{ "{\"performanceConfig\":{\"latency\":true}}", "performanceConfig.latency must be" },
	{ "[]", "not a JSON object" },
	{ "{\"messages\":[}", "not valid JSON" },
};

static void
test_converse_refused(void)
{
	static const char longarn[] = "arn:aws:bedrock:us-east-1:123456789012:"
	    "application-inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0-long";
	struct kv_reqscan r;
	size_t i;

	for (i = 0; i < sizeof(cv_bad) / sizeof(cv_bad[0]); i++) {
		int before = unit_fail;

		CHECK_INT(scan(cv_bad[i].body, strlen(cv_bad[i].body), KV_API_BEDROCK_CONVERSE, &r),
		    -1);
		CHECK(strstr(r.err, cv_bad[i].why) != NULL);
		if (unit_fail != before)
			fprintf(stderr, "  ^ body %zu: %s -> %s\n", i, cv_bad[i].body, r.err);
	}
	/* a path model past the name's room: refused, and the body after it */
	kv_reqscan_init(&r, KV_API_BEDROCK_CONVERSE);
	CHECK_INT(kv_reqscan_model(&r, longarn, strlen(longarn)), -1);
	CHECK(strstr(r.err, "not a model name") != NULL);
	CHECK_INT(kv_reqscan_feed(&r, "{}", 2), -1);
}

int
main(void)
{
	test_refused();
	test_depth();
	test_fields();
	test_absent();
	test_fetches();
	test_intval();
	test_large();
	test_runs();
	test_bedrock_invoke();
	test_converse_fields();
	test_converse_absent();
	test_converse_fetches();
	test_converse_dims();
	test_converse_refused();
	return unit_done();
}

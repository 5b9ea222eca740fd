/* The response scanner: reads the lexer's events (usage_json.h) for the
 * provider's usage object, its model, service tier and event type, the
 * server-tool calls it reports and the text it generated, and keeps the
 * usage by each provider's rules (OpenAI chat, completions, embeddings and
 * Responses; Anthropic messages). */
#include <stdint.h>
#include <string.h>

#include "worker/usage_json.h"
#include "worker/usage_lex.h"
#include "worker/usage_scan.h"

enum {
	T_NONE, T_OTHER, T_MESSAGE_START, T_MESSAGE_STOP, T_RESPONSE_START, T_RESPONSE_DONE,
	T_ITEM_ADDED, T_ERROR
};
enum { SRC_TOP = 1, SRC_NESTED, SRC_METRICS };
enum {
	C_PROMPT, C_COMPLETION, C_INPUT, C_OUTPUT, C_CACHED_P, C_CACHED_I,
	C_CACHE_WRITE, C_CACHE_READ, C_CACHE_1H, C_WEB_SEARCH, C_WEB_FETCH,
	C_AUDIO_IN, C_AUDIO_OUT, C_REASONING, C_WRITE_P, C_AUDIO_CACHED, C_N
};
enum { A_INPUT, A_WRITE, A_READ, A_OUTPUT, A_WRITE_1H, A_SEARCH, A_FETCH, A_N };

_Static_assert(C_N <= sizeof(((struct kv_usage_scanner *)0)->cand) / sizeof(int64_t),
    "cand[] holds every usage field");
_Static_assert(A_N <= sizeof(((struct kv_usage_scanner *)0)->anth) / sizeof(int64_t),
    "anth[] holds every Anthropic field");

void
usage_scan_event_reset(struct kv_usage_scanner *s)
{
	s->ev_type = T_NONE;
	s->cand_depth = 0;
	s->cand_done = 0;
	s->ev_counted = 0;
	s->ev_ws_item = 0;
	s->ev_ws = 0;
}

/* The string values on_string_begin may capture or count, by their key
 * (a superset: it tells more apart by level and API); for any other it
 * sets neither, which the lexer's run does by itself without an event.
 * Nor does on_event act on arrays or literals. */
#define W(k)	USAGE_WANT_KEY(k)
#define SCAN_WANT (USAGE_WANT_QUIET | W(K_MODEL) | W(K_TYPE) | W(K_SERVICE_TIER) | \
	W(K_GM_FINISH) | W(K_GM_MODEL) | \
	W(K_DELTA) | W(K_CONTENT) | W(K_TEXT) | W(K_ARGUMENTS) | W(K_PARTIAL_JSON) | \
	W(K_THINKING) | W(K_REFUSAL) | W(K_REASONING_CONTENT) | W(K_SPEED) | W(K_INFERENCE_GEO) | \
	W(K_INPUT))

void
kv_usage_init(struct kv_usage_scanner *s, enum kv_api api, int sse)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->api = api;
	s->sse = sse;
	usage_json_init(&s->json, 1);
	s->run_want = SCAN_WANT;
	if (api == KV_API_BEDROCK_CONVERSE)	/* a cacheDetails "ttl": too short a name to intern */
		s->run_want |= W(K_OTHER);
	/* a promptTokensDetails "modality": its AUDIO has a price of its own */
	if (api == KV_API_GEMINI || api == KV_API_GEMINI_EMBED)
		s->run_want |= W(K_GM_MODALITY);
	for (i = 0; i < A_N; i++)
		s->anth[i] = -1;
	for (i = 0; i < 4; i++)
		s->bedrock[i] = -1;
	usage_scan_event_reset(s);
}

static int
is_openai(enum kv_api api)
{
	return api == KV_API_OPENAI_CHAT || api == KV_API_OPENAI_COMPLETIONS ||
	    api == KV_API_OPENAI_EMBEDDINGS || api == KV_API_OPENAI_RESPONSES;
}

/* The object holding the nested usage: Anthropic's message_start carries
 * message.usage, Responses API events carry response.usage. */
static int
nested_parent(enum kv_api api)
{
	if (api == KV_API_ANTHROPIC_MESSAGES)
		return K_MESSAGE;
	if (api == KV_API_OPENAI_RESPONSES)
		return K_RESPONSE;
	return -1;
}

static int64_t
sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Converse's usage.cacheDetails, [{"inputTokens": N, "ttl": "1h"}, ...]:
 * the cache writes by TTL, of which the 1-hour ones are priced apart, as
 * Anthropic's ephemeral_1h_input_tokens. 1 when depth D is inside one of
 * its elements. */
static int
in_cache_detail(const struct kv_usage_scanner *s, int d)
{
	const struct kv_json *j = &s->json;

	return s->api == KV_API_BEDROCK_CONVERSE && s->cand_depth != 0 &&
	    d == s->cand_depth + 2 && key_at(j, d - 2) == K_ARRAY &&
	    key_at(j, d - 3) == K_BR_CACHE_DETAILS;
}

/* An element of cacheDetails closed: its tokens count as 1-hour writes
 * when its ttl said so. */
static void
cache_detail_end(struct kv_usage_scanner *s)
{
	int64_t *w = &s->cand[C_CACHE_1H];

	if (s->detail_1h)
		*w = sat_add(*w > 0 ? *w : 0, s->detail_tokens);
	s->detail_tokens = 0;
	s->detail_1h = 0;
}

static void
cand_begin(struct kv_usage_scanner *s)
{
	const struct kv_json *j = &s->json;
	int d = j->evdepth, i, src = 0;

	if (s->api == KV_API_OTHER || s->cand_depth != 0)
		return;
	if (d == 2 && key_at(j, 0) == K_USAGE)
		src = SRC_TOP;
	else if (d == 3 && key_at(j, 1) == K_USAGE &&
	    key_at(j, 0) == nested_parent(s->api))
		src = SRC_NESTED;
	else if (d == 2 && key_at(j, 0) == K_BR_METRICS && s->api == KV_API_ANTHROPIC_MESSAGES)
		src = SRC_METRICS;	/* Bedrock's own count, in an InvokeModel stream's last chunk */
	if (src == 0)
		return;
	s->cand_depth = d;
	s->cand_src = src;
	s->cand_done = 0;
	for (i = 0; i < C_N; i++)
		s->cand[i] = -1;
	s->detail_tokens = 0;
	s->detail_1h = 0;
}

static int
usage_field(int key)
{
	switch (key) {
	case K_PROMPT_TOKENS:		return C_PROMPT;
	case K_COMPLETION_TOKENS:	return C_COMPLETION;
	case K_INPUT_TOKENS:		return C_INPUT;
	case K_OUTPUT_TOKENS:		return C_OUTPUT;
	case K_CACHE_CREATION:		return C_CACHE_WRITE;
	case K_CACHE_READ:		return C_CACHE_READ;
	default:			return -1;
	}
}

/* Bedrock's names: Converse's usage, InvokeModel's invocation metrics. */
static int
bedrock_field(int key)
{
	switch (key) {
	case K_BR_INPUT:
	case K_BR_INPUT_COUNT:		return C_INPUT;
	case K_BR_OUTPUT:
	case K_BR_OUTPUT_COUNT:		return C_OUTPUT;
	case K_BR_READ:
	case K_BR_READ_COUNT:		return C_CACHE_READ;
	case K_BR_WRITE:
	case K_BR_WRITE_COUNT:		return C_CACHE_WRITE;
	default:			return -1;
	}
}

static void
cand_number(struct kv_usage_scanner *s)
{
	const struct kv_json *j = &s->json;
	int d = j->depth, f = -1;

	if (s->cand_depth == 0 || !j->num_ok)
		return;
	if (in_cache_detail(s, d) && key_at(j, d - 1) == K_BR_INPUT)
		s->detail_tokens = j->num;
	else if (d == s->cand_depth) {
		f = s->cand_src == SRC_METRICS || s->api == KV_API_BEDROCK_CONVERSE ?
		    bedrock_field(key_at(j, d - 1)) : usage_field(key_at(j, d - 1));
	} else if (d == s->cand_depth + 1 && key_at(j, d - 1) == K_CACHED_TOKENS) {
		if (key_at(j, d - 2) == K_PROMPT_DETAILS)
			f = C_CACHED_P;
		else if (key_at(j, d - 2) == K_INPUT_DETAILS)
			f = C_CACHED_I;
	} else if (d == s->cand_depth + 1 && key_at(j, d - 1) == K_AUDIO_TOKENS) {
		/* OpenAI's token details, priced apart where money.c has prices */
		if (key_at(j, d - 2) == K_PROMPT_DETAILS || key_at(j, d - 2) == K_INPUT_DETAILS)
			f = C_AUDIO_IN;	/* Realtime: input_token_details.audio_tokens */
		else if (key_at(j, d - 2) == K_COMPLETION_DETAILS ||
		    key_at(j, d - 2) == K_OUTPUT_DETAILS)
			f = C_AUDIO_OUT;
	} else if (d == s->cand_depth + 2 && key_at(j, d - 1) == K_AUDIO_TOKENS &&
	    key_at(j, d - 2) == K_CACHED_DETAILS && key_at(j, d - 3) == K_INPUT_DETAILS) {
		f = C_AUDIO_CACHED;	/* Realtime: the cached part of audio_tokens */
	} else if (d == s->cand_depth + 1 && key_at(j, d - 1) == K_CACHE_WRITE_TOKENS &&
	    (key_at(j, d - 2) == K_PROMPT_DETAILS || key_at(j, d - 2) == K_INPUT_DETAILS)) {
		f = C_WRITE_P;	/* OpenAI's cache writes, among the prompt tokens */
	} else if (d == s->cand_depth + 1 && key_at(j, d - 1) == K_REASONING_TOKENS &&
	    (key_at(j, d - 2) == K_COMPLETION_DETAILS || key_at(j, d - 2) == K_OUTPUT_DETAILS)) {
		f = C_REASONING;
	} else if (d == s->cand_depth + 1 && key_at(j, d - 1) == K_EPHEMERAL_1H &&
	    key_at(j, d - 2) == K_CACHE_CREATION_OBJ) {
		f = C_CACHE_1H;	/* Anthropic usage.cache_creation: 1-hour writes */
	} else if (d == s->cand_depth + 1 && key_at(j, d - 2) == K_SERVER_TOOL_USE) {
		/* Anthropic usage.server_tool_use: calls billed per call */
		if (key_at(j, d - 1) == K_WEB_SEARCH_REQ)
			f = C_WEB_SEARCH;
		else if (key_at(j, d - 1) == K_WEB_FETCH_REQ)
			f = C_WEB_FETCH;
	}
	if (f >= 0)
		s->cand[f] = j->num;
}

static int64_t
either(int64_t a, int64_t b)
{
	return a >= 0 ? a : b >= 0 ? b : 0;
}

/* OpenAI: chat/completions/embeddings name them prompt/completion, the
 * Responses API input/output; accept either spelling on every endpoint. */
static void
commit_openai(struct kv_usage_scanner *s)
{
	const int64_t *c = s->cand;
	struct kv_usage *u = &s->usage;

	if (c[C_PROMPT] < 0 && c[C_INPUT] < 0 && c[C_COMPLETION] < 0 &&
	    c[C_OUTPUT] < 0)
		return;
	u->input = either(c[C_PROMPT], c[C_INPUT]);
	u->output = either(c[C_COMPLETION], c[C_OUTPUT]);
	u->cached_input = either(c[C_CACHED_P], c[C_CACHED_I]);
	if (u->cached_input > u->input)
		u->cached_input = u->input;
	/* cache writes (priced apart since mid-2026) and audio among the
	 * uncached input, audio and reasoning among output */
	u->cache_write = either(c[C_WRITE_P], -1);
	u->cache_write = u->cache_write > u->input - u->cached_input ?
	    u->input - u->cached_input : u->cache_write;
	u->audio_input = either(c[C_AUDIO_IN], -1);
	if (c[C_AUDIO_CACHED] > 0)	/* priced as cached input, not audio */
		u->audio_input = u->audio_input > c[C_AUDIO_CACHED] ?
		    u->audio_input - c[C_AUDIO_CACHED] : 0;
	u->audio_input = u->audio_input > u->input - u->cached_input - u->cache_write ?
	    u->input - u->cached_input - u->cache_write : u->audio_input;
	u->audio_output = either(c[C_AUDIO_OUT], -1);
	u->audio_output = u->audio_output > u->output ? u->output : u->audio_output;
	u->reasoning = either(c[C_REASONING], -1);
	u->reasoning = u->reasoning > u->output - u->audio_output ?
	    u->output - u->audio_output : u->reasoning;
	u->cache_write_1h = 0;
	u->found = 1;
}

/* Anthropic: message_start has every field, message_delta's counts are
 * cumulative; whatever a later event names replaces the earlier value.
 * Bedrock's Converse usage reads the same (its input excludes the cache
 * reads and writes too). Bedrock's own counts (s->bedrock) replace the
 * message's: they are what AWS bills. */
static void
commit_anthropic(struct kv_usage_scanner *s)
{
	static const int from[A_N] = { C_INPUT, C_CACHE_WRITE, C_CACHE_READ, C_OUTPUT,
	    C_CACHE_1H, C_WEB_SEARCH, C_WEB_FETCH };
	static const int br[4] = { A_INPUT, A_OUTPUT, A_READ, A_WRITE };
	int64_t *a = s->anth;
	struct kv_usage *u = &s->usage;
	int i, any = 0;

	for (i = 0; i < A_N; i++) {
		if (s->cand[from[i]] >= 0) {
			a[i] = s->cand[from[i]];
			any = 1;
		}
	}
	for (i = 0; i < 4; i++) {
		if (s->bedrock[i] >= 0) {
			a[br[i]] = s->bedrock[i];
			any = 1;
		}
	}
	if (!any)
		return;
	u->cached_input = a[A_READ] > 0 ? a[A_READ] : 0;
	u->cache_write = a[A_WRITE] > 0 ? a[A_WRITE] : 0;
	/* the 1-hour writes are among cache_creation_input_tokens */
	u->cache_write_1h = a[A_WRITE_1H] > 0 ? a[A_WRITE_1H] : 0;
	if (u->cache_write_1h > u->cache_write)
		u->cache_write_1h = u->cache_write;
	u->input = sat_add(sat_add(a[A_INPUT] > 0 ? a[A_INPUT] : 0,
	    u->cached_input), u->cache_write);
	u->output = a[A_OUTPUT] > 0 ? a[A_OUTPUT] : 0;
	u->web_search = a[A_SEARCH] > 0 ? a[A_SEARCH] : 0;
	u->web_fetch = a[A_FETCH] > 0 ? a[A_FETCH] : 0;
	u->found = 1;
}

/* Bedrock's own counts, in the candidate's input, output, cache read and
 * write (an InvokeModel stream's amazon-bedrock-invocationMetrics, its
 * inputTokenCount without the cache's, as Anthropic's input_tokens):
 * kept, to replace whatever the message names, and final. */
static void
bedrock_take(struct kv_usage_scanner *s)
{
	static const int c[4] = { C_INPUT, C_OUTPUT, C_CACHE_READ, C_CACHE_WRITE };
	int i;

	for (i = 0; i < 4; i++) {
		if (s->cand[c[i]] >= 0)
			s->bedrock[i] = s->cand[c[i]];
		s->cand[c[i]] = -1;
	}
	commit_anthropic(s);
	if (s->usage.found)
		s->final = 1;
}

void
kv_usage_bedrock_counts(struct kv_usage_scanner *s, const int64_t counts[4])
{
	static const int c[4] = { C_INPUT, C_OUTPUT, C_CACHE_READ, C_CACHE_WRITE };
	int i;

	if (s->api != KV_API_ANTHROPIC_MESSAGES && s->api != KV_API_BEDROCK_CONVERSE)
		return;
	for (i = 0; i < C_N; i++)
		s->cand[i] = -1;
	for (i = 0; i < 4; i++)
		s->cand[c[i]] = counts[i];
	bedrock_take(s);
}

void
kv_usage_cut(struct kv_usage_scanner *s)
{
	s->error_event = 1;
	s->final = 0;
}

/* Responses API searches: each web_search_call output item is a billed
 * call. A stream adds each item once (output_item.added, before the search
 * runs: a cut stream still counts it) and lists them all again in its
 * final response; a JSON body lists them in its top-level output. */
static void
commit_searches(struct kv_usage_scanner *s)
{
	if (s->api != KV_API_OPENAI_RESPONSES)
		return;
	if (s->ev_type == T_ITEM_ADDED && s->ev_ws_item)
		s->ws_added++;
	if (s->ev_type == T_RESPONSE_DONE && s->ev_ws > s->ws_listed)
		s->ws_listed = s->ev_ws;
	s->usage.web_search = s->ws_added > s->ws_listed ? s->ws_added : s->ws_listed;
}

/* The top-level object ended: take its usage if it may carry one. A
 * stream's opening figures (message_start, response.created/in_progress)
 * are taken but are not final, and never replace final ones. */
static void
commit(struct kv_usage_scanner *s)
{
	int final = 1;

	commit_searches(s);
	if (s->sse && s->ev_type == T_ERROR && s->api == KV_API_ANTHROPIC_MESSAGES) {
		/* a 200 stream broken off by the provider: a cut, never final */
		s->error_event = 1;
		s->final = 0;
	}
	if (s->error_event)
		return;
	if (s->api == KV_API_ANTHROPIC_MESSAGES && s->sse && s->ev_type == T_MESSAGE_STOP &&
	    s->usage.found)
		s->final = 1;	/* the last message_delta was the last */
	if (!s->cand_done)
		return;
	if (s->cand_src == SRC_METRICS) {
		bedrock_take(s);
		return;
	}
	if (s->cand_src == SRC_NESTED) {
		if (s->api == KV_API_ANTHROPIC_MESSAGES && s->ev_type != T_MESSAGE_START)
			return;
		if (s->api == KV_API_OPENAI_RESPONSES && s->ev_type != T_RESPONSE_DONE &&
		    s->ev_type != T_RESPONSE_START)
			return;
		final = s->ev_type == T_RESPONSE_DONE;
	}
	/* an Anthropic stream's message_delta counts are cumulative so far */
	if (s->api == KV_API_ANTHROPIC_MESSAGES && s->sse)
		final = 0;
	if (!final && s->final)
		return;
	if (s->api == KV_API_ANTHROPIC_MESSAGES || s->api == KV_API_BEDROCK_CONVERSE)
		commit_anthropic(s);
	else if (is_openai(s->api))
		commit_openai(s);
	if (s->usage.found && final)
		s->final = 1;
}

static int
event_type(const struct kv_json *j)
{
	static const char *const done[] = {
		"response.completed", "response.incomplete", "response.failed",
		"response.done",	/* the Realtime API's (ws_session.c) */
	};
	size_t i;

	if (j->str_bad)
		return T_OTHER;
	if (strcmp(j->str, "message_start") == 0)
		return T_MESSAGE_START;
	if (strcmp(j->str, "message_stop") == 0)
		return T_MESSAGE_STOP;
	if (strcmp(j->str, "response.created") == 0 || strcmp(j->str, "response.in_progress") == 0)
		return T_RESPONSE_START;
	if (strcmp(j->str, "response.output_item.added") == 0)
		return T_ITEM_ADDED;
	if (strcmp(j->str, "error") == 0)
		return T_ERROR;
	for (i = 0; i < sizeof(done) / sizeof(done[0]); i++)
		if (strcmp(j->str, done[i]) == 0)
			return T_RESPONSE_DONE;
	return T_OTHER;
}

int
usage_counted_key(int key)
{
	return key == K_CONTENT || key == K_TEXT || key == K_ARGUMENTS ||
	    key == K_PARTIAL_JSON || key == K_THINKING || key == K_REFUSAL ||
	    key == K_REASONING_CONTENT;
}

static int
counted_key(const struct kv_usage_scanner *s, int d, int key)
{
	/* a Responses stream repeats the whole text in its *.done events and
	 * in response.completed; only the deltas are new output */
	if (s->api == KV_API_OPENAI_RESPONSES && s->sse)
		return d == 1 && key == K_DELTA;
	/* a Converse toolUse delta's arguments, as a string */
	if (key == K_INPUT)
		return s->api == KV_API_BEDROCK_CONVERSE;
	return usage_counted_key(key);
}

/* Where a Responses output item's "type" sits: 1 a stream event's "item",
 * 2 a JSON body's top-level "output" list, 3 the "output" list of a
 * stream's "response"; 0 elsewhere. */
static int
output_item_type(const struct kv_usage_scanner *s, int d, int key)
{
	const struct kv_json *j = &s->json;

	if (s->api != KV_API_OPENAI_RESPONSES || key != K_TYPE)
		return 0;
	if (d == 2 && key_at(j, 0) == K_ITEM)
		return 1;
	if (d == 3 && key_at(j, 1) == K_ARRAY && key_at(j, 0) == K_OUTPUT)
		return 2;
	if (d == 4 && key_at(j, 2) == K_ARRAY && key_at(j, 1) == K_OUTPUT &&
	    key_at(j, 0) == K_RESPONSE)
		return 3;
	return 0;
}

static void
on_output_item(struct kv_usage_scanner *s, int where)
{
	const struct kv_json *j = &s->json;

	if (j->str_bad || strcmp(j->str, "web_search_call") != 0)
		return;
	if (where == 1)
		s->ev_ws_item = 1;
	else if (where == 3 || !s->sse)
		s->ev_ws++;	/* a JSON body's list counts when its object closes */
	if (where == 2 && !s->sse && s->ev_ws > s->ws_listed)
		s->ws_listed = s->ev_ws;
}

static void
on_string_begin(struct kv_usage_scanner *s)
{
	struct kv_json *j = &s->json;
	int d = j->depth, key = key_at(j, d - 1);

	j->count = (uint8_t)counted_key(s, d, key);
	s->str_bytes0 = j->nbytes;
	if (d == 1 && (key == K_MODEL || key == K_TYPE || key == K_SERVICE_TIER))
		j->capture = 1;
	else if (output_item_type(s, d, key) != 0)
		j->capture = 1;
	else if ((key == K_SPEED || key == K_INFERENCE_GEO) && key_at(j, d - 2) == K_USAGE)
		j->capture = 1;	/* what the tokens were billed at (issue 33) */
	else if (d == 2 && (key == K_MODEL || key == K_SERVICE_TIER) &&
	    key_at(j, 0) == nested_parent(s->api))
		j->capture = 1;
	else if (in_cache_detail(s, d))
		j->capture = 1;	/* its "ttl" */
}

int
usage_tier_name(const char *name, size_t len)
{
#define IS(lit) (len == sizeof(lit) - 1 && memcmp(name, lit, len) == 0)
	if (IS("default") || IS("standard"))
		return KV_TIER_STANDARD;
	if (IS("priority"))
		return KV_TIER_PRIORITY;
	if (IS("flex"))
		return KV_TIER_FLEX;
	return KV_TIER_OTHER;
#undef IS
}

/* OpenAI's "service_tier" names the tier the response ran on. */
static int
tier_of(const struct kv_json *j)
{
	if (j->str_bad)
		return KV_TIER_OTHER;
	return usage_tier_name(j->str, strlen(j->str));
}

/* usage_json_run does not report the end of a string started with
 * neither count nor capture set: nothing here may act on one. */
static void
on_string_end(struct kv_usage_scanner *s)
{
	struct kv_json *j = &s->json;
	int d = j->depth;

	/* an event that carried text (not an empty "content": "") */
	if (j->count && j->nbytes > s->str_bytes0 && !s->ev_counted) {
		s->ev_counted = 1;
		if (s->sse)
			s->output_events++;
	}
	if (!j->capture)
		return;
	j->str[j->slen] = '\0';
	if (in_cache_detail(s, d))
		s->detail_1h |= !j->str_bad && strcmp(j->str, "1h") == 0;
	else if (output_item_type(s, d, key_at(j, d - 1)) != 0)
		on_output_item(s, output_item_type(s, d, key_at(j, d - 1)));
	else if (d == 1 && key_at(j, 0) == K_TYPE)
		s->ev_type = event_type(j);
	else if (key_at(j, d - 1) == K_SPEED) {
		s->usage.fast = !j->str_bad && strcmp(j->str, "fast") == 0;
		s->speed_seen = 1;
	} else if (key_at(j, d - 1) == K_INFERENCE_GEO) {
		s->usage.geo_us = !j->str_bad && strcmp(j->str, "us") == 0;
		s->geo_seen = 1;
	}
	else if (key_at(j, d - 1) == K_SERVICE_TIER) {
		if (is_openai(s->api))
			s->usage.tier = tier_of(j);
	} else if (key_at(j, d - 1) == K_GM_MODALITY)	/* usage_gemini.c set it */
		s->gm_audio = !j->str_bad && strcmp(j->str, "AUDIO") == 0;
	else if (!j->str_bad && j->slen > 0)
		memcpy(s->model, j->str, j->slen + 1);
}

/* Anthropic's code execution ran in a container: the response names it
 * ("container" at the top, or in a stream's message or delta). Its time is
 * not in the usage; the billed minimum (5 minutes) is charged. */
#define CONTAINER_MIN_MS	300000

static void
container_seen(struct kv_usage_scanner *s)
{
	const struct kv_json *j = &s->json;
	int d = j->evdepth;

	if (s->api != KV_API_ANTHROPIC_MESSAGES)
		return;
	if ((!s->sse && d == 2 && key_at(j, 0) == K_CONTAINER) ||
	    (s->sse && d == 3 && key_at(j, 1) == K_CONTAINER &&
	    (key_at(j, 0) == K_MESSAGE || key_at(j, 0) == K_DELTA)))
		s->usage.code_exec_ms = CONTAINER_MIN_MS;
}

/* Inlined into the loop below: a call per event was ~600 instructions a
 * small chat response. */
static inline __attribute__((always_inline)) void
on_event(struct kv_usage_scanner *s, int ev)
{
	struct kv_json *j = &s->json;

	if ((s->api == KV_API_GEMINI || s->api == KV_API_GEMINI_EMBED) && ev != EV_STR_END) {
		usage_gm_event(s, ev);
		return;
	}
	switch (ev) {
	case EV_OBJ_OPEN:
		if (j->evdepth == 1)
			usage_scan_event_reset(s);
		else
			cand_begin(s);
		container_seen(s);
		break;
	case EV_OBJ_CLOSE:
		if (in_cache_detail(s, j->evdepth))
			cache_detail_end(s);
		if (s->cand_depth != 0 && j->evdepth == s->cand_depth) {
			s->cand_done = 1;
			s->cand_depth = 0;
		}
		if (j->evdepth == 1)
			commit(s);
		break;
	case EV_STR_BEGIN:
		on_string_begin(s);
		break;
	case EV_STR_END:
		on_string_end(s);
		break;
	case EV_NUM:
		if (s->cand_depth != 0 && j->num_ok)	/* cand_number's own test, inline */
			cand_number(s);
		break;
	}
}

/* The lexer's bytes to its events, each to on_event as it comes (which
 * may set the lexer's capture and count on EV_STR_BEGIN for the rest). */
void
usage_scan_json(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	struct kv_json *j = &s->json;
	size_t i = 0, k;
	int ev;

	while (i < n) {
		if (j->state == S_ERR)
			return;
		if ((k = usage_json_str_run(j, p + i, n - i)) > 0) {
			if (j->count)
				usage_json_count_text(j, p + i, k);
			i += k;
			continue;
		}
		/* between tokens, whole tokens at a time (the lexer's
		 * transitions without a call per byte) */
		if ((k = usage_json_run(j, p + i, n - i, &ev, s->run_want)) > 0) {
			i += k;
			if (ev != EV_NONE)
				on_event(s, ev);
			continue;
		}
		if (j->count && j->state >= S_STR && j->state <= S_UHEX &&
		    !(j->state == S_STR && p[i] == '"'))
			usage_json_count_text(j, p + i, 1);
		ev = usage_json_step(j, p[i]);
		if (!(ev & EV_AGAIN))
			i++;
		if ((ev & EV_MASK) != EV_NONE)
			on_event(s, ev & EV_MASK);
	}
}

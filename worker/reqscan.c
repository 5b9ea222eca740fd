/* The request scanner on top of the strict validator. See reqscan.h. */
#include "worker/reqscan_int.h"
#include "worker/tool_prompts.h"

/* The validator's scan loop with on_event (below) inlined at its events. */
static inline __attribute__((always_inline)) void on_event(void *arg, enum kv_jv_ev ev,
	    int level, uint64_t off, const char *p, size_t n);
#define JV_EMIT(f, ev, level, p, n) on_event((f)->arg, ev, level, (f)->v->off, p, n)
#include "worker/jsonv_feed.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/base64.h"

/* With their lengths: key_id runs for every member of every request body,
 * and a strlen per name per member was a tenth of the body scan. */
#define KEY(name) { name, sizeof(name) - 1 }
static const struct {
	const char	*name;
	size_t		 len;
} key_names[] = {
	[K_MODEL] = KEY("model"), [K_STREAM] = KEY("stream"),
	[K_STREAM_OPTIONS] = KEY("stream_options"), [K_INCLUDE_USAGE] = KEY("include_usage"),
	[K_MAX_TOKENS] = KEY("max_tokens"), [K_MAX_COMPLETION_TOKENS] = KEY("max_completion_tokens"),
	[K_MAX_OUTPUT_TOKENS] = KEY("max_output_tokens"), [K_N] = KEY("n"),
	[K_BEST_OF] = KEY("best_of"), [K_TYPE] = KEY("type"), [K_URL] = KEY("url"),
	[K_IMAGE_URL] = KEY("image_url"), [K_FILE_URL] = KEY("file_url"),
	[K_FILE_ID] = KEY("file_id"), [K_PREVIOUS_RESPONSE_ID] = KEY("previous_response_id"),
	[K_CONVERSATION] = KEY("conversation"), [K_PROMPT] = KEY("prompt"),
	[K_WEB_SEARCH_OPTIONS] = KEY("web_search_options"), [K_MCP_SERVERS] = KEY("mcp_servers"),
	[K_BACKGROUND] = KEY("background"), [K_STORE] = KEY("store"),
	[K_DATA] = KEY("data"), [K_FILE_DATA] = KEY("file_data"), [K_TOOLS] = KEY("tools"),
	[K_MAX_USES] = KEY("max_uses"), [K_MAX_TOOL_CALLS] = KEY("max_tool_calls"),
	[K_SPEED] = KEY("speed"), [K_INFERENCE_GEO] = KEY("inference_geo"),
	[K_SERVICE_TIER] = KEY("service_tier"), [K_MODALITIES] = KEY("modalities"),
	[K_AUDIO] = KEY("audio"), [K_ID] = KEY("id"), [K_CACHE_CONTROL] = KEY("cache_control"),
	[K_TTL] = KEY("ttl"), [K_THINKING] = KEY("thinking"),
	[K_BUDGET_TOKENS] = KEY("budget_tokens"),
	/* Bedrock's Converse body */
	[K_MESSAGES] = KEY("messages"), [K_SYSTEM] = KEY("system"),
	[K_INFERENCE_CONFIG] = KEY("inferenceConfig"), [K_TOOL_CONFIG] = KEY("toolConfig"),
	[K_GUARDRAIL_CONFIG] = KEY("guardrailConfig"),
	[K_AMRF] = KEY("additionalModelRequestFields"),
	[K_AMRF_PATHS] = KEY("additionalModelResponseFieldPaths"),
	[K_PROMPT_VARIABLES] = KEY("promptVariables"),
	[K_REQUEST_METADATA] = KEY("requestMetadata"),
	[K_PERFORMANCE_CONFIG] = KEY("performanceConfig"), [K_SERVICE_TIER_CV] = KEY("serviceTier"),
	[K_OUTPUT_CONFIG] = KEY("outputConfig"), [K_MAX_TOKENS_CV] = KEY("maxTokens"),
	[K_CONTENT] = KEY("content"), [K_TEXT] = KEY("text"), [K_IMAGE] = KEY("image"),
	[K_DOCUMENT] = KEY("document"), [K_VIDEO] = KEY("video"), [K_TOOL_USE] = KEY("toolUse"),
	[K_TOOL_RESULT] = KEY("toolResult"), [K_REASONING_CONTENT] = KEY("reasoningContent"),
	[K_CACHE_POINT] = KEY("cachePoint"), [K_GUARD_CONTENT] = KEY("guardContent"),
	[K_CITATIONS_CONTENT] = KEY("citationsContent"), [K_SEARCH_RESULT] = KEY("searchResult"),
	[K_JSON] = KEY("json"), [K_SOURCE] = KEY("source"), [K_BYTES] = KEY("bytes"),
	[K_S3_LOCATION] = KEY("s3Location"), [K_TOOL_SPEC] = KEY("toolSpec"),
	[K_SYSTEM_TOOL] = KEY("systemTool"), [K_TOOL_CHOICE] = KEY("toolChoice"),
	[K_LATENCY] = KEY("latency"), [K_REASONING_CONFIG] = KEY("reasoning_config"),
	[K_ANTHROPIC_BETA] = KEY("anthropic_beta"),
	/* the Gemini API's body */
	[K_CONTENTS] = KEY("contents"), [K_SYSTEM_INSTRUCTION] = KEY("systemInstruction"), [K_GENERATION_CONFIG] = KEY("generationConfig"),
	[K_SAFETY_SETTINGS] = KEY("safetySettings"), [K_CACHED_CONTENT] = KEY("cachedContent"), [K_LABELS] = KEY("labels"),
	[K_REQUESTS] = KEY("requests"), [K_TASK_TYPE] = KEY("taskType"), [K_TITLE] = KEY("title"),
	[K_OUTPUT_DIMENSIONALITY] = KEY("outputDimensionality"), [K_PARTS] = KEY("parts"), [K_INLINE_DATA] = KEY("inlineData"),
	[K_FILE_DATA_GM] = KEY("fileData"), [K_MAX_OUTPUT_TOKENS_GM] = KEY("maxOutputTokens"), [K_THINKING_CONFIG] = KEY("thinkingConfig"),
	[K_THINKING_BUDGET] = KEY("thinkingBudget"), [K_CANDIDATE_COUNT] = KEY("candidateCount"), [K_RESPONSE_MODALITIES] = KEY("responseModalities"),
	[K_FUNCTION_DECLARATIONS] = KEY("functionDeclarations"), [K_CODE_EXECUTION] = KEY("codeExecution"), [K_URL_CONTEXT] = KEY("urlContext"),
	[K_FUNCTION_CALL] = KEY("functionCall"), [K_FUNCTION_RESPONSE] = KEY("functionResponse"), [K_ROLE] = KEY("role"),
};
#undef KEY
#define NKEYS ((int)(sizeof(key_names) / sizeof(key_names[0])))

void
kv_reqscan_init(struct kv_reqscan *r, enum kv_api api)
{
	int i;

	memset(r, 0, offsetof(struct kv_reqscan, err));
	r->err[0] = '\0';
	kv_jv_init(&r->jv);
	r->api = api;
	for (i = 0; i < LIM_COUNT; i++)
		r->lim[i] = -1;
	r->ri.max_output = -1;
	r->ri.thinking = -1;
	r->ri.mult = 1;
	r->ri.max_tool_calls = -1;
}

int
kv_reqscan_model(struct kv_reqscan *r, const char *model, size_t n)
{
	if (n >= sizeof(r->ri.model) || memchr(model, '\0', n) != NULL) {
		refuse(r, "the model in the path is not a model name (longer than 95 bytes "
		    "or with a NUL)%s%s", "", "");
		return -1;
	}
	memcpy(r->ri.model, model, n);
	r->ri.model[n] = '\0';
	r->path_model = 1;
	/* Prompt management: the prompt's messages are the provider's */
	if (strstr(r->ri.model, ":prompt/") != NULL)
		fetches(r, "a managed prompt (the model ARN)");
	return 0;
}

/* The names by length and first letter (all are lower case), made on first
 * use, those sharing both chained: a name is one table look-up, and a
 * compare only for a name whose second byte matches too (a walk over the
 * names of its length, a memcmp each, cost ~65 instructions a member). */
#define KEY_LEN_MAX	40	/* longer than any name, and no longer than kbuf:
				   a name cut there matches none */
_Static_assert(sizeof(((struct kv_reqscan *)0)->kbuf) >= KEY_LEN_MAX, "kbuf");

static uint8_t key_slot[KEY_LEN_MAX][26], key_next[NKEYS];

/* Out of key_id's line: its registers were saved on every look-up. */
static __attribute__((noinline)) void
key_table(void)
{
	int i;

	_Static_assert(K_NONE == 0 && K_MODEL > 0 && NKEYS < 256, "0 ends a chain");
	for (i = K_MODEL; i < NKEYS; i++) {
		uint8_t *sl = &key_slot[key_names[i].len][key_names[i].name[0] - 'a'];

		key_next[i] = *sl;
		*sl = (uint8_t)i;
	}
}

static int
key_id(const char *k, size_t n)
{
	static int ready;
	unsigned char c0;
	int i;

	if (!ready) {
		key_table();
		ready = 1;
	}
	if (n == 0 || n >= KEY_LEN_MAX || (c0 = (unsigned char)k[0]) < 'a' || c0 > 'z')
		return K_OTHER;
	for (i = key_slot[n][c0 - 'a']; i != K_NONE; i = key_next[i])
		if (n == 1 || (key_names[i].name[1] == k[1] &&
		    memcmp(key_names[i].name + 2, k + 2, n - 2) == 0))
			return i;
	return K_OTHER;
}

/* The value V (N bytes) of "speed", "inference_geo" or "service_tier"
 * (KEY): the dimensions of the price a request asks for. */
static void
dim_value(struct kv_reqscan *r, int key, const char *v, size_t n)
{
	struct kv_request_info *ri = &r->ri;
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(v, lit, n) == 0)

	if (key == K_SPEED)
		ri->fast = IS("fast") ? 1 : n == 0 || IS("standard") ? 0 : 2;
	else if (key == K_INFERENCE_GEO)
		ri->geo = n == 0 || IS("global") ? KV_GEO_GLOBAL : IS("us") ? KV_GEO_US :
		    KV_GEO_OTHER;
	else
		ri->tier = n == 0 || IS("auto") || IS("default") || IS("standard") ||
		    IS("standard_only") ? KV_TIER_STANDARD :
		    IS("priority") ? KV_TIER_PRIORITY : IS("flex") ? KV_TIER_FLEX : KV_TIER_OTHER;
#undef IS
	if (n > 0 && (ri->fast == 2 || ri->geo == KV_GEO_OTHER || ri->tier == KV_TIER_OTHER))
		snprintf(ri->dim_other, sizeof(ri->dim_other), "%s \"%.*s\"",
		    key_names[key].name, (int)(n < 24 ? n : 24), v);
}

/* "stream_options" opens (an object, or null: absent): where it is, for
 * the usage request merged into it (request_build.c). */
static void
stream_options(struct kv_reqscan *r, enum kv_jv_ev ev, uint64_t off)
{
	int isnull = ev == KV_JV_NULL;

	if (ev != KV_JV_OBJ_OPEN && !isnull)
		refuse(r, "%s must be an object", "stream_options", "");
	r->ri.has_stream_options = 1;
	r->ri.so_count++;
	r->ri.so_has_iu = 0;
	r->ri.include_usage = 0;
	r->ri.so_members = 0;
	r->ri.so_start = ev == KV_JV_OBJ_OPEN ? off : 0;
	r->ri.so_end = 0;
	/* a literal's event comes at its last byte */
	r->ri.so_null_off = isnull ? off - 3 : 0;
}

/* "model": kept, unless a Bedrock path named it (Bedrock refuses it). */
static void
model_value(struct kv_reqscan *r, enum kv_jv_ev ev)
{
	if (ev != KV_JV_STR)
		refuse(r, "%s must be a string", "model", "");
	if (r->path_model)
		refuse(r, "model: the path names the model on Bedrock; send the body "
		    "without a \"model\"%s%s", "", "");
	r->cap = CAP_MODEL;
}

/* A value of a top-level member. */
static void
top_value(struct kv_reqscan *r, enum kv_jv_ev ev, int key, uint64_t off)
{
	int isnull = ev == KV_JV_NULL;

	switch (key) {
	case K_MODEL:
		model_value(r, ev);
		break;
	case K_STREAM:
		if (ev != KV_JV_TRUE && ev != KV_JV_FALSE && !isnull)
			refuse(r, "%s must be true or false", "stream", "");
		r->ri.stream = ev == KV_JV_TRUE;
		break;
	case K_BACKGROUND:	/* refused by the endpoint policy (admit) */
	case K_STORE:		/* a lax server reads "true", 1, "yes" as true */
		if (ev != KV_JV_TRUE && ev != KV_JV_FALSE && !isnull)
			refuse(r, "%s must be true or false", key_names[key].name, "");
		if (key == K_BACKGROUND)
			r->ri.background = ev == KV_JV_TRUE;
		break;
	case K_STREAM_OPTIONS:
		stream_options(r, ev, off);
		break;
	case K_MAX_TOKENS: case K_MAX_COMPLETION_TOKENS: case K_MAX_OUTPUT_TOKENS:
	case K_N: case K_BEST_OF:
		if (ev != KV_JV_NUM && !isnull)
			refuse(r, "%s must be an integer", key_names[key].name, "");
		r->lim[key - K_MAX_TOKENS] = -1;
		r->cap = CAP_LIMIT + key - K_MAX_TOKENS;
		break;
	case K_SPEED: case K_INFERENCE_GEO: case K_SERVICE_TIER:
		/* a priced dimension (issue 33): null is absent */
		if (ev != KV_JV_STR && !isnull)
			refuse(r, "%s must be a string", key_names[key].name, "");
		dim_value(r, key, "", 0);
		r->cap = ev == KV_JV_STR ? CAP_DIM : CAP_NONE;
		break;
	case K_AUDIO:		/* the spoken answer's voice and format */
		if (!isnull)
			r->ri.audio_out = 1;
		break;
	case K_MAX_TOOL_CALLS:
		if (ev != KV_JV_NUM && !isnull)
			refuse(r, "%s must be an integer", "max_tool_calls", "");
		r->ri.max_tool_calls = -1;
		r->cap = ev == KV_JV_NUM ? CAP_TOOL_CALLS : CAP_NONE;
		break;
	case K_PROMPT:		/* legacy completions: the prompt text */
		r->prompts = 0;
		r->prompt_ints = 0;
		if (r->api != KV_API_OPENAI_RESPONSES)
			break;
		/* FALLTHROUGH */
	case K_PREVIOUS_RESPONSE_ID: case K_CONVERSATION:
	case K_WEB_SEARCH_OPTIONS: case K_MCP_SERVERS:
		if (!isnull)
			fetches(r, key_names[key].name);
		break;
	}
}

/* ---- inline media: a data: URL or base64 string, decoded as it comes ---- */

/* A digit of either alphabet (standard or URL-safe), -2 for white space
 * (a data: URL may wrap), -1 for anything else. */
static int
b64val(unsigned char ch)
{
	int v = kv_b64val(ch);

	if (v >= 0)
		return v;
	if (ch == '-')
		return 62;
	if (ch == '_')
		return 63;
	return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t' ? -2 : -1;
}

static void
media_byte(struct kv_reqscan *r, unsigned char ch)
{
	int v;

	switch (r->mph) {
	case M_PREFIX:	/* "data:" */
		if (ch != (unsigned char)"data:"[r->mmlen]) {
			r->mph = M_OFF;
			r->mdata = 0;
			return;
		}
		if (++r->mmlen == 5) {
			r->mph = M_META;
			r->mmlen = 0;
		}
		return;
	case M_META:	/* media type and parameters, up to the ',' */
		if (ch == ',') {
			r->mimage = r->mmlen >= 6 && memcmp(r->mmeta, "image/", 6) == 0;
			r->mph = M_B64;
		} else if (r->mmlen < sizeof(r->mmeta))
			r->mmeta[r->mmlen++] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
		return;
	case M_B64:
		if ((v = b64val(ch)) == -2)
			return;
		if (v == -1) {
			r->mph = M_FULL;
			return;
		}
		r->macc = r->macc << 6 | (uint32_t)v;
		if ((r->mbits += 6) >= 8) {
			r->mbits -= 8;
			r->mbuf[r->mlen++] = (uint8_t)(r->macc >> r->mbits);
			if (r->mlen == sizeof(r->mbuf))
				r->mph = M_FULL;
		}
		return;
	}
}

/* The string ended: an image adds its tokens under every rule; any other
 * inline file is content its bytes do not bound. */
static void
media_end(struct kv_reqscan *r)
{
	uint32_t w = 0, h = 0;
	int i;

	if (r->mph == M_OFF || r->mph == M_PREFIX || r->mph == M_META) {
		r->mph = M_OFF;
		return;
	}
	r->mph = M_OFF;
	if (kv_media_is_image(r->mbuf, r->mlen) || r->mimage) {
		(void)kv_media_image_dims(r->mbuf, r->mlen, &w, &h);
		r->ri.images++;
		for (i = 0; i < KV_IMG_NRULES; i++)
			r->ri.img_tok[i] += kv_media_image_tokens(i, w, h);
	} else if (r->mdata)
		fetches(r, "an inline file (data: URL)");
}

/* Below the top level: what makes a request return or re-read audio, and
 * Anthropic's cache writes (price_dims.c reserves their dearer rates). */
static void
nested_value(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	if (level == 2 && r->top == K_MODALITIES && ev == KV_JV_STR)
		r->cap = CAP_MODALITY;
	else if (key == K_AUDIO && ev == KV_JV_OBJ_OPEN && r->audio_lvl == 0)
		r->audio_lvl = level;	/* an assistant message's audio */
	else if (key == K_ID && r->audio_lvl > 0 && level == r->audio_lvl + 1 &&
	    ev != KV_JV_NULL) {
		/* {"audio": {"id": ...}}: the provider re-reads an earlier
		 * spoken answer, whose size the body does not show */
		r->ri.audio_in = 1;
		fetches(r, "an audio.id recall");
	} else if (key == K_CACHE_CONTROL && ev != KV_JV_NULL)
		r->ri.cache_ctl = 1;
	else if (key == K_TTL && ev == KV_JV_STR)
		r->cap = CAP_TTL;
}

/* A value below the top level of an OpenAI or Anthropic body. */
static void
inner_value(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key, uint64_t off)
{
	if (level == 2 && r->top == K_TOOLS)
		tool_begin(r);
	else if (level == 3 && r->top == K_TOOLS && key == K_MAX_USES && ev == KV_JV_NUM)
		r->cap = CAP_USES;
	else if (level == 2 && r->top == K_THINKING && key == K_BUDGET_TOKENS) {
		if (ev != KV_JV_NUM && ev != KV_JV_NULL)
			refuse(r, "%s must be an integer", "thinking.budget_tokens", "");
		r->lim[LIM_THINKING] = -1;
		r->cap = ev == KV_JV_NUM ? CAP_LIMIT + LIM_THINKING : CAP_NONE;
	}
	else if (level == 2 && r->top == K_PROMPT) {
		/* each string or token array is a prompt, n completions each */
		if (ev == KV_JV_NUM)
			r->prompt_ints = 1;
		else
			r->prompts++;
	}
	else if (level == 2 && r->top == K_STREAM_OPTIONS && key == K_INCLUDE_USAGE) {
		if (ev != KV_JV_TRUE && ev != KV_JV_FALSE && ev != KV_JV_NULL)
			refuse(r, "%s must be true or false", "stream_options.include_usage", "");
		r->ri.include_usage = ev == KV_JV_TRUE;
		r->ri.so_has_iu++;
		/* a literal's event comes at its last byte */
		r->ri.so_iu_len = ev == KV_JV_FALSE ? 5 : 4;
		r->ri.so_iu_off = off - (uint64_t)(r->ri.so_iu_len - 1);
	}
	nested_value(r, ev, level, key);
}

static void
value_begin(struct kv_reqscan *r, enum kv_jv_ev ev, int level, uint64_t off)
{
	int key = r->key;

	r->key = K_NONE;
	r->cap = CAP_NONE;
	r->vlen = 0;
	r->vlong = 0;
	r->mph = M_OFF;
	if (level == 0) {
		if (ev != KV_JV_OBJ_OPEN)
			refuse(r, "the body is not a JSON object", "", "");
		return;
	}
	if (r->api == KV_API_BEDROCK_CONVERSE) {
		kv_rsc_value(r, ev, level, key);
		return;
	}
	if (r->api == KV_API_GEMINI || r->api == KV_API_GEMINI_EMBED) {
		kv_rsg_value(r, ev, level, key);
		return;
	}
	r->intools = level > 1 && r->top == K_TOOLS;
	if (level == 1)
		top_value(r, ev, r->top = key, off);
	else
		inner_value(r, ev, level, key, off);
	if (ev == KV_JV_STR && key == K_TYPE)
		r->cap = CAP_TYPE;
	if (ev == KV_JV_STR && (key == K_URL || key == K_IMAGE_URL || key == K_FILE_URL))
		r->cap = CAP_URL;
	if (key == K_FILE_ID && ev != KV_JV_NULL)
		fetches(r, "file_id");
	if (ev == KV_JV_STR && (key == K_URL || key == K_IMAGE_URL || key == K_FILE_DATA))
		media_start(r, M_PREFIX);
	else if (ev == KV_JV_STR && key == K_DATA)
		media_start(r, M_B64);
}

/* A "type" value ended: a tool's kind and hidden prompt, a block or tool
 * that makes the provider fetch content, or one kilovolt cannot price. */
static void
type_value(struct kv_reqscan *r)
{
	char what[48];

	if (r->intools && (r->api == KV_API_ANTHROPIC_MESSAGES ||
	    r->api == KV_API_BEDROCK_CONVERSE) && !r->vlong)
		r->ri.hidden += kv_tool_prompt_tokens(r->vbuf, r->vlen);
	if (r->intools && !r->vlong && kv_rs_server_tool(r->vbuf, r->vlen) > r->tkind)
		r->tkind = kv_rs_server_tool(r->vbuf, r->vlen);
	if (r->intools && kv_rs_unknown_dated_tool(r->vbuf, r->vlen)) {
		r->vbuf[r->vlen] = '\0';
		refuse(r, "tools: kilovolt cannot price what \"%.32s\" makes the "
		    "provider run; send it without that tool%s", r->vbuf, "");
	}
	if (r->vlen == 11 && memcmp(r->vbuf, "input_audio", 11) == 0)
		r->ri.audio_in = 1;
	if (!r->vlong && kv_rs_type_fetches(r->vbuf, r->vlen)) {
		snprintf(what, sizeof(what), "a %.*s block or tool",
		    (int)(r->vlen < 24 ? r->vlen : 24), r->vbuf);
		fetches(r, what);
	}
}

static void
string_end(struct kv_reqscan *r)
{
	switch (r->cap) {
	case CAP_MODEL:
		if (r->vlong || memchr(r->vbuf, '\0', r->vlen) != NULL)
			refuse(r, "%s is not a model name (longer than 95 bytes or with a NUL)",
			    "model", "");
		else {
			memcpy(r->ri.model, r->vbuf, r->vlen);
			r->ri.model[r->vlen] = '\0';
		}
		break;
	case CAP_TYPE:
		type_value(r);
		break;
	case CAP_DIM:
		dim_value(r, r->top, r->vbuf, r->vlen);
		break;
	case CAP_MODALITY:
		if (r->vlen == 5 && memcmp(r->vbuf, "audio", 5) == 0)
			r->ri.audio_out = 1;
		break;
	case CAP_TTL:	/* Anthropic's 1-hour cache writes */
		if (r->vlen == 2 && memcmp(r->vbuf, "1h", 2) == 0)
			r->ri.cache_1h = 1;
		break;
	case CAP_URL:	/* a data: URL is inline: media_end() bounds it */
		if (r->vlen < 5 || memcmp(r->vbuf, "data:", 5) != 0)
			fetches(r, "a URL to fetch");
		break;
	case CAP_CV_TIER: case CAP_CV_LATENCY:
		kv_rsc_string(r);
		break;
	case CAP_GM_DATA: case CAP_GM_MODALITY:
		kv_rsg_string(r);
		break;
	}
	r->cap = CAP_NONE;
}

static void
number_end(struct kv_reqscan *r)
{
	static const char *const lim_names[LIM_COUNT] = { "max_tokens",
	    "max_completion_tokens", "max_output_tokens", "n", "best_of",
	    "thinking.budget_tokens", "inferenceConfig.maxTokens" };
	const char *why = "is out of range";
	int i = r->cap - CAP_LIMIT;
	int64_t v;

	if (r->cap == CAP_GM_BUDGET) {
		/* Gemini's -1 asks for dynamic thinking, not a count */
		if (r->vlen == 2 && memcmp(r->vbuf, "-1", 2) == 0)
			r->lim[LIM_THINKING] = KV_REQ_THINK_DYNAMIC;
		else if (r->vlong || kv_reqscan_intval(r->vbuf, r->vlen, KV_REQ_LIMIT_MAX, &v,
		    &why) == -1)
			refuse(r, "thinkingConfig.thinkingBudget %s%s", why, "");
		else
			r->lim[LIM_THINKING] = v;
		r->cap = CAP_NONE;
		return;
	}
	if (r->cap == CAP_USES || r->cap == CAP_TOOL_CALLS) {
		if (r->vlong || kv_reqscan_intval(r->vbuf, r->vlen, 1000000, &v, &why) == -1)
			refuse(r, "%s %s", r->cap == CAP_USES ? "max_uses" : "max_tool_calls", why);
		else if (r->cap == CAP_USES)
			r->tuses = v;
		else
			r->ri.max_tool_calls = v;
		r->cap = CAP_NONE;
		return;
	}
	if (r->cap < CAP_LIMIT)
		return;
	if (r->vlong || kv_reqscan_intval(r->vbuf, r->vlen, KV_REQ_LIMIT_MAX, &v, &why) == -1)
		refuse(r, "%s %s", lim_names[i], why);
	else
		r->lim[i] = v;
	r->cap = CAP_NONE;
}

static void
bytes(struct kv_reqscan *r, int inkey, const char *p, size_t n)
{
	size_t room;

	if (n == 0)
		return;
	if (inkey) {
		room = sizeof(r->kbuf) - r->klen;
		if (n > room)
			n = room;	/* a name that long matches nothing */
		memcpy(r->kbuf + r->klen, p, n);
		r->klen += n;
		return;
	}
	if (r->mph != M_OFF && r->mph != M_FULL)
		for (room = 0; room < n && r->mph != M_OFF && r->mph != M_FULL; room++)
			media_byte(r, (unsigned char)p[room]);
	if (r->cap == CAP_NONE)
		return;
	room = sizeof(r->vbuf) - 1 - r->vlen;
	if (n > room) {
		n = room;
		r->vlong = 1;
	}
	memcpy(r->vbuf + r->vlen, p, n);
	r->vlen += n;
}

/* A string or number ended that something is kept or decoded for. */
static __attribute__((noinline)) void
value_end(struct kv_reqscan *r, enum kv_jv_ev ev, const char *p, size_t n)
{
	bytes(r, 0, p, n);
	if (ev == KV_JV_NUM_END) {
		number_end(r);
		return;
	}
	media_end(r);
	string_end(r);
}

/* A value began, a container closed: out of on_event's line (see there). */
static __attribute__((noinline)) void
value_event(struct kv_reqscan *r, enum kv_jv_ev ev, int level, uint64_t off)
{
	if (ev != KV_JV_OBJ_CLOSE) {
		value_begin(r, ev, level, off);
		return;
	}
	if (level == 0)
		r->ri.obj_end = off;
	if (level == 1 && r->top == K_STREAM_OPTIONS)
		r->ri.so_end = off;
	if (r->api == KV_API_BEDROCK_CONVERSE)
		kv_rsc_close(r, level);
	else if (level == 2 && r->top == K_TOOLS)
		kv_rs_tool_end(r);
	if (level == r->audio_lvl)
		r->audio_lvl = 0;
}

/* The validator's events, inlined into its scan loop (jv_feed), where each
 * event is a constant and this switch folds away. What most events need is
 * done here, the rest in functions kept out of line. */
static inline __attribute__((always_inline)) void
on_event(void *arg, enum kv_jv_ev ev, int level, uint64_t off, const char *p, size_t n)
{
	struct kv_reqscan *r = arg;

	switch (ev) {
	case KV_JV_KEY:
		r->klen = 0;
		r->key = K_OTHER;
		r->cap = CAP_NONE;
		r->vlen = 0;
		if (level == 1)
			r->ri.members++;
		if (level == 2 && r->top == K_STREAM_OPTIONS)
			r->ri.so_members++;
		r->inkey = 1;
		break;
	case KV_JV_KEY_END:	/* a name whole in one feed is read in place */
		if (r->klen == 0)
			r->key = key_id(p, n);
		else {
			bytes(r, 1, p, n);
			r->key = key_id(r->kbuf, r->klen);
		}
		r->inkey = 0;
		break;
	case KV_JV_BYTES:
		bytes(r, r->inkey, p, n);
		break;
	case KV_JV_STR_END:
	case KV_JV_NUM_END:	/* neither kept nor decoded: nothing to do */
		if (r->cap != CAP_NONE || r->mph != M_OFF)
			value_end(r, ev, p, n);
		break;
	case KV_JV_ARR_CLOSE:
		break;
	default:
		value_event(r, ev, level, off);
		break;
	}
}

int
kv_reqscan_feed(struct kv_reqscan *r, const char *buf, size_t len)
{
	if (r->bad)
		return -1;
	if (jv_feed(&r->jv, buf, len, NULL, r) == -1)
		refuse(r, "the body is not valid JSON: %s%s", r->jv.err, "");
	return r->bad ? -1 : 0;
}

int
kv_reqscan_finish(struct kv_reqscan *r)
{
	int i;

	if (r->bad)
		return -1;
	if (kv_jv_finish(&r->jv) == -1) {
		refuse(r, "the body is not valid JSON: %s%s", r->jv.err, "");
		return -1;
	}
	if (r->api == KV_API_GEMINI || r->api == KV_API_GEMINI_EMBED)
		kv_rsg_finish(r);
	for (i = 0; i < LIM_COUNT; i++)
		if (i != LIM_N && i != LIM_BEST_OF && i != LIM_THINKING &&
		    r->lim[i] > r->ri.max_output)
			r->ri.max_output = r->lim[i];
	for (i = LIM_N; i <= LIM_BEST_OF; i++)
		if (r->lim[i] > r->ri.mult)
			r->ri.mult = r->lim[i];
	r->ri.thinking = r->lim[LIM_THINKING];
	/* Claude's tool-use system prompt (Bedrock's Converse renders
	 * toolConfig as Anthropic tools for Claude; for another model its
	 * prompt is undocumented, and Claude's largest is the bound taken) */
	if ((r->api == KV_API_ANTHROPIC_MESSAGES || r->api == KV_API_BEDROCK_CONVERSE) &&
	    r->ntools > 0)
		r->ri.hidden += KV_TOOL_PROMPT_BASE;
	/* the provider answers every prompt of the array n (best_of) times */
	if (r->api == KV_API_OPENAI_COMPLETIONS && r->prompts + r->prompt_ints > 1)
		r->ri.mult = r->ri.mult > KV_REQ_LIMIT_MAX / (r->prompts + r->prompt_ints) ?
		    KV_REQ_LIMIT_MAX : r->ri.mult * (r->prompts + r->prompt_ints);
	return 0;
}

int
kv_reqscan_intval(const char *s, size_t n, int64_t max, int64_t *out, const char **why)
{
	char d[KV_REQ_MODEL];
	size_t i = 0, nd = 0, frac = 0, lead;
	long long e = 0, esign = 1;
	int neg = 0, infrac = 0;
	uint64_t v = 0;

	if (i < n && s[i] == '-')
		neg = 1, i++;
	for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
		if (s[i] == '.') {
			infrac = 1;
			continue;
		}
		if (nd < sizeof(d))
			d[nd++] = s[i];
		frac += infrac;
	}
	if (i < n) {	/* exponent: [eE][+-]?digits, capped well past any use */
		i++;
		if (s[i] == '+' || s[i] == '-')
			esign = s[i++] == '-' ? -1 : 1;
		for (; i < n; i++)
			if (e < 100000)
				e = e * 10 + (s[i] - '0');
		e *= esign;
	}
	for (lead = 0; lead < nd && d[lead] == '0'; lead++)
		;
	if (lead == nd) {		/* zero, "-0" included */
		*out = 0;
		return 0;
	}
	e -= (long long)frac;
	while (nd > lead && d[nd - 1] == '0') {
		nd--;
		e++;
	}
	*why = e < 0 ? "is not an integer" : neg ? "is negative" : "is out of range";
	if (e < 0 || neg || (long long)(nd - lead) + e > 18)
		return -1;
	for (i = lead; i < nd; i++)
		v = v * 10 + (uint64_t)(d[i] - '0');
	for (; e > 0; e--)
		v *= 10;
	if (v > (uint64_t)max)
		return -1;
	*out = (int64_t)v;
	return 0;
}

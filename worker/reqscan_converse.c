/* The request scan of a Bedrock Converse body (reqscan_int.h): what it
 * asks the model for, by the rules the Anthropic Messages body is read
 * by (reqscan.c). Output: inferenceConfig.maxTokens; thinking in
 * additionalModelRequestFields; images by their decoded header; tools;
 * cachePoint (cache writes); documents, videos, audio, S3 objects and
 * managed prompts (content the body does not show); serviceTier,
 * performanceConfig and guardrailConfig (price dimensions). A member
 * Converse does not define is refused: its cost cannot be bounded.
 *
 * Source: Amazon Bedrock API Reference (read 2026-12-07), Converse and
 * its types ContentBlock, SystemContentBlock, ImageBlock, ToolConfiguration,
 * CachePointBlock (type "default", ttl "5m" | "1h"), ServiceTier
 * (default | priority | flex | reserved), PerformanceConfiguration
 * (latency standard | optimized):
 *   https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html */
#include <string.h>

#include "worker/reqscan_int.h"

#define CV_DEPTH	((int)sizeof(((struct kv_reqscan *)0)->cpath))

/* The value at LEVEL is a content block's member: messages[].content[],
 * system[] and toolResult.content[] hold the blocks. */
static int
is_block(const struct kv_reqscan *r, int level)
{
	return level >= 3 && rs_path_at(r, level - 1) == K_NONE &&
	    (rs_path_at(r, level - 2) == K_CONTENT || (level == 3 && rs_path_at(r, 1) == K_SYSTEM));
}


/* The price dimension kilovolt has no rule for: admission refuses it. */
static void
dim_other(struct kv_reqscan *r, const char *what, const char *v, size_t n)
{
	snprintf(r->ri.dim_other, sizeof(r->ri.dim_other), n > 0 ? "%s \"%.*s\"" : "%s",
	    what, (int)(n < 20 ? n : 20), v);
}

/* The top-level members, each with the JSON type it takes (null is
 * absent, as in AWS's own parsers). */
static void
top(struct kv_reqscan *r, enum kv_jv_ev ev, int key)
{
	static const struct rs_member tops[] = {
		{ K_MESSAGES, KV_JV_ARR_OPEN, "messages" },
		{ K_SYSTEM, KV_JV_ARR_OPEN, "system" },
		{ K_INFERENCE_CONFIG, KV_JV_OBJ_OPEN, "inferenceConfig" },
		{ K_TOOL_CONFIG, KV_JV_OBJ_OPEN, "toolConfig" },
		{ K_GUARDRAIL_CONFIG, KV_JV_OBJ_OPEN, "guardrailConfig" },
		{ K_AMRF, KV_JV_OBJ_OPEN, "additionalModelRequestFields" },
		{ K_AMRF_PATHS, KV_JV_ARR_OPEN, "additionalModelResponseFieldPaths" },
		{ K_PROMPT_VARIABLES, KV_JV_OBJ_OPEN, "promptVariables" },
		{ K_REQUEST_METADATA, KV_JV_OBJ_OPEN, "requestMetadata" },
		{ K_PERFORMANCE_CONFIG, KV_JV_OBJ_OPEN, "performanceConfig" },
		{ K_SERVICE_TIER_CV, KV_JV_OBJ_OPEN, "serviceTier" },
		{ K_OUTPUT_CONFIG, KV_JV_OBJ_OPEN, "outputConfig" },
	};
	if (rs_top_member(r, tops, sizeof(tops) / sizeof(tops[0]), "Converse", ev, key) == -1 ||
	    ev == KV_JV_NULL)
		return;
	if (key == K_PROMPT_VARIABLES)	/* filled into a prompt the body does not show */
		fetches(r, "promptVariables (a managed prompt)");
	else if (key == K_GUARDRAIL_CONFIG)	/* billed per text unit, beside the tokens */
		dim_other(r, "guardrailConfig", "", 0);
}

/* A member of a content block: its kind. */
static void
block(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	switch (key) {
	case K_TEXT: case K_IMAGE: case K_TOOL_RESULT: case K_GUARD_CONTENT:
	case K_REASONING_CONTENT: case K_CITATIONS_CONTENT: case K_SEARCH_RESULT:
		break;
	case K_TOOL_USE: case K_JSON:	/* the client's own JSON below */
		r->cv_skip = level;
		break;
	case K_DOCUMENT:	/* a PDF page is an image, a text is rendered */
		fetches(r, "a document block");
		break;
	case K_VIDEO:
		fetches(r, "a video block");
		break;
	case K_AUDIO:
		r->ri.audio_in = 1;
		fetches(r, "an audio block");
		break;
	case K_CACHE_POINT:
		if (ev != KV_JV_NULL)
			r->ri.cache_ctl = 1;
		break;
	default:
		refuse(r, "a content block the Converse API does not define (kilovolt "
		    "cannot bound its cost)%s%s", "", "");
	}
}

/* A value inside messages or system. */
static void
content(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	int parent = rs_path_at(r, level - 1);

	if (is_block(r, level))
		block(r, ev, level, key);
	else if (key == K_BYTES && parent == K_SOURCE && rs_path_at(r, level - 2) == K_IMAGE &&
	    ev == KV_JV_STR) {
		/* an image's base64 bytes: its header says its size */
		media_start(r, M_B64);
		r->mimage = 1;
	} else if (key == K_S3_LOCATION && parent == K_SOURCE && ev != KV_JV_NULL)
		fetches(r, "an s3Location (an object in S3)");
	else if (key == K_TTL && parent == K_CACHE_POINT && ev == KV_JV_STR)
		r->cap = CAP_TTL;
}

/* A value inside toolConfig: its tools (a toolSpec each) and cachePoint. */
static void
tool_config(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	if (level == 3 && rs_path_at(r, 2) == K_TOOLS && ev != KV_JV_OBJ_OPEN)
		refuse(r, "toolConfig.tools: an element is not an object%s%s", "", "");
	if (level != 4 || rs_path_at(r, 2) != K_TOOLS) {
		if (key == K_TTL && rs_path_at(r, level - 1) == K_CACHE_POINT && ev == KV_JV_STR)
			r->cap = CAP_TTL;
		return;
	}
	if (key == K_TOOL_SPEC) {
		r->ntools++;
		r->cv_skip = level;	/* its schema is the client's JSON */
	} else if (key == K_CACHE_POINT && ev != KV_JV_NULL)
		r->ri.cache_ctl = 1;
	else if (key == K_SYSTEM_TOOL)	/* run by Bedrock: web grounding, ... */
		refuse(r, "toolConfig: kilovolt cannot price what a systemTool makes the "
		    "provider run; send it without that tool%s%s", "", "");
	else
		refuse(r, "toolConfig.tools: a tool the Converse API does not define%s%s",
		    "", "");
}

/* A value inside additionalModelRequestFields: merged into the model's
 * own body (for Claude the Messages body: thinking, max_tokens, Anthropic
 * tools such as the computer-use tool, anthropic_beta). */
static void
extra_fields(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	int at2 = rs_path_at(r, 2);

	if (key == K_CACHE_CONTROL && ev != KV_JV_NULL)
		r->ri.cache_ctl = 1;
	else if (key == K_TTL && ev == KV_JV_STR && rs_path_at(r, level - 1) == K_CACHE_CONTROL)
		r->cap = CAP_TTL;
	if (level == 2 && key == K_MAX_TOKENS)
		rs_number(r, ev, LIM_MAX_TOKENS, "additionalModelRequestFields.max_tokens");
	else if (level == 2 && (key == K_ANTHROPIC_BETA || key == K_TOOLS) &&
	    ev != KV_JV_ARR_OPEN && ev != KV_JV_NULL)
		refuse(r, "additionalModelRequestFields.%s must be an array",
		    key == K_TOOLS ? "tools" : "anthropic_beta", "");
	else if (level == 3 && (at2 == K_THINKING || at2 == K_REASONING_CONFIG) &&
	    key == K_BUDGET_TOKENS)
		rs_number(r, ev, LIM_THINKING, "thinking.budget_tokens");
	else if (level == 3 && at2 == K_ANTHROPIC_BETA && ev != KV_JV_STR)
		refuse(r, "additionalModelRequestFields.anthropic_beta must hold strings%s%s",
		    "", "");
	else if (level == 3 && at2 == K_TOOLS)
		tool_begin(r);
	if (level >= 3 && at2 == K_TOOLS) {
		r->intools = 1;
		if (level == 4 && key == K_MAX_USES && ev == KV_JV_NUM)
			r->cap = CAP_USES;
		else if (level == 4 && key == K_TYPE && ev == KV_JV_STR)
			r->cap = CAP_TYPE;
	}
}

void
kv_rsc_value(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	if (r->cv_skip > 0) {
		if (level > r->cv_skip)
			return;
		r->cv_skip = 0;
	}
	if (level < CV_DEPTH)
		r->cpath[level] = (uint8_t)key;
	r->intools = 0;
	if (level == 1) {
		top(r, ev, key);
		return;
	}
	switch (rs_path_at(r, 1)) {
	case K_MESSAGES: case K_SYSTEM:
		content(r, ev, level, key);
		break;
	case K_INFERENCE_CONFIG:
		if (level == 2 && key == K_MAX_TOKENS_CV)
			rs_number(r, ev, LIM_MAX_TOKENS_CV, "inferenceConfig.maxTokens");
		break;
	case K_TOOL_CONFIG:
		tool_config(r, ev, level, key);
		break;
	case K_AMRF:
		extra_fields(r, ev, level, key);
		break;
	case K_SERVICE_TIER_CV: case K_PERFORMANCE_CONFIG:
		if (level == 2 && (key == K_TYPE || key == K_LATENCY) && ev != KV_JV_STR &&
		    ev != KV_JV_NULL)
			refuse(r, "%s must be a string", key == K_TYPE ? "serviceTier.type" :
			    "performanceConfig.latency", "");
		else if (level == 2 && ev == KV_JV_STR && (key == K_TYPE || key == K_LATENCY))
			r->cap = key == K_TYPE ? CAP_CV_TIER : CAP_CV_LATENCY;
		break;
	}
}

void
kv_rsc_close(struct kv_reqscan *r, int level)
{
	if (level == 3 && rs_path_at(r, 1) == K_AMRF && rs_path_at(r, 2) == K_TOOLS)
		kv_rs_tool_end(r);
}

void
kv_rsc_string(struct kv_reqscan *r)
{
	const char *v = r->vbuf;
	size_t n = r->vlen;
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(v, lit, n) == 0)

	if (r->cap == CAP_CV_LATENCY) {
		/* latency-optimized inference has prices of its own */
		if (!IS("standard"))
			dim_other(r, "performanceConfig.latency", v, n);
		return;
	}
	r->ri.tier = IS("default") ? KV_TIER_STANDARD : IS("priority") ? KV_TIER_PRIORITY :
	    IS("flex") ? KV_TIER_FLEX : KV_TIER_OTHER;
	if (r->ri.tier == KV_TIER_OTHER)	/* "reserved": capacity paid apart */
		dim_other(r, "serviceTier", v, n);
#undef IS
}

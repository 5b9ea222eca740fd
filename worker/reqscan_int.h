/* What the request scanner's files share (reqscan.c, the event loop and
 * the OpenAI and Anthropic bodies; reqscan_converse.c, Bedrock's Converse
 * body; reqscan_tools.c, what a tool or block type makes the provider
 * do): the member names' ids, what a value is kept for, and the notes a
 * rule leaves in the result. Private to those files. */
#ifndef KV_REQSCAN_INT_H
#define KV_REQSCAN_INT_H

#include <stdio.h>

#include "worker/reqscan.h"

/* Member names the scan knows (reqscan.c's key_names spells them). */
enum {
	K_NONE, K_OTHER, K_MODEL, K_STREAM, K_STREAM_OPTIONS, K_INCLUDE_USAGE,
	K_MAX_TOKENS, K_MAX_COMPLETION_TOKENS, K_MAX_OUTPUT_TOKENS, K_N, K_BEST_OF,
	K_TYPE, K_URL, K_IMAGE_URL, K_FILE_URL, K_FILE_ID, K_PREVIOUS_RESPONSE_ID,
	K_CONVERSATION, K_PROMPT, K_WEB_SEARCH_OPTIONS, K_MCP_SERVERS,
	K_BACKGROUND, K_STORE, K_DATA, K_FILE_DATA, K_TOOLS, K_MAX_USES, K_MAX_TOOL_CALLS,
	K_SPEED, K_INFERENCE_GEO, K_SERVICE_TIER, K_MODALITIES, K_AUDIO, K_ID,
	K_CACHE_CONTROL, K_TTL, K_THINKING, K_BUDGET_TOKENS,
	/* Bedrock's Converse body */
	K_MESSAGES, K_SYSTEM, K_INFERENCE_CONFIG, K_TOOL_CONFIG, K_GUARDRAIL_CONFIG,
	K_AMRF, K_AMRF_PATHS, K_PROMPT_VARIABLES, K_REQUEST_METADATA,
	K_PERFORMANCE_CONFIG, K_SERVICE_TIER_CV, K_OUTPUT_CONFIG, K_MAX_TOKENS_CV,
	K_CONTENT, K_TEXT, K_IMAGE, K_DOCUMENT, K_VIDEO, K_TOOL_USE, K_TOOL_RESULT,
	K_REASONING_CONTENT, K_CACHE_POINT, K_GUARD_CONTENT, K_CITATIONS_CONTENT,
	K_SEARCH_RESULT, K_JSON, K_SOURCE, K_BYTES, K_S3_LOCATION, K_TOOL_SPEC,
	K_SYSTEM_TOOL, K_TOOL_CHOICE, K_LATENCY, K_REASONING_CONFIG, K_ANTHROPIC_BETA,
	/* the Gemini API's body (reqscan_gemini.c) */
	K_CONTENTS, K_SYSTEM_INSTRUCTION, K_GENERATION_CONFIG, K_SAFETY_SETTINGS,
	K_CACHED_CONTENT, K_LABELS, K_REQUESTS, K_TASK_TYPE,
	K_TITLE, K_OUTPUT_DIMENSIONALITY, K_PARTS, K_INLINE_DATA,
	K_FILE_DATA_GM, K_MAX_OUTPUT_TOKENS_GM, K_THINKING_CONFIG, K_THINKING_BUDGET,
	K_CANDIDATE_COUNT, K_RESPONSE_MODALITIES, K_FUNCTION_DECLARATIONS, K_CODE_EXECUTION,
	K_URL_CONTEXT, K_FUNCTION_CALL, K_FUNCTION_RESPONSE, K_ROLE,
};

/* What the value being read is kept for. The output limits are last:
 * CAP_LIMIT + i is r->lim[i] (reqscan.h). */
enum { CAP_NONE, CAP_MODEL, CAP_TYPE, CAP_URL, CAP_USES, CAP_TOOL_CALLS, CAP_DIM,
	CAP_MODALITY, CAP_TTL, CAP_CV_TIER, CAP_CV_LATENCY, CAP_GM_BUDGET, CAP_GM_DATA,
	CAP_GM_MODALITY, CAP_LIMIT };

/* r->lim's slots. */
enum { LIM_MAX_TOKENS, LIM_MAX_COMPLETION_TOKENS, LIM_MAX_OUTPUT_TOKENS, LIM_N,
	LIM_BEST_OF, LIM_THINKING, LIM_MAX_TOKENS_CV, LIM_COUNT };

/* The kind of tool being read (r->tkind). */
enum { T_NONE, T_SERVER, T_WEB_SEARCH, T_WEB_FETCH };

/* The phase of an inline data: URL or base64 string being decoded. */
enum { M_OFF, M_PREFIX, M_META, M_B64, M_FULL };

/* The body is refused: the first reason stays. */
static inline void
refuse(struct kv_reqscan *r, const char *fmt, const char *a, const char *b)
{
	if (r->bad)
		return;
	r->bad = 1;
	snprintf(r->err, sizeof(r->err), fmt, a, b);
}

/* The provider will fetch or recall content the body does not show: the
 * first such thing is named. */
static inline void
fetches(struct kv_reqscan *r, const char *what)
{
	if (r->ri.fetches[0] == '\0')
		snprintf(r->ri.fetches, sizeof(r->ri.fetches), "%s", what);
}

/* The string value beginning is inline media, decoded from phase PH. */
static inline void
media_start(struct kv_reqscan *r, int ph)
{
	r->mph = ph;
	r->mdata = ph == M_PREFIX;
	r->mimage = 0;
	r->mmlen = 0;
	r->macc = 0;
	r->mbits = 0;
	r->mlen = 0;
}

/* The member id of the value at LEVEL of a body read by its path
 * (Converse, Gemini: r->cpath; K_NONE an array element); deeper than any
 * of their structures: K_OTHER. */
static inline int
rs_path_at(const struct kv_reqscan *r, int level)
{
	return level >= 0 && level < (int)sizeof(r->cpath) ? r->cpath[level] : K_OTHER;
}

/* An integer kept in r->lim[SLOT] (NAME for the refusal); null is absent. */
static inline void
rs_number(struct kv_reqscan *r, enum kv_jv_ev ev, int slot, const char *name)
{
	if (ev != KV_JV_NUM && ev != KV_JV_NULL)
		refuse(r, "%s must be an integer", name, "");
	r->lim[slot] = -1;
	r->cap = ev == KV_JV_NUM ? CAP_LIMIT + slot : CAP_NONE;
}

/* A top-level member an API defines, with the JSON type it takes. */
struct rs_member {
	int		 key;
	enum kv_jv_ev	 ev;
	const char	*name;
};

/* The top-level member KEY whose value begins with EV, against API's
 * table T of N members: one it does not define, or of another type than
 * its own (null is absent), is refused. Returns 0 when it is one. */
static inline int
rs_top_member(struct kv_reqscan *r, const struct rs_member *t, size_t n, const char *api,
    enum kv_jv_ev ev, int key)
{
	size_t i;

	for (i = 0; i < n && t[i].key != key; i++)
		;
	if (i == n) {
		refuse(r, "the body has a top-level member the %s API does not define, and "
		    "kilovolt cannot bound what it asks for", api, "");
		return -1;
	}
	if (ev != t[i].ev && ev != KV_JV_NULL)
		refuse(r, "%s must be %s", t[i].name, t[i].ev == KV_JV_ARR_OPEN ? "an array" :
		    t[i].ev == KV_JV_OBJ_OPEN ? "an object" : t[i].ev == KV_JV_STR ? "a string" :
		    "a number");
	return 0;
}

/* A tools element begins: its kind and max_uses are read next. */
static inline void
tool_begin(struct kv_reqscan *r)
{
	r->ntools++;
	r->tkind = T_NONE;
	r->tuses = -1;
}

/* reqscan_tools.c: the provider runs a tool of type V (N bytes) itself:
 * T_WEB_SEARCH, T_WEB_FETCH, T_SERVER, else T_NONE. */
int	kv_rs_server_tool(const char *v, size_t n);

/* 1 for a dated tool type kilovolt does not know (it may bill what no
 * price names). */
int	kv_rs_unknown_dated_tool(const char *v, size_t n);

/* 1 when a block or tool of type V makes the provider fetch content. */
int	kv_rs_type_fetches(const char *v, size_t n);

/* A tools element ended: its calls bound the provider's loop. */
void	kv_rs_tool_end(struct kv_reqscan *r);

/* reqscan_converse.c: a value of a Converse body begins (after the
 * top-level object's '{'): KEY is its member's id, K_NONE in an array. */
void	kv_rsc_value(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key);

/* An object of a Converse body closed at LEVEL. */
void	kv_rsc_close(struct kv_reqscan *r, int level);

/* A Converse string kept for CAP_CV_* ended (r->vbuf). */
void	kv_rsc_string(struct kv_reqscan *r);

/* reqscan_gemini.c: a value of a Gemini API body begins (as
 * kv_rsc_value); a string kept for CAP_GM_DATA or CAP_GM_MODALITY ended;
 * the body ended (before the limits are summed up). A thinkingBudget
 * (CAP_GM_BUDGET) is read by reqscan.c: -1 is KV_REQ_THINK_DYNAMIC. */
void	kv_rsg_value(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key);
void	kv_rsg_string(struct kv_reqscan *r);
void	kv_rsg_finish(struct kv_reqscan *r);

#endif

/* The request scan of a Gemini API body (reqscan_int.h): generateContent
 * and streamGenerateContent (GenerateContentRequest), embedContent and
 * batchEmbedContents. What it asks the model for: output
 * generationConfig.maxOutputTokens times candidateCount, plus the
 * thinking budget (thinkingConfig.thinkingBudget; unset or -1, dynamic:
 * up to the model's maximum output); input: the text's bytes (a token is
 * at least one byte), inline images by their decoded header, and the
 * model's context window for what the body does not show (inline audio,
 * video or documents, fileData by URI, cachedContent by name, the
 * urlContext tool); inline data that is not an image and fileData may
 * be audio (a video's sound too), so their input reserves at the audio
 * input price where it is the dearest. A member or tool the API does not define, or one
 * whose bill kilovolt cannot bound (Google Search and Maps grounding,
 * file search, computer use), is refused.
 *
 * Source: the Gemini API reference (read 2026-12-07), models.generateContent
 * and its types Content, Part, Blob, FileData, GenerationConfig,
 * ThinkingConfig (thinkingBudget: 0 off, -1 dynamic), Tool:
 *   https://ai.google.dev/api/generate-content
 *   https://ai.google.dev/api/caching#Content
 *   https://ai.google.dev/gemini-api/docs/thinking
 *   https://ai.google.dev/api/embeddings */
#include <string.h>

#include "worker/reqscan_int.h"

#define GM_DEPTH	((int)sizeof(((struct kv_reqscan *)0)->cpath))

/* The top-level members: GenerateContentRequest's, and the embedding
 * requests' (content, taskType, title, outputDimensionality, requests). */
static void
top(struct kv_reqscan *r, enum kv_jv_ev ev, int key)
{
	static const struct rs_member tops[] = {
		{ K_CONTENTS, KV_JV_ARR_OPEN, "contents" },
		{ K_SYSTEM_INSTRUCTION, KV_JV_OBJ_OPEN, "systemInstruction" },
		{ K_GENERATION_CONFIG, KV_JV_OBJ_OPEN, "generationConfig" },
		{ K_TOOLS, KV_JV_ARR_OPEN, "tools" },
		{ K_TOOL_CONFIG, KV_JV_OBJ_OPEN, "toolConfig" },
		{ K_SAFETY_SETTINGS, KV_JV_ARR_OPEN, "safetySettings" },
		{ K_CACHED_CONTENT, KV_JV_STR, "cachedContent" },
		{ K_LABELS, KV_JV_OBJ_OPEN, "labels" },
		{ K_MODEL, KV_JV_STR, "model" },
		{ K_CONTENT, KV_JV_OBJ_OPEN, "content" },
		{ K_TASK_TYPE, KV_JV_STR, "taskType" },
		{ K_TITLE, KV_JV_STR, "title" },
		{ K_OUTPUT_DIMENSIONALITY, KV_JV_NUM, "outputDimensionality" },
		{ K_REQUESTS, KV_JV_ARR_OPEN, "requests" },
	};
	if (rs_top_member(r, tops, sizeof(tops) / sizeof(tops[0]), "Gemini", ev, key) == -1)
		return;
	if (key == K_CACHED_CONTENT && ev != KV_JV_NULL)
		fetches(r, "cachedContent (a cache recalled by name)");
}

/* A member of a Part: text and the client's own JSON are bounded by
 * their bytes; inline data by its header (an image) or the context
 * window; a file by URI by the context window. */
static void
part(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	switch (key) {
	case K_INLINE_DATA:
		if (ev != KV_JV_OBJ_OPEN && ev != KV_JV_NULL)
			refuse(r, "%s must be an object", "inlineData", "");
		break;
	case K_FILE_DATA_GM:
		if (ev != KV_JV_NULL) {
			fetches(r, "fileData (a file by URI)");
			r->ri.audio_in = 1;	/* it may be audio, or a video's sound */
		}
		break;
	case K_FUNCTION_CALL: case K_FUNCTION_RESPONSE:
		r->cv_skip = level;	/* the client's own JSON below */
		break;
	}
}

/* A value inside generationConfig. */
static void
generation_config(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	if (level == 2 && key == K_MAX_OUTPUT_TOKENS_GM)
		rs_number(r, ev, LIM_MAX_OUTPUT_TOKENS, "generationConfig.maxOutputTokens");
	else if (level == 2 && key == K_CANDIDATE_COUNT)
		rs_number(r, ev, LIM_N, "generationConfig.candidateCount");
	else if (level == 3 && rs_path_at(r, 2) == K_THINKING_CONFIG && key == K_THINKING_BUDGET) {
		if (ev != KV_JV_NUM && ev != KV_JV_NULL)
			refuse(r, "%s must be an integer", "thinkingConfig.thinkingBudget", "");
		r->lim[LIM_THINKING] = -1;
		r->cap = ev == KV_JV_NUM ? CAP_GM_BUDGET : CAP_NONE;
	} else if (level == 3 && rs_path_at(r, 2) == K_RESPONSE_MODALITIES && ev == KV_JV_STR)
		r->cap = CAP_GM_MODALITY;
}

/* An element of tools: each names one kind of tool. */
static void
tool(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	if (ev == KV_JV_NULL)
		return;
	switch (key) {
	case K_FUNCTION_DECLARATIONS:
		r->ntools++;
		r->cv_skip = level;	/* their schemas are the client's JSON */
		break;
	case K_CODE_EXECUTION:	/* billed as tokens, in the usage */
		break;
	case K_URL_CONTEXT:	/* pages fetched into the prompt */
		fetches(r, "the urlContext tool");
		break;
	default:
		/* Google Search or Maps grounding, file search, computer use,
		 * and tools it does not know: billed apart from the tokens */
		refuse(r, "tools: kilovolt cannot price what this tool makes the "
		    "provider run; send the request without it%s%s", "", "");
	}
}

void
kv_rsg_value(struct kv_reqscan *r, enum kv_jv_ev ev, int level, int key)
{
	if (r->cv_skip > 0) {
		if (level > r->cv_skip)
			return;
		r->cv_skip = 0;
	}
	if (level < GM_DEPTH)
		r->cpath[level] = (uint8_t)key;
	if (level == 1) {
		top(r, ev, key);
		return;
	}
	if (level >= 3 && rs_path_at(r, level - 1) == K_NONE && rs_path_at(r, level - 2) == K_PARTS)
		part(r, ev, level, key);
	else if (key == K_DATA && ev == KV_JV_STR && rs_path_at(r, level - 1) == K_INLINE_DATA) {
		/* base64: its first bytes are the file's header */
		media_start(r, M_B64);
		r->gm_img0 = r->ri.images;
		r->cap = CAP_GM_DATA;
	} else if (rs_path_at(r, 1) == K_GENERATION_CONFIG)
		generation_config(r, ev, level, key);
	else if (rs_path_at(r, 1) == K_TOOLS && level == 3)
		tool(r, ev, level, key);
	else if (rs_path_at(r, 1) == K_TOOLS && level == 2 && ev != KV_JV_OBJ_OPEN)
		refuse(r, "tools: an element is not an object%s%s", "", "");
}

void
kv_rsg_string(struct kv_reqscan *r)
{
	if (r->cap == CAP_GM_MODALITY) {
		/* spoken or drawn answers bill at prices of their own */
		if (r->vlen == 5 && memcmp(r->vbuf, "AUDIO", 5) == 0)
			r->ri.audio_out = 1;
		else if (r->vlen == 5 && memcmp(r->vbuf, "IMAGE", 5) == 0)
			snprintf(r->ri.dim_other, sizeof(r->ri.dim_other),
			    "responseModalities \"IMAGE\"");
		return;
	}
	/* inlineData.data ended (media_end ran first): an image added its
	 * tokens; anything else (audio, video, a PDF) bills by a length the
	 * header does not give */
	if (r->ri.images == r->gm_img0) {
		fetches(r, "inlineData that is not an image");
		r->ri.audio_in = 1;	/* billed at the audio input price */
	}
}

void
kv_rsg_finish(struct kv_reqscan *r)
{
	/* an unset budget is the model's own choice */
	if (r->api == KV_API_GEMINI && r->lim[LIM_THINKING] == -1)
		r->lim[LIM_THINKING] = KV_REQ_THINK_DYNAMIC;
	if (r->api == KV_API_GEMINI_EMBED)
		r->lim[LIM_THINKING] = -1;
}

/* The response scanner's Gemini rules (usage_scan.h): usageMetadata in a
 * generateContent or embedding response, in each event of an alt=sse
 * stream, and in each element of the JSON-array stream that
 * streamGenerateContent sends without alt=sse (the lexer reads the whole
 * array as one value: its elements are the chunks, one level down). Every
 * chunk repeats the usage so far, cumulative; the one whose candidate
 * carries a finishReason is the last and final, and so is a whole
 * generateContent body. input = promptTokenCount (the cached part
 * included) + toolUsePromptTokenCount; cached = cachedContentTokenCount;
 * output = candidatesTokenCount + thoughtsTokenCount (thoughts are billed
 * as output; reasoning, priced apart where the price sets it). Among
 * the uncached input, audio = the AUDIO entries of promptTokensDetails
 * less those of cacheTokensDetails (the cached part, priced as cached
 * input): kv_cost charges it at the price's audio input price.
 *
 * Source: the Gemini API reference (read 2026-12-07),
 * GenerateContentResponse.UsageMetadata and streamGenerateContent:
 *   https://ai.google.dev/api/generate-content#UsageMetadata */
#include <string.h>

#include "worker/usage_json.h"
#include "worker/usage_scan.h"

/* the counts, then (from G_N) the audio among the prompt and the cache */
enum { G_PROMPT, G_CANDIDATES, G_THOUGHTS, G_CACHED, G_TOOL, G_N,
	G_AUDIO = G_N, G_AUDIO_CACHED, G_ALL };

/* 1 inside the JSON-array stream: the chunks are its elements. */
static int
base(const struct kv_json *j)
{
	return key_at(j, 0) == K_ARRAY;
}

static int64_t
sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t
pos(int64_t v)
{
	return v > 0 ? v : 0;
}

/* G_AUDIO or G_AUDIO_CACHED when level C (the usage object's depth) holds
 * an element of promptTokensDetails or cacheTokensDetails, else -1. */
static int
detail_list(const struct kv_json *j, int c)
{
	if (c == 0 || key_at(j, c) != K_ARRAY)
		return -1;
	if (key_at(j, c - 1) == K_GM_PROMPT_DETAILS)
		return G_AUDIO;
	return key_at(j, c - 1) == K_GM_CACHE_DETAILS ? G_AUDIO_CACHED : -1;
}

/* A {"modality", "tokenCount"} element closed: AUDIO adds to its list's sum. */
static void
detail_end(struct kv_usage_scanner *s, int f)
{
	if (s->gm_audio && s->gm_count > 0)
		s->cand[f] = sat_add(pos(s->cand[f]), s->gm_count);
}

/* A chunk (or the whole body) ended: its usageMetadata replaces what an
 * earlier chunk said, unless that one was final and this is not. */
static void
commit(struct kv_usage_scanner *s, int in_array)
{
	const int64_t *c = s->cand;
	struct kv_usage *u = &s->usage;
	int final = s->gm_finish || (!s->sse && !in_array), i, any = 0;

	for (i = 0; i < G_N; i++)
		any |= c[i] >= 0;
	if (!s->cand_done || !any || (s->final && !final))
		return;
	u->input = sat_add(pos(c[G_PROMPT]), pos(c[G_TOOL]));
	u->cached_input = pos(c[G_CACHED]) < u->input ? pos(c[G_CACHED]) : u->input;
	u->reasoning = pos(c[G_THOUGHTS]);
	u->output = sat_add(pos(c[G_CANDIDATES]), u->reasoning);
	u->audio_input = pos(c[G_AUDIO]) > pos(c[G_AUDIO_CACHED]) ?
	    pos(c[G_AUDIO]) - pos(c[G_AUDIO_CACHED]) : 0;
	if (u->audio_input > u->input - u->cached_input)
		u->audio_input = u->input - u->cached_input;
	u->found = 1;
	if (final)
		s->final = 1;
}

static void
on_open(struct kv_usage_scanner *s)
{
	const struct kv_json *j = &s->json;
	int d = j->evdepth, b = base(j), i;

	if (d == b + 1) {
		/* a chunk begins: what the last one had is forgotten */
		s->cand_depth = 0;
		s->cand_done = 0;
		s->ev_counted = 0;
		s->gm_finish = 0;
	} else if (d == b + 2 && key_at(j, b) == K_GM_USAGE && s->cand_depth == 0) {
		s->cand_depth = d;
		s->cand_done = 0;
		for (i = 0; i < G_ALL; i++)
			s->cand[i] = -1;
	} else if (s->cand_depth != 0 && d == s->cand_depth + 2 &&
	    detail_list(j, s->cand_depth) >= 0) {
		s->gm_audio = 0;
		s->gm_count = -1;
	}
}

static void
on_number(struct kv_usage_scanner *s)
{
	const struct kv_json *j = &s->json;
	int d = j->depth, f;

	if (s->cand_depth == 0 || !j->num_ok)
		return;
	if (d == s->cand_depth + 2 && key_at(j, d - 1) == K_GM_TOKEN_COUNT &&
	    detail_list(j, s->cand_depth) >= 0)
		s->gm_count = j->num;
	if (d != s->cand_depth)
		return;
	switch (key_at(j, d - 1)) {
	case K_GM_PROMPT:	f = G_PROMPT; break;
	case K_GM_CANDIDATES:	f = G_CANDIDATES; break;
	case K_GM_THOUGHTS:	f = G_THOUGHTS; break;
	case K_GM_CACHED:	f = G_CACHED; break;
	case K_GM_TOOL_PROMPT:	f = G_TOOL; break;
	default:		return;
	}
	s->cand[f] = j->num;
}

/* A string begins: generated text is counted (for a cut stream's
 * estimate), a finishReason marks the chunk final, the response's
 * modelVersion is kept. Its end is usage_scan.c's own. */
static void
on_string(struct kv_usage_scanner *s)
{
	struct kv_json *j = &s->json;
	int d = j->depth, key = key_at(j, d - 1);

	j->count = key == K_TEXT;	/* a part's text, thoughts' included */
	s->str_bytes0 = j->nbytes;
	if (key == K_GM_FINISH)
		s->gm_finish = 1;
	else if (key == K_GM_MODEL && d == base(j) + 1)
		j->capture = 1;
	else if (key == K_GM_MODALITY && s->cand_depth != 0 && d == s->cand_depth + 2 &&
	    detail_list(j, s->cand_depth) >= 0)
		j->capture = 1;	/* usage_scan.c's string end sets gm_audio */
}

void
usage_gm_event(struct kv_usage_scanner *s, int ev)
{
	struct kv_json *j = &s->json;

	switch (ev) {
	case EV_OBJ_OPEN:
		on_open(s);
		break;
	case EV_OBJ_CLOSE:
		if (s->cand_depth != 0 && j->evdepth == s->cand_depth + 2 &&
		    detail_list(j, s->cand_depth) >= 0)
			detail_end(s, detail_list(j, s->cand_depth));
		if (s->cand_depth != 0 && j->evdepth == s->cand_depth) {
			s->cand_done = 1;
			s->cand_depth = 0;
		}
		if (j->evdepth == base(j) + 1)
			commit(s, base(j));
		break;
	case EV_STR_BEGIN:
		on_string(s);
		break;
	case EV_NUM:
		on_number(s);
		break;
	}
}

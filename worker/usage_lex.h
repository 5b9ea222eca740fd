/* The usage lexer's token transitions (usage_json.c), inline: the
 * byte-at-a-time step (usage_json.c) and the whole-token run
 * (usage_json_run, below) make them alike, and the response scanner's loop
 * (usage_scan_json) inlines the run with its own event handler: a call of
 * the run per event was ~50 instructions, 1.4 k a small chat response.
 * Internal to the usage files: the names are short. */
#ifndef KV_USAGE_LEX_H
#define KV_USAGE_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "worker/usage_json.h"

/* Every member of every object passes here: a name is told by its length
 * and two words of it (the first and the last eight bytes, overlapping,
 * or the first and last four for a name of 4-7 bytes), compared with the
 * names of that length as constants (the compiler folds each name's
 * words); only a name past 16 bytes has a middle left to compare. A walk
 * over a table of the names of the same length with a compare a name
 * cost 62 instructions a member (1.6 k a small chat response). */
#define KEY_LEN_MIN	4	/* "text", "type", "item" */

/* The two words of K[0..LEN), KEY_LEN_MIN <= LEN: no byte outside K is
 * read. */
static inline __attribute__((always_inline)) void
key_words(const char *k, size_t len, uint64_t *lo, uint64_t *hi)
{
	uint32_t a, b;

	if (len >= 8) {
		memcpy(lo, k, 8);
		memcpy(hi, k + len - 8, 8);
		return;
	}
	memcpy(&a, k, 4);
	memcpy(&b, k + len - 4, 4);
	*lo = (uint64_t)a | (uint64_t)b << 32;
	*hi = 0;
}

/* K[0..LEN) is NAME, a literal of LEN bytes, given K's words LO, HI. */
static inline __attribute__((always_inline)) int
key_is(const char *k, uint64_t lo, uint64_t hi, const char *name, size_t len)
{
	uint64_t a, b, x, y;
	size_t i;

	key_words(name, len, &a, &b);
	if (lo != a || hi != b)
		return 0;
	/* past 16 bytes, the middle words (8 at a time, the last
	 * overlapping hi) */
	for (i = 8; i + 8 < len; i += 8) {
		memcpy(&x, name + i, 8);
		memcpy(&y, k + i, 8);
		if (x != y)
			return 0;
	}
	return 1;
}

static inline __attribute__((always_inline)) uint8_t
key_intern(const char *k, size_t len)
{
	uint64_t lo, hi;

	if (len < KEY_LEN_MIN)
		return K_OTHER;
	key_words(k, len, &lo, &hi);
#define KW(name, id) if (key_is(k, lo, hi, name, sizeof(name) - 1)) return id
	switch (len) {
	case 4:
		KW("type", K_TYPE); KW("text", K_TEXT); KW("item", K_ITEM);
		break;
	case 5:
		KW("usage", K_USAGE); KW("model", K_MODEL); KW("delta", K_DELTA); KW("speed", K_SPEED);
		KW("input", K_INPUT);
		break;
	case 6:
		KW("stream", K_STREAM); KW("output", K_OUTPUT);
		break;
	case 7:
		KW("message", K_MESSAGE); KW("choices", K_CHOICES); KW("content", K_CONTENT); KW("refusal", K_REFUSAL);
		break;
	case 8:
		KW("response", K_RESPONSE); KW("thinking", K_THINKING); KW("modality", K_GM_MODALITY);
		break;
	case 9:
		KW("arguments", K_ARGUMENTS); KW("container", K_CONTAINER);
		break;
	case 10:
		KW("max_tokens", K_MAX_TOKENS); KW("tokenCount", K_GM_TOKEN_COUNT);
		break;
	case 11:
		KW("inputTokens", K_BR_INPUT);
		break;
	case 12:
		KW("input_tokens", K_INPUT_TOKENS); KW("partial_json", K_PARTIAL_JSON); KW("service_tier", K_SERVICE_TIER); KW("audio_tokens", K_AUDIO_TOKENS);
		KW("outputTokens", K_BR_OUTPUT); KW("cacheDetails", K_BR_CACHE_DETAILS);
		KW("finishReason", K_GM_FINISH); KW("modelVersion", K_GM_MODEL);
		break;
	case 13:
		KW("prompt_tokens", K_PROMPT_TOKENS); KW("output_tokens", K_OUTPUT_TOKENS); KW("cached_tokens", K_CACHED_TOKENS); KW("include_usage", K_INCLUDE_USAGE); KW("inference_geo", K_INFERENCE_GEO);
		KW("usageMetadata", K_GM_USAGE);
		break;
	case 14:
		KW("stream_options", K_STREAM_OPTIONS); KW("cache_creation", K_CACHE_CREATION_OBJ);
		break;
	case 15:
		KW("server_tool_use", K_SERVER_TOOL_USE); KW("inputTokenCount", K_BR_INPUT_COUNT);
		break;
	case 16:
		KW("reasoning_tokens", K_REASONING_TOKENS); KW("outputTokenCount", K_BR_OUTPUT_COUNT);
		KW("promptTokenCount", K_GM_PROMPT);
		break;
	case 17:
		KW("completion_tokens", K_COMPLETION_TOKENS); KW("max_output_tokens", K_MAX_OUTPUT_TOKENS); KW("reasoning_content", K_REASONING_CONTENT);
		break;
	case 18:
		KW("web_fetch_requests", K_WEB_FETCH_REQ); KW("cache_write_tokens", K_CACHE_WRITE_TOKENS);
		KW("thoughtsTokenCount", K_GM_THOUGHTS); KW("cacheTokensDetails", K_GM_CACHE_DETAILS);
		break;
	case 19:
		KW("web_search_requests", K_WEB_SEARCH_REQ);
		KW("input_token_details", K_INPUT_DETAILS);	/* Realtime's spelling */
		KW("promptTokensDetails", K_GM_PROMPT_DETAILS);
		break;
	case 20:
		KW("input_tokens_details", K_INPUT_DETAILS); KW("cacheReadInputTokens", K_BR_READ);
		KW("output_token_details", K_OUTPUT_DETAILS);	/* Realtime's spelling */
		KW("candidatesTokenCount", K_GM_CANDIDATES);
		break;
	case 21:
		KW("prompt_tokens_details", K_PROMPT_DETAILS); KW("max_completion_tokens", K_MAX_COMPLETION_TOKENS); KW("output_tokens_details", K_OUTPUT_DETAILS);
		KW("cached_tokens_details", K_CACHED_DETAILS);
		KW("cacheWriteInputTokens", K_BR_WRITE);
		break;
	case 23:
		KW("cache_read_input_tokens", K_CACHE_READ);
		KW("cachedContentTokenCount", K_GM_CACHED); KW("toolUsePromptTokenCount", K_GM_TOOL_PROMPT);
		break;
	case 24:
		KW("cacheReadInputTokenCount", K_BR_READ_COUNT);
		break;
	case 25:
		KW("ephemeral_1h_input_tokens", K_EPHEMERAL_1H); KW("completion_tokens_details", K_COMPLETION_DETAILS);
		KW("cacheWriteInputTokenCount", K_BR_WRITE_COUNT);
		break;
	case 27:
		KW("cache_creation_input_tokens", K_CACHE_CREATION);
		break;
	case 32:
		KW("amazon-bedrock-invocationMetrics", K_BR_METRICS);
		break;
	}
#undef KW
	return K_OTHER;
}

enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

enum { LIT_TRUE, LIT_FALSE, LIT_NULL };
static const char *const lit_text[] = { "true", "false", "null" };

static inline int
in_object(const struct kv_json *j)
{
	unsigned l = (unsigned)j->depth - 1;	/* unsigned: / and % are shifts */

	return (j->isobj[l / 8] >> (l % 8)) & 1;
}

static inline void
after_value(struct kv_json *j)
{
	j->state = j->depth == 0 ? S_END : S_AFTER;
}

static inline int
json_push(struct kv_json *j, int obj)
{
	int l = j->depth;

	if (l >= KV_SCAN_NEST)
		return usage_json_fail(j);
	if (obj)
		j->isobj[l / 8] |= (uint8_t)(1u << (l % 8));
	else
		j->isobj[l / 8] &= (uint8_t)~(1u << (l % 8));
	if (l < KV_SCAN_DEPTH)
		j->path[l] = obj ? K_NONE : K_ARRAY;
	j->depth = j->evdepth = l + 1;
	j->state = obj ? S_OBJ_FIRST : S_ARR_FIRST;
	return obj ? EV_OBJ_OPEN : EV_ARR_OPEN;
}

static inline int
json_pop(struct kv_json *j, int obj)
{
	if (j->depth == 0 || in_object(j) != obj)
		return usage_json_fail(j);
	j->evdepth = j->depth--;
	after_value(j);
	return obj ? EV_OBJ_CLOSE : EV_ARR_CLOSE;
}

static inline void
str_start(struct kv_json *j, int is_key)
{
	j->state = S_STR;
	j->is_key = (uint8_t)is_key;
	j->capture = j->count = 0;
	j->str_bad = 0;
	j->keylen = j->slen = 0;
	j->hisur = 0;
	j->evdepth = j->depth;
}

static inline int
value_start(struct kv_json *j, unsigned char c)
{
	switch (c) {
	case '{':
		return json_push(j, 1);
	case '[':
		return json_push(j, 0);
	case '"':
		str_start(j, 0);
		return EV_STR_BEGIN;
	case 't': case 'f': case 'n':
		j->lit = c == 't' ? LIT_TRUE : c == 'f' ? LIT_FALSE : LIT_NULL;
		j->litpos = 1;
		j->state = S_LIT;
		return EV_NONE;
	}
	if (c != '-' && (c < '0' || c > '9'))
		return usage_json_fail(j);
	j->state = S_NUM;
	j->num = 0;
	j->num_ok = 1;
	j->neg = c == '-';
	j->nstate = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
	if (c > '0')
		j->num = c - '0';
	return EV_NONE;
}

static inline int
str_end(struct kv_json *j)
{
	if (j->hisur)
		return usage_json_fail(j);
	if (!j->is_key) {
		after_value(j);
		return EV_STR_END;
	}
	if (j->depth - 1 < KV_SCAN_DEPTH)
		j->path[j->depth - 1] = j->str_bad ? K_OTHER :
		    key_intern(j->key, j->keylen);
	j->state = S_COLON;
	j->evdepth = j->depth;
	return EV_KEY;
}

/* The tokens between strings' contents, whole tokens at a time. Each case
 * makes exactly the transitions usage_json_step makes for the same bytes
 * (the same helpers, in the same order); it only saves a call per byte.
 * What it does not take whole (an escape, a fraction, an exponent, a token
 * cut at the end of P, anything malformed) it leaves to the step, which
 * then sees the same state the byte-at-a-time path would have. */

/* An integer at P[0..N) whose end is in P: digits taken, or 0. */
static inline size_t
fast_int(struct kv_json *j, const unsigned char *p, size_t n)
{
	size_t k = p[0] == '-';
	size_t d0 = k;
	int64_t num = 0;
	int ok = 1;

	if (k >= n || p[k] < '0' || p[k] > '9')
		return 0;
	if (p[k] == '0') {
		k++;
	} else {
		/* 18 digits cannot overflow; past them, as num_digit */
		size_t safe = k + 18;

		for (; k < n && k < safe && p[k] >= '0' && p[k] <= '9'; k++)
			num = num * 10 + (p[k] - '0');
		for (; k < n && p[k] >= '0' && p[k] <= '9'; k++)
			if (ok && (__builtin_mul_overflow(num, 10, &num) ||
			    __builtin_add_overflow(num, p[k] - '0', &num)))
				ok = 0;
	}
	/* the end must be seen and be no digit (after a lone 0), fraction or
	 * exponent: those the step reads (and refuses, for "01") */
	if (k >= n || (p[k] >= '0' && p[k] <= '9') || p[k] == '.' || p[k] == 'e' || p[k] == 'E')
		return 0;
	j->num = num;
	j->num_ok = (uint8_t)ok;
	j->neg = d0 != 0;
	j->nstate = p[d0] == '0' ? N_ZERO : N_INT;
	if (j->neg && j->num != 0)
		j->num_ok = 0;	/* as num_byte: "-0" is zero, any other minus is not a count */
	after_value(j);
	j->evdepth = j->depth;
	return k;
}

/* A literal at P[0..N) wholly in P: its length, or 0. */
static inline size_t
fast_lit(struct kv_json *j, const unsigned char *p, size_t n)
{
	int lit = p[0] == 't' ? LIT_TRUE : p[0] == 'f' ? LIT_FALSE : LIT_NULL;
	size_t len = strlen(lit_text[lit]);

	if (n < len || memcmp(p, lit_text[lit], len) != 0)
		return 0;
	j->lit = (uint8_t)lit;
	j->litpos = (uint8_t)len;
	after_value(j);
	j->evdepth = j->depth;
	return len;
}

/* A key from its opening quote (state S_KEY or S_OBJ_FIRST): its length
 * with the quotes when its name is wholly in P with nothing to decode
 * (*EV is EV_KEY), else what the string run took (*EV is EV_NONE, the
 * state S_STR). A whole name is interned from P, not copied to j->key
 * first: the path gets the id str_end would give it, keylen the length
 * the copy would have had, and j->key's bytes are left as they were. */
static inline size_t
fast_key(struct kv_json *j, const unsigned char *p, size_t n, int *ev)
{
	size_t k = usage_json_str_len(p + 1, n - 1);
	int d = j->depth, bad = k > KV_SCAN_KEY - 1;

	if (1 + k < n && p[1 + k] == '"') {
		/* what str_start, the string run and str_end leave, less the
		 * copy; the id first, the stores after (a store to a byte of
		 * J may alias P, which the compiler would read again) */
		uint8_t id = bad ? K_OTHER : d - 1 < KV_SCAN_DEPTH ?
		    key_intern((const char *)p + 1, k) : K_OTHER;

		j->state = S_COLON;
		j->is_key = 1;
		j->capture = j->count = 0;
		j->str_bad = (uint8_t)bad;
		j->keylen = bad ? KV_SCAN_KEY - 1 : k;
		j->slen = 0;
		j->hisur = 0;
		j->evdepth = d;
		if (d - 1 < KV_SCAN_DEPTH)
			j->path[d - 1] = id;
		*ev = EV_KEY;
		return k + 2;
	}
	/* cut or escaped: the name's bytes so far are kept, the step and
	 * the string run go on from S_STR */
	*ev = EV_NONE;
	str_start(j, 1);
	return 1 + usage_json_str_run(j, p + 1, n - 1);
}

/* A string value at P[0..N), from its opening quote, whose client wants
 * no event: taken whole when it holds nothing to decode and closes in P,
 * as the step would take it with neither capture nor count (str_start,
 * its bytes, str_end); else up to what the step must read (an escape, a
 * control byte) or P's end. Sets *WHOLE when the string ended. */
static inline size_t
quiet_str(struct kv_json *j, const unsigned char *p, size_t n, int *whole)
{
	size_t k = usage_json_str_len(p + 1, n - 1);

	str_start(j, 0);
	*whole = 1 + k < n && p[1 + k] == '"';
	if (!*whole)
		return 1 + k;	/* in S_STR: the string run and the step go on */
	after_value(j);	/* str_end of a value with no surrogate pending */
	return k + 2;
}

/* The next token, when P[I] (below N) is no whitespace: jumps to the
 * state's own case with C set, saving the loop's dispatch; else back to
 * the loop (which skips the whitespace, or ends). The state must be the
 * case's: every jump is what "continue" would have reached. */
#define NEXT(label) {							\
	if (i < n && (p[i] > ' ' || !is_ws(p[i]))) {			\
		c = p[i];						\
		goto label;						\
	}								\
	continue;	/* the loop's, so no do-while here */		\
}

/* Feed P[0..N) from a state between tokens (or at a string's closing
 * quote) up to and including the first token that makes an event, whole
 * tokens at a time, with the same transitions as usage_json_step byte by
 * byte. Returns the bytes taken (0: the step must take the next byte) and
 * sets *EV to the event (EV_NONE if it stopped before one). A key's end is
 * not reported (EV_KEY): its id is in the path, and the run goes on to its
 * value; nor is the end (EV_STR_END) of a string whose client set neither
 * capture nor count at its start, for which the response scanner does
 * nothing. */
static inline __attribute__((always_inline)) size_t
usage_json_run(struct kv_json *j, const unsigned char *p, size_t n, int *ev, uint64_t want)
{
	size_t i = 0, k;
	unsigned char c;
	int whole;

	*ev = EV_NONE;
	while (i < n) {
		c = p[i];
		if (j->state >= S_STR) {
			/* in a string only its end is a token: a key's
			 * interning, a value's end */
			if (j->state != S_STR || c != '"')
				return i;
			*ev = str_end(j);
			if (*ev != EV_KEY && (*ev != EV_STR_END || j->capture || j->count))
				return i + 1;
			/* a key is in the path, not an event; nor is the end
			 * of a string the client neither keeps nor counts */
			*ev = EV_NONE;
			i++;
			continue;
		}
		if (is_ws(c)) {
			i++;
			continue;
		}
		switch (j->state) {
		case S_END:
			return i;	/* the step decides (multi or not) */
		case S_COLON:
		colon:
			if (c != ':')
				return i;
			j->state = S_VALUE;
			i++;
			NEXT(value);
		case S_AFTER:
		after:
			if (c == ',') {
				i++;
				if (in_object(j)) {
					j->state = S_KEY;
					NEXT(key);
				}
				j->state = S_VALUE;
				NEXT(value);
			}
			if (c != '}' && c != ']')
				return i;
			*ev = json_pop(j, c == '}');
			if (*ev == EV_ARR_CLOSE && (want & USAGE_WANT_QUIET)) {
				*ev = EV_NONE;
				i++;
				if (j->state == S_AFTER)
					NEXT(after);
				continue;
			}
			return i + 1;
		case S_OBJ_FIRST:
			if (c == '}') {
				*ev = json_pop(j, 1);
				return i + 1;
			}
			/* FALLTHROUGH */
		case S_KEY:
		key:
			if (c != '"')
				return i;
			k = fast_key(j, p + i, n - i, ev);
			i += k;
			if (*ev != EV_KEY)
				return i;
			*ev = EV_NONE;	/* a key is in the path, not an event */
			NEXT(colon);	/* fast_key left S_COLON */
		case S_ARR_FIRST:
			if (c == ']') {
				*ev = json_pop(j, 0);
				if (want & USAGE_WANT_QUIET) {
					*ev = EV_NONE;
					i++;
					if (j->state == S_AFTER)
						NEXT(after);
					continue;
				}
				return i + 1;
			}
			/* FALLTHROUGH */
		default:	/* S_VALUE */
		value:
			if (c == '"' && !((want >> USAGE_WANT_BIT(key_at(j, j->depth - 1))) & 1)) {
				i += quiet_str(j, p + i, n - i, &whole);
				if (!whole)
					return i;
				if (j->state == S_AFTER)
					NEXT(after);
				continue;
			}
			if (c == '{' || c == '"' || (c == '[' && !(want & USAGE_WANT_QUIET))) {
				*ev = value_start(j, c);
				return i + 1;
			}
			if (c == '[') {
				if (value_start(j, c) == EV_ERROR) {
					*ev = EV_ERROR;
					return i + 1;
				}
				i++;
				continue;
			}
			if (c == 't' || c == 'f' || c == 'n') {
				if ((k = fast_lit(j, p + i, n - i)) == 0)
					return i;
				i += k;
				if (!(want & USAGE_WANT_QUIET)) {
					*ev = EV_LIT;
					return i;
				}
				if (j->state == S_AFTER)
					NEXT(after);
				continue;
			}
			if ((k = fast_int(j, p + i, n - i)) == 0)
				return i;
			*ev = EV_NUM;
			return i + k;
		}
	}
	return i;
}
#undef NEXT

#endif

/* The usage lexer (usage_json.c), shared by the response scanner
 * (usage_scan.c), its SSE framing (usage.c) and the usage-only check
 * (sse_filter.c): a byte-at-a-time JSON state machine, so that any split of
 * the input gives the same result (usage_json_run, in usage_lex.h, takes
 * whole tokens where the buffer holds them, with the same transitions;
 * it leaves out the events a client says it does nothing for), following RFC 8259
 * (numbers, literals, escapes, surrogate pairs, no control characters in
 * strings) but not validating UTF-8. It reports events (object open/close, key, string,
 * number, literal) with the current key path, each key interned as one of
 * the ids below; string contents are skipped unless the client asks to
 * keep a short value (capture) or count it (count). Internal to the usage
 * files: the names are short. */
#ifndef KV_USAGE_JSON_H
#define KV_USAGE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "worker/usage_json-t.h"

#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define USAGE_RUN_CTZ	1	/* the run's end is found by the lowest flagged byte */
#if defined(__SSE2__)
#include <emmintrin.h>
#define USAGE_RUN_SSE2	1
#endif
#endif

/* Key ids: every name a client of the lexer tells apart. */
enum {
	K_NONE, K_ARRAY, K_OTHER,
	K_USAGE, K_MODEL, K_TYPE, K_MESSAGE, K_RESPONSE, K_CHOICES,
	K_PROMPT_TOKENS, K_COMPLETION_TOKENS, K_PROMPT_DETAILS,
	K_INPUT_TOKENS, K_OUTPUT_TOKENS, K_INPUT_DETAILS, K_CACHED_TOKENS,
	K_CACHE_CREATION, K_CACHE_READ,
	K_STREAM, K_STREAM_OPTIONS, K_INCLUDE_USAGE,
	K_MAX_TOKENS, K_MAX_COMPLETION_TOKENS, K_MAX_OUTPUT_TOKENS,
	K_CONTENT, K_TEXT, K_DELTA, K_ARGUMENTS, K_PARTIAL_JSON, K_THINKING,
	K_REFUSAL, K_REASONING_CONTENT,
	K_SERVICE_TIER, K_CACHE_CREATION_OBJ, K_EPHEMERAL_1H,
	K_SERVER_TOOL_USE, K_WEB_SEARCH_REQ, K_WEB_FETCH_REQ, K_OUTPUT, K_ITEM,
	K_CONTAINER, K_AUDIO_TOKENS, K_REASONING_TOKENS, K_COMPLETION_DETAILS,
	K_OUTPUT_DETAILS, K_SPEED, K_INFERENCE_GEO, K_CACHE_WRITE_TOKENS,
	/* Bedrock: InvokeModel's amazon-bedrock-invocationMetrics, Converse's
	 * usage, and a Converse toolUse delta's "input" (generated text) */
	K_BR_METRICS, K_BR_INPUT_COUNT, K_BR_OUTPUT_COUNT, K_BR_READ_COUNT,
	K_BR_WRITE_COUNT, K_BR_INPUT, K_BR_OUTPUT, K_BR_READ, K_BR_WRITE, K_INPUT,
	K_BR_CACHE_DETAILS,
	K_CACHED_DETAILS,	/* Realtime: input_token_details.cached_tokens_details */
	/* the Gemini API's candidates[].finishReason and modelVersion, whose
	 * strings it wants (below USAGE_WANT_SHARED), then its usageMetadata
	 * and the counts in it (usage_gemini.c), with its per-modality lists
	 * of the prompt and of the cached part ({"modality", "tokenCount"}
	 * each: a "modality" string is wanted through the shared bit) */
	K_GM_FINISH, K_GM_MODEL,
	K_GM_USAGE, K_GM_PROMPT, K_GM_CANDIDATES, K_GM_THOUGHTS, K_GM_CACHED, K_GM_TOOL_PROMPT,
	K_GM_PROMPT_DETAILS, K_GM_CACHE_DETAILS, K_GM_MODALITY, K_GM_TOKEN_COUNT,
	K_COUNT
};

/* Lexer states a client may test. */
enum {
	S_VALUE, S_ARR_FIRST, S_OBJ_FIRST, S_KEY, S_COLON, S_AFTER, S_END,
	S_STR, S_ESC, S_UHEX, S_NUM, S_LIT, S_ERR
};

enum {
	EV_NONE, EV_OBJ_OPEN, EV_OBJ_CLOSE, EV_ARR_OPEN, EV_ARR_CLOSE,
	EV_KEY, EV_STR_BEGIN, EV_STR_END, EV_NUM, EV_LIT, EV_ERROR
};
/* the byte that produced the event must be fed again */
#define EV_AGAIN	0x100
#define EV_MASK		0xff

static inline int
is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Key id of the member being read at 0-based nesting level LEVEL. */
static inline int
key_at(const struct kv_json *j, int level)
{
	if (level < 0)
		return K_NONE;
	return level < KV_SCAN_DEPTH ? j->path[level] : K_OTHER;
}

/* Start (MULTI: several top-level values may follow each other) or, at an
 * SSE event's end, restart J; reset keeps the text counts. */
void	usage_json_init(struct kv_json *j, int multi);
void	usage_json_reset(struct kv_json *j);

/* Stop J: nothing more is read (S_ERR). Returns EV_ERROR. Inline, and
 * here rather than in usage_json.c: the transitions in usage_lex.h, which
 * usage_json.c itself uses, fail through it. */
static inline int
usage_json_fail(struct kv_json *j)
{
	j->state = S_ERR;
	return EV_ERROR;
}

/* Feed one byte; returns an EV_ code, with EV_AGAIN when the byte must be
 * fed again (it ended a number and starts something else). */
int	usage_json_step(struct kv_json *j, unsigned char c);

/* usage_json_run, the whole-token run: inline, in usage_lex.h. */

/* usage_json_run's WANT: bit K_x set for the key ids whose string values
 * the client must see begin (EV_STR_BEGIN; with a key id at the string's
 * level not in it, a whole string is taken with no event, as the step
 * reads one with neither capture nor count); USAGE_WANT_QUIET for a
 * client that does nothing on an array's open and close or a literal
 * (EV_ARR_OPEN, EV_ARR_CLOSE and EV_LIT are then not reported). The step
 * reports them all, whatever the run was told. */
#define USAGE_WANT_SHARED	62	/* the bit of every key id from it on */
#define USAGE_WANT_BIT(k)	((k) < USAGE_WANT_SHARED ? (k) : USAGE_WANT_SHARED)
#define USAGE_WANT_KEY(k)	(1ULL << USAGE_WANT_BIT(k))
#define USAGE_WANT_ALL		(~0ULL >> 1)	/* every key, and every event */
#define USAGE_WANT_QUIET	(1ULL << 63)
_Static_assert(K_GM_MODEL < USAGE_WANT_SHARED, "a key whose strings a client wants "
    "has a bit of WANT of its own");
_Static_assert(K_COUNT <= 255, "a key id fits the path's bytes");

/* Bytes >= 0x80 among P[0..N), added to *HIGH, and the UTF-8 lead bytes
 * among them (one per non-ASCII character), added to *CHARS. */
void	usage_count_high(const unsigned char *p, size_t n, int64_t *high, int64_t *chars);

/* The string run and the text count are inline, for the client's loop
 * over the bytes (usage_scan_json) to inline them and its own event
 * handler: a lexer loop of its own here, returning each event, cost the
 * small request of bench/instructions.sh 2,400 instructions (4 %); with a
 * callback 770. */

#define USAGE_ONES 0x0101010101010101ULL

/* How many of P[0..N) are string content with nothing to decode: up to
 * the next quote, backslash or control byte. */
static inline size_t
usage_json_str_len(const unsigned char *p, size_t n)
{
	size_t k = 0;

#ifdef USAGE_RUN_SSE2
	/* sixteen at a time where SSE2 is (every x86-64): a key is one load */
	{
		const __m128i dq = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
		const __m128i ctl = _mm_set1_epi8(0x1f);

		for (; k + 16 <= n; k += 16) {
			__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + k));
			__m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, dq),
			    _mm_cmpeq_epi8(x, bs)), _mm_cmpeq_epi8(_mm_max_epu8(x, ctl), ctl));
			unsigned bits = (unsigned)_mm_movemask_epi8(m);

			if (bits != 0) {
				k += (size_t)__builtin_ctz(bits);
				goto run_end;
			}
		}
	}
#endif
	/* eight bytes at a time while none is a control byte, '"' or '\\' */
	for (; k + 8 <= n; k += 8) {
		uint64_t x, q, b, m;

		memcpy(&x, p + k, 8);
		q = x ^ (USAGE_ONES * '"');
		b = x ^ (USAGE_ONES * '\\');
		m = (((x - USAGE_ONES * 0x20) & ~x) | ((q - USAGE_ONES) & ~q) | ((b - USAGE_ONES) & ~b)) &
		    (USAGE_ONES * 0x80);
		if (m != 0) {
#ifdef USAGE_RUN_CTZ
			/* A borrow only runs upward, so the lowest flagged
			 * byte is a real one: the run ends there (keys are
			 * short, and the byte loop below cost 2 k
			 * instructions a small chat response). */
			k += (size_t)__builtin_ctzll(m) / 8;
			goto run_end;
#else
			break;
#endif
		}
	}
	while (k < n && p[k] >= 0x20 && p[k] != '"' && p[k] != '\\')
		k++;
#ifdef USAGE_RUN_CTZ
run_end:
#endif
	return k;
}

/* Bytes of string content with nothing to decode go in bulk. A key or a
 * captured value keeps them (as str_put would, one at a time); any other
 * string skips them. */
static inline size_t
usage_json_str_run(struct kv_json *j, const unsigned char *p, size_t n)
{
	size_t k, room, take;
	char *dst;

	if (j->state != S_STR || j->hisur)
		return 0;
	k = usage_json_str_len(p, n);
	if (j->is_key) {
		dst = j->key + j->keylen;
		room = KV_SCAN_KEY - 1 - j->keylen;
	} else if (j->capture) {
		dst = j->str + j->slen;
		room = KV_SCAN_MODEL - 1 - j->slen;
	} else
		return k;
	take = k < room ? k : room;
	memcpy(dst, p, take);
	if (j->is_key)
		j->keylen += take;
	else
		j->slen += take;
	if (take < k)
		j->str_bad = 1;
	return k;
}

/* A counted string's bytes: their text counts. */
static inline void
usage_json_count_text(struct kv_json *j, const unsigned char *p, size_t n)
{
	j->nbytes += (int64_t)n;
	usage_count_high(p, n, &j->nhigh, &j->nchars);
}

#endif

/* The usage scanner. Three layers, each a byte-at-a-time state machine so
 * that any split of the input gives the same result:
 *   SSE lines  -> the data of each event (or the whole body when not SSE)
 *   JSON lexer -> events (object open/close, key, string, number, literal)
 *                 with the current key path; string contents are skipped
 *                 unless the client asks to keep a short value
 *   clients    -> the response scanner, the request scanner and the
 *                 usage-only-chunk test, each reading the lexer's events.
 * The lexer follows RFC 8259 (numbers, literals, escapes, surrogate pairs,
 * no control characters in strings) but does not validate UTF-8. */
#include <stdint.h>
#include <string.h>

#include "worker/usage.h"
#include "common/hex.h"

/* ---- key ids ----------------------------------------------------------- */

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
	K_OUTPUT_DETAILS,
	K_COUNT
};

#define KEY(name) { name, sizeof(name) - 1 }
static const struct {
	const char	*name;
	size_t		 len;
} key_names[K_COUNT] = {
	[K_USAGE] = KEY("usage"), [K_MODEL] = KEY("model"), [K_TYPE] = KEY("type"),
	[K_MESSAGE] = KEY("message"), [K_RESPONSE] = KEY("response"),
	[K_CHOICES] = KEY("choices"),
	[K_PROMPT_TOKENS] = KEY("prompt_tokens"),
	[K_COMPLETION_TOKENS] = KEY("completion_tokens"),
	[K_PROMPT_DETAILS] = KEY("prompt_tokens_details"),
	[K_INPUT_TOKENS] = KEY("input_tokens"), [K_OUTPUT_TOKENS] = KEY("output_tokens"),
	[K_INPUT_DETAILS] = KEY("input_tokens_details"),
	[K_CACHED_TOKENS] = KEY("cached_tokens"),
	[K_CACHE_CREATION] = KEY("cache_creation_input_tokens"),
	[K_CACHE_READ] = KEY("cache_read_input_tokens"),
	[K_STREAM] = KEY("stream"), [K_STREAM_OPTIONS] = KEY("stream_options"),
	[K_INCLUDE_USAGE] = KEY("include_usage"),
	[K_MAX_TOKENS] = KEY("max_tokens"),
	[K_MAX_COMPLETION_TOKENS] = KEY("max_completion_tokens"),
	[K_MAX_OUTPUT_TOKENS] = KEY("max_output_tokens"),
	[K_CONTENT] = KEY("content"), [K_TEXT] = KEY("text"), [K_DELTA] = KEY("delta"),
	[K_ARGUMENTS] = KEY("arguments"), [K_PARTIAL_JSON] = KEY("partial_json"),
	[K_THINKING] = KEY("thinking"), [K_REFUSAL] = KEY("refusal"),
	[K_REASONING_CONTENT] = KEY("reasoning_content"),
	[K_SERVICE_TIER] = KEY("service_tier"),
	[K_CACHE_CREATION_OBJ] = KEY("cache_creation"),
	[K_EPHEMERAL_1H] = KEY("ephemeral_1h_input_tokens"),
	[K_SERVER_TOOL_USE] = KEY("server_tool_use"),
	[K_WEB_SEARCH_REQ] = KEY("web_search_requests"),
	[K_WEB_FETCH_REQ] = KEY("web_fetch_requests"),
	[K_OUTPUT] = KEY("output"), [K_ITEM] = KEY("item"),
	[K_CONTAINER] = KEY("container"),
	[K_AUDIO_TOKENS] = KEY("audio_tokens"), [K_REASONING_TOKENS] = KEY("reasoning_tokens"),
	[K_COMPLETION_DETAILS] = KEY("completion_tokens_details"),
	[K_OUTPUT_DETAILS] = KEY("output_tokens_details"),
};
#undef KEY

/* Every member of every object passes here: only the names of the same
 * length are compared, from a table by length made on first use (the walk
 * over all 35 names cost 4 k instructions a small chat response). */
#define KEY_LEN_MAX	32
#define KEY_BUCKET	8

static uint8_t
key_intern(const char *k, size_t len)
{
	static uint8_t by_len[KEY_LEN_MAX][KEY_BUCKET];	/* K_ ids; K_NONE ends a row */
	static int ready;
	const uint8_t *row;
	int i, n;

	if (!ready) {
		_Static_assert(K_NONE == 0 && K_USAGE > 0 && K_COUNT < 256, "0 ends a row");
		for (i = K_USAGE; i < K_COUNT; i++) {
			size_t l = key_names[i].len;

			for (n = 0; n < KEY_BUCKET - 1 && by_len[l][n] != 0; n++)
				;
			by_len[l][n] = (uint8_t)i;	/* sized so every name fits */
		}
		ready = 1;
	}
	if (len == 0 || len >= KEY_LEN_MAX)
		return K_OTHER;
	for (row = by_len[len]; *row != 0; row++)
		if (key_names[*row].name[0] == k[0] && memcmp(key_names[*row].name, k, len) == 0)
			return *row;
	return K_OTHER;
}

/* ---- the JSON lexer ---------------------------------------------------- */

enum {
	S_VALUE, S_ARR_FIRST, S_OBJ_FIRST, S_KEY, S_COLON, S_AFTER, S_END,
	S_STR, S_ESC, S_UHEX, S_NUM, S_LIT, S_ERR
};

enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };

enum { LIT_TRUE, LIT_FALSE, LIT_NULL };
static const char *const lit_text[] = { "true", "false", "null" };

enum {
	EV_NONE, EV_OBJ_OPEN, EV_OBJ_CLOSE, EV_ARR_OPEN, EV_ARR_CLOSE,
	EV_KEY, EV_STR_BEGIN, EV_STR_END, EV_NUM, EV_LIT, EV_ERROR
};
/* the byte that produced the event must be fed again */
#define EV_AGAIN	0x100
#define EV_MASK		0xff

static void
json_init(struct kv_json *j, int multi)
{
	memset(j, 0, sizeof(*j));
	j->state = S_VALUE;
	j->multi = (uint8_t)multi;
}

/* Forget the document in progress; counted bytes survive. */
static void
json_reset(struct kv_json *j)
{
	int64_t nbytes = j->nbytes, nhigh = j->nhigh, nchars = j->nchars;

	json_init(j, j->multi);
	j->nbytes = nbytes;
	j->nhigh = nhigh;
	j->nchars = nchars;
}

static int
is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int
json_fail(struct kv_json *j)
{
	j->state = S_ERR;
	return EV_ERROR;
}

/* Key id of the member being read at 0-based nesting level LEVEL. */
static int
key_at(const struct kv_json *j, int level)
{
	if (level < 0)
		return K_NONE;
	return level < KV_SCAN_DEPTH ? j->path[level] : K_OTHER;
}

static int
in_object(const struct kv_json *j)
{
	int l = j->depth - 1;

	return (j->isobj[l / 8] >> (l % 8)) & 1;
}

static void
after_value(struct kv_json *j)
{
	j->state = j->depth == 0 ? S_END : S_AFTER;
}

static int
json_push(struct kv_json *j, int obj)
{
	int l = j->depth;

	if (l >= KV_SCAN_NEST)
		return json_fail(j);
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

static int
json_pop(struct kv_json *j, int obj)
{
	if (j->depth == 0 || in_object(j) != obj)
		return json_fail(j);
	j->evdepth = j->depth--;
	after_value(j);
	return obj ? EV_OBJ_CLOSE : EV_ARR_CLOSE;
}

static void
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

static int
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
		return json_fail(j);
	j->state = S_NUM;
	j->num = 0;
	j->num_ok = 1;
	j->neg = c == '-';
	j->nstate = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
	if (c > '0')
		j->num = c - '0';
	return EV_NONE;
}

/* Keep one decoded byte of a key, or of a value the client captures. */
static void
str_put(struct kv_json *j, unsigned char b)
{
	if (j->is_key) {
		if (j->keylen < KV_SCAN_KEY - 1)
			j->key[j->keylen++] = (char)b;
		else
			j->str_bad = 1;
	} else if (j->capture) {
		if (j->slen < KV_SCAN_MODEL - 1 && b != 0)
			j->str[j->slen++] = (char)b;
		else
			j->str_bad = 1;
	}
}

static void
str_put_utf8(struct kv_json *j, uint32_t cp)
{
	if (cp < 0x80) {
		str_put(j, (unsigned char)cp);
	} else if (cp < 0x800) {
		str_put(j, (unsigned char)(0xc0 | cp >> 6));
		str_put(j, (unsigned char)(0x80 | (cp & 0x3f)));
	} else if (cp < 0x10000) {
		str_put(j, (unsigned char)(0xe0 | cp >> 12));
		str_put(j, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		str_put(j, (unsigned char)(0x80 | (cp & 0x3f)));
	} else {
		str_put(j, (unsigned char)(0xf0 | cp >> 18));
		str_put(j, (unsigned char)(0x80 | ((cp >> 12) & 0x3f)));
		str_put(j, (unsigned char)(0x80 | ((cp >> 6) & 0x3f)));
		str_put(j, (unsigned char)(0x80 | (cp & 0x3f)));
	}
}

static int
str_end(struct kv_json *j)
{
	if (j->hisur)
		return json_fail(j);
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

static int
str_byte(struct kv_json *j, unsigned char c)
{
	if (c == '"')
		return str_end(j);
	if (c < 0x20 || (j->hisur && c != '\\'))
		return json_fail(j);
	if (c == '\\') {
		j->state = S_ESC;
		return EV_NONE;
	}
	str_put(j, c);
	return EV_NONE;
}

static int
esc_byte(struct kv_json *j, unsigned char c)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *p;

	if (c == 'u') {
		j->state = S_UHEX;
		j->uhex = 0;
		j->ucp = 0;
		return EV_NONE;
	}
	if (j->hisur || c == 0 || (p = strchr(from, c)) == NULL)
		return json_fail(j);
	str_put(j, (unsigned char)to[p - from]);
	j->state = S_STR;
	return EV_NONE;
}

static int
uhex_byte(struct kv_json *j, unsigned char c)
{
	int v = kv_hexval(c);
	uint32_t cp;

	if (v == -1)
		return json_fail(j);
	j->ucp = j->ucp << 4 | (uint32_t)v;
	if (++j->uhex < 4)
		return EV_NONE;
	cp = j->ucp;
	j->state = S_STR;
	if (j->hisur) {
		if (cp < 0xdc00 || cp > 0xdfff)
			return json_fail(j);
		cp = 0x10000 + ((j->hisur - 0xd800) << 10) + (cp - 0xdc00);
		j->hisur = 0;
	} else if (cp >= 0xd800 && cp <= 0xdbff) {
		j->hisur = cp;	/* a low surrogate escape must follow */
		return EV_NONE;
	} else if (cp >= 0xdc00 && cp <= 0xdfff) {
		return json_fail(j);
	}
	if (cp == 0)
		j->str_bad = 1;	/* never keep a NUL */
	str_put_utf8(j, cp);
	return EV_NONE;
}

static void
num_digit(struct kv_json *j, unsigned char c)
{
	if (j->num_ok && (__builtin_mul_overflow(j->num, 10, &j->num) ||
	    __builtin_add_overflow(j->num, c - '0', &j->num)))
		j->num_ok = 0;
}

/* Next number-grammar state after C, or -1 when C ends the number. */
static int
num_next(int st, unsigned char c)
{
	int digit = c >= '0' && c <= '9';

	switch (st) {
	case N_MINUS:
		return c == '0' ? N_ZERO : digit ? N_INT : -2;
	case N_ZERO:
	case N_INT:
		if (digit)
			return st == N_ZERO ? -2 : N_INT;
		return c == '.' ? N_DOT : c == 'e' || c == 'E' ? N_E : -1;
	case N_DOT:
		return digit ? N_FRAC : -2;
	case N_FRAC:
		return digit ? N_FRAC : c == 'e' || c == 'E' ? N_E : -1;
	case N_E:
		return digit ? N_EXP : c == '+' || c == '-' ? N_ESIGN : -2;
	case N_ESIGN:
		return digit ? N_EXP : -2;
	default:
		return digit ? N_EXP : -1;
	}
}

static int
num_byte(struct kv_json *j, unsigned char c)
{
	int next = num_next(j->nstate, c);

	if (next == -2)
		return json_fail(j);
	if (next == -1) {
		if (j->neg && j->num != 0)
			j->num_ok = 0;	/* "-0" is zero, any other minus is not a count */
		after_value(j);
		j->evdepth = j->depth;
		return EV_NUM | EV_AGAIN;
	}
	if (next == N_INT)
		num_digit(j, c);
	else if (next != N_ZERO)	/* "-0" stays 0 */
		j->num_ok = 0;	/* fraction or exponent: not a token count */
	j->nstate = (uint8_t)next;
	return EV_NONE;
}

static int
lit_byte(struct kv_json *j, unsigned char c)
{
	const char *t = lit_text[j->lit];

	if ((unsigned char)t[j->litpos] != c)
		return json_fail(j);
	if (t[++j->litpos] != '\0')
		return EV_NONE;
	after_value(j);
	j->evdepth = j->depth;
	return EV_LIT;
}

static int
after_byte(struct kv_json *j, unsigned char c)
{
	if (c == ',') {
		j->state = in_object(j) ? S_KEY : S_VALUE;
		return EV_NONE;
	}
	if (c == '}' || c == ']')
		return json_pop(j, c == '}');
	return json_fail(j);
}

/* Feed one byte; returns an EV_ code, with EV_AGAIN when the byte must be
 * fed again (it ended a number and starts something else). */
static int
json_step(struct kv_json *j, unsigned char c)
{
	switch (j->state) {
	case S_STR:
		return str_byte(j, c);
	case S_ESC:
		return esc_byte(j, c);
	case S_UHEX:
		return uhex_byte(j, c);
	case S_NUM:
		return num_byte(j, c);
	case S_LIT:
		return lit_byte(j, c);
	case S_ERR:
		return EV_NONE;
	}
	if (is_ws(c))
		return EV_NONE;
	switch (j->state) {
	case S_END:
		if (!j->multi)
			return json_fail(j);
		j->state = S_VALUE;	/* another document follows */
		return EV_NONE | EV_AGAIN;
	case S_ARR_FIRST:
		if (c == ']')
			return json_pop(j, 0);
		return value_start(j, c);
	case S_OBJ_FIRST:
		if (c == '}')
			return json_pop(j, 1);
		/* FALLTHROUGH */
	case S_KEY:
		if (c != '"')
			return json_fail(j);
		str_start(j, 1);
		return EV_NONE;
	case S_COLON:
		if (c != ':')
			return json_fail(j);
		j->state = S_VALUE;
		return EV_NONE;
	case S_AFTER:
		return after_byte(j, c);
	default:
		return value_start(j, c);
	}
}

#define ONES 0x0101010101010101ULL

/* Bytes of string content with nothing to decode go in bulk: up to the
 * next quote, backslash or control byte. A key or a captured value keeps
 * them (as str_put would, one at a time); any other string skips them. */
static size_t
json_str_run(struct kv_json *j, const unsigned char *p, size_t n)
{
	size_t k = 0, room, take;
	char *dst;

	if (j->state != S_STR || j->hisur)
		return 0;
	/* eight bytes at a time while none is a control byte, '"' or '\\' */
	for (; k + 8 <= n; k += 8) {
		uint64_t x, q, b, m;

		memcpy(&x, p + k, 8);
		q = x ^ (ONES * '"');
		b = x ^ (ONES * '\\');
		m = (((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((b - ONES) & ~b)) &
		    (ONES * 0x80);
		if (m != 0) {
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
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
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
run_end:
#endif
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

/* ---- the response scanner --------------------------------------------- */

enum {
	T_NONE, T_OTHER, T_MESSAGE_START, T_MESSAGE_STOP, T_RESPONSE_START, T_RESPONSE_DONE,
	T_ITEM_ADDED, T_ERROR
};
enum { SRC_TOP = 1, SRC_NESTED };
enum {
	C_PROMPT, C_COMPLETION, C_INPUT, C_OUTPUT, C_CACHED_P, C_CACHED_I,
	C_CACHE_WRITE, C_CACHE_READ, C_CACHE_1H, C_WEB_SEARCH, C_WEB_FETCH,
	C_AUDIO_IN, C_AUDIO_OUT, C_REASONING, C_N
};
enum { A_INPUT, A_WRITE, A_READ, A_OUTPUT, A_WRITE_1H, A_SEARCH, A_FETCH, A_N };
enum { L_START, L_FIELD, L_SPACE, L_DATA, L_IGNORE };

_Static_assert(C_N <= sizeof(((struct kv_usage_scanner *)0)->cand) / sizeof(int64_t),
    "cand[] holds every usage field");
_Static_assert(A_N <= sizeof(((struct kv_usage_scanner *)0)->anth) / sizeof(int64_t),
    "anth[] holds every Anthropic field");

static void
event_reset(struct kv_usage_scanner *s)
{
	s->ev_type = T_NONE;
	s->cand_depth = 0;
	s->cand_done = 0;
	s->ev_counted = 0;
	s->ev_ws_item = 0;
	s->ev_ws = 0;
}

void
kv_usage_init(struct kv_usage_scanner *s, enum kv_api api, int sse)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->api = api;
	s->sse = sse;
	json_init(&s->json, 1);
	for (i = 0; i < A_N; i++)
		s->anth[i] = -1;
	event_reset(s);
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
	if (src == 0)
		return;
	s->cand_depth = d;
	s->cand_src = src;
	s->cand_done = 0;
	for (i = 0; i < C_N; i++)
		s->cand[i] = -1;
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

static void
cand_number(struct kv_usage_scanner *s)
{
	const struct kv_json *j = &s->json;
	int d = j->depth, f = -1;

	if (s->cand_depth == 0 || !j->num_ok)
		return;
	if (d == s->cand_depth) {
		f = usage_field(key_at(j, d - 1));
	} else if (d == s->cand_depth + 1 && key_at(j, d - 1) == K_CACHED_TOKENS) {
		if (key_at(j, d - 2) == K_PROMPT_DETAILS)
			f = C_CACHED_P;
		else if (key_at(j, d - 2) == K_INPUT_DETAILS)
			f = C_CACHED_I;
	} else if (d == s->cand_depth + 1 && key_at(j, d - 1) == K_AUDIO_TOKENS) {
		/* OpenAI's token details, priced apart where money.c has prices */
		if (key_at(j, d - 2) == K_PROMPT_DETAILS)
			f = C_AUDIO_IN;
		else if (key_at(j, d - 2) == K_COMPLETION_DETAILS)
			f = C_AUDIO_OUT;
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
	/* audio among the uncached input, audio and reasoning among output */
	u->audio_input = either(c[C_AUDIO_IN], -1);
	u->audio_input = u->audio_input > u->input - u->cached_input ?
	    u->input - u->cached_input : u->audio_input;
	u->audio_output = either(c[C_AUDIO_OUT], -1);
	u->audio_output = u->audio_output > u->output ? u->output : u->audio_output;
	u->reasoning = either(c[C_REASONING], -1);
	u->reasoning = u->reasoning > u->output - u->audio_output ?
	    u->output - u->audio_output : u->reasoning;
	u->cache_write = 0;
	u->found = 1;
}

static int64_t
sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Anthropic: message_start has every field, message_delta's counts are
 * cumulative; whatever a later event names replaces the earlier value. */
static void
commit_anthropic(struct kv_usage_scanner *s)
{
	static const int from[A_N] = { C_INPUT, C_CACHE_WRITE, C_CACHE_READ, C_OUTPUT,
	    C_CACHE_1H, C_WEB_SEARCH, C_WEB_FETCH };
	int64_t *a = s->anth;
	struct kv_usage *u = &s->usage;
	int i, any = 0;

	for (i = 0; i < A_N; i++) {
		if (s->cand[from[i]] >= 0) {
			a[i] = s->cand[from[i]];
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
	if (s->api == KV_API_ANTHROPIC_MESSAGES)
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

static int
counted_key_name(int key)
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
	return counted_key_name(key);
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
	else if (d == 2 && (key == K_MODEL || key == K_SERVICE_TIER) &&
	    key_at(j, 0) == nested_parent(s->api))
		j->capture = 1;
}

/* OpenAI's "service_tier" names the tier the response ran on. */
static int
tier_of(const struct kv_json *j)
{
	if (j->str_bad)
		return KV_TIER_OTHER;
	if (strcmp(j->str, "default") == 0 || strcmp(j->str, "standard") == 0)
		return KV_TIER_STANDARD;
	if (strcmp(j->str, "priority") == 0)
		return KV_TIER_PRIORITY;
	if (strcmp(j->str, "flex") == 0)
		return KV_TIER_FLEX;
	return KV_TIER_OTHER;
}

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
	if (output_item_type(s, d, key_at(j, d - 1)) != 0)
		on_output_item(s, output_item_type(s, d, key_at(j, d - 1)));
	else if (d == 1 && key_at(j, 0) == K_TYPE)
		s->ev_type = event_type(j);
	else if (key_at(j, d - 1) == K_SERVICE_TIER) {
		if (is_openai(s->api))
			s->usage.tier = tier_of(j);
	} else if (!j->str_bad && j->slen > 0)
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

static void
on_event(struct kv_usage_scanner *s, int ev)
{
	struct kv_json *j = &s->json;

	switch (ev) {
	case EV_OBJ_OPEN:
		if (j->evdepth == 1)
			event_reset(s);
		else
			cand_begin(s);
		container_seen(s);
		break;
	case EV_OBJ_CLOSE:
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
		cand_number(s);
		break;
	}
}

/* Bytes >= 0x80 and the UTF-8 lead bytes among them (one per non-ASCII
 * character), eight bytes at a time where none is high. */
static void
count_high(const unsigned char *p, size_t n, int64_t *high, int64_t *chars)
{
	size_t k = 0;

	for (; k + 8 <= n; k += 8) {
		uint64_t x;

		memcpy(&x, p + k, 8);
		if ((x & (ONES * 0x80)) != 0)
			break;
	}
	for (; k < n; k++) {
		if (p[k] >= 0x80) {
			(*high)++;
			*chars += p[k] >= 0xc0;
		}
	}
}

static void
count_text(struct kv_json *j, const unsigned char *p, size_t n)
{
	j->nbytes += (int64_t)n;
	count_high(p, n, &j->nhigh, &j->nchars);
}

static void
json_feed(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	struct kv_json *j = &s->json;
	size_t i = 0, k;
	int ev;

	while (i < n) {
		if (j->state == S_ERR)
			return;
		if ((k = json_str_run(j, p + i, n - i)) > 0) {
			if (j->count)
				count_text(j, p + i, k);
			i += k;
			continue;
		}
		if (j->count && j->state >= S_STR && j->state <= S_UHEX &&
		    !(j->state == S_STR && p[i] == '"'))
			count_text(j, p + i, 1);
		ev = json_step(j, p[i]);
		if (!(ev & EV_AGAIN))
			i++;
		if ((ev & EV_MASK) != EV_NONE)
			on_event(s, ev & EV_MASK);
	}
}

/* ---- SSE framing ------------------------------------------------------- */

static void
sse_event_end(struct kv_usage_scanner *s)
{
	json_reset(&s->json);
	event_reset(s);
	s->sse_data = 0;
}

/* A "data" field starts: lines of one event join with '\n', which JSON
 * reads as whitespace. */
static void
sse_data_line(struct kv_usage_scanner *s)
{
	if (s->sse_data++ > 0)
		json_feed(s, (const unsigned char *)"\n", 1);
}

static void
sse_field_byte(struct kv_usage_scanner *s, unsigned char c)
{
	if (c == ':') {
		s->sse_state = s->sse_fpos == 4 ? L_SPACE : L_IGNORE;
		if (s->sse_fpos == 4)
			sse_data_line(s);
	} else if (s->sse_fpos >= 0 && s->sse_fpos < 4 && c == "data"[s->sse_fpos]) {
		s->sse_fpos++;
	} else {
		s->sse_fpos = -1;
	}
}

/* Everything up to the end of a line; returns how many bytes it took. */
static size_t
sse_line_run(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	const unsigned char *nl = memchr(p, '\n', n), *cr;
	size_t k = nl != NULL ? (size_t)(nl - p) : n;

	if ((cr = memchr(p, '\r', k)) != NULL)
		k = (size_t)(cr - p);
	if (s->sse_state == L_DATA)
		json_feed(s, p, k);
	return k;
}

static void
sse_eol(struct kv_usage_scanner *s, unsigned char c)
{
	if (s->sse_state == L_START)
		sse_event_end(s);
	else if (s->sse_state == L_FIELD && s->sse_fpos == 4)
		sse_data_line(s);	/* "data" alone: an empty data line */
	s->sse_state = L_START;
	s->sse_cr = c == '\r';
}

/* End of the JSON string whose content starts at p: its closing quote. */
static const unsigned char *
str_close(const unsigned char *p, const unsigned char *e)
{
	const unsigned char *q;

	while ((q = memchr(p, '"', (size_t)(e - p))) != NULL) {
		const unsigned char *b = q;

		while (b > p && b[-1] == '\\')
			b--;
		if ((q - b) % 2 == 0)
			return q;	/* not escaped */
		p = q + 1;
	}
	return NULL;
}

/* key_intern for the few names the fast path cares about, by length first:
 * it runs for every member of every event. */
static int
fast_key(const char *k, size_t len)
{
#define FK(name, id) if (memcmp(k, name, len) == 0) return id
	switch (len) {
	case 4:  FK("text", K_TEXT); FK("type", K_TYPE); break;
	case 5:  FK("usage", K_USAGE); FK("model", K_MODEL); break;
	case 7:  FK("content", K_CONTENT); FK("refusal", K_REFUSAL); break;
	case 8:  FK("thinking", K_THINKING); break;
	case 9:  FK("arguments", K_ARGUMENTS); break;
	case 12: FK("partial_json", K_PARTIAL_JSON); break;
	case 17: FK("reasoning_content", K_REASONING_CONTENT); break;
	}
#undef FK
	return K_OTHER;
}

/* One pass over a line's strings: every member name is a string followed
 * by a colon (a quote inside a string is escaped). Counts the raw bytes of
 * counted keys' string values into cnt[0], the high ones among them into
 * cnt[1] and the non-ASCII characters into cnt[2], and sets *texts when a
 * value was not empty. Returns -1 when lexing could
 * change the result: a non-null "usage", a "model" other than the one
 * seen, or a string that does not close. */
static int
line_fast_count(const unsigned char *p, size_t n, const char *model, int64_t cnt[3],
    int *texts)
{
	const unsigned char *e = p + n, *q, *v, *ve;
	size_t kl;
	int key;

	while ((q = memchr(p, '"', (size_t)(e - p))) != NULL) {
		if ((p = str_close(q + 1, e)) == NULL)
			return -1;
		kl = (size_t)(p - q - 1);
		for (v = ++p; v < e && is_ws(*v); v++)
			;
		if (v >= e || *v != ':')
			continue;	/* a string value, not a member name */
		for (v++; v < e && is_ws(*v); v++)
			;
		key = fast_key((const char *)q + 1, kl);
		if (key == K_USAGE && (v >= e || *v != 'n'))
			return -1;
		/* Anthropic's end of message makes its usage final */
		if (key == K_TYPE && e - v >= 14 && memcmp(v, "\"message_stop\"", 14) == 0)
			return -1;
		/* and its error event makes a cut of it */
		if (key == K_TYPE && e - v >= 7 && memcmp(v, "\"error\"", 7) == 0)
			return -1;
		if (v >= e || *v != '"' || (key != K_MODEL && !counted_key_name(key)))
			continue;
		if ((ve = str_close(v + 1, e)) == NULL)
			return -1;
		if (key == K_MODEL && ((size_t)(ve - v - 1) != strlen(model) ||
		    memcmp(v + 1, model, (size_t)(ve - v - 1)) != 0))
			return -1;
		if (key != K_MODEL) {
			cnt[0] += ve - v - 1;
			count_high(v + 1, (size_t)(ve - v - 1), &cnt[1], &cnt[2]);
			*texts |= ve - v - 1 > 0;
		}
		p = ve + 1;
	}
	return 0;
}

/* Most events of a stream are one token of text: once the model is known,
 * an event that is a single whole data line with no usage in it needs no
 * JSON lexing, only its text counted (40+ instructions a byte saved).
 * Returns the bytes skipped, 0 to lex the line as usual. */
static size_t
sse_skip_event(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	const unsigned char *nl;
	int64_t cnt[3] = { 0, 0, 0 };
	int texts = 0;
	size_t k, end;

	if (s->model[0] == '\0' || s->api == KV_API_OPENAI_RESPONSES ||
	    s->sse_data != 1 || s->json.state != S_VALUE || s->json.depth != 0 ||
	    (nl = memchr(p, '\n', n)) == NULL)
		return 0;
	k = (size_t)(nl - p);
	end = k + 1;
	/* the event must end right here: a blank line follows */
	if (!(end < n && (p[end] == '\n' || (p[end] == '\r' && end + 1 < n &&
	    p[end + 1] == '\n'))))
		return 0;
	if (k > 0 && p[k - 1] == '\r')
		k--;
	if (memchr(p, '\r', k) != NULL || line_fast_count(p, k, s->model, cnt, &texts) == -1)
		return 0;
	s->json.nbytes += cnt[0];
	s->json.nhigh += cnt[1];
	s->json.nchars += cnt[2];
	s->output_events += texts;
	json_fail(&s->json);	/* nothing more of this event is read */
	return k;
}

static void
sse_feed(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = p[i];

		if (s->sse_cr) {
			s->sse_cr = 0;
			if (c == '\n') {
				i++;
				continue;
			}
		}
		if (c == '\r' || c == '\n') {
			sse_eol(s, c);
			i++;
			continue;
		}
		switch (s->sse_state) {
		case L_START:
			s->sse_state = c == ':' ? L_IGNORE : L_FIELD;
			s->sse_fpos = 0;
			if (c != ':')
				sse_field_byte(s, c);
			i++;
			break;
		case L_FIELD:
			sse_field_byte(s, c);
			i++;
			break;
		case L_SPACE:
			s->sse_state = L_DATA;
			if (c == ' ')
				i++;
			i += sse_skip_event(s, p + i, n - i);
			break;
		default:
			i += sse_line_run(s, p + i, n - i);
			break;
		}
	}
}

void
kv_usage_feed(struct kv_usage_scanner *s, const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;

	if (s->sse)
		sse_feed(s, p, len);
	else
		json_feed(s, p, len);
	s->output_bytes = s->json.nbytes;
	s->output_high = s->json.nhigh;
	s->output_chars = s->json.nchars;
}

int64_t
kv_usage_output_estimate(const struct kv_usage_scanner *s)
{
	int64_t ascii = s->output_bytes - s->output_high;
	int64_t est = (ascii + 3) / 4 + s->output_chars;

	return est > s->output_events ? est : s->output_events;
}

const struct kv_usage *
kv_usage_result(const struct kv_usage_scanner *s)
{
	return &s->usage;
}

/* ---- the usage-only chunk ---------------------------------------------- */

enum { CH_NONE, CH_OPEN, CH_EMPTY, CH_OTHER };

struct uonly {
	struct kv_json	j;
	int		choices;
	int		usage_obj;
};

/* A value starts inside the top-level object or inside "choices". */
static void
uonly_value(struct uonly *u, int level, int ev)
{
	int key = key_at(&u->j, level - 1);

	if (level == 2 && key_at(&u->j, 0) == K_CHOICES && u->choices == CH_OPEN)
		u->choices = CH_OTHER;
	if (level != 1)
		return;
	if (key == K_CHOICES)
		u->choices = ev == EV_ARR_OPEN ? CH_OPEN : CH_OTHER;
	if (key == K_USAGE)
		u->usage_obj = ev == EV_OBJ_OPEN;
}

int
kv_sse_is_usage_only(const char *json, size_t len)
{
	struct uonly u;
	size_t i = 0;
	int ev;

	memset(&u, 0, sizeof(u));
	json_init(&u.j, 0);
	while (i < len && u.j.state != S_ERR) {
		ev = json_step(&u.j, (unsigned char)json[i]);
		if (!(ev & EV_AGAIN))
			i++;
		switch (ev & EV_MASK) {
		case EV_OBJ_OPEN:
		case EV_ARR_OPEN:
			uonly_value(&u, u.j.evdepth - 1, ev & EV_MASK);
			break;
		case EV_STR_BEGIN:
		case EV_NUM:
		case EV_LIT:
			uonly_value(&u, u.j.depth, ev & EV_MASK);
			break;
		case EV_ARR_CLOSE:
			if (u.j.evdepth == 2 && key_at(&u.j, 0) == K_CHOICES &&
			    u.choices == CH_OPEN)
				u.choices = CH_EMPTY;
			break;
		}
	}
	return u.j.state == S_END && u.choices == CH_EMPTY && u.usage_obj;
}

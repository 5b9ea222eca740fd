/* The WebSocket events kilovolt reads (ws_event.h): a client event's turn
 * and session facts, and a server event's type sniffed on the fly. */
#include "worker/ws_event.h"

#include <string.h>

#include "common/jsonread.h"
#include "worker/reqscan_int.h"

#define KEY_MAX	256	/* longer member names make the event unreadable */

/* An output limit: a number, or "inf" (KV_WS_INF); anything else the
 * provider refuses, and is taken as no bound. */
static int
read_limit(struct kv_jr *jr, int64_t *out)
{
	const char *t;
	size_t n;
	long long v;
	int inexact;
	char s[8];

	switch (kv_jr_peek(jr)) {
	case KV_JR_NUMBER:
		if (kv_jr_number(jr, &t, &n) == -1)
			return -1;
		*out = kv_jr_decimal(t, n, 0, &v, &inexact) == -1 ? KV_WS_INF : (int64_t)v;
		return 0;
	case KV_JR_STRING:
		if (kv_jr_string(jr, s, sizeof(s)) == -1)
			return kv_jr_fail(jr, "a limit string");
		*out = KV_WS_INF;
		return 0;
	case KV_JR_NULL:
		return kv_jr_skip(jr);
	default:
		*out = KV_WS_INF;
		return kv_jr_skip(jr);
	}
}

static int
read_model(struct kv_jr *jr, char *model)
{
	if (kv_jr_peek(jr) != KV_JR_STRING)
		return kv_jr_skip(jr);
	return kv_jr_string(jr, model, KV_WS_MODEL_MAX);
}

/* A limit member seen again keeps the larger (the provider takes one). */
static void
keep_max(int64_t *into, int64_t v)
{
	if (v > *into)
		*into = v;
}

/* turn_detection: null or create_response false turns automatic
 * responses off; an object otherwise turns them on. */
static int
read_turn_detection(struct kv_jr *jr, struct kv_ws_cev *ev)
{
	char key[KEY_MAX];
	int r, on = 1;

	if (kv_jr_peek(jr) == KV_JR_NULL) {
		ev->auto_resp = ev->auto_resp > 0 ? ev->auto_resp : -1;
		return kv_jr_skip(jr);
	}
	if (kv_jr_peek(jr) != KV_JR_OBJECT)
		return kv_jr_skip(jr);
	if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((r = kv_jr_member(jr, key, sizeof(key))) == 1) {
		if (strcmp(key, "create_response") == 0 && kv_jr_peek(jr) == KV_JR_FALSE)
			on = 0;
		if (kv_jr_skip(jr) == -1)
			return -1;
	}
	if (r == -1)
		return -1;
	if (on)
		ev->auto_resp = 1;
	else if (ev->auto_resp == 0)
		ev->auto_resp = -1;
	return 0;
}

/* A response.create's "tools": each element's "type", as the HTTP body's
 * scan tells a server tool (reqscan_tools.c). */
static int
read_tools(struct kv_jr *jr, struct kv_ws_cev *ev)
{
	char key[KEY_MAX], type[KV_WS_TYPE_MAX];
	int r, kind;

	if (kv_jr_peek(jr) != KV_JR_ARRAY)
		return kv_jr_skip(jr);
	if (kv_jr_enter(jr, KV_JR_ARRAY) == -1)
		return -1;
	while ((r = kv_jr_element(jr)) == 1) {
		if (kv_jr_peek(jr) != KV_JR_OBJECT) {
			if (kv_jr_skip(jr) == -1)
				return -1;
			continue;
		}
		if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
			return -1;
		while ((r = kv_jr_member(jr, key, sizeof(key))) == 1) {
			if (strcmp(key, "type") == 0 && kv_jr_peek(jr) == KV_JR_STRING &&
			    kv_jr_string(jr, type, sizeof(type)) == 0) {
				kind = kv_rs_server_tool(type, strlen(type));
				ev->server_tools += kind != T_NONE;
				ev->web_search += kind == T_WEB_SEARCH;
			} else if (kv_jr_skip(jr) == -1) {
				return -1;
			}
		}
		if (r == -1)
			return -1;
	}
	return r;
}

/* An object whose members are read by FN (a member name and the reader
 * positioned at its value); the others skipped. DEPTH bounds the walk. */
static int walk(struct kv_jr *jr, struct kv_ws_cev *ev, int where, int depth);

enum { AT_TOP, AT_RESPONSE, AT_SESSION, AT_AUDIO, AT_INPUT };

static int
member(struct kv_jr *jr, struct kv_ws_cev *ev, int where, const char *key, int depth)
{
	int create = ev->kind == KV_WS_CEV_CREATE;
	int64_t v = -1;

	if (strcmp(key, "model") == 0 && (where == AT_TOP || where == AT_RESPONSE ||
	    where == AT_SESSION))
		return read_model(jr, ev->model);
	if ((strcmp(key, "max_output_tokens") == 0 ||
	    strcmp(key, "max_response_output_tokens") == 0) && where != AT_AUDIO &&
	    where != AT_INPUT) {
		if (read_limit(jr, &v) == -1)
			return -1;
		keep_max(create ? &ev->max_output : &ev->session_max, v);
		return 0;
	}
	if (strcmp(key, "turn_detection") == 0 && (where == AT_SESSION || where == AT_INPUT))
		return read_turn_detection(jr, ev);
	if (create && (where == AT_TOP || where == AT_RESPONSE)) {
		if (strcmp(key, "tools") == 0)
			return read_tools(jr, ev);
		if (strcmp(key, "max_tool_calls") == 0) {
			if (read_limit(jr, &v) == -1)
				return -1;
			keep_max(&ev->max_tool_calls, v);
			return 0;
		}
	}
	if (kv_jr_peek(jr) == KV_JR_OBJECT && depth < 4) {
		if (where == AT_TOP && create && strcmp(key, "response") == 0)
			return walk(jr, ev, AT_RESPONSE, depth + 1);
		if (where == AT_TOP && !create && strcmp(key, "session") == 0)
			return walk(jr, ev, AT_SESSION, depth + 1);
		if (where == AT_SESSION && strcmp(key, "audio") == 0)
			return walk(jr, ev, AT_AUDIO, depth + 1);
		if (where == AT_AUDIO && strcmp(key, "input") == 0)
			return walk(jr, ev, AT_INPUT, depth + 1);
	}
	return kv_jr_skip(jr);
}

static int
walk(struct kv_jr *jr, struct kv_ws_cev *ev, int where, int depth)
{
	char key[KEY_MAX];
	int r;

	if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((r = kv_jr_member(jr, key, sizeof(key))) == 1)
		if (member(jr, ev, where, key, depth) == -1)
			return -1;
	return r;
}

/* The top-level "type", wherever it sits among the members. */
static int
event_kind(const char *json, size_t len, enum kv_ws_cev_kind *kind)
{
	char key[KEY_MAX], type[KV_WS_TYPE_MAX];
	struct kv_jr jr;
	int r;

	*kind = KV_WS_CEV_OTHER;
	kv_jr_init(&jr, json, len);
	if (kv_jr_peek(&jr) != KV_JR_OBJECT || kv_jr_enter(&jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((r = kv_jr_member(&jr, key, sizeof(key))) == 1) {
		if (strcmp(key, "type") == 0 && kv_jr_peek(&jr) == KV_JR_STRING &&
		    kv_jr_string(&jr, type, sizeof(type)) == 0) {
			if (strcmp(type, "response.create") == 0)
				*kind = KV_WS_CEV_CREATE;
			else if (strcmp(type, "session.update") == 0)
				*kind = KV_WS_CEV_SESSION;
			continue;
		}
		if (kv_jr_skip(&jr) == -1)
			return -1;
	}
	return r == 0 && kv_jr_finish(&jr) == 0 ? 0 : -1;
}

int
kv_ws_client_event(const char *json, size_t len, struct kv_ws_cev *ev)
{
	struct kv_jr jr;

	memset(ev, 0, sizeof(*ev));
	ev->max_output = ev->session_max = ev->max_tool_calls = -1;
	if (event_kind(json, len, &ev->kind) == -1)
		return -1;
	if (ev->kind == KV_WS_CEV_OTHER)
		return 0;
	kv_jr_init(&jr, json, len);
	return walk(&jr, ev, AT_TOP, 0) == 0 ? 0 : -1;
}

void
kv_ws_sniff_init(struct kv_ws_sniff *s)
{
	memset(s, 0, sizeof(*s));
}

/* A string of the top-level object ended: a key, or the type's value. */
static void
string_end(struct kv_ws_sniff *s)
{
	if (s->is_key) {
		s->key_type = s->klen == 4 && memcmp(s->key, "type", 4) == 0;
		s->is_key = 0;
		s->expect_key = 0;
	} else if (s->capture) {
		s->capture = 0;
		if (s->tlen < KV_WS_TYPE_MAX) {
			s->type[s->tlen] = '\0';
			s->done = 1;
		}
	}
}

static void
string_byte(struct kv_ws_sniff *s, uint8_t b)
{
	if (s->esc) {
		s->esc = 0;
	} else if (b == '\\') {
		s->esc = 1;
		s->klen = s->is_key ? 5 : s->klen;	/* an escaped key is not "type" */
	} else if (b == '"') {
		s->in_str = 0;
		if (s->depth == 1)
			string_end(s);
		return;
	}
	if (s->is_key && s->klen < 5)
		s->key[s->klen++] = (char)b;
	else if (s->is_key)
		s->klen = 5;
	if (s->capture && s->tlen < KV_WS_TYPE_MAX)
		s->type[s->tlen++] = (char)b;
}

static void
structure_byte(struct kv_ws_sniff *s, uint8_t b)
{
	if (b == ' ' || b == '\t' || b == '\r' || b == '\n')
		return;
	if (s->depth == 1 && b == ':') {
		s->want_val = s->key_type;
		return;
	}
	if (b == '"') {
		s->in_str = 1;
		s->is_key = s->depth == 1 && s->expect_key;
		s->klen = 0;
		s->capture = s->depth == 1 && s->want_val && !s->done;
		s->tlen = 0;
		s->want_val = 0;
		return;
	}
	s->want_val = 0;
	if (b == '{' || b == '[') {
		s->depth++;
		s->expect_key = s->depth == 1 && b == '{';
	} else if (b == '}' || b == ']') {
		s->depth--;
	} else if (b == ',' && s->depth == 1) {
		s->expect_key = 1;
	}
}

void
kv_ws_sniff_feed(struct kv_ws_sniff *s, const uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 0; i < len && !s->done; i++) {
		if (s->in_str)
			string_byte(s, buf[i]);
		else
			structure_byte(s, buf[i]);
	}
}

const char *
kv_ws_sniff_type(const struct kv_ws_sniff *s)
{
	return s->done ? s->type : "";
}

/* The events of OpenAI's WebSocket transports that kilovolt reads (the
 * Responses API's WebSocket mode, the Realtime API): a client event held
 * whole (a small JSON object, read with common/jsonread.h) for what a turn
 * may cost, and the top-level "type" of a server event sniffed as its
 * bytes stream by, never held. Pure: no I/O, no allocation. */
#ifndef KV_WS_EVENT_H
#define KV_WS_EVENT_H

#include <stddef.h>
#include <stdint.h>

#define KV_WS_TYPE_MAX	48	/* longer "type" values are not ours */
#define KV_WS_MODEL_MAX	96
#define KV_WS_INF	INT64_MAX	/* an output limit of "inf" */

enum kv_ws_cev_kind {
	KV_WS_CEV_OTHER,	/* relayed as it is */
	KV_WS_CEV_CREATE,	/* response.create: a turn */
	KV_WS_CEV_SESSION,	/* session.update (Realtime) */
};

/* What a client event says. Output limits: -1 absent, KV_WS_INF "inf". */
struct kv_ws_cev {
	enum kv_ws_cev_kind kind;
	char		 model[KV_WS_MODEL_MAX];	/* "" when absent */
	int64_t		 max_output;	/* response.create: max_output_tokens
					   (Responses: top level; Realtime:
					   response.max_output_tokens or
					   max_response_output_tokens) */
	int64_t		 session_max;	/* session.update: the session's
					   max_response_output_tokens (or
					   max_output_tokens) */
	int64_t		 server_tools;	/* response.create: tools the provider
					   runs itself in a loop (web_search*,
					   file_search*, mcp, ...), */
	int64_t		 web_search;	/* ... of them web search, billed a call */
	int64_t		 max_tool_calls;	/* its max_tool_calls; -1 none */
	int		 auto_resp;	/* session.update: turn detection set
					   that creates responses by itself
					   (create_response absent or true);
					   0 none named, -1 turned off */
};

/* Read the client event JSON[0..LEN) into *EV. Returns 0, or -1 when it
 * is not a JSON object (the provider answers that; nothing is billed). */
int	kv_ws_client_event(const char *json, size_t len, struct kv_ws_cev *ev);

/* A server event's top-level "type", found as its bytes go by. */
struct kv_ws_sniff {
	int		 depth;
	uint8_t		 in_str, esc, is_key, expect_key, key_type, want_val;
	uint8_t		 capture, done, klen, tlen;
	char		 key[5];
	char		 type[KV_WS_TYPE_MAX];
};

void	kv_ws_sniff_init(struct kv_ws_sniff *s);
/* Feed the next BUF[0..LEN) of the event; any split. */
void	kv_ws_sniff_feed(struct kv_ws_sniff *s, const uint8_t *buf, size_t len);
/* The type found, "" when none (yet). */
const char *kv_ws_sniff_type(const struct kv_ws_sniff *s);

#endif

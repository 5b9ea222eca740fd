/* One turn of a WebSocket session (ws_session.c), metered as a request:
 * reserved before its client event goes upstream, settled by the usage
 * of its response.completed (Responses) or response.done (Realtime). A
 * service: the session phase calls it, it calls the ledger and settle.c. */
#ifndef KV_WS_TURN_H
#define KV_WS_TURN_H

#include <stddef.h>
#include <stdint.h>

#include "worker/conn-t.h"
#include "worker/ws_event.h"

/* Reserve a turn of MODEL (the session's when the event names none) with
 * output limit MAX_OUT (-1 none, KV_WS_INF "inf"): its input at most the
 * model's context window at the dearest of its input prices (text or
 * audio), its output at most MAX_OUT, else the model's max_output, else
 * [budget] reserve_output_tokens, at the dearest output price; with
 * server tools in TOOLS (its response.create; NULL none) the provider
 * loops: a context window and a web search call each time, for
 * max_tool_calls calls, else [budget] max_tool_turns, as on HTTP. Then the
 * budget tree and the key's rate limits (a turn is a request). Returns 0
 * (the turn holds c->adm.resv), or -1 with the in-band error's CODE and
 * message in MSG (nothing held). */
int	ws_turn_reserve(struct kv_conn *c, const char *model, int64_t max_out,
	    const struct kv_ws_cev *tools, const char **code, char *msg, size_t mlen);

/* A turn the provider started by itself that the budget refused (its
 * response.cancel sent): held at nothing, at the key and its tree nodes,
 * so that what the provider bills for it before the cancel lands is
 * charged when its usage comes, past the budget. 0, or -1 with nothing
 * held (no free record: the charge is lost, logged KV0563). */
int	ws_turn_hold(struct kv_conn *c, const char *model);

/* The turn's client event (BYTES long) went upstream: from now on the
 * provider may bill it (settle_mark_sent). */
void	ws_turn_sent(struct kv_conn *c, size_t bytes);

/* Settle the turn: its usage when the scanner holds the final one, else
 * as a cut (README "What a request is charged"); counted and logged as a
 * request. The connection is then ready for the next turn. */
void	ws_turn_settle(struct kv_conn *c);

#endif

/* The WebSocket session phase (ws_session.c). */
#ifndef KV_WS_SESSION_H
#define KV_WS_SESSION_H

#include "worker/conn-t.h"

/* CS_WS: after the provider's 101 (relay_head.c) went into obuf, relay
 * the frames both ways until either side closes: KV_DONE for a close,
 * KV_CUT for a broken protocol or socket. Each turn is metered
 * (ws_turn.h): reserved before its response.create goes upstream (or
 * refused with an error event, the socket left open), settled by the
 * usage of its last event; a turn open when the session ends is charged
 * as a cut. */
enum kv_rc ws_session(struct kv_conn *c);

/* The session was idle past upstream_timeout: closed (a turn open is
 * charged as a cut). */
enum kv_rc ws_timeout(struct kv_conn *c);

/* The client hung up: 1, the phase reads its last frames and its end. */
int	ws_client_left(struct kv_conn *c);

#endif

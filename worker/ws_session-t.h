/* A WebSocket session's state (ws_session.c), from the 101 on: the two
 * frame parsers, what waits for the upstream, the client message held
 * until it is known, and the turn in flight. Allocated at the upgrade;
 * its buffers come with bytes and go when they are written. */
#ifndef KV_WS_SESSION_T_H
#define KV_WS_SESSION_T_H

#include <stdint.h>
#include <stdlib.h>

#include "common/ws_frame.h"
#include "worker/ws_event.h"

enum ws_turn_state {
	WS_TURN_NONE,
	WS_TURN_SENT,		/* its event went upstream, nothing answered */
	WS_TURN_RUNNING,	/* the provider answers it */
};

struct kv_ws_sess {
	int			 kind;		/* KV_WSK_* (ws_upgrade.h) */
	struct kv_ws_parser	 cp, sp;	/* the client's frames, the upstream's */
	/* frames for the upstream, whole, re-framed and masked */
	uint8_t			*up;
	size_t			 uplen, uppos;
	/* the client's frame (a data message, or a control frame) held
	 * until it is whole: unmasked, and its opcode */
	uint8_t			*msg;
	size_t			 mlen, mcap;
	uint8_t			 mop;
	uint8_t			 cop, clen;	/* a control frame inside a message */
	uint8_t			 ctl[125];
	/* the upstream's message: data, not a control frame; sniffed */
	int			 s_ctl;
	struct kv_ws_sniff	 sniff;
	enum ws_turn_state	 turn;
	/* the session's facts (Realtime: the URL's model, session.update) */
	char			 model[KV_WS_MODEL_MAX];
	int64_t			 session_max;	/* -1 unset, KV_WS_INF */
	int			 auto_resp;	/* 1 automatic responses on */
	/* an error event for the client, sent between the upstream's frames */
	char			*pend;
	size_t			 pendlen;
	uint32_t		 up_rwant, up_wwant;
	int			 up_eof;
};

static inline void
kv_ws_sess_free(struct kv_ws_sess *s)
{
	if (s == NULL)
		return;
	free(s->up);
	free(s->msg);
	free(s->pend);
	free(s);
}

#endif

/* A WebSocket frame parser (RFC 6455 section 5): pure, resumable, no
 * allocation. The relay feeds it whatever each read returned; it tells
 * where each frame's header ends and which bytes are payload, so the
 * payload can be forwarded as it arrives and looked at (unmasked in place,
 * kv_ws_mask) only where kilovolt needs to. No extension is negotiated
 * (kilovolt declines permessage-deflate), so every reserved bit is refused. */
#ifndef KV_WS_FRAME_H
#define KV_WS_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define KV_WS_OP_CONT	0x0
#define KV_WS_OP_TEXT	0x1
#define KV_WS_OP_BINARY	0x2
#define KV_WS_OP_CLOSE	0x8
#define KV_WS_OP_PING	0x9
#define KV_WS_OP_PONG	0xA
#define KV_WS_CONTROL_MAX	125	/* a control frame's payload, at most */
#define KV_WS_HEAD_MAX	14	/* 2 + 8 (64-bit length) + 4 (mask key) */

/* Who sends the frames a parser reads: a client's must be masked, a
 * server's must not (RFC 6455 5.1). */
enum kv_ws_side {
	KV_WS_FROM_CLIENT,
	KV_WS_FROM_SERVER,
};

/* What one kv_ws_feed call found. */
enum kv_ws_kind {
	KV_WS_NEED,	/* every byte was header: feed more */
	KV_WS_HEAD,	/* a frame's header is whole: p->fin, opcode, len, mask;
			   ev->data[0..len) its bytes, held in the parser */
	KV_WS_DATA,	/* payload bytes: ev->data[0..len) at payload offset ev->off */
	KV_WS_ERR,	/* a protocol error: ev->err; the parser is stuck there */
};

/* Why a stream was refused; each is close code 1002 (protocol error). */
enum kv_ws_err {
	KV_WS_OK,
	KV_WS_ERR_RSV,		/* a reserved bit set (no extension agreed) */
	KV_WS_ERR_OPCODE,	/* a reserved opcode */
	KV_WS_ERR_MASK,		/* a client frame unmasked, a server frame masked */
	KV_WS_ERR_CONTROL,	/* a control frame fragmented or over 125 bytes */
	KV_WS_ERR_LENGTH,	/* a 64-bit length with its top bit, or not minimal */
	KV_WS_ERR_CONT,		/* a continuation with no message, or a new
				   data frame inside one */
};

struct kv_ws_event {
	enum kv_ws_kind	 kind;
	int		 end;	/* HEAD or DATA: the frame's payload ends here */
	uint8_t		*data;	/* DATA: in the caller's buffer */
	size_t		 len;
	uint64_t	 off;	/* DATA: offset of data[0] in the frame's payload */
	enum kv_ws_err	 err;
};

/* The parser. After a HEAD event and until the frame's last DATA, the
 * frame's facts stay here. in_msg says a fragmented data message is open
 * (msg_op its opcode): control frames may come between its fragments. */
struct kv_ws_parser {
	enum kv_ws_side	 side;
	uint8_t		 head[KV_WS_HEAD_MAX];
	uint8_t		 hlen;		/* header bytes held */
	uint8_t		 in_payload;	/* the header is whole */
	uint8_t		 fin, opcode, masked;
	uint8_t		 mask[4];
	uint8_t		 in_msg, msg_op;
	uint64_t	 len;		/* this frame's payload length */
	uint64_t	 off;		/* payload bytes already handed out */
	enum kv_ws_err	 err;
};

/* A parser for frames coming from SIDE, between frames. */
void	kv_ws_init(struct kv_ws_parser *p, enum kv_ws_side side);

/* Read in[0..len) (len > 0): returns the bytes consumed (≤ len) and what
 * they were in *ev. A call stops at the first thing to report: a header
 * made whole (HEAD; its end set for an empty payload), a run of payload
 * (DATA, never past the frame's end; end set when it reaches it), or an
 * error (ERR, 0 consumed, and every later call the same). NEED consumes
 * all of in (a header's first bytes). Payload is handed out as it is,
 * masked: kv_ws_mask unmasks what the caller wants to read. Where the
 * reads split the stream changes the events' cut points only, never the
 * frames, payloads or verdict. */
size_t	kv_ws_feed(struct kv_ws_parser *p, uint8_t *in, size_t len,
	    struct kv_ws_event *ev);

/* XOR buf[0..len), which starts at payload offset OFF, with the mask key:
 * it masks plain bytes and unmasks masked ones, so a caller can unmask in
 * place, read, and mask again before forwarding. */
void	kv_ws_mask(const uint8_t key[4], uint64_t off, uint8_t *buf, size_t len);

/* A short static text for ERR, for a log line. */
const char *kv_ws_strerror(enum kv_ws_err err);

#endif

/* The WebSocket session phase: after the provider's 101, frames relayed
 * both ways as they arrive. The upstream's stream through as they come,
 * their text sniffed for its type and, during a turn, scanned for its
 * usage (never held). The client's are held until whole (a data message,
 * bounded; a control frame) and then sent on as one frame: a turn's event
 * (response.create) is reserved first (ws_turn.c) and, refused, answered
 * in-band with an error event, the socket left open. */
#include "worker/ws_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "common/log.h"
#include "worker/memguard.h"
#include "worker/ws_maskkey.h"
#include "worker/ws_session-t.h"
#include "worker/ws_turn.h"
#include "worker/ws_upgrade.h"

#define WS_READ		(16 * 1024)	/* one read, either side */
#define WS_MSG_MAX	(16 * 1024 * 1024)	/* a client message held whole */
#define WS_RUNS		8	/* reads per side a turn, then yield */

/* Append N bytes to the frames for the upstream. */
static int
up_put(struct kv_ws_sess *s, const void *p, size_t n)
{
	uint8_t *nb;

	if ((nb = realloc(s->up, s->uplen + n)) == NULL)
		return -1;
	s->up = nb;
	memcpy(s->up + s->uplen, p, n);
	s->uplen += n;
	return 0;
}

/* A frame's header into H: FIN set, OP, LEN, masked with KEY when KEY. */
static size_t
frame_head(uint8_t *h, uint8_t op, uint64_t len, const uint8_t *key)
{
	size_t n = 2;
	int i;

	h[0] = (uint8_t)(0x80 | op);
	if (len < 126) {
		h[1] = (uint8_t)len;
	} else if (len <= 0xffff) {
		h[1] = 126;
		h[2] = (uint8_t)(len >> 8);
		h[3] = (uint8_t)len;
		n = 4;
	} else {
		h[1] = 127;
		for (i = 0; i < 8; i++)
			h[2 + i] = (uint8_t)(len >> (56 - 8 * i));
		n = 10;
	}
	if (key != NULL) {
		h[1] |= 0x80;
		memcpy(h + n, key, 4);
		n += 4;
	}
	return n;
}

/* One whole client frame or message P[0..LEN) (unmasked; masked here in
 * place) to the upstream as a single frame, under a fresh key of ours:
 * never the client's, which it could choose (RFC 6455 5.3). */
static int
up_frame(struct kv_ws_sess *s, uint8_t op, uint8_t *p, size_t len)
{
	uint8_t h[KV_WS_HEAD_MAX], key[4];
	size_t hl;

	kv_ws_maskkey(key);
	hl = frame_head(h, op, len, key);

	kv_ws_mask(key, 0, p, len);
	return up_put(s, h, hl) == -1 || up_put(s, p, len) == -1 ? -1 : 0;
}

/* JSON string text of S (quotes, backslashes, control bytes escaped). */
static size_t
json_text(char *out, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s != '\0' && n + 7 < cap; s++) {
		if (*s == '"' || *s == '\\') {
			out[n++] = '\\';
			out[n++] = *s;
		} else if ((unsigned char)*s < 0x20) {
			n += (size_t)snprintf(out + n, cap - n, "\\u%04x", (unsigned char)*s);
		} else {
			out[n++] = *s;
		}
	}
	return n;
}

/* An error event in OpenAI's shape for the client: queued, it goes out
 * between the upstream's frames (ws_flush_pend). */
static void
inband_error(struct kv_conn *c, const char *code, const char *msg)
{
	struct kv_ws_sess *s = c->resp.ws;
	char text[900], esc[700];
	size_t n, hl;
	uint8_t h[KV_WS_HEAD_MAX];
	char *nb;

	esc[json_text(esc, sizeof(esc), msg)] = '\0';
	n = (size_t)snprintf(text, sizeof(text), "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"%s\",\"code\":\"%s\",\"message\":\"%s\",\"param\":null,\"event_id\":null}}",
	    code, code, esc);
	if (n >= sizeof(text))
		n = sizeof(text) - 1;
	hl = frame_head(h, KV_WS_OP_TEXT, n, NULL);
	if ((nb = realloc(s->pend, s->pendlen + hl + n)) == NULL)
		return;
	s->pend = nb;
	memcpy(s->pend + s->pendlen, h, hl);
	memcpy(s->pend + s->pendlen + hl, text, n);
	s->pendlen += hl + n;
}

/* A session.update (Realtime): the session's model and output bound as
 * it names them; automatic responses (turn detection creating them) only
 * with a finite bound for each. -1 when refused in-band. */
static int
session_update(struct kv_conn *c, const struct kv_ws_cev *ev)
{
	struct kv_ws_sess *s = c->resp.ws;
	int64_t max = ev->session_max != -1 ? ev->session_max : s->session_max;

	if (ev->auto_resp > 0 && (max < 0 || max == KV_WS_INF)) {
		inband_error(c, "invalid_request_error", "kilovolt reserves each automatic "
		    "response before it starts: turn detection that creates responses needs "
		    "a finite max_output_tokens (max_response_output_tokens) in the session, "
		    "or create_response false");
		return -1;
	}
	if (ev->model[0] != '\0')
		memcpy(s->model, ev->model, sizeof(s->model));
	s->session_max = max;
	if (ev->auto_resp != 0)
		s->auto_resp = ev->auto_resp > 0;
	return 0;
}

/* A response.create: one turn at a time, reserved before it goes. -1
 * when refused in-band. */
static int
turn_start(struct kv_conn *c, const struct kv_ws_cev *ev)
{
	struct kv_ws_sess *s = c->resp.ws;
	const char *code;
	char msg[512];
	int64_t lim = ev->max_output;

	if (s->turn != WS_TURN_NONE) {
		inband_error(c, "conversation_already_has_active_response", "kilovolt meters "
		    "one response at a time on a session: wait for the response in progress "
		    "to finish");
		return -1;
	}
	if (lim < 0 && s->kind == KV_WSK_REALTIME)
		lim = s->session_max;
	if (ws_turn_reserve(c, ev->model[0] != '\0' ? ev->model : s->model, lim, ev, &code, msg,
	    sizeof(msg)) == -1) {
		inband_error(c, code, msg);
		return -1;
	}
	return 0;
}

/* The held message's buffer is now CAP bytes: counted in the worker's
 * memory guard as the connection's own (c->held, given back when the
 * connection closes). */
static void
msg_held(struct kv_conn *c, size_t cap)
{
	struct kv_ws_sess *s = c->resp.ws;
	int64_t delta = (int64_t)cap - (int64_t)s->mcap;

	kv_memguard_hold(&c->w->mem, delta);
	c->held += delta;
	s->mcap = cap;
}

/* The client's data message is whole in s->msg: read, then sent on as
 * one frame, or refused in-band (the socket stays open). */
static int
client_message(struct kv_conn *c)
{
	struct kv_ws_sess *s = c->resp.ws;
	struct kv_ws_cev ev;
	int send = 1;

	if (kv_ws_client_event((const char *)s->msg, s->mlen, &ev) == -1) {
		inband_error(c, "invalid_request_error", "kilovolt reads each client event to "
		    "meter the session, and this one is not a JSON object: not sent");
		send = 0;
	} else if (ev.kind == KV_WS_CEV_SESSION && s->kind == KV_WSK_REALTIME) {
		send = session_update(c, &ev) == 0;
	} else if (ev.kind == KV_WS_CEV_CREATE) {
		send = turn_start(c, &ev) == 0;
	}
	if (send && up_frame(s, s->mop, s->msg, s->mlen) == -1)
		return -1;
	if (send && ev.kind == KV_WS_CEV_CREATE) {
		ws_turn_sent(c, s->mlen);
		s->turn = WS_TURN_SENT;
	}
	/* an idle session holds no message buffer */
	free(s->msg);
	s->msg = NULL;
	s->mlen = 0;
	msg_held(c, 0);
	return 0;
}

/* Room for the message to grow by LEN bytes, within WS_MSG_MAX and the
 * memory guard (the connections' share, the worker's limit). */
static int
msg_room(struct kv_conn *c, uint64_t len)
{
	struct kv_ws_sess *s = c->resp.ws;
	uint8_t *nb;

	if (len > WS_MSG_MAX - s->mlen) {
		kv_log_warnx("KV0560", "key %s: a WebSocket client message over %d bytes: "
		    "the session is closed", c->req.keyid, WS_MSG_MAX);
		return -1;
	}
	if (s->mlen + len <= s->mcap)
		return 0;
	if (kv_memguard_conns_over(&c->w->mem, (int64_t)(s->mlen + len - s->mcap)) ||
	    kv_memguard_at_limit(&c->w->mem, c->w->now_ms)) {
		kv_log_warnx("KV0564", "key %s: no memory for a WebSocket client message of "
		    "%llu bytes (the worker's memory guard is full): the session is closed",
		    c->req.keyid, (unsigned long long)(s->mlen + len));
		return -1;
	}
	if ((nb = realloc(s->msg, s->mlen + len)) == NULL)
		return -1;
	s->msg = nb;
	msg_held(c, s->mlen + len);
	return 0;
}

/* A client frame ended: a control frame goes on at once, a message when
 * its last fragment is in. */
static int
client_frame_end(struct kv_conn *c)
{
	struct kv_ws_sess *s = c->resp.ws;

	if (s->cp.opcode & 0x8)
		return up_frame(s, s->cop, s->ctl, s->clen);
	return s->cp.fin ? client_message(c) : 0;
}

static int
client_event(struct kv_conn *c, const struct kv_ws_event *ev)
{
	struct kv_ws_sess *s = c->resp.ws;
	uint8_t *to;

	if (ev->kind == KV_WS_HEAD) {
		if (s->cp.opcode & 0x8) {
			s->cop = s->cp.opcode;
			s->clen = 0;
		} else {
			if (s->cp.opcode != KV_WS_OP_CONT) {
				s->mop = s->cp.opcode;
				s->mlen = 0;
			}
			if (msg_room(c, s->cp.len) == -1)
				return -1;
		}
	} else if (ev->kind == KV_WS_DATA) {
		if (s->cp.opcode & 0x8) {
			to = s->ctl + s->clen;
			s->clen += (uint8_t)ev->len;
		} else {
			to = s->msg + s->mlen;
			s->mlen += ev->len;
		}
		memcpy(to, ev->data, ev->len);
		kv_ws_mask(s->cp.mask, ev->off, to, ev->len);
	}
	return ev->end ? client_frame_end(c) : 0;
}

/* BUF[0..N) through parser P, each event to ON: 0, or -1 when ON failed
 * or, with *ERR set, the bytes broke the protocol. */
static int
feed_all(struct kv_conn *c, struct kv_ws_parser *p, uint8_t *buf, size_t n,
    int (*on)(struct kv_conn *, const struct kv_ws_event *), enum kv_ws_err *err)
{
	struct kv_ws_event ev;
	size_t off = 0;

	*err = KV_WS_OK;
	while (off < n) {
		off += kv_ws_feed(p, buf + off, n - off, &ev);
		if (ev.kind == KV_WS_ERR) {
			*err = ev.err;
			return -1;
		}
		if (on(c, &ev) == -1)
			return -1;
	}
	return 0;
}

/* Client bytes BUF[0..N): -1 on a protocol error. */
static int
client_bytes(struct kv_conn *c, uint8_t *buf, size_t n)
{
	enum kv_ws_err err;

	if (feed_all(c, &c->resp.ws->cp, buf, n, client_event, &err) == 0)
		return 0;
	if (err != KV_WS_OK)
		kv_log_warnx("KV0561", "key %s: a WebSocket client broke the protocol (%s): "
		    "the session is closed", c->req.keyid, kv_ws_strerror(err));
	return -1;
}

/* A response the provider started by itself (Realtime's turn detection):
 * reserved now at the session's bound, else cancelled at once, the client
 * told, and what it bills for it charged all the same (ws_turn_hold). */
static void
auto_turn(struct kv_conn *c)
{
	static const char cancel[] = "{\"type\":\"response.cancel\"}";
	struct kv_ws_sess *s = c->resp.ws;
	uint8_t body[sizeof(cancel) - 1];
	const char *code;
	char msg[512];

	if (ws_turn_reserve(c, s->model, s->session_max, NULL, &code, msg, sizeof(msg)) == -1) {
		memcpy(body, cancel, sizeof(body));
		(void)up_frame(s, KV_WS_OP_TEXT, body, sizeof(body));
		inband_error(c, code, msg);
		/* the provider bills what it made before the cancel lands: its
		 * response.done's usage, charged past the budget */
		if (ws_turn_hold(c, s->model) == -1)
			return;
	}
	ws_turn_sent(c, 0);
	c->t_first_ms = c->w->now_ms;
	s->turn = WS_TURN_RUNNING;
}

/* The upstream's data message ended: what its type means for the turn,
 * and its usage settles it. */
static void
server_message(struct kv_conn *c)
{
	struct kv_ws_sess *s = c->resp.ws;
	const char *type = kv_ws_sniff_type(&s->sniff);
	int error = strcmp(type, "error") == 0;

	if (c->resp.scan_on)
		kv_usage_end_event(&c->resp.scan);
	if (error && s->turn == WS_TURN_SENT)
		c->req_sent = 0;	/* refused before it began: nothing billed */
	if (s->turn == WS_TURN_SENT && !error) {
		c->t_first_ms = c->w->now_ms;
		s->turn = WS_TURN_RUNNING;
	}
	if (s->turn == WS_TURN_NONE && s->kind == KV_WSK_REALTIME &&
	    strcmp(type, "response.created") == 0)
		auto_turn(c);
	/* a Responses turn ends with its final event or an error; a Realtime
	 * one with response.done, whatever came before */
	if (s->turn != WS_TURN_NONE && ((c->resp.scan_on && c->resp.scan.final) ||
	    (error && (s->turn == WS_TURN_SENT || s->kind == KV_WSK_RESPONSES)))) {
		ws_turn_settle(c);
		s->turn = WS_TURN_NONE;
	}
}

static int
server_event(struct kv_conn *c, const struct kv_ws_event *ev)
{
	struct kv_ws_sess *s = c->resp.ws;

	if (ev->kind == KV_WS_HEAD) {
		s->s_ctl = (s->sp.opcode & 0x8) != 0;
		if (!s->s_ctl && s->sp.opcode != KV_WS_OP_CONT)
			kv_ws_sniff_init(&s->sniff);
	} else if (ev->kind == KV_WS_DATA && !s->s_ctl) {
		kv_ws_sniff_feed(&s->sniff, ev->data, ev->len);
		if (c->resp.scan_on)
			kv_usage_feed_event(&c->resp.scan, (const char *)ev->data, ev->len);
	}
	if (ev->kind != KV_WS_NEED && conn_obuf_put(c, (const char *)ev->data, ev->len) == -1)
		return -1;
	if (ev->end && !s->s_ctl && s->sp.fin)
		server_message(c);
	return 0;
}

/* Our error events go out between the upstream's messages. */
static int
pend_out(struct kv_conn *c)
{
	struct kv_ws_sess *s = c->resp.ws;

	if (s->pend == NULL || s->sp.in_payload || s->sp.in_msg)
		return 0;
	if (conn_obuf_put(c, s->pend, s->pendlen) == -1)
		return -1;
	free(s->pend);
	s->pend = NULL;
	s->pendlen = 0;
	return 0;
}

/* Upstream bytes BUF[0..N): -1 on a protocol error. */
static int
server_bytes(struct kv_conn *c, uint8_t *buf, size_t n)
{
	enum kv_ws_err err;

	if (feed_all(c, &c->resp.ws->sp, buf, n, server_event, &err) == 0)
		return pend_out(c);
	if (err != KV_WS_OK)
		kv_log_warnx("KV0562", "upstream %s: a WebSocket frame broke the protocol "
		    "(%s): the session is closed", c->upstream_name, kv_ws_strerror(err));
	return -1;
}

/* ---- the two sockets --------------------------------------------------- */

/* Write the frames for the upstream: 1 all written, 0 would block, -1. */
static int
flush_up(struct kv_conn *c)
{
	struct kv_ws_sess *s = c->resp.ws;
	ssize_t n;

	while (s->uppos < s->uplen) {
		n = kv_stream_write(&c->att.uc->s, s->up + s->uppos, s->uplen - s->uppos);
		if (n == KV_IO_AGAIN) {
			s->up_wwant = (uint32_t)c->att.uc->s.want;
			return 0;
		}
		if (n < 0)
			return -1;
		s->uppos += (size_t)n;
	}
	free(s->up);
	s->up = NULL;
	s->uplen = s->uppos = 0;
	return 1;
}

/* Write what waits for the client (obuf): 1 all, 0 would block, -1. */
static int
flush_client(struct kv_conn *c)
{
	struct kv_stream cs = { .fd = c->cfd };
	ssize_t n;

	while (c->opos < c->olen) {
		n = kv_stream_write(&cs, c->obuf + c->opos, c->olen - c->opos);
		if (n == KV_IO_AGAIN)
			return 0;
		if (n < 0)
			return -1;
		c->opos += (size_t)n;
		c->bytes_out += (uint64_t)n;
	}
	/* an idle session holds no output buffer */
	free(c->obuf);
	c->obuf = NULL;
	c->olen = c->opos = c->ocap = 0;
	return 1;
}

/* One read of the client's frames: 1 read, 0 would block, -1 error, -2
 * the client closed. */
static int
read_client(struct kv_conn *c)
{
	uint8_t buf[WS_READ];
	ssize_t n;

	n = conn_client_read(c, (char *)buf, sizeof(buf), 0);
	if (n == KV_IO_AGAIN)
		return 0;
	if (n == 0)
		return -2;
	if (n < 0)
		return -1;
	if (client_bytes(c, buf, (size_t)n) == -1 || pend_out(c) == -1)
		return -1;
	return 1;
}

/* One read of the upstream's frames: 1 read (or its end), 0 would
 * block, -1 error. */
static int
read_upstream(struct kv_conn *c)
{
	struct kv_ws_sess *s = c->resp.ws;
	uint8_t buf[WS_READ];
	ssize_t n;

	n = kv_stream_read(&c->att.uc->s, buf, sizeof(buf));
	if (n == KV_IO_AGAIN) {
		s->up_rwant = (uint32_t)c->att.uc->s.want;
		return 0;
	}
	if (n == 0) {
		s->up_eof = 1;
		return 1;
	}
	if (n < 0)
		return -1;
	return server_bytes(c, buf, (size_t)n) == -1 ? -1 : 1;
}

/* The session ends (RC): a turn still open is charged as a cut. */
static enum kv_rc
ws_end(struct kv_conn *c, enum kv_rc rc)
{
	struct kv_ws_sess *s = c->resp.ws;

	if (s->turn != WS_TURN_NONE) {
		c->cut = 1;
		ws_turn_settle(c);
		s->turn = WS_TURN_NONE;
	}
	c->client_keep = 0;
	return rc;
}

/* Wait for whichever side can move: the client's input while nothing
 * waits for the upstream, the upstream's while nothing waits for the
 * client, and each side's output. */
static enum kv_rc
ws_wait(struct kv_conn *c)
{
	struct kv_ws_sess *s = c->resp.ws;
	uint32_t up = 0;

	conn_watch_client(c, EPOLLRDHUP | (s->uplen == 0 ? EPOLLIN : 0) |
	    (c->opos < c->olen ? EPOLLOUT : 0));
	if (c->opos == c->olen && !s->up_eof)
		up |= s->up_rwant;
	if (s->uppos < s->uplen)
		up |= s->up_wwant;
	conn_watch_upstream(c, up);
	if (s->uplen == 0 && c->olen == 0)
		kv_stream_idle(&c->att.uc->s);
	conn_set_deadline(c, CONN_UPSTREAM);
	return KV_AGAIN;
}

/* The model a Realtime URL names (?model=...), as the session's. */
static void
query_model(struct kv_ws_sess *s, const char *target)
{
	const char *q = strchr(target, '?');
	size_t n;

	while (q != NULL) {
		q++;
		if (strncmp(q, "model=", 6) == 0) {
			n = strcspn(q + 6, "&#");
			if (n < sizeof(s->model)) {
				memcpy(s->model, q + 6, n);
				s->model[n] = '\0';
			}
			return;
		}
		q = strchr(q, '&');
	}
}

/* The session's start: its state, then the frames that came with the
 * 101 (the upstream's) or after the client's head. */
static int
ws_start(struct kv_conn *c)
{
	struct kv_ws_sess *s;
	int r = 0;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -1;
	c->resp.ws = s;
	s->kind = c->req.ws;
	kv_ws_init(&s->cp, KV_WS_FROM_CLIENT);
	kv_ws_init(&s->sp, KV_WS_FROM_SERVER);
	s->session_max = -1;
	s->auto_resp = s->kind == KV_WSK_REALTIME;
	s->up_rwant = EPOLLIN;
	s->up_wwant = EPOLLOUT;
	query_model(s, c->req.target);
	c->sent_any = 1;	/* the 101 is the client's answer: no other */
	if (c->att.ubuf != NULL && c->att.upos < c->att.ulen)
		r = server_bytes(c, (uint8_t *)c->att.ubuf + c->att.upos, c->att.ulen - c->att.upos);
	free(c->att.ubuf);
	c->att.ubuf = NULL;
	c->att.ulen = c->att.upos = 0;
	if (r == 0 && c->cbuf != NULL && c->cpos < c->clen)
		r = client_bytes(c, (uint8_t *)c->cbuf + c->cpos, c->clen - c->cpos);
	free(c->cbuf);
	c->cbuf = NULL;
	c->clen = c->cpos = 0;
	c->head_parse = 0;
	return r;
}

enum kv_rc
ws_session(struct kv_conn *c)
{
	struct kv_ws_sess *s;
	int i, moved, r;

	if (c->resp.ws == NULL && ws_start(c) == -1)
		return KV_CUT;
	s = c->resp.ws;
	for (i = 0; i < WS_RUNS; i++) {
		if (flush_up(c) == -1)
			return ws_end(c, KV_CUT);
		if (flush_client(c) == -1) {
			c->client_cut = 1;
			return ws_end(c, KV_CUT);
		}
		if (s->up_eof && c->olen == 0)
			return ws_end(c, KV_DONE);
		moved = 0;
		if (s->uplen == 0 && (r = read_client(c)) != 0) {
			if (r < 0)
				return ws_end(c, r == -2 ? KV_DONE : KV_CUT);
			moved = 1;
		}
		if (c->olen == 0 && !s->up_eof && (r = read_upstream(c)) != 0) {
			if (r < 0)
				return ws_end(c, KV_CUT);
			moved = 1;
		}
		if (!moved && !(s->up_eof && c->olen == 0))
			return ws_wait(c);
	}
	conn_ready(c);	/* more to move: after the others had a turn */
	return KV_AGAIN;
}

enum kv_rc
ws_timeout(struct kv_conn *c)
{
	return c->resp.ws != NULL ? ws_end(c, KV_CUT) : KV_CUT;
}

int
ws_client_left(struct kv_conn *c)
{
	(void)c;
	return 1;	/* the phase reads on to the client's end */
}

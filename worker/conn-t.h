/* The connection struct and the functions conn.c and relay.c share.
 * Private to the worker. */
#ifndef KV_CONN_T_H
#define KV_CONN_T_H

#include <stdint.h>
#include <string.h>

#include "worker/conn.h"
#include "worker/cors.h"
#include "worker/deadlines.h"
#include "common/http.h"
#include "common/jwt.h"
#include "worker/reqlog.h"
#include "worker/upstream.h"
#include "worker/reqscan.h"
#include "worker/sse_filter.h"
#include "worker/usage.h"
#include "shm/ratelimit.h"
#include "shm/tree.h"

#define KV_CBUF_SIZE	(KV_HTTP_MAX_HEAD + 4096)	/* head plus room for body reads */
#define KV_BODY_WINDOW	(8 * 1024)	/* request body held in memory; more is spooled */
#define KV_SPOOL_IO	(64 * 1024)	/* one read of a spooled body, per worker */
#define KV_SPOOL_STAGE	(16 * 1024)	/* spool bytes staged per TLS write */
#define KV_UBUF_SIZE	(16 * 1024)	/* upstream read buffer */
#define KV_UBUF_FAST	(64 * 1024)	/* ... while bytes pour through */
#define KV_GATE_TICKET_MS	1000	/* most a request waits for another's TLS ticket */
#define KV_LINGER_MS	5000	/* nginx's lingering_timeout */

/* Where a connection is: one of the phases, in the order they run
 * (conn.c's table), or one of the engine's own two states. Only the
 * engine (conn.c) writes c->state. */
enum conn_state {
	CS_HEAD,	/* reading a request head (request_head.c) */
	CS_BODY,	/* reading (and scanning) the whole body (request_body.c) */
	CS_ADMIT,	/* route, price, reserve; parked for lease (admission.c) */
	CS_BUILD,	/* the upstream request into obuf (request_build.c) */
	CS_SEND,	/* gate, connect, handshake, send (request_send.c) */
	CS_RESP_HEAD,	/* reading the response head (relay_head.c) */
	CS_RELAY,	/* streaming the response to the client (relay.c) */
	CS_WS,		/* a WebSocket session's frames, both ways (ws_session.c) */
	CS_NPHASES,
	CS_ERRWRITE = CS_NPHASES,	/* writing a response we made ourselves */
	CS_LINGER,	/* refused mid-upload: reading the rest away before close */
};

/* What a phase tells the engine; the only way it says what comes next (a
 * phase never calls the engine or another phase). */
enum kv_rc {
	KV_NEXT,	/* done: the table's next phase */
	KV_AGAIN,	/* wait for an event or a deadline, then run me again */
	KV_REPLY,	/* an answer of ours is in obuf (reply.c) */
	KV_RETRY,	/* failed before any response byte: c->att.fail says why */
	KV_DONE,	/* the response is whole: finish, then the next request */
	KV_CUT,		/* break the connection (a reset: the client can tell) */
	KV_CLOSE,	/* close quietly */
};

/* The send phase's own progress (request_send.c). */
enum send_step {
	SEND_GATE,	/* ask the upstream's handshake gate, pool or connect */
	SEND_UPWAIT,	/* parked until the upstream admits a TLS handshake */
	SEND_CONNECT,	/* TCP connect in progress */
	SEND_HANDSHAKE,	/* TLS handshake */
	SEND_HEAD,	/* writing obuf: the head (+ a body held in memory) */
	SEND_SPOOL,	/* sending a spooled body */
};

/* Which deadline a wait is under (conn_set_deadline). */
enum conn_side {
	CONN_CLIENT,	/* client_timeout */
	CONN_UPSTREAM,	/* upstream_timeout */
	CONN_CONNECT,	/* connect_timeout, the TLS handshake included */
};

/* Why an attempt failed (KV_RETRY; peer.h). */
struct kv_attempt_fail {
	int		 status;	/* what the client gets if no target is left */
	const char	*msg;
	int		 safe;		/* the target cannot have received it */
	int		 closed;	/* the upstream closed: a fresh connection may do */
};

/* What a connection holds from accept on: its state, and the kernel's
 * socket (its structures; buffers come with the bytes). */
#define CONN_BASE_COST	((int64_t)sizeof(struct kv_conn) + 2048)
#define HEAD_PAGE	4096	/* a head's buffer is touched page by page */
/* A connection silent for less than this, and newer than the oldest
 * unfinished head, is shed after the heads: a client's connection is
 * accepted before its request arrives. */
#define CONN_SILENT_GRACE_MS	1000

/* The request as the client sent it: its head's facts, its body (in the
 * window or the spool), what the body said, and its key (request_head.c,
 * request_body.c; the usage injection, request_build.c). */
struct kv_request {
	char			 method[KV_HTTP_MAX_METHOD + 1];	/* first per-request field */
	char			 id[KV_REQID_LEN + 1];	/* "" until asked for */
	char			*target;
	int			 minor, keep_alive, anthropic, is_head;
	int			 anthropic_client;	/* sent anthropic-version or x-api-key */
	int			 bedrock;	/* a Bedrock path of a bedrock upstream */
	int			 vertex;	/* a Vertex AI path (vertex_req.h) */
	int			 google;	/* a Gemini API path: Google's error shape */
	int			 query_key;	/* its ?key= was taken out of target */
	int			 gm_stream;	/* :streamGenerateContent */
	int			 aws_stream;	/* its answer is an AWS event stream
						   (/invoke-with-response-stream,
						   /converse-stream) */
	char			 path_model[KV_REQ_MODEL];	/* a Bedrock runtime path's
						   model id, decoded (bedrock_path.h) */
	char			 cors_origin[KV_CORS_ORIGIN_MAX];	/* a listed Origin, or "" */
	enum kv_api		 api;
	int			 chunked;
	struct kv_chunked	 dec;
	int64_t			 body_left;	/* Content-Length bytes still to read */
	int64_t			 body_bytes;	/* body bytes seen so far */
	int			 body_done;
	char			*ibuf;		/* the body while it fits the window (de-chunked) */
	size_t			 ilen, icap;
	int			 spfd;		/* the spooled body, -1 none */
	int64_t			 sp_charged;	/* its bytes counted in w->spool_bytes */
	struct kv_reqscan	*rs;		/* while the body is read */
	struct kv_request_info	 ri;		/* what the whole body said */
	int			 force_usage;	/* stream_options.include_usage added */
	int			 inject;	/* ... and the client did not ask: drop the event */
	char			*inj;		/* the member added, at body offset inj_at */
	size_t			 injlen;
	int64_t			 inj_at;
	int			 auth_x_api_key;	/* credential came in x-api-key */
	int			 auth_api_key;	/* the key came in api-key (Azure's) alone */
	int			 auth_goog_key;	/* ... or in x-goog-api-key (Google's) */
	int			 ws;		/* a WebSocket upgrade: KV_WSK_* (ws_upgrade.h) */
	uint8_t			 keyhash[32];
	char			 keyid[13];
	/* a client identified by a JWT (jwt_auth.c): its user node
	 * ("user/ana@x.io"), charged, and the [team] it is under (-1 none) */
	int			 jwt;
	int			 jwt_team;
	char			 user_node[KV_JWT_USER_MAX + 8];
	/* the [tag]s its tags header named (request_tags.c): their indices */
	int			 ntags;
	short			 tag[KV_TAGS_MAX];
};

/* What admission decided (admission.c) and settlement undoes (settle.c):
 * the price, the account and its reservation, the lease wait, the rate
 * view and what our own errors tell clients. */
struct kv_admission {
	/* ri.model's price (kv_config_price, NULL for none), resolved once,
	 * at admission: the reservation, the sent estimate, the charge and
	 * the model row all use it (each was a glob scan of the prices) */
	const struct kv_price	*price;
	int			 free_ep;	/* an endpoint relayed at $0 */
	struct kv_account	*acct;
	int			 resv;		/* reservation index, -1 none */
	int64_t			 remaining;
	/* The budget tree (admission_tree.c): the holds at the nodes above
	 * the key, and the node that refused (its name in the config), or
	 * refused_key for the key itself: x-kilovolt-budget-node. */
	struct kv_tree_hold	 tree;
	/* its rate limits (tree_rate.c): bit i, node i took some; the
	 * tokens it took; whether the input was made final */
	uint32_t		 tree_rl;
	uint32_t		 tree_tok[KV_TREE_NODES];
	int			 tree_rl_sent;
	const char		*refused_node;
	int			 refused_key;
	int64_t			 out_bound;	/* output tokens the reservation holds */
	int			 lease_parked;	/* on w->lease_parked: KV_PARK_* (leasewait.h) */
	int64_t			 lease_until_ms;	/* ... and refused with 503 from then */
	struct kv_conn		*lease_next;
	int			 counted_stream;
	int			 rl_on;		/* the key has a limit: send x-ratelimit-* */
	struct kv_rl_view	 rl;
	int64_t			 rl_sent;	/* tokens made final when sent (kv_ratelimit_sent) */
	int			 no_retry;	/* our error cannot pass on a retry */
};

/* One try at one target (request_send.c, relay_head.c): what the engine
 * lets go of and zeroes, in one memset, before the next try. */
struct kv_attempt {
	struct kv_upconn	*uc;
	enum send_step		 send_step;	/* the send phase's progress */
	int			 ticket_waited;	/* SEND_UPWAIT: the ticket wait is over */
	int			 retried;	/* a fresh connection replaced a pooled one */
	int			 cooled;	/* the target answered 429: cooled, not failed */
	int64_t			 sp_off;	/* spool bytes (injection included) sent */
	char			*sbuf;		/* spool bytes staged for a TLS write */
	size_t			 slen, spos;
	char			*ubuf;		/* what the upstream sent, being read */
	size_t			 ulen, upos, ucap;
	int			 read_big;	/* reads fill ubuf, the client keeps up */
	struct kv_attempt_fail	 fail;		/* why it failed (KV_RETRY) */
};

/* The response's framing, filters and pipe (resp_filter.c, relay.c). */
struct kv_response {
	int			 chunked;
	struct kv_chunked	 dec;
	int64_t			 left;		/* Content-Length left, -1 none */
	int			 until_close;	/* ends when the upstream closes */
	int			 done;
	int			 up_keepalive;
	int			 scan_on;
	int			 reframe, out_chunked;
	struct kv_sse_filter	 sse;		/* drops the usage event we injected */
	struct kv_usage_scanner	 scan;
	struct kv_aws_stream	*aws;		/* an AWS event stream's decoders, NULL none */
	int64_t			 drain_until_ms;	/* on_cut = drain: read on until then */
	uint64_t		 drain_left;	/* and for at most these bytes */
	int			 pipefd[2];
	size_t			 pipe_len;
	int			 ws_open;	/* the provider's 101 is the client's head */
	struct kv_ws_sess	*ws;		/* the session (ws_session-t.h), NULL none */
};

struct kv_conn {
	struct kv_worker	*w;
	struct kv_conn		*prev, *next;
	struct kv_conn		*ready_next;
	int			 on_ready;
	int			 closed;	/* freed after this epoll batch */
	struct kv_evsrc		 cev;		/* the upstream's is in att.uc */
	int			 cfd;
	uint32_t		 cwatch;	/* epoll interest on cfd */
	int			 client_woke;	/* EPOLLIN on cfd while the upstream had the turn */
	struct kv_upstream_rt	*rt;
	enum conn_state		 state;
	struct kv_deadline	 dl;		/* w->deadlines: conn_deadline */
	int			 drain;		/* close after this response */
	int			 served;	/* a response went out: idle between requests */
	/* the memory guard's count of what the connection holds (conn.c) */
	int64_t			 held;		/* bytes counted in w->mem.held */
	struct kv_conn		*qprev, *qnext;	/* in *queue */
	struct kv_connq		*queue;		/* w->idle, w->heads or NULL */
	int64_t			 queued_ms;	/* when it joined it */
	struct kv_upwait	 upwait;	/* while in SEND_UPWAIT */

	/* client input: the head stays at cbuf[0..head_len) until it is rebuilt */
	char			*cbuf;
	size_t			 clen, cpos, head_len;
	uint64_t		 head_parse;	/* w->req_parse when w->req held this head */

	/* the request (request_head.c, request_body.c) and its admission
	 * (admission.c, settle.c): from req on, every member is per request */
	struct kv_request	 req;
	struct kv_admission	 adm;
	int			 logged;	/* settled and logged */
	int			 req_sent;	/* the whole request reached the upstream */
	int			 client_gone;	/* left; the response is read to its end */
	int			 retry_after;	/* seconds, for a 502/503/504 we answer */
	const struct kv_upstream *rebuild_from;	/* the build phase rewrites obuf
						 * from this upstream's request */

	/* upstream targets (peer.c) */
	const struct kv_upstream *ugroup;	/* the upstream whose targets are tried */
	int			 tslot1;	/* 1 + ledger target slot in flight; 0 none */
	uint64_t		 tried;		/* positions in ugroup tried */
	int			 tpos;		/* current position */
	int			 fell_back;	/* ugroup is the fallback now */
	int64_t			 t_first_try_ms;
	const char		*tlabel;	/* NAME/HOST:PORT, for x-kilovolt-upstream: rt->label */

	/* output staging: the upstream request, then what goes to the client */
	char			*obuf;
	size_t			 olen, opos, ocap;
	int			 keep_obuf;	/* request bytes kept for one retry */

	/* the upstream attempt (request_send.c; reset by the engine) and the
	 * response (relay_head.c, resp_filter.c, relay.c) */
	struct kv_attempt	 att;
	struct kv_response	 resp;
	int			 status;
	int			 client_keep;
	int			 sent_any;	/* response bytes reached the client */
	int			 cut;		/* stream cut short */
	int			 client_cut;	/* ... because its client left or stopped taking it */
	int			 unpriced_model;	/* charged at [price default]: marked */

	/* for the access log and histograms */
	int64_t			 t_start_ms, t_first_ms;
	uint64_t		 bytes_in, bytes_out;
	const char		*upstream_name;
};

/* conn_io.c: one connection's tools, below the phases */
void	conn_watch_client(struct kv_conn *c, uint32_t ev);
/* Waiting on the upstream, only the client's leaving matters. EPOLLIN
 * interest is dropped lazily: a keep-alive client sends nothing while its
 * response is pending, so a request costs no epoll_ctl for it; a client
 * that does send (pipelining) wakes us once, and is narrowed to EPOLLRDHUP
 * then. Only for steps that are safe to run again on a spurious wake-up. */
void	conn_quiet_client(struct kv_conn *c);
void	conn_watch_upstream(struct kv_conn *c, uint32_t ev);
/* Wait on the upstream for EV under upstream_timeout, the client quiet
 * (conn_quiet_client): returns KV_AGAIN, for a phase to return. */
enum kv_rc conn_wait_upstream(struct kv_conn *c, uint32_t ev);
/* C waits under SIDE's timeout from now (a stream drained after its
 * client left: never past its drain deadline). */
void	conn_set_deadline(struct kv_conn *c, enum conn_side side);
/* C is due at AT (ms): the worker runs kv_conn_tick for it then. */
void	conn_deadline(struct kv_conn *c, int64_t at);
/* A request head's first byte (or a new connection): the head must be
 * whole within header_timeout (or client_timeout when that is shorter). */
void	conn_head_deadline(struct kv_conn *c);
/* The memory guard's count of C's head: PARTIAL 1 while C holds an
 * unfinished head of clen bytes (it joins the worker's list of such
 * heads, oldest first), 0 once the head is whole or gone. Then, while the
 * connections' memory is past its share, connections are shed
 * (conn_heads_shed). Returns -1 when C itself was one of them: its memory
 * left the count, and the caller closes it (KV_CLOSE); else 0. */
int	conn_head_held(struct kv_conn *c, int partial);
/* C has sent nothing of its next request (it is new, or idle between
 * requests with nothing pipelined): it holds its connection only and joins
 * the worker's silent connections, the first to be shed. */
void	conn_idle_held(struct kv_conn *c);
/* While the connections' memory, with MORE to come, is past its share,
 * close (w->shed_close) the connections that have sent nothing, oldest
 * first, then the oldest unfinished heads -- the slowest: a client's head
 * comes in one go -- (but a connection silent for a moment only, newer
 * than the oldest head, after the heads: CONN_SILENT_GRACE_MS); each
 * counted and logged (drops.h). SELF (or NULL) is
 * not closed but counted out. Returns 1 when SELF was one of them. */
int	conn_heads_shed(struct kv_worker *w, int64_t more, struct kv_conn *self);
/* Take C off the worker's lists of sheddable connections (no-op when it
 * is on none). */
void	conn_heads_unlink(struct kv_conn *c);
/* Read up to LEN client bytes into BUF (kv_stream_read's result), counting
 * them in bytes_in and pushing the client deadline on: a HEAD must arrive
 * whole within header_timeout, a body only must not stall. */
ssize_t	conn_client_read(struct kv_conn *c, char *buf, size_t len, int head);
/* Put C on the worker's ready list: it runs again after others had a turn. */
void	conn_ready(struct kv_conn *c);
int	conn_obuf_reserve(struct kv_conn *c, size_t need);
/* Append to obuf, growing it: bytes, printf-style text (which must fit in
 * the room already reserved), the strings given up to a NULL (growing, no
 * format: what every request writes goes this way), or one "Name:
 * value\r\n" header line. Each returns 0 or -1. */
int	conn_obuf_put(struct kv_conn *c, const char *p, size_t len);
int	conn_obuf_printf(struct kv_conn *c, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	conn_obuf_cat(struct kv_conn *c, ...) __attribute__((sentinel));
int	conn_obuf_header(struct kv_conn *c, const struct kv_http_header *h);

/* Append s[0..n) to obuf, whose room the caller reserved
 * (conn_obuf_reserve): the heads are written with these, their lengths
 * known, not piece by piece through conn_obuf_cat's strlen and checks. */
static inline void
conn_obuf_add(struct kv_conn *c, const void *s, size_t n)
{
	memcpy(c->obuf + c->olen, s, n);
	c->olen += n;
}
#define CONN_OBUF_LIT(c, lit)	conn_obuf_add((c), (lit), sizeof(lit) - 1)
/* Room for one header line (conn_obuf_header's bytes), reserved already. */
static inline void
conn_obuf_add_header(struct kv_conn *c, const struct kv_http_header *h)
{
	char *p = c->obuf + c->olen;

	memcpy(p, h->name, h->name_len);
	p += h->name_len;
	memcpy(p, ": ", 2);
	/* a value may be empty, and its pointer then at the line's end */
	memcpy(p + 2, h->value, h->value_len);
	memcpy(p + 2 + h->value_len, "\r\n", 2);
	c->olen += h->name_len + h->value_len + 4;
}

/* The upstream read buffer (KV_UBUF_SIZE bytes): the worker's spare one
 * when it has it, else malloc'd; NULL when out of memory. */
char	*conn_ubuf_take(void);
/* Let go of C's upstream connection: back to the pool when REUSE, else
 * closed with a reset (the provider learns at once nobody listens). */
void	conn_upstream_detach(struct kv_conn *c, int reuse);
/* Close the spool and free the scanner and injection of this request. */
void	conn_request_release(struct kv_conn *c);
/* Drop per-request buffers and state; the connection itself stays. obuf
 * and ubuf of the usual sizes become the worker's spares (one of each), so
 * the next request does not malloc them again; any other is freed. */
void	conn_free_buf(struct kv_conn *c);
/* Free the worker's spare buffers (an idle worker holds none). */
void	conn_spares_free(void);
/* This request's id (x-kilovolt-request-id, the request log), made on
 * first use. */
const char *conn_request_id(struct kv_conn *c);

/* The phases: request_head.h, request_body.h, admission.h,
 * request_build.h, request_send.h, relay_head.h, relay.h; the replies we
 * make ourselves: reply.h. */


#endif

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
#include "worker/reqlog.h"
#include "worker/upstream.h"
#include "worker/reqscan.h"
#include "worker/sse_filter.h"
#include "worker/usage.h"
#include "shm/ratelimit.h"

#define KV_CBUF_SIZE	(KV_HTTP_MAX_HEAD + 4096)	/* head plus room for body reads */
#define KV_BODY_WINDOW	(8 * 1024)	/* request body held in memory; more is spooled */
#define KV_SPOOL_IO	(64 * 1024)	/* one read of a spooled body, per worker */
#define KV_SPOOL_STAGE	(16 * 1024)	/* spool bytes staged per TLS write */
#define KV_UBUF_SIZE	(16 * 1024)	/* upstream read buffer */
#define KV_UBUF_FAST	(64 * 1024)	/* ... while bytes pour through */
#define KV_GATE_TICKET_MS	1000	/* most a request waits for another's TLS ticket */
#define KV_LINGER_MS	5000	/* nginx's lingering_timeout */

enum conn_state {
	CS_HEAD,	/* reading a request head */
	CS_BODY_IN,	/* reading (and scanning) the whole body */
	CS_LEASEWAIT,	/* parked until this host's cluster lease admits it (leasewait.h) */
	CS_UPWAIT,	/* parked until the upstream admits a TLS handshake */
	CS_CONNECT,	/* TCP connect in progress */
	CS_HANDSHAKE,	/* TLS handshake */
	CS_SEND_REQ,	/* writing head (+ a body held in memory) upstream */
	CS_SEND_BODY,	/* sending a spooled body upstream */
	CS_RESP_HEAD,	/* reading the response head */
	CS_RELAY,	/* streaming the response to the client */
	CS_ERRWRITE,	/* writing a response we made ourselves */
	CS_LINGER,	/* refused mid-upload: reading the rest away before close */
};

enum step { STEP_CONT, STEP_WAIT, STEP_CLOSED };

struct kv_conn {
	struct kv_worker	*w;
	struct kv_conn		*prev, *next;
	struct kv_conn		*ready_next;
	int			 on_ready;
	int			 closed;	/* freed after this epoll batch */
	struct kv_evsrc		 cev;		/* the upstream's is in uc */
	int			 cfd;
	uint32_t		 cwatch;	/* epoll interest on cfd */
	int			 client_woke;	/* EPOLLIN on cfd while the upstream had the turn */
	struct kv_upconn	*uc;
	struct kv_upstream_rt	*rt;
	enum conn_state		 state;
	struct kv_deadline	 dl;		/* w->deadlines: conn_deadline */
	int			 drain;		/* close after this response */
	int			 served;	/* a response went out: idle between requests */
	/* the memory guard's count of what the connection holds (conn.c) */
	int64_t			 held;		/* bytes counted in w->mem.held */
	struct kv_conn		*hprev, *hnext;	/* in w->heads: an unfinished head */
	int			 on_heads;
	struct kv_upwait	 upwait;	/* while in CS_UPWAIT */
	int			 ticket_waited;	/* CS_UPWAIT: the ticket wait is over */

	/* client input: the head stays at cbuf[0..head_len) until it is rebuilt */
	char			*cbuf;
	size_t			 clen, cpos, head_len;
	uint64_t		 head_parse;	/* w->req_parse when w->req held this head */

	/* the request, copied out of the head */
	char			 method[KV_HTTP_MAX_METHOD + 1];	/* first per-request field */
	int			 logged;	/* settled and logged */
	char			 reqid[KV_REQID_LEN + 1];	/* "" until asked for */
	char			*target;
	int			 minor, keep_alive, anthropic, is_head;
	int			 anthropic_client;	/* sent anthropic-version or x-api-key */
	char			 cors_origin[KV_CORS_ORIGIN_MAX];	/* a listed Origin, or "" */
	enum kv_api		 api;
	int			 free_ep;	/* an endpoint relayed at $0 */
	int			 req_sent;	/* the whole request reached the upstream */
	int			 client_gone;	/* left; the response is read to its end */
	int			 chunked_req;
	struct kv_chunked	 req_dec;
	int64_t			 body_left;	/* Content-Length bytes still to read */
	int64_t			 body_bytes;	/* body bytes seen so far */
	int			 body_done;
	char			*ibuf;		/* the body while it fits the window (de-chunked) */
	size_t			 ilen, icap;
	int			 spfd;		/* the spooled body, -1 none */
	int64_t			 sp_charged;	/* its bytes counted in w->spool_bytes */
	int64_t			 sp_off;	/* bytes of it (injection included) sent */
	char			*sbuf;		/* spool bytes staged for a TLS write */
	size_t			 slen, spos;
	struct kv_reqscan	*rs;		/* while the body is read */
	struct kv_request_info	 ri;		/* what the whole body said */
	/* ri.model's price (kv_config_price, NULL for none), resolved once,
	 * at admission: the reservation, the sent estimate, the charge and
	 * the model row all use it (each was a glob scan of the prices) */
	const struct kv_price	*price;
	int			 force_usage;	/* stream_options.include_usage added */
	int			 inject;	/* ... and the client did not ask: drop the event */
	char			*inj;		/* the member added, at body offset inj_at */
	size_t			 injlen;
	int64_t			 inj_at;
	int			 retry_after;	/* seconds, for a 502/503/504 we answer */
	int			 auth_x_api_key;	/* credential came in x-api-key */
	uint8_t			 keyhash[32];
	char			 keyid[13];

	/* budget */
	struct kv_account	*acct;
	int			 resv;		/* reservation index, -1 none */
	int64_t			 remaining;
	int64_t			 out_bound;	/* output tokens the reservation holds */
	int			 lease_parked;	/* on w->lease_parked (leasewait.c) */
	int64_t			 lease_until_ms;	/* ... and refused with 503 from then */
	struct kv_conn		*lease_next;
	int			 counted_stream;

	/* rate limits (limits.c) and what our own errors tell clients */
	int			 rl_on;		/* the key has a limit: send x-ratelimit-* */
	struct kv_rl_view	 rl;
	int64_t			 rl_sent;	/* tokens made final when sent (kv_ratelimit_sent) */
	int			 no_retry;	/* our error cannot pass on a retry */

	/* upstream targets (upstream_set.c) */
	const struct kv_upstream *ugroup;	/* the upstream whose targets are tried */
	int			 tslot1;	/* 1 + ledger target slot in flight; 0 none */
	uint64_t		 tried;		/* positions in ugroup tried */
	int			 tpos;		/* current position */
	int			 fell_back;	/* ugroup is the fallback now */
	int			 cooled;	/* the target answered 429: cooled, not failed */
	int64_t			 t_first_try_ms;
	const char		*tlabel;	/* NAME/HOST:PORT, for x-kilovolt-upstream: rt->label */

	/* output staging: the upstream request, then what goes to the client */
	char			*obuf;
	size_t			 olen, opos, ocap;
	int			 keep_obuf;	/* request bytes kept for one retry */
	int			 retried;

	/* the response */
	char			*ubuf;
	size_t			 ulen, upos, ucap;
	int			 read_big;	/* reads fill ubuf, the client keeps up */
	int			 status;
	int			 resp_chunked;
	struct kv_chunked	 resp_dec;
	int64_t			 resp_left;	/* Content-Length left, -1 none */
	int			 resp_close;	/* ends when the upstream closes */
	int			 resp_done;
	int			 up_keepalive;
	int			 client_keep;
	int			 scan_on;
	int			 reframe, out_chunked;
	struct kv_sse_filter	 sse;		/* drops the usage event we injected */
	int			 sent_any;	/* response bytes reached the client */
	int			 cut;		/* stream cut short */
	int			 client_cut;	/* ... because its client left or stopped taking it */
	int64_t			 drain_until_ms;	/* on_cut = drain: read on until then */
	uint64_t		 drain_left;	/* and for at most these bytes */
	int			 unpriced_model;	/* charged at [price default]: marked */
	struct kv_usage_scanner	 scan;
	int			 pipefd[2];
	size_t			 pipe_len;

	/* for the access log and histograms */
	int64_t			 t_start_ms, t_first_ms;
	uint64_t		 bytes_in, bytes_out;
	const char		*upstream_name;
};

/* conn.c */
void	conn_watch_client(struct kv_conn *c, uint32_t ev);
/* Waiting on the upstream, only the client's leaving matters. EPOLLIN
 * interest is dropped lazily: a keep-alive client sends nothing while its
 * response is pending, so a request costs no epoll_ctl for it; a client
 * that does send (pipelining) wakes us once, and is narrowed to EPOLLRDHUP
 * then. Only for steps that are safe to run again on a spurious wake-up. */
void	conn_quiet_client(struct kv_conn *c);
void	conn_watch_upstream(struct kv_conn *c, uint32_t ev);
void	conn_set_deadline(struct kv_conn *c, int upstream_side);
/* C is due at AT (ms): the worker runs kv_conn_tick for it then. */
void	conn_deadline(struct kv_conn *c, int64_t at);
/* A request head's first byte (or a new connection): the head must be
 * whole within header_timeout (or client_timeout when that is shorter). */
void	conn_head_deadline(struct kv_conn *c);
/* The memory guard's count of C's head: PARTIAL 1 while C holds an
 * unfinished head of clen bytes (it joins the worker's list of such
 * heads, oldest first), 0 once the head is whole or gone. Then, while the
 * connections' memory is past its share, the slowest unfinished heads
 * (the oldest) are dropped. Returns -1 when C itself was dropped (closed:
 * STEP_CLOSED), else 0. */
int	conn_head_held(struct kv_conn *c, int partial);
enum step conn_fail(struct kv_conn *c, int status, const char *msg);
void	conn_close(struct kv_conn *c);
enum step conn_next_request(struct kv_conn *c);
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
/* Drop per-request buffers and state; the connection itself stays. obuf
 * and ubuf of the usual sizes become the worker's spares (one of each), so
 * the next request does not malloc them again; any other is freed. */
void	conn_free_buf(struct kv_conn *c);
/* Free the worker's spare buffers (an idle worker holds none). */
void	conn_spares_free(void);
/* This request's id (x-kilovolt-request-id, the request log), made on
 * first use. */
const char *conn_request_id(struct kv_conn *c);

/* The request leg's steps: request_head.h, request_body.h, admission.h,
 * request_send.h. */

/* limits.c */
/* Take the request's rpm and tpm share of its key (after the budget
 * reservation). Returns 0 admitted; else the budget reservation is released
 * and the 429 is under way (conn_fail's result is in *st). */
int	conn_rate_admit(struct kv_conn *c, enum step *st);
/* Settle the request's tokens (before the budget settle) and end its
 * target's in-flight count. */
void	conn_traffic_settle(struct kv_conn *c, const struct kv_usage *u);
/* The request reached the provider: its input stays counted against tpm
 * should this worker die (kv_ratelimit_sent). */
void	conn_traffic_sent(struct kv_conn *c);
/* Append this response's x-kilovolt-upstream and x-ratelimit-* lines (when
 * the key has a limit) to obuf. Returns 0 or -1. */
int	conn_traffic_headers(struct kv_conn *c);
/* The retry headers of our own error STATUS (x-ratelimit-*, retry-after,
 * x-should-retry) into BUF; returns the length or -1. */
int	conn_error_headers(struct kv_conn *c, int status, char *buf, size_t len);

/* The response leg's steps: relay_head.h, relay.h. */

#endif

/* The upstream request: its head rebuilt from the client's (our own
 * framing, usage asked for), the upstream connection taken from the pool
 * or made, the request sent, and a spooled body sent from its file. */
#include "worker/request_send.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "common/fmt.h"
#include "common/log.h"
#include "worker/request_head.h"
#include "worker/spool.h"
#include "worker/upstream_set.h"

/* Whether the client's header H goes upstream: not a hop-by-hop one, not
 * one kilovolt writes itself (Host, Content-Length), not Expect or
 * Accept-Encoding, and under virtual keys (api_key set) none of
 * request_cred_headers, whose names the lengths 7, 9, 13 and 14 pick. */
static int
want_header(const struct kv_conn *c, const struct kv_http_header *h)
{
	const char *n = h->name;
	int vk = c->rt->cf->api_key != NULL;

	if (h->hop)
		return 0;
	switch (h->name_len) {
	case 4:
		return !kv_http_lit_eq(n, "host", 4);
	case 6:
		return !kv_http_lit_eq(n, "expect", 6);
	case 7:
		return !vk || !kv_http_lit_eq(n, "api-key", 7);
	case 9:
		return !vk || !kv_http_lit_eq(n, "x-api-key", 9);
	case 13:
		return !vk || !kv_http_lit_eq(n, "authorization", 13);
	case 14:
		return !kv_http_lit_eq(n, "content-length", 14) &&
		    (!vk || !kv_http_lit_eq(n, "x-goog-api-key", 14));
	case 15:
		return !kv_http_lit_eq(n, "accept-encoding", 15);
	default:
		return 1;
	}
}

/* The client's include_usage false/null becomes true, in the window or
 * in the spool, without changing the body's length. */
static int
overwrite_iu(struct kv_conn *c, const char **msg)
{
	const char *t = c->ri.so_iu_len == 5 ? "true " : "true";
	size_t n = (size_t)c->ri.so_iu_len;

	if (c->spfd == -1) {
		memcpy(c->ibuf + c->ri.so_iu_off, t, n);
		return 0;
	}
	if (pwrite(c->spfd, t, n, (off_t)c->ri.so_iu_off) != (ssize_t)n) {
		kv_log_warn("KV0547", "writing the request spool");
		*msg = "the gateway cannot write the spooled request body";
		return 503;
	}
	return 0;
}

/* Usage is always asked for (issue 11): a streamed chat or legacy
 * completion goes upstream with stream_options.include_usage true, and
 * with one stream_options member (issue 20): a first-wins parser would
 * read the client's, a serde server refuses a duplicate. Without one the
 * member is added before the top-level '}'; into the client's object,
 * "include_usage":true goes last, before its '}'; the client's own
 * include_usage false (or null) is overwritten in place by "true " (or
 * "true"), the same length. A null stream_options, or two of them, or two
 * include_usage, cannot be merged: refused, naming why. */
int
request_build_inject(struct kv_conn *c, const char **msg)
{
	static const char member[] = "\"stream_options\":{\"include_usage\":true}",
	    iu[] = ",\"include_usage\":true";
	const struct kv_request_info *ri = &c->ri;
	int merge = ri->has_stream_options, first;
	size_t at = 0;

	if (ri->so_count > 1 || ri->so_has_iu > 1) {
		*msg = ri->so_count > 1 ? "stream_options appears more than once" :
		    "stream_options.include_usage appears more than once";
		return 400;
	}
	if (merge && ri->so_start == 0) {
		*msg = "a streamed request needs usage to be metered: send stream_options "
		    "as an object, or leave it out";
		return 400;
	}
	if (merge && ri->so_has_iu)
		return overwrite_iu(c, msg);
	first = merge && ri->so_members == 0;
	c->injlen = merge ? sizeof(iu) - 1 - (size_t)first : (ri->members > 0) + sizeof(member) - 1;
	if ((c->inj = malloc(c->injlen)) == NULL) {
		*msg = "out of memory";
		return 503;
	}
	if (merge) {
		memcpy(c->inj, iu + first, c->injlen);
		c->inj_at = (int64_t)ri->so_end;
		return 0;
	}
	if (ri->members > 0)
		c->inj[at++] = ',';
	memcpy(c->inj + at, member, sizeof(member) - 1);
	c->inj_at = (int64_t)ri->obj_end;
	return 0;
}

/* The lines the head gets from us, into room reserved by request_build:
 * the upstream's own credential (kl bytes), the framing of the body that
 * was read whole, and the end of the head. */
static void
own_lines(struct kv_conn *c, const struct kv_http_request *req, size_t kl)
{
	const struct kv_upstream *up = c->rt->cf;

	if (up->api_key != NULL) {
		if (c->auth_x_api_key)
			CONN_OBUF_LIT(c, "x-api-key: ");
		else
			CONN_OBUF_LIT(c, "Authorization: Bearer ");
		conn_obuf_add(c, up->api_key, kl);
		CONN_OBUF_LIT(c, "\r\n");
	}
	/* The whole body was read: always our own Content-Length framing. */
	if (c->body_bytes > 0 || c->chunked_req ||
	    kv_http_find(req->headers, req->nheaders, "content-length") != NULL) {
		CONN_OBUF_LIT(c, "Content-Length: ");
		c->olen += kv_fmt_i64(c->obuf + c->olen, c->body_bytes + (int64_t)c->injlen);
		CONN_OBUF_LIT(c, "\r\n");
	}
	CONN_OBUF_LIT(c, "Connection: keep-alive\r\n\r\n");
}

int
request_build(struct kv_conn *c)
{
	const struct kv_upstream *up = c->rt->cf;
	struct kv_http_request *req = &c->w->req;
	const char *reason;
	size_t i, need, ml, bl, tl, hl, kl;
	int status;

	/* The head is still in cbuf. w->req still holds its parse when nothing
	 * was parsed into it since (a small request: head, body and this in
	 * one turn); else it is parsed again rather than keep 4 KB of header
	 * pointers per connection. */
	if (c->head_parse == 0 || c->head_parse != c->w->req_parse) {
		if (kv_http_parse_request(c->cbuf, c->head_len, req, &status, &reason) <= 0)
			return -1;
		c->head_parse = ++c->w->req_parse;
	}
	ml = strlen(c->method);
	bl = strlen(up->base_path);
	tl = strlen(c->target);
	hl = strlen(up->host_header);
	kl = up->api_key != NULL ? strlen(up->api_key) : 0;
	/* Room for the whole head, written without a check per piece: each
	 * forwarded line takes at most one byte more than in the client's
	 * head (": "), and 256 covers the request line's and our own lines. */
	need = c->head_len + req->nheaders + bl + hl + kl + 256;
	if (c->spfd == -1)
		need += c->ilen + c->injlen;
	if (conn_obuf_reserve(c, need) == -1)
		return -1;
	conn_obuf_add(c, c->method, ml);
	CONN_OBUF_LIT(c, " ");
	conn_obuf_add(c, up->base_path, bl);
	conn_obuf_add(c, c->target, tl);
	CONN_OBUF_LIT(c, " HTTP/1.1\r\nHost: ");
	conn_obuf_add(c, up->host_header, hl);
	CONN_OBUF_LIT(c, "\r\n");
	for (i = 0; i < req->nheaders; i++)
		if (want_header(c, &req->headers[i]))
			conn_obuf_add_header(c, &req->headers[i]);
	own_lines(c, req, kl);
	if (c->spfd != -1)
		return 0;	/* the body follows from the spool */
	if (c->inj != NULL)
		return conn_obuf_put(c, c->ibuf, (size_t)c->inj_at) == -1 ||
		    conn_obuf_put(c, c->inj, c->injlen) == -1 ||
		    conn_obuf_put(c, c->ibuf + c->inj_at, c->ilen - (size_t)c->inj_at) == -1 ? -1 : 0;
	return conn_obuf_put(c, c->ibuf, c->ilen);
}

enum step
request_connect(struct kv_conn *c)
{
	char err[256] = "";

	if (kv_upstream_gate(c->rt, &c->upwait)) {
		/* woken by the upstream; the client's leaving still counts */
		if (c->state != CS_UPWAIT) {
			c->state = CS_UPWAIT;
			c->ticket_waited = 0;
			conn_watch_client(c, EPOLLRDHUP);
			conn_set_deadline(c, 1);
		}
		return STEP_WAIT;
	}
	if (!c->retried && (c->uc = kv_upconn_take_idle(c->rt, (int64_t)time(NULL))) != NULL) {
		c->uc->ev.ptr = c;	/* it may still be in the epoll set */
		c->state = CS_SEND_REQ;
		return STEP_CONT;
	}
	if ((c->uc = kv_upconn_connect(c->rt, err, sizeof(err))) == NULL) {
		kv_log_warnx("KV0420", "%s", err);
		return conn_failover(c, 502, "upstream unreachable", 1);
	}
	c->state = CS_CONNECT;
	conn_watch_client(c, EPOLLRDHUP);
	conn_watch_upstream(c, EPOLLOUT);
	conn_set_deadline(c, 1);
	return STEP_WAIT;
}

enum step
request_connect_done(struct kv_conn *c)
{
	char err[256] = "";

	if (kv_upconn_connected(c->uc, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0421", "%s", err);
		return conn_failover(c, 502, "upstream unreachable", 1);
	}
	c->state = c->uc->s.ssl != NULL ? CS_HANDSHAKE : CS_SEND_REQ;
	return STEP_CONT;
}

enum step
request_handshake(struct kv_conn *c)
{
	char err[256] = "";
	int r;

	r = kv_stream_handshake(&c->uc->s, err, sizeof(err));
	if (r == 1) {
		c->state = CS_SEND_REQ;
		return STEP_CONT;
	}
	if (r == KV_IO_AGAIN) {
		conn_watch_upstream(c, (uint32_t)c->uc->s.want);
		return STEP_WAIT;
	}
	kv_log_warnx("KV0422", "upstream %s: %s", c->rt->cf->name, err);
	return conn_failover(c, 502, "TLS to the upstream failed", 1);
}

/* A pooled connection the server closed under us before any byte of the
 * request was written to it: one fresh try, when the whole request is
 * still in obuf. A request goes upstream at most once. */
enum step
request_retry(struct kv_conn *c)
{
	/* Once any byte of the request was written, the provider may have
	 * read it all and bill it: sending it again could bill it twice --
	 * unless it was never all written (a provider does not process a
	 * request whose body it did not get whole), or nothing was
	 * acknowledged. */
	if (!c->uc->reused || c->retried || !c->keep_obuf || c->opos > 0 || c->req_sent)
		return conn_failover(c, 502, "upstream closed the connection",
		    c->opos == 0 || c->state == CS_SEND_REQ || conn_upset_unacked(c));
	kv_upconn_close(c->uc, 0);	/* close() also leaves epoll */
	c->uc = NULL;
	c->retried = 1;
	c->opos = 0;
	free(c->ubuf);
	c->ubuf = NULL;
	c->ulen = c->upos = 0;
	return request_connect(c);
}

enum step
request_send(struct kv_conn *c)
{
	ssize_t n;

	while (c->opos < c->olen) {
		n = kv_stream_write(&c->uc->s, c->obuf + c->opos, c->olen - c->opos);
		if (n == KV_IO_AGAIN) {
			conn_quiet_client(c);
			conn_watch_upstream(c, (uint32_t)c->uc->s.want);
			conn_set_deadline(c, 1);
			return STEP_WAIT;
		}
		if (n < 0)
			return request_retry(c);
		c->opos += (size_t)n;
	}
	if (!c->keep_obuf) {
		c->olen = c->opos = 0;
	}
	c->state = c->spfd != -1 ? CS_SEND_BODY : CS_RESP_HEAD;
	if (c->cpos == c->clen) {
		free(c->cbuf);		/* nothing pipelined: no need to hold it */
		c->cbuf = NULL;
		c->cpos = c->clen = 0;
		c->head_parse = 0;
	}
	return STEP_CONT;
}

/* The spool is sent: the staging buffer goes, so a request waiting for
 * its response head holds its connection state, its head and the spool's
 * descriptor, which stays (with its share of spool_max) until the response
 * head: a target that provably got nothing has it sent to the next one
 * (relay.c lets it go). */
static enum step
spool_sent(struct kv_conn *c)
{
	free(c->sbuf);
	c->sbuf = NULL;
	c->slen = c->spos = 0;
	c->state = CS_RESP_HEAD;
	return STEP_CONT;
}

/* The next piece of the spooled body, as the upstream sees it: the file up
 * to inj_at, the injected member, the file's rest. Plaintext goes with
 * sendfile(); TLS (or a sendfile that cannot) is staged through sbuf.
 * Returns 1 sent some, 0 wait for EPOLLOUT, -1 error. */
static int
spool_piece(struct kv_conn *c)
{
	int64_t total = c->body_bytes + (int64_t)c->injlen, at = c->inj != NULL ? c->inj_at : total;
	int64_t fpos, end;
	size_t want;
	ssize_t n;

	if (c->inj != NULL && c->sp_off >= at && c->sp_off < at + (int64_t)c->injlen) {
		want = (size_t)(at + (int64_t)c->injlen - c->sp_off);
		memcpy(c->sbuf, c->inj + (c->sp_off - at), want);
		c->slen = want;
		c->spos = 0;
		c->sp_off += (int64_t)want;
		return 1;
	}
	fpos = c->sp_off < at ? c->sp_off : c->sp_off - (int64_t)c->injlen;
	end = c->sp_off < at ? at : c->body_bytes;
	if (!kv_stream_tls(&c->uc->s) && c->w->splice_ok) {
		off_t o = (off_t)fpos;

		n = sendfile(c->uc->s.fd, c->spfd, &o, (size_t)(end - fpos < (1 << 20) ?
		    end - fpos : (1 << 20)));
		if (n > 0) {
			c->sp_off += n;
			return 1;
		}
		if (n == -1 && errno == EAGAIN)
			return 0;
		if (n == -1 && (errno == EINVAL || errno == ENOSYS))
			c->w->splice_ok = 0;	/* then stage it below */
		else
			return -1;
	}
	want = (size_t)(end - fpos < KV_SPOOL_STAGE ? end - fpos : KV_SPOOL_STAGE);
	if ((n = kv_spool_pread(c->spfd, c->sbuf, want, fpos)) != (ssize_t)want) {
		kv_log_warn("KV0507", "reading the request spool");
		return -1;
	}
	c->slen = want;
	c->spos = 0;
	c->sp_off += (int64_t)want;
	return 1;
}

enum step
request_send_body(struct kv_conn *c)
{
	ssize_t n;
	int r;

	if (c->sbuf == NULL && (c->sbuf = malloc(KV_SPOOL_STAGE)) == NULL)
		return conn_fail(c, 503, "out of memory");
	for (;;) {
		if (c->spos < c->slen) {
			n = kv_stream_write(&c->uc->s, c->sbuf + c->spos, c->slen - c->spos);
			if (n == KV_IO_AGAIN) {
				conn_quiet_client(c);
				conn_watch_upstream(c, (uint32_t)c->uc->s.want);
				conn_set_deadline(c, 1);
				return STEP_WAIT;
			}
			if (n < 0)	/* it never got the whole request: nothing billed */
				return conn_failover(c, 502, "upstream closed while receiving "
				    "the body", 1);
			c->spos += (size_t)n;
			continue;
		}
		c->slen = c->spos = 0;
		if (c->sp_off == c->body_bytes + (int64_t)c->injlen)
			return spool_sent(c);
		if ((r = spool_piece(c)) == 0) {
			conn_quiet_client(c);
			conn_watch_upstream(c, EPOLLOUT);
			conn_set_deadline(c, 1);
			return STEP_WAIT;
		}
		if (r == -1)
			return conn_failover(c, 502, "upstream closed while receiving the body", 1);
	}
}

void
kv_request_release(struct kv_conn *c)
{
	if (c->spfd != -1) {
		close(c->spfd);
		c->spfd = -1;
	}
	c->w->spool_bytes -= (uint64_t)c->sp_charged;
	c->sp_charged = 0;
	free(c->sbuf);
	c->sbuf = NULL;
	c->slen = c->spos = 0;
	free(c->rs);
	c->rs = NULL;
	free(c->inj);
	c->inj = NULL;
	c->injlen = 0;
}

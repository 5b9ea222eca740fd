/* The send phase: the upstream connection taken from the pool or made
 * (past the upstream's handshake gate), the request in obuf sent, and a
 * spooled body sent from its file. */
#include "worker/request_send.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/spool.h"
#include "worker/peer.h"
#include "worker/reply.h"

/* The gate, then a pooled connection or a new one. */
static enum kv_rc
send_gate(struct kv_conn *c)
{
	char err[256] = "";

	if (kv_upstream_gate(c->rt, &c->upwait)) {
		/* woken by the upstream; the client's leaving still counts */
		if (c->att.send_step != SEND_UPWAIT) {
			c->att.send_step = SEND_UPWAIT;
			c->att.ticket_waited = 0;
			conn_watch_client(c, EPOLLRDHUP);
			/* parked for another request's TLS ticket: not for long
			 * (a target that never finishes a handshake must not make
			 * each parked request wait for the one before it) */
			conn_deadline(c, c->w->now_ms + KV_GATE_TICKET_MS);
		}
		return KV_AGAIN;
	}
	if (!c->att.retried && (c->att.uc = kv_upconn_take_idle(c->rt, (int64_t)time(NULL))) != NULL) {
		c->att.uc->ev.ptr = c;	/* it may still be in the epoll set */
		c->att.send_step = SEND_HEAD;
		return KV_NEXT;
	}
	if ((c->att.uc = kv_upconn_connect(c->rt, err, sizeof(err))) == NULL) {
		kv_log_warnx("KV0420", "%s", err);
		return peer_fail(c, 502, "upstream unreachable", 1);
	}
	c->att.send_step = SEND_CONNECT;
	conn_watch_client(c, EPOLLRDHUP);
	conn_watch_upstream(c, EPOLLOUT);
	conn_set_deadline(c, CONN_CONNECT);
	return KV_AGAIN;
}

static enum kv_rc
send_connected(struct kv_conn *c)
{
	char err[256] = "";

	if (kv_upconn_connected(c->att.uc, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0421", "%s", err);
		return peer_fail(c, 502, "upstream unreachable", 1);
	}
	c->att.send_step = c->att.uc->s.ssl != NULL ? SEND_HANDSHAKE : SEND_HEAD;
	return KV_NEXT;
}

static enum kv_rc
send_handshake(struct kv_conn *c)
{
	char err[256] = "";
	int r;

	r = kv_stream_handshake(&c->att.uc->s, err, sizeof(err));
	if (r == 1) {
		c->att.send_step = SEND_HEAD;
		return KV_NEXT;
	}
	if (r == KV_IO_AGAIN) {
		conn_watch_upstream(c, (uint32_t)c->att.uc->s.want);
		return KV_AGAIN;
	}
	kv_log_warnx("KV0422", "upstream %s: %s", c->rt->cf->name, err);
	return peer_fail(c, 502, "TLS to the upstream failed", 1);
}

static enum kv_rc
send_head(struct kv_conn *c)
{
	ssize_t n;

	while (c->opos < c->olen) {
		n = kv_stream_write(&c->att.uc->s, c->obuf + c->opos, c->olen - c->opos);
		if (n == KV_IO_AGAIN) {
			return conn_wait_upstream(c, (uint32_t)c->att.uc->s.want);
		}
		/* the head was not all written: nothing the target could bill */
		if (n < 0)
			return peer_closed(c, 1);
		c->opos += (size_t)n;
	}
	if (!c->keep_obuf) {
		c->olen = c->opos = 0;
	}
	if (c->cpos == c->clen) {
		free(c->cbuf);		/* nothing pipelined: no need to hold it */
		c->cbuf = NULL;
		c->cpos = c->clen = 0;
		c->head_parse = 0;
	}
	if (c->req.spfd == -1)
		return KV_DONE;
	c->att.send_step = SEND_SPOOL;
	return KV_NEXT;
}

/* The spool is sent: the staging buffer goes, so a request waiting for
 * its response head holds its connection state, its head and the spool's
 * descriptor, which stays (with its share of spool_max) until the response
 * head: a target that provably got nothing has it sent to the next one
 * (relay.c lets it go). */
static enum kv_rc
spool_sent(struct kv_conn *c)
{
	free(c->att.sbuf);
	c->att.sbuf = NULL;
	c->att.slen = c->att.spos = 0;
	return KV_DONE;
}

/* The next piece of the spooled body, as the upstream sees it: the file up
 * to inj_at, the injected member, the file's rest. Plaintext goes with
 * sendfile(); TLS (or a sendfile that cannot) is staged through sbuf.
 * Returns 1 sent some, 0 wait for EPOLLOUT, -1 error. */
static int
spool_piece(struct kv_conn *c)
{
	int64_t total = c->req.body_bytes + (int64_t)c->req.injlen, at = c->req.inj != NULL ? c->req.inj_at : total;
	int64_t fpos, end;
	size_t want;
	ssize_t n;

	if (c->req.inj != NULL && c->att.sp_off >= at && c->att.sp_off < at + (int64_t)c->req.injlen) {
		want = (size_t)(at + (int64_t)c->req.injlen - c->att.sp_off);
		memcpy(c->att.sbuf, c->req.inj + (c->att.sp_off - at), want);
		c->att.slen = want;
		c->att.spos = 0;
		c->att.sp_off += (int64_t)want;
		return 1;
	}
	fpos = c->att.sp_off < at ? c->att.sp_off : c->att.sp_off - (int64_t)c->req.injlen;
	end = c->att.sp_off < at ? at : c->req.body_bytes;
	if (!kv_stream_tls(&c->att.uc->s) && c->w->splice_ok) {
		off_t o = (off_t)fpos;

		n = sendfile(c->att.uc->s.fd, c->req.spfd, &o, (size_t)(end - fpos < (1 << 20) ?
		    end - fpos : (1 << 20)));
		if (n > 0) {
			c->att.sp_off += n;
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
	if ((n = kv_spool_pread(c->req.spfd, c->att.sbuf, want, fpos)) != (ssize_t)want) {
		kv_log_warn("KV0507", "reading the request spool");
		return -1;
	}
	c->att.slen = want;
	c->att.spos = 0;
	c->att.sp_off += (int64_t)want;
	return 1;
}

static enum kv_rc
send_spool(struct kv_conn *c)
{
	ssize_t n;
	int r;

	if (c->att.sbuf == NULL && (c->att.sbuf = malloc(KV_SPOOL_STAGE)) == NULL)
		return reply_error(c, 503, "out of memory");
	for (;;) {
		if (c->att.spos < c->att.slen) {
			n = kv_stream_write(&c->att.uc->s, c->att.sbuf + c->att.spos, c->att.slen - c->att.spos);
			if (n == KV_IO_AGAIN) {
				return conn_wait_upstream(c, (uint32_t)c->att.uc->s.want);
			}
			if (n < 0)	/* it never got the whole request: nothing billed */
				return peer_fail(c, 502, "upstream closed while receiving "
				    "the body", 1);
			c->att.spos += (size_t)n;
			continue;
		}
		c->att.slen = c->att.spos = 0;
		if (c->att.sp_off == c->req.body_bytes + (int64_t)c->req.injlen)
			return spool_sent(c);
		if ((r = spool_piece(c)) == 0) {
			return conn_wait_upstream(c, EPOLLOUT);
		}
		if (r == -1)
			return peer_fail(c, 502, "upstream closed while receiving the body", 1);
	}
}

/* One step of the send phase's own progress. KV_NEXT: the next step;
 * KV_DONE: the whole request went out. */
static enum kv_rc
send_step(struct kv_conn *c)
{
	switch (c->att.send_step) {
	case SEND_GATE:
	case SEND_UPWAIT:	return send_gate(c);
	case SEND_CONNECT:	return send_connected(c);
	case SEND_HANDSHAKE:	return send_handshake(c);
	case SEND_HEAD:		return send_head(c);
	case SEND_SPOOL:	return send_spool(c);
	}
	return KV_CLOSE;
}

enum kv_rc
request_send(struct kv_conn *c)
{
	enum kv_rc rc;

	while ((rc = send_step(c)) == KV_NEXT)
		;
	return rc == KV_DONE ? KV_NEXT : rc;
}

enum kv_rc
request_send_timeout(struct kv_conn *c)
{
	switch (c->att.send_step) {
	case SEND_GATE:
	case SEND_UPWAIT:
		if (!c->att.ticket_waited) {
			/* The first handshake's ticket is late: handshake on our
			 * own (still within the gate's count of handshakes). */
			c->att.ticket_waited = 1;
			conn_deadline(c, c->w->now_ms + (int64_t)c->w->cf->upstream_timeout * 1000);
			kv_upstream_gate_stop_waiting(c->rt);
			return KV_AGAIN;
		}
		kv_upstream_ungate(&c->upwait);
		return reply_error(c, 504, "upstream timed out");
	case SEND_CONNECT:
	case SEND_HANDSHAKE:
		/* connect_timeout, the TLS handshake included: nothing of the
		 * request was sent, so it moves to another target */
		kv_log_warnx("KV0423", "upstream %s: no %s within connect_timeout (%d s)",
		    c->tlabel != NULL ? c->tlabel : "-",
		    c->att.send_step == SEND_CONNECT ? "TCP connection" : "TLS handshake",
		    c->w->cf->connect_timeout);
		return peer_fail(c, 504, "upstream connect timed out", 1);
	case SEND_HEAD:
		return reply_error(c, 504, "upstream timed out");
	case SEND_SPOOL:
		break;
	}
	return KV_CLOSE;
}

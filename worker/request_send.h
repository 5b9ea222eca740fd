/* The send phase (request_send.c): the request in obuf sent over a pooled
 * or new upstream connection, a spooled body from its file. */
#ifndef KV_REQUEST_SEND_H
#define KV_REQUEST_SEND_H

#include "worker/conn-t.h"

/* CS_SEND: wait at the upstream's handshake gate (SEND_UPWAIT: at most
 * KV_GATE_TICKET_MS for another's TLS ticket), take a pooled connection or
 * connect and handshake (connect_timeout), write the head and a body in
 * memory, then the spool. Returns KV_NEXT once all of it went out,
 * KV_AGAIN to wait, KV_RETRY when the attempt failed before the target
 * could have billed it (peer.h), KV_REPLY (out of memory). */
enum kv_rc request_send(struct kv_conn *c);

/* CS_SEND's deadline passed: the ticket wait ends (KV_AGAIN), the gate's
 * wait is a 504, a connect or handshake moves on (KV_RETRY), a stalled
 * write is a 504 or, mid-spool, a close. */
enum kv_rc request_send_timeout(struct kv_conn *c);

#endif

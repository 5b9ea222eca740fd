/* The upstream request (request_send.c): built from the client's, sent
 * over a pooled or new upstream connection, a spooled body from its file. */
#ifndef KV_REQUEST_SEND_H
#define KV_REQUEST_SEND_H

#include "worker/conn-t.h"

/* Ask for usage in a streamed chat or completion body (c->force_usage):
 * set c->inj and c->inj_at for the member to add, or overwrite the
 * client's include_usage in place. Returns 0, or the status to refuse
 * with (*MSG why: 400 a body that cannot be merged, 503). */
int	request_build_inject(struct kv_conn *c, const char **msg);

/* The upstream request into obuf: the method, the upstream's base path and
 * the target, Host, the client's end-to-end headers but its credentials
 * when the upstream has its own api_key (which goes instead), our own
 * Content-Length, keep-alive; then the body and injection unless the body
 * is spooled. Returns 0 or -1. */
int	request_build(struct kv_conn *c);

enum step request_connect(struct kv_conn *c);	/* also CS_UPWAIT's step */
enum step request_connect_done(struct kv_conn *c);	/* CS_CONNECT */
enum step request_handshake(struct kv_conn *c);	/* CS_HANDSHAKE */
enum step request_send(struct kv_conn *c);	/* CS_SEND_REQ: obuf */
enum step request_send_body(struct kv_conn *c);	/* CS_SEND_BODY: the spool */
/* The upstream closed while the request was being written: one fresh
 * connection for a reused one that got nothing, else failover. */
enum step request_retry(struct kv_conn *c);
/* Close the spool and free the scanner and injection of this request. */
void	kv_request_release(struct kv_conn *c);

#endif

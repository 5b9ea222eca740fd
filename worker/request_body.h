/* The body phase (request_body.c): every byte scanned, small bodies in
 * memory, the rest in a spool file charged to spool_max. */
#ifndef KV_REQUEST_BODY_H
#define KV_REQUEST_BODY_H

#include "worker/conn-t.h"

/* CS_BODY: read, decode (chunked) and scan the body, keeping it in the
 * window (c->req.ibuf) or the spool (c->req.spfd); KV_NEXT once it is whole.
 * Refuses a body past max_body (413), a malformed one (400) or one the
 * spool cannot take (503, retry-after 5): KV_REPLY. */
enum kv_rc request_body(struct kv_conn *c);

#endif

/* The build phase (request_build.c): the upstream request in obuf. */
#ifndef KV_REQUEST_BUILD_H
#define KV_REQUEST_BUILD_H

#include "worker/conn-t.h"

/* CS_BUILD: the first attempt's request into obuf -- the method, the
 * upstream's base path and the target, Host, the client's end-to-end
 * headers but its credentials when the upstream has its own api_key (which
 * goes instead), our own Content-Length, keep-alive; then the body and the
 * usage injection unless the body is spooled -- kept for a retry; the
 * client's body window and head let go. On a retry to another target
 * (c->rebuild_from), the request in obuf rewritten for it. Returns KV_NEXT,
 * or KV_REPLY: 400 a body whose usage cannot be asked for, 502. */
enum kv_rc request_build(struct kv_conn *c);

#endif

/* The head phase (request_head.c). */
#ifndef KV_REQUEST_HEAD_H
#define KV_REQUEST_HEAD_H

#include "worker/conn-t.h"

/* CS_HEAD: read until a whole head is parsed, then take it: the target
 * checked, a CORS preflight answered (KV_REPLY), the one credential found
 * (credential.h) and hashed into c->req.keyhash and c->req.keyid, body intake set
 * up: KV_NEXT. A refusal is KV_REPLY; a head shed for memory, or a client
 * gone, KV_CLOSE. */
enum kv_rc request_head(struct kv_conn *c);

#endif

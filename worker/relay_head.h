/* The response head phase (relay_head.c). */
#ifndef KV_RELAY_HEAD_H
#define KV_RELAY_HEAD_H

#include "worker/conn-t.h"

/* CS_RESP_HEAD: the whole request reached the provider (settle_mark_sent);
 * read the upstream's head, skip interim responses, fail over on a refusal
 * its target set (peer_answer: KV_RETRY), then decide the framing
 * (resp_filter_start), build the client's head into obuf, take the body
 * bytes read with it: KV_NEXT. A malformed or too large head is a 502; an
 * upstream that closes before any byte is KV_RETRY (peer_closed). */
enum kv_rc relay_head(struct kv_conn *c);

#endif

/* The response head (relay_head.c). */
#ifndef KV_RELAY_HEAD_H
#define KV_RELAY_HEAD_H

#include "worker/conn-t.h"

/* CS_RESP_HEAD: the whole request reached the provider (settle_mark_sent);
 * read the upstream's head, skip interim responses, fail over on a refusal
 * its target set (conn_upset_answer), then decide the framing, build the
 * client's head into obuf, take the body bytes read with it and go on to
 * CS_RELAY; a malformed or too large head is a 502. */
enum step relay_head(struct kv_conn *c);

/* The client hung up: 1 when the request goes on without it (a metered
 * response read to its end and charged by its usage; a stream only under
 * on_cut = drain, within drain_timeout and drain_max), 0 when the
 * connection is to be closed as a cut. */
int	relay_client_left(struct kv_conn *c);

#endif

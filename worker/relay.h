/* The relay phase (relay.c): the response body. */
#ifndef KV_RELAY_H
#define KV_RELAY_H

#include "worker/conn-t.h"

/* CS_RELAY: move the body from the upstream to the client until it ends
 * (KV_DONE), the upstream breaks off or the client stops taking it
 * (KV_CUT). */
enum kv_rc relay_body(struct kv_conn *c);

/* The client hung up (the CS_RESP_HEAD and CS_RELAY phases' hook): 1 when
 * the request goes on without it (a metered response read to its end and
 * charged by its usage; a stream only under on_cut = drain, within
 * drain_timeout and drain_max), 0 when the connection is to be closed as
 * a cut. */
int	relay_client_left(struct kv_conn *c);

#endif

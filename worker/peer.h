/* Upstreams with several targets (`url = A B C`), chosen by power of two
 * choices on the fewest requests in flight (counted in the ledger, so every
 * worker sees the same load), with passive health (shm/targets.h) and
 * failover: before any response byte reaches the client, a request whose
 * target could not have billed it (connect or TLS failure, a reset before
 * the target acknowledged a request byte, the body not all sent, no
 * connection or handshake within connect_timeout, a 429/503 answer) moves
 * to another target of its upstream, at most once per target and within
 * retry_budget seconds, then to the `fallback` upstream with its api_key
 * and model_map. Nothing is retried once the response started. */
#ifndef KV_PEER_H
#define KV_PEER_H

#include "worker/conn-t.h"

/* Choose the first target of upstream UP for C: sets c->rt, the target
 * it counts in flight, and the name x-kilovolt-upstream shows. */
void	peer_pick(struct kv_conn *c, const struct kv_upstream *up);

/* A phase's attempt failed before any response byte: record why in
 * c->att.fail (STATUS and MSG are what the client gets when no other target
 * can take it; SAFE: the target cannot have received the request, nothing
 * written or nothing acknowledged) and return KV_RETRY for the engine. */
enum kv_rc peer_fail(struct kv_conn *c, int status, const char *msg, int safe);

/* The same for an upstream that closed the connection under the request
 * (c->att.fail.closed: a reused pooled connection that got nothing may be
 * replaced by a fresh one to the same target first). */
enum kv_rc peer_closed(struct kv_conn *c, int safe);

/* The engine's failover after KV_RETRY: records the failure (c->att.fail) of
 * the current target, then picks the next target or the fallback. Returns
 * 0 with c->rt set and c->rebuild_from naming the upstream the request in
 * obuf was built for (the engine resets the attempt, the build phase
 * rewrites the request); -1 when the request may not or cannot move (the
 * client gets c->att.fail's answer). */
int	peer_next(struct kv_conn *c);

/* Is nothing of what was written to C's upstream connection acknowledged
 * by the target (TCP_INFO)? A target that reset without reading cannot
 * have billed. 0 when unsure. */
int	peer_unacked(const struct kv_conn *c);

/* A response head with STATUS arrived. Returns 1 when the request should
 * move to another target instead (429/503 and one is left; a retry-after
 * cools the target for that long), else 0: the target counts as working,
 * or for 502/504 as failed -- relayed all the same, never retried (at most
 * once: the provider may have billed it). */
int	peer_answer(struct kv_conn *c, const struct kv_http_response *res);

/* The request is over: its target is no longer in flight. */
void	peer_finish(struct kv_conn *c);

#endif

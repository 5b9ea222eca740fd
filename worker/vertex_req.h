/* A request on a Vertex AI path (common/vertex_path.h): its head's facts
 * (the model from the path, Anthropic's shapes for Claude), the target
 * sent on with the upstream's own project and location, and the bearer
 * token a vertex upstream is sent (Google's access token the master
 * publishes, common/gcp_token.h, or the upstream's api_key). */
#ifndef KV_VERTEX_REQ_H
#define KV_VERTEX_REQ_H

#include <stddef.h>

#include "common/config.h"
#include "worker/conn.h"

/* At the head: when TARGET (LEN bytes) is a Vertex AI path, note it in C
 * (req.vertex, req.path_model; req.anthropic for Claude's, req.google and
 * req.gm_stream for Gemini's, as on the Gemini API). 0, or -1 with
 * a static reason in *WHY (a metered path whose model id kilovolt cannot
 * read). */
int	kv_vertex_head(struct kv_conn *c, const char *target, size_t len, const char **why);

/* Once routed to UP, a vertex upstream: C's target becomes the same path
 * under UP's project and location (the operator's account is the one
 * billed, whatever project the client named). 0, or -1 (out of memory). */
int	kv_vertex_retarget(struct kv_conn *c, const struct kv_upstream *up);

/* The bearer token for vertex upstream UP: its api_key when set, else
 * the access token the master published last; its length in *LEN. NULL
 * when there is none yet. */
const char *kv_vertex_bearer(const struct kv_upstream *up, size_t *len);

#endif

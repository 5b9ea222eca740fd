/* Requests on Vertex AI paths: see vertex_req.h. */
#include "worker/vertex_req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/gcp_token.h"
#include "common/vertex_path.h"
#include "worker/conn-t.h"

int
kv_vertex_head(struct kv_conn *c, const char *target, size_t len, const char **why)
{
	struct kv_vx_path vx;

	_Static_assert(sizeof(c->req.path_model) == KV_VX_MODEL_MAX, "a model id fits");
	if (kv_vx_path(target, len, &vx) == KV_VX_NONE)
		return 0;
	c->req.vertex = 1;
	if (vx.anthropic && vx.kind != KV_VX_OTHER)
		c->req.anthropic = 1;	/* Claude's errors in Anthropic's shape */
	if (!vx.anthropic && vx.kind != KV_VX_OTHER) {
		c->req.google = 1;	/* Gemini's in Google's */
		c->req.gm_stream = vx.kind == KV_VX_STREAM_GENERATE;	/* the method says it */
	}
	if (vx.kind == KV_VX_OTHER || vx.kind == KV_VX_COUNT)
		return 0;
	if (vx.model_len >= sizeof(c->req.path_model)) {
		*why = "the model id in the path is too long";
		return -1;
	}
	memcpy(c->req.path_model, target + vx.model_off, vx.model_len);
	c->req.path_model[vx.model_len] = '\0';
	return 0;
}

int
kv_vertex_retarget(struct kv_conn *c, const struct kv_upstream *up)
{
	struct kv_vx_path vx;
	size_t tl = strlen(c->req.target), n;
	char *t;

	if (up->provider != KV_PROVIDER_VERTEX || kv_vx_path(c->req.target, tl, &vx) == KV_VX_NONE ||
	    vx.rest_off == 0)
		return 0;
	n = sizeof("/v1beta1/projects//locations/") + strlen(up->gcp_project) +
	    strlen(up->gcp_location) + tl - vx.rest_off;
	if ((t = malloc(n)) == NULL)
		return -1;
	snprintf(t, n, "/%.*s/projects/%s/locations/%s%s",
	    (int)strcspn(c->req.target + 1, "/"), c->req.target + 1, up->gcp_project,
	    up->gcp_location, c->req.target + vx.rest_off);
	free(c->req.target);
	c->req.target = t;
	return 0;
}

/* The worker's copy of the token. */
static struct kv_gcp_copy W;

const char *
kv_vertex_bearer(const struct kv_upstream *up, size_t *len)
{
	if (up->api_key != NULL) {
		*len = strlen(up->api_key);
		return up->api_key;
	}
	return kv_gcp_slot_copy(kv_gcp_slot_get(), &W, len);
}

/* An Azure OpenAI request at admission (issue 38): a deployment is not a
 * model, so the one it runs (the upstream's deployments) is what the
 * request is reserved and priced at; Azure's api-key header is a
 * credential on Azure's paths only. */
#include "worker/azure_admit.h"

#include <stdio.h>
#include <string.h>

#include "common/azure_path.h"
#include "worker/reply.h"

static enum kv_rc
unknown_deployment(struct kv_conn *c, const struct kv_upstream *up, const char *dep,
    size_t len)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "DeploymentNotFound: the API deployment '%.*s' is not one "
	    "kilovolt knows for [upstream %s]: add NAME:MODEL to its deployments",
	    (int)(len > 64 ? 64 : len), dep, up->name);
	return reply_error(c, 404, msg);
}

enum kv_rc
kv_azure_admit(struct kv_conn *c, const struct kv_upstream *up)
{
	const char *dep = NULL, *model;
	size_t dlen = 0, mlen;
	enum kv_az_kind k;

	if (up->provider != KV_PROVIDER_AZURE)
		return !c->req.auth_api_key ? KV_NEXT : reply_error(c, 400, "api-key is Azure "
		    "OpenAI's header, taken on the paths of a provider = azure upstream only: "
		    "send the kilovolt key as Authorization: Bearer KEY (or x-api-key)");
	k = kv_az_path(c->req.target, strlen(c->req.target), &dep, &dlen);
	if (k == KV_AZ_NONE || c->req.api == KV_API_OTHER)
		return KV_NEXT;		/* the endpoint policy's to judge */
	if (k == KV_AZ_BODY) {
		dep = c->req.ri.model;
		if ((dlen = strlen(dep)) == 0)
			return reply_error(c, 400, "the body's \"model\" must name the deployment "
			    "on this Azure OpenAI path (it has no /deployments/NAME/)");
	}
	if ((model = kv_az_model(up, dep, dlen)) == NULL)
		return unknown_deployment(c, up, dep, dlen);
	if ((mlen = strlen(model)) >= sizeof(c->req.ri.model))
		return reply_error(c, 500, "the deployment's model name is too long");
	memcpy(c->req.ri.model, model, mlen + 1);
	return KV_NEXT;
}

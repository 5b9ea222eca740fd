/* Rewrite a kept request for another target; see upstream_rewrite.h. */
#include "worker/upstream_rewrite.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/gcp_token.h"
#include "worker/azure_cred.h"
#include "worker/aws_sign.h"
#include "worker/vertex_req.h"

const char *
kv_model_map(const struct kv_upstream *u, const char *model, size_t *len)
{
	size_t i, n = strlen(model);

	for (i = 0; i < u->nmodel_map; i++) {
		const char *w = u->model_map[i], *eq = strchr(w, '=');

		if (eq != NULL && (size_t)(eq - w) == n && strncmp(w, model, n) == 0) {
			*len = strlen(eq + 1);
			return eq + 1;
		}
	}
	return NULL;
}

/* Where the top-level "model" string's value (without quotes) lies in the
 * JSON body B: the first "model" member whose value is exactly MODEL.
 * Member names inside strings are escaped (\"model\"), so a raw match
 * starts a real member. Returns the offset or -1. */
static long
find_model(const char *b, size_t len, const char *model)
{
	size_t ml = strlen(model), i, j;

	for (i = 0; i + 7 < len; i++) {
		if (memcmp(b + i, "\"model\"", 7) != 0 || (i > 0 && b[i - 1] == '\\'))
			continue;
		j = i + 7;
		while (j < len && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' || b[j] == '\n'))
			j++;
		if (j >= len || b[j++] != ':')
			continue;
		while (j < len && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' || b[j] == '\n'))
			j++;
		if (j + ml + 2 <= len && b[j] == '"' && memcmp(b + j + 1, model, ml) == 0 &&
		    b[j + 1 + ml] == '"')
			return (long)(j + 1);
	}
	return -1;
}

static int
drop_header(const struct kv_http_header *h, int creds, int aws)
{
	static const char *const drop[] = { "host", "content-length", "connection", NULL };
	const char *const *d;

	for (d = drop; *d != NULL; d++)
		if (h->name_len == strlen(*d) && strncasecmp(h->name, *d, h->name_len) == 0)
			return 1;
	/* To or from a Bedrock upstream: no credential and no X-Amz-* (our
	 * signature for the last target is re-made for this one, below). */
	if (aws && kv_aws_drop_header(h->name, h->name_len))
		return 1;
	return creds && ((h->name_len == 13 && strncasecmp(h->name, "authorization", 13) == 0) ||
	    (h->name_len == 9 && strncasecmp(h->name, "x-api-key", 9) == 0));
}

/* The body's SHA-256 as the new target gets it: the spool's, or BODY
 * (BLEN bytes) with the model name at AT replaced by MAPPED (MLEN bytes)
 * when MAPPED is not NULL. */
static int
body_hash(const struct kv_conn *c, const char *body, size_t blen, long at, const char *mapped,
    size_t mlen, char hex[65])
{
	size_t ol = strlen(c->req.ri.model);
	const void *p[3] = { body, mapped, NULL };
	size_t len[3] = { blen, mlen, 0 };

	if (c->req.spfd != -1)
		return kv_aws_hash_spool(c->req.spfd, c->req.body_bytes, c->req.inj, c->req.injlen,
		    c->req.inj_at, hex);
	if (mapped == NULL)
		return kv_aws_hash_parts(p, len, 1, hex);
	len[0] = (size_t)at;
	p[2] = body + at + (long)ol;
	len[2] = blen - (size_t)at - ol;
	return kv_aws_hash_parts(p, len, 3, hex);
}

/* The lines the rewritten head gets from us into NB (CAP bytes): the new
 * upstream's credential (its SigV4 signature when HEX, the body's hash, is
 * given: the target is in NB's request line), the framing of a body of
 * BLEN bytes (or the spool's), the end of the head. Returns their length,
 * or -1 when it cannot be signed. */
static int
own_lines(const struct kv_conn *c, const struct kv_http_request *req, char *nb, size_t cap,
    size_t at, size_t blen, const char *hex)
{
	const struct kv_upstream *to = c->rt->cf;
	const char *msg, *key;
	size_t kl;
	int n = 0, k;

	if (hex != NULL) {
		k = kv_aws_sign_lines(to, c->req.method, nb + strlen(c->req.method) + 1,
		    strlen(to->base_path) + strlen(c->req.target), hex, nb + at, &msg);
		if (k == -1)
			return -1;
		n += k;
	}
	if (to->provider == KV_PROVIDER_VERTEX) {
		if ((key = kv_vertex_bearer(to, &kl)) == NULL)
			return -1;
		n += snprintf(nb + at + n, cap - (size_t)n, "Authorization: Bearer %.*s\r\n",
		    (int)kl, key);
	} else if (kv_azure_entra(to)) {
		if ((key = kv_azure_bearer(&kl)) == NULL)
			return -1;
		n += snprintf(nb + at + n, cap - (size_t)n, "Authorization: Bearer %.*s\r\n",
		    (int)kl, key);
	} else if (to->api_key != NULL)
		n += snprintf(nb + at + n, cap - (size_t)n, to->provider == KV_PROVIDER_AZURE ?
		    "api-key: %s\r\n" : c->req.auth_x_api_key &&
		    to->provider != KV_PROVIDER_BEDROCK ? "x-api-key: %s\r\n" :
		    "Authorization: Bearer %s\r\n", to->api_key);
	if (c->req.spfd != -1)	/* the body follows from the spool */
		n += snprintf(nb + at + n, cap - (size_t)n, "Content-Length: %lld\r\n",
		    (long long)(c->req.body_bytes + (int64_t)c->req.injlen));
	else if (blen > 0 || kv_http_find(req->headers, req->nheaders, "content-length") != NULL)
		n += snprintf(nb + at + n, cap - (size_t)n, "Content-Length: %zu\r\n", blen);
	n += snprintf(nb + at + n, cap - (size_t)n, "Connection: keep-alive\r\n\r\n");
	return n;
}

/* The body (BLEN bytes) into DST, the model name MODEL at AT replaced
 * by MAPPED (MLEN bytes) when there is one; returns the bytes written. */
static size_t
copy_body(char *dst, const char *body, size_t blen, long at, const char *mapped, size_t mlen,
    const char *model)
{
	size_t ml = strlen(model);

	if (mapped == NULL) {
		memcpy(dst, body, blen);
		return blen;
	}
	memcpy(dst, body, (size_t)at);
	memcpy(dst + at, mapped, mlen);
	memcpy(dst + at + mlen, body + at + ml, blen - (size_t)at - ml);
	return blen - ml + mlen;
}

int
kv_upset_rewrite(struct kv_conn *c, const struct kv_upstream *from)
{
	const struct kv_upstream *to = c->rt->cf;
	struct kv_http_request *req = &c->w->req;
	const char *reason, *body, *mapped = NULL;
	size_t blen, mlen = 0, i, cap;
	long at = -1;
	int status, hl, n, k, creds, aws;
	char *nb, hex[65];

	hl = kv_http_parse_request(c->obuf, c->olen, req, &status, &reason);
	c->w->req_parse++;	/* w->req no longer holds a client's head */
	if (hl <= 0)
		return -1;
	body = c->obuf + hl;
	blen = c->olen - (size_t)hl;
	if (c->fell_back && c->req.ri.model[0] != '\0' &&
	    (mapped = kv_model_map(c->ugroup, c->req.ri.model, &mlen)) != NULL &&
	    (at = find_model(body, blen, c->req.ri.model)) < 0)
		mapped = NULL;
	/* A spooled body is sent from its file as it is: a model name to
	 * map in it cannot be, so such a request does not fall back. */
	if (c->req.spfd != -1 && c->fell_back && c->req.ri.model[0] != '\0' &&
	    kv_model_map(c->ugroup, c->req.ri.model, &mlen) != NULL)
		return -1;
	/* A provider key of ours never goes to another provider. */
	creds = from->api_key != NULL || to->api_key != NULL ||
	    from->provider == KV_PROVIDER_VERTEX || to->provider == KV_PROVIDER_VERTEX ||
	    kv_azure_entra(from) || kv_azure_entra(to);
	aws = from->provider == KV_PROVIDER_BEDROCK || to->provider == KV_PROVIDER_BEDROCK;
	if (to->provider == KV_PROVIDER_BEDROCK && to->api_key == NULL &&
	    body_hash(c, body, blen, at, mapped, mlen, hex) == -1)
		return -1;
	cap = (size_t)hl + blen + mlen + strlen(to->base_path) + strlen(to->host_header) +
	    (to->api_key ? strlen(to->api_key) : 0) + 2 * req->nheaders + 256 + KV_AWS_SIGN_ROOM +
	    KV_GCP_TOKEN_MAX;
	if ((nb = malloc(cap)) == NULL)
		return -1;
	n = snprintf(nb, cap, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", c->req.method, to->base_path,
	    c->req.target, to->host_header);
	for (i = 0; i < req->nheaders; i++) {
		const struct kv_http_header *h = &req->headers[i];

		if (drop_header(h, creds, aws))
			continue;
		n += snprintf(nb + n, cap - (size_t)n, "%.*s: %.*s\r\n", (int)h->name_len, h->name,
		    (int)h->value_len, h->value);
	}
	k = own_lines(c, req, nb, cap - (size_t)n, (size_t)n,
	    mapped ? blen - strlen(c->req.ri.model) + mlen : blen,
	    to->provider == KV_PROVIDER_BEDROCK && to->api_key == NULL ? hex : NULL);
	if (k == -1) {
		free(nb);
		return -1;
	}
	n += k;
	n += (int)copy_body(nb + n, body, blen, at, mapped, mlen, c->req.ri.model);
	free(c->obuf);
	c->obuf = nb;
	c->olen = (size_t)n;
	c->ocap = cap;
	return 0;
}

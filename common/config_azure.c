/* The [upstream NAME] keys of provider = azure (issue 38): deployments,
 * tenant and client_id, entra_url; and the section's checks at its end. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/azure_path.h"
#include "common/config.h"
#include "common/config_int.h"

int
cfg_check_deployment(const char *w, size_t len)
{
	return kv_az_word_ok(w, len);
}

/* tenant, client_id: a GUID or a domain name (Entra's tenant may be
 * contoso.onmicrosoft.com); it goes into a URL and a form, so nothing
 * else passes. */
int
cfg_set_azure_id(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	char *dst = (char *)cfg_base(p, k->base) + k->off;
	size_t n = strlen(v), i;

	for (i = 0; i < n; i++)
		if (!(v[i] >= 'a' && v[i] <= 'z') && !(v[i] >= 'A' && v[i] <= 'Z') &&
		    !(v[i] >= '0' && v[i] <= '9') && v[i] != '-' && v[i] != '.')
			break;
	if (n == 0 || n >= k->width || i != n)
		return cfg_err(p, p->lineno, "%s: '%s' is not a GUID or a domain name",
		    k->name, v);
	memcpy(dst, v, n + 1);
	return 0;
}

int
cfg_set_entra_url(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base), tmp;

	memset(&tmp, 0, sizeof(tmp));
	if (strlen(v) >= sizeof(u->entra_url) || cfg_parse_url(v, &tmp) == -1)
		return cfg_err(p, p->lineno, "entra_url: bad URL '%s' "
		    "(want http[s]://HOST[:PORT][/PATH])", v);
	strcpy(u->entra_url, v);
	return 0;
}

/* Azure's keys on an upstream of another provider are a mistake. */
static int
not_azure(struct cfg_parse *p, const struct kv_upstream *u)
{
	const char *key = u->ndeployments > 0 ? "deployments" : u->tenant[0] ? "tenant" :
	    u->client_id[0] ? "client_id" : u->client_secret != NULL ? "client_secret" :
	    u->entra_url[0] ? "entra_url" : NULL;

	if (key == NULL)
		return 0;
	return cfg_err(p, p->sect_line, "%s: %s is for provider = azure only", p->sect_text,
	    key);
}

/* The master holds one Entra token (master/entra_refresh.c): an earlier
 * azure upstream with tenant set names the same identity as U. */
static int
one_identity(struct cfg_parse *p, const struct kv_upstream *u)
{
	size_t i;

	for (i = 0; i < p->cf->nupstreams; i++) {
		const struct kv_upstream *o = &p->cf->upstreams[i];

		if (o == u || o->provider != KV_PROVIDER_AZURE || o->tenant[0] == '\0')
			continue;
		if (strcmp(o->tenant, u->tenant) != 0 || strcmp(o->client_id, u->client_id) != 0 ||
		    strcmp(o->entra_url, u->entra_url) != 0 ||
		    strcmp(o->client_secret, u->client_secret) != 0)
			return cfg_err(p, p->sect_line, "%s: kilovolt holds one Entra ID token, and "
			    "[upstream %s] names another identity (tenant, client_id, "
			    "client_secret, entra_url)", p->sect_text, o->name);
	}
	return 0;
}

/* Entra ID: all three of tenant, client_id and client_secret, or none;
 * never beside api_key (which one would be sent?). */
static int
entra_check(struct cfg_parse *p, struct kv_upstream *u)
{
	int n = (u->tenant[0] != '\0') + (u->client_id[0] != '\0') + (u->client_secret != NULL);

	if (n == 0)
		return u->entra_url[0] != '\0' ? cfg_err(p, p->sect_line, "%s: entra_url "
		    "needs tenant, client_id and client_secret", p->sect_text) : 0;
	if (n != 3)
		return cfg_err(p, p->sect_line, "%s: Entra ID needs all of tenant, client_id "
		    "and client_secret", p->sect_text);
	if (u->api_key != NULL)
		return cfg_err(p, p->sect_line, "%s: api_key and Entra ID (tenant, client_id, "
		    "client_secret) exclude each other: set one", p->sect_text);
	if (u->entra_url[0] == '\0')
		snprintf(u->entra_url, sizeof(u->entra_url),
		    "https://login.microsoftonline.com/%s/oauth2/v2.0/token", u->tenant);
	return one_identity(p, u);
}

int
cfg_end_azure(struct cfg_parse *p, struct kv_upstream *u)
{
	if (u->provider != KV_PROVIDER_AZURE)
		return not_azure(p, u);
	if (u->ndeployments == 0)
		return cfg_err(p, p->sect_line, "%s: provider = azure needs deployments = "
		    "NAME:MODEL ... (each deployment and the catalogue model it runs)",
		    p->sect_text);
	if (entra_check(p, u) == -1)
		return -1;
	if (u->npaths == 0 && u->nmodels == 0) {
		if ((u->paths = calloc(1, sizeof(char *))) == NULL ||
		    (u->paths[0] = strdup("/openai")) == NULL)
			return cfg_err(p, 0, "out of memory");
		u->npaths = 1;
	}
	return 0;
}

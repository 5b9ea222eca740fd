/* An upstream's entries after its section: a Bedrock upstream's defaults
 * from its region, one hidden entry per extra target and for Bedrock's
 * control plane, fallbacks resolved, every upstream reachable. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/config_int.h"

/* A Bedrock upstream names its AWS region, which gives its url and paths
 * when they are not written; an AWS region on any other is a mistake. */
int
cfg_end_bedrock(struct cfg_parse *p, struct kv_upstream *u)
{
	char url[sizeof(u->url)];

	if (u->provider != KV_PROVIDER_BEDROCK) {
		if (u->aws_region[0] != '\0')
			return cfg_err(p, p->sect_line, "%s: region = %s is an AWS region, for "
			    "provider = bedrock only", p->sect_text, u->aws_region);
		if (u->control_url[0] != '\0')
			return cfg_err(p, p->sect_line, "%s: control_url is for provider = "
			    "bedrock only", p->sect_text);
		return 0;
	}
	if (u->aws_region[0] == '\0')
		return cfg_err(p, p->sect_line, "%s: provider = bedrock needs region = "
		    "AWS_REGION (us-east-1)", p->sect_text);
	if (u->url[0] == '\0') {
		snprintf(url, sizeof(url), "https://bedrock-runtime.%s.amazonaws.com",
		    u->aws_region);
		if (cfg_parse_url(url, u) == -1)
			return cfg_err(p, p->sect_line, "%s: bad region for a url", p->sect_text);
		strcpy(u->url, url);
	}
	if (u->control_url[0] == '\0')
		snprintf(u->control_url, sizeof(u->control_url),
		    "https://bedrock.%s.amazonaws.com", u->aws_region);
	if (u->npaths == 0 && u->nmodels == 0) {
		if ((u->paths = calloc(1, sizeof(char *))) == NULL ||
		    (u->paths[0] = strdup("/model/")) == NULL)
			return cfg_err(p, 0, "out of memory");
		u->npaths = 1;
	}
	return 0;
}

/* One entry per extra target of upstream I: its own URL, the rest as I's. */
static int
add_target(struct cfg_parse *p, size_t i, const char *url)
{
	struct kv_config *cf = p->cf;
	struct kv_upstream *t, *u;

	if (cfg_grow(&cf->upstreams, cf->nupstreams, sizeof(*cf->upstreams)) == -1)
		return cfg_err(p, 0, "out of memory");
	u = &cf->upstreams[i];
	t = &cf->upstreams[cf->nupstreams++];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, u->name);
	(void)cfg_parse_url(url, t);	/* checked by set_url */
	strcpy(t->url, url);
	t->target_of = i + 1;
	t->shared_stored_objects = u->shared_stored_objects;
	t->region = u->region;
	t->provider = u->provider;
	memcpy(t->aws_region, u->aws_region, sizeof(t->aws_region));
	memcpy(t->tenant, u->tenant, sizeof(t->tenant));	/* Entra's token: azure_cred.h */
	memcpy(t->gcp_project, u->gcp_project, sizeof(t->gcp_project));
	memcpy(t->gcp_location, u->gcp_location, sizeof(t->gcp_location));
	t->tls_record_layer = u->tls_record_layer;
	if ((u->api_key != NULL && (t->api_key = strdup(u->api_key)) == NULL) ||
	    (u->ca_file != NULL && (t->ca_file = strdup(u->ca_file)) == NULL))
		return cfg_err(p, 0, "out of memory");
	return 0;
}

/* A bedrock upstream I's control plane: a hidden entry (target_of set, so
 * neither routing, failover, health checks nor -T see it) with the
 * upstream's provider, region and credential, so it is signed as the
 * runtime is. */
static int
add_control(struct cfg_parse *p, size_t i)
{
	struct kv_config *cf = p->cf;
	char url[sizeof(cf->upstreams->control_url)];

	memcpy(url, cf->upstreams[i].control_url, sizeof(url));
	if (add_target(p, i, url) == -1)	/* cf->upstreams may move */
		return -1;
	cf->upstreams[i].control_idx = cf->nupstreams;
	return 0;
}

/* Every upstream is reached by its paths or models, or as a fallback. */
static int
check_reachable(struct cfg_parse *p, size_t n0)
{
	const struct kv_config *cf = p->cf;
	size_t i, j;
	int named;

	for (i = 0; i < n0; i++) {
		const struct kv_upstream *u = &cf->upstreams[i];

		if (u->npaths > 0 || u->nmodels > 0 || u->nfree_paths > 0)
			continue;
		for (named = 0, j = 0; j < n0; j++)
			named |= cf->upstreams[j].fallback_idx == i + 1;
		if (!named)
			return cfg_err(p, u->sect_line, "[upstream %s]: needs paths or models "
			    "(or to be another upstream's fallback)", u->name);
	}
	return 0;
}

/* After the whole file: extra targets become entries, fallbacks resolve. */
int
cfg_expand_targets(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	size_t n0 = cf->nupstreams, i, j;

	for (i = 0; i < n0; i++) {
		cf->upstreams[i].first_extra = cf->nupstreams;
		for (j = 0; j < cf->upstreams[i].nextra; j++)
			if (add_target(p, i, cf->upstreams[i].extra_urls[j]) == -1)
				return -1;
		cfg_free_strs(cf->upstreams[i].extra_urls, cf->upstreams[i].nextra);
		cf->upstreams[i].extra_urls = NULL;
	}
	/* after every extra target: those stay contiguous */
	for (i = 0; i < n0; i++)
		if (cf->upstreams[i].provider == KV_PROVIDER_BEDROCK && add_control(p, i) == -1)
			return -1;
	for (i = 0; i < n0; i++) {
		struct kv_upstream *u = &cf->upstreams[i];

		if (u->fallback[0] == '\0')
			continue;
		for (j = 0; j < n0; j++)
			if (j != i && strcmp(cf->upstreams[j].name, u->fallback) == 0)
				u->fallback_idx = j + 1;
		if (u->fallback_idx == 0)
			return cfg_err(p, 0, "[upstream %s] fallback: no other upstream named '%s'",
			    u->name, u->fallback);
	}
	return check_reachable(p, n0);
}

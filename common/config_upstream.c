/* The [upstream NAME] keys whose values need more than a type's check:
 * url (several targets), fallback, health_check, control_url, region (an
 * AWS region or OpenAI's data residency), ca_file. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/config_int.h"

/* url = URL [URL ...]: the first is this entry's; the others are checked
 * now and become targets of their own after the file (expand_targets). */
int
cfg_set_url(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base), tmp;
	char one[512];
	size_t len, n = 0, n0;

	/* A url line after the first adds targets (a line holds 198 bytes). */
	if (u->url[0] != '\0')
		n = 1 + u->nextra;
	n0 = n;
	for (v += strspn(v, " \t"); *v != '\0'; v += strspn(v, " \t"), n++) {
		len = strcspn(v, " \t");
		memset(&tmp, 0, sizeof(tmp));
		if (len >= sizeof(one))
			return cfg_err(p, p->lineno, "url: URL too long");
		if (n == KV_MAX_TARGETS)
			return cfg_err(p, p->lineno, "url: at most %d targets per upstream",
			    KV_MAX_TARGETS);
		memcpy(one, v, len);
		one[len] = '\0';
		v += len;
		if (cfg_parse_url(one, n == 0 ? u : &tmp) == -1)
			return cfg_err(p, p->lineno, "url: bad URL '%s' "
			    "(want http[s]://HOST[:PORT][/PATH])", one);
		if (n == 0)
			strcpy(u->url, one);
		else if (cfg_grow(&u->extra_urls, u->nextra, sizeof(char *)) == -1 ||
		    (u->extra_urls[u->nextra++] = strdup(one)) == NULL)
			return cfg_err(p, p->lineno, "out of memory");
	}
	if (n == n0)
		return cfg_err(p, p->lineno, "url: empty value");
	return 0;
}

/* One line a target: several on one line could pass the 198 bytes. */
void
cfg_show_url(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	const struct kv_upstream *u = obj;
	size_t i;

	fprintf(f, "%s = %s\n", k->name, u->url);
	for (i = 0; i < u->nextra; i++)
		fprintf(f, "%s = %s\n", k->name, cf->upstreams[u->first_extra + i].url);
}

int
cfg_set_fallback(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base);

	if (!cfg_valid_name(v, sizeof(u->fallback), 0))
		return cfg_err(p, p->lineno, "fallback: bad upstream name '%s'", v);
	strcpy(u->fallback, v);
	return 0;
}

int
cfg_set_health_check(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base);
	size_t n = strlen(v), i;

	/* An origin-form path: it goes on the request line as written. */
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] <= ' ' || v[i] == 0x7f || v[i] == '#')
			break;
	if (v[0] != '/' || n >= sizeof(u->health_path) || i != n)
		return cfg_err(p, p->lineno, "health_check: '%s' is not a path "
		    "(want /PATH, no spaces)", v);
	memcpy(u->health_path, v, n + 1);
	return 0;
}

/* control_url = URL: one http[s]:// URL, checked now (the entry is made
 * after the file, expand_targets). */
int
cfg_set_control_url(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base), tmp;

	memset(&tmp, 0, sizeof(tmp));
	if (strlen(v) >= sizeof(u->control_url) || cfg_parse_url(v, &tmp) == -1)
		return cfg_err(p, p->lineno, "control_url: bad URL '%s' "
		    "(want http[s]://HOST[:PORT][/PATH])", v);
	strcpy(u->control_url, v);
	return 0;
}

static const struct cfg_word regions[] = { { "auto", KV_REGION_AUTO },
	{ "none", KV_REGION_NONE }, { "us", KV_REGION_US }, { "eu", KV_REGION_EU }, { NULL, 0 } };

/* An AWS region name: two letters, words, a number (us-east-1,
 * us-gov-west-1, ap-southeast-2); it goes into a host name and a
 * signature, so nothing else passes. */
static int
aws_region_name(const char *v)
{
	size_t n = strlen(v), i, dashes = 0;

	if (n < 4 || n >= sizeof(((struct kv_upstream *)0)->aws_region) ||
	    v[0] < 'a' || v[0] > 'z' || v[1] < 'a' || v[1] > 'z' || v[2] != '-' ||
	    v[n - 1] < '0' || v[n - 1] > '9')
		return 0;
	for (i = 0; i < n; i++) {
		if (v[i] == '-' && (v[i + 1] == '-' || v[i + 1] == '\0'))
			return 0;
		dashes += v[i] == '-';
		if (v[i] != '-' && !(v[i] >= 'a' && v[i] <= 'z') && !(v[i] >= '0' && v[i] <= '9'))
			return 0;
	}
	return dashes >= 2;
}

/* region = auto|none|us|eu is OpenAI's data residency (its prices'
 * uplift); an AWS region name is a Bedrock upstream's region, for which
 * no residency uplift applies. */
int
cfg_set_region(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base);
	size_t i;

	for (i = 0; regions[i].word != NULL; i++)
		if (strcmp(v, regions[i].word) == 0) {
			u->region = regions[i].value;
			u->aws_region[0] = '\0';
			return 0;
		}
	if (!aws_region_name(v))
		return cfg_err(p, p->lineno, "region: '%s' is neither auto, none, us, eu nor "
		    "an AWS region name (us-east-1)", v);
	strcpy(u->aws_region, v);
	u->region = KV_REGION_NONE;
	return 0;
}

void
cfg_show_region(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	const struct kv_upstream *u = obj;
	size_t i;

	(void)cf;
	if (u->aws_region[0] != '\0') {
		fprintf(f, "%s = %s\n", k->name, u->aws_region);
		return;
	}
	for (i = 0; regions[i].word != NULL; i++)
		if (regions[i].value == u->region)
			fprintf(f, "%s = %s\n", k->name, regions[i].word);
}

/* Checked here so that `kilovoltd -t` catches a typo before a reload. */
int
cfg_set_ca_file(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_upstream *u = cfg_base(p, k->base);
	char path[4096];

	if (cfg_path(p, v, path, sizeof(path)) == -1)
		return cfg_err(p, p->lineno, "ca_file: too long");
	if (access(path, R_OK) == -1)
		return cfg_err(p, p->lineno, "ca_file: %s: %s", path, strerror(errno));
	free(u->ca_file);
	u->ca_file = strdup(path);
	if (u->ca_file == NULL)
		return cfg_err(p, p->lineno, "out of memory");
	return 0;
}

void
cfg_show_ca_file(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	const struct kv_upstream *u = obj;

	(void)cf;
	cfg_show_path(f, k->name, u->ca_file != NULL ? u->ca_file : "");
}

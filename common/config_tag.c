/* Tags in kilovolt.ini (issue 36): [tag NAME] sections with budget, period
 * and model_budget (a tag is a node of the budget tree without a parent,
 * "tag/NAME"), [budget] tags_header and max_tags, and the lookup a worker
 * does for each name of a request's tags header (docs/ledger.md "Tags"). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/tags.h"

#define FIELD(T, f)	.off = offsetof(T, f), .width = sizeof(((T *)0)->f)
#define TAG(f)		.base = CFG_B_TAG, FIELD(struct kv_teamdef, f)

const struct cfg_key kv_cfg_tag_keys[] = {
	{ "budget", .type = CFG_T_MONEY, TAG(budget_nusd), .flags = CFG_OPTIONAL },
	{ "period", .type = CFG_T_ENUM, .words = kv_cfg_node_periods, TAG(period),
	    .flags = CFG_OPTIONAL },
	{ "model_budget", .type = CFG_T_SPECIAL, .set = cfg_set_model_budget,
	    .show = cfg_show_model_budget, .base = CFG_B_TAG },
	{ NULL }
};

int
cfg_begin_tag(struct cfg_parse *p, const char *name)
{
	if (!kv_tag_name_ok(name, strlen(name)))
		return cfg_err(p, p->lineno, "bad tag name '%s' (1 to 63 bytes of A-Z a-z "
		    "0-9 - _ . :)", name);
	if (cfg_begin_node(p, &p->cf->tags, &p->cf->ntags, name) == NULL)
		return -1;
	p->sect = SECT_TAG;
	return 0;
}

int
cfg_set_tags_header(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	char *h = p->cf->tags_header;
	size_t i, n = strlen(v);

	(void)k;
	if (n == 0 || n >= sizeof(p->cf->tags_header))
		return cfg_err(p, p->lineno, "tags_header: want a header name of 1 to %zu bytes",
		    sizeof(p->cf->tags_header) - 1);
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && v[i] != '-' && v[i] != '_')
			return cfg_err(p, p->lineno, "tags_header: '%s' is not a header name", v);
	for (i = 0; i <= n; i++)	/* compared with the client's in lower case */
		h[i] = (char)tolower((unsigned char)v[i]);
	p->cf->tags_header_len = n;
	if (strcmp(h, "authorization") == 0 || strcmp(h, "x-api-key") == 0 ||
	    strcmp(h, "api-key") == 0 || strcmp(h, "x-goog-api-key") == 0 ||
	    strcmp(h, "host") == 0 || strcmp(h, "content-length") == 0)
		return cfg_err(p, p->lineno, "tags_header: %s is a header kilovolt reads for "
		    "something else", h);
	return 0;
}

int
cfg_tags_resolve(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	size_t i;

	for (i = 0; i < cf->ntags; i++) {
		struct kv_teamdef *t = &cf->tags[i];

		if (t->period < 0)
			t->period = (int)cf->period;
		t->slot = (int)cf->nnodes++;
		snprintf(t->node, sizeof(t->node), "tag/%s", t->name);
		if (cfg_node_hash(p, t->node, t->hash) == -1 ||
		    cfg_name_caps(p, t->caps, t->node) == -1)
			return -1;
	}
	return 0;
}

int
kv_config_tag(const struct kv_config *cf, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < cf->ntags; i++)
		if (strncmp(cf->tags[i].name, name, len) == 0 && cf->tags[i].name[len] == '\0')
			return (int)i;
	return -1;
}

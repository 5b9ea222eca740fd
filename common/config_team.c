/* The budget tree of kilovolt.ini (issue 36): [team NAME] sections with
 * budget, period, parent and model_budget; team and model_budget on a
 * [key]; and the whole-file check that resolves each parent, refuses
 * unknown parents, cycles and trees deeper than KV_TREE_DEPTH, and names
 * and hashes every node so that the master and the workers find its
 * ledger account (docs/ledger.md "Budget tree"). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_int.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/config_units.h"
#include "common/money.h"

#define FIELD(T, f)	.off = offsetof(T, f), .width = sizeof(((T *)0)->f)
#define TEAM(f)		.base = CFG_B_TEAM, FIELD(struct kv_teamdef, f)

const struct cfg_word kv_cfg_node_periods[] = { { "none", KV_PERIOD_NONE },
	{ "daily", KV_PERIOD_DAILY }, { "weekly", KV_PERIOD_WEEKLY },
	{ "monthly", KV_PERIOD_MONTHLY }, { NULL, 0 } };

static int
set_parent(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_teamdef *t = cfg_base(p, CFG_B_TEAM);

	(void)k;
	if (!cfg_valid_name(v, sizeof(t->parent), 0))
		return cfg_err(p, p->lineno, "parent: bad team name '%s'", v);
	strcpy(t->parent, v);
	return 0;
}

const struct cfg_key kv_cfg_team_keys[] = {
	{ "budget", .type = CFG_T_MONEY, TEAM(budget_nusd), .flags = CFG_OPTIONAL },
	{ "period", .type = CFG_T_ENUM, .words = kv_cfg_node_periods, TEAM(period),
	    .flags = CFG_OPTIONAL },
	{ "parent", .type = CFG_T_STR, TEAM(parent), .set = set_parent },
	{ "model_budget", .type = CFG_T_SPECIAL, .set = cfg_set_model_budget,
	    .show = cfg_show_model_budget, .base = CFG_B_TEAM },
	{ "rpm", .type = CFG_T_INT, .min = 0, .max = CFG_MAX_RATE, TEAM(rpm) },
	{ "tpm", .type = CFG_T_INT, .min = 0, .max = CFG_MAX_RATE, TEAM(tpm) },
	{ NULL }
};

struct kv_teamdef *
cfg_begin_node(struct cfg_parse *p, struct kv_teamdef **v, size_t *n, const char *name)
{
	struct kv_teamdef *t;
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp((*v)[i].name, name) == 0) {
			cfg_err(p, p->lineno, "duplicate section %s", p->sect_text);
			return NULL;
		}
	if (cfg_grow(v, *n, sizeof(**v)) == -1) {
		cfg_err(p, p->lineno, "out of memory");
		return NULL;
	}
	t = &(*v)[(*n)++];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, name);
	t->budget_nusd = -1;
	t->period = -1;
	t->up = -1;
	t->line = p->lineno;
	return t;
}

int
cfg_begin_team(struct cfg_parse *p, const char *name)
{
	struct kv_teamdef *t;

	if (!cfg_valid_name(name, sizeof(t->name), 0) || strchr(name, '/') != NULL)
		return cfg_err(p, p->lineno, "bad team name '%s'", name);
	if ((t = cfg_begin_node(p, &p->cf->teams, &p->cf->nteams, name)) == NULL)
		return -1;
	t->from_file = p->teams_only;
	p->sect = SECT_TEAM;
	return 0;
}

static struct kv_modelcaps **
caps_of(struct cfg_parse *p, const struct cfg_key *k)
{
	if (k->base == CFG_B_TEAM || k->base == CFG_B_TAG)	/* a tag is a kv_teamdef */
		return &((struct kv_teamdef *)cfg_base(p, k->base))->caps;
	if (k->base == CFG_B_CONFIG)	/* [auth jwt]: each user's */
		return &p->cf->auth_jwt.user_caps;
	return &((struct kv_keydef *)cfg_base(p, CFG_B_KEY))->caps;
}

/* One "GLOB:USD" word of model_budget into CAPS. */
static int
add_cap(struct cfg_parse *p, struct kv_modelcaps *caps, const char *w, size_t len)
{
	char buf[KV_NAME_MAX + 40], *colon;
	struct kv_modelcap *c;

	if (len >= sizeof(buf))
		return cfg_err(p, p->lineno, "model_budget: '%.*s' is too long", (int)len, w);
	memcpy(buf, w, len);
	buf[len] = '\0';
	colon = strrchr(buf, ':');
	if (colon == NULL || colon == buf)
		return cfg_err(p, p->lineno, "model_budget: want GLOB:USD, not '%s'", buf);
	*colon = '\0';
	if (!cfg_valid_name(buf, KV_NAME_MAX, 1))
		return cfg_err(p, p->lineno, "model_budget: bad model glob '%s'", buf);
	if (caps->n == KV_MODEL_CAPS)
		return cfg_err(p, p->lineno, "model_budget: at most %d caps", KV_MODEL_CAPS);
	c = &caps->cap[caps->n];
	if (kv_parse_nano(colon + 1, &c->budget_nusd) == -1)
		return cfg_err(p, p->lineno, "model_budget: '%s' is not a decimal amount",
		    colon + 1);
	strcpy(c->glob, buf);
	caps->n++;
	return 0;
}

int
cfg_set_model_budget(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_modelcaps **caps = caps_of(p, k);
	size_t n;

	if (*caps == NULL && (*caps = calloc(1, sizeof(**caps))) == NULL)
		return cfg_err(p, p->lineno, "out of memory");
	(*caps)->n = 0;	/* a repeated line replaces */
	while (*(v += strspn(v, " \t")) != '\0') {
		n = strcspn(v, " \t");
		if (add_cap(p, *caps, v, n) == -1)
			return -1;
		v += n;
	}
	if ((*caps)->n == 0)
		return cfg_err(p, p->lineno, "model_budget: want GLOB:USD ...");
	return 0;
}

void
cfg_show_model_budget(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	const struct kv_modelcaps *caps = k->base == CFG_B_TEAM || k->base == CFG_B_TAG ?
	    ((const struct kv_teamdef *)obj)->caps : k->base == CFG_B_CONFIG ?
	    cf->auth_jwt.user_caps : ((const struct kv_keydef *)obj)->caps;
	char usd[40];
	int i;

	if (caps == NULL || caps->n == 0) {
		fprintf(f, "; %s: not set\n", k->name);
		return;
	}
	fprintf(f, "%s =", k->name);
	for (i = 0; i < caps->n; i++) {
		kv_cfg_format_nano(caps->cap[i].budget_nusd, usd, sizeof(usd));
		fprintf(f, " %s:%s", caps->cap[i].glob, usd);
	}
	fputc('\n', f);
}

int
cfg_set_key_team(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_keydef *kd = cfg_base(p, CFG_B_KEY);

	(void)k;
	if (!cfg_valid_name(v, sizeof(kd->team), 0))
		return cfg_err(p, p->lineno, "team: bad team name '%s'", v);
	strcpy(kd->team, v);
	return 0;
}

int
cfg_node_hash(struct cfg_parse *p, const char *node, uint8_t hash[32])
{
	char buf[KV_NODE_NAME + 8];
	unsigned int mdlen = 32;
	int n = snprintf(buf, sizeof(buf), "\001node:%s", node);

	if (EVP_Digest(buf, (size_t)n, hash, &mdlen, EVP_sha256(), NULL) != 1)
		return cfg_err(p, 0, "SHA-256 failed");
	return 0;
}

int
cfg_name_caps(struct cfg_parse *p, struct kv_modelcaps *caps, const char *owner)
{
	int i;

	for (i = 0; caps != NULL && i < caps->n; i++) {
		caps->cap[i].slot = (int)p->cf->nnodes++;
		snprintf(caps->cap[i].node, sizeof(caps->cap[i].node), "model/%s/%s", owner,
		    caps->cap[i].glob);
		if (cfg_node_hash(p, caps->cap[i].node, caps->cap[i].hash) == -1)
			return -1;
	}
	return 0;
}

int
kv_config_team_index(const struct kv_config *cf, const char *name)
{
	size_t i;

	for (i = 0; i < cf->nteams; i++)
		if (strcmp(cf->teams[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Each team's parent found, and its chain to the org no longer than
 * KV_TREE_DEPTH (a cycle never ends, so it is caught there too). */
static int
link_teams(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	size_t i;
	int d, j;

	for (i = 0; i < cf->nteams; i++) {
		struct kv_teamdef *t = &cf->teams[i];

		if (t->parent[0] != '\0' && (t->up = kv_config_team_index(cf, t->parent)) == -1)
			return cfg_err(p, t->from_file ? 0 : t->line, "[team %s]: parent '%s' is "
			    "no [team]", t->name, t->parent);
	}
	for (i = 0; i < cf->nteams; i++) {
		for (d = 1, j = cf->teams[i].up; j != -1; j = cf->teams[j].up, d++) {
			if (j == (int)i)
				return cfg_err(p, cf->teams[i].from_file ? 0 : cf->teams[i].line,
				    "[team %s]: its parents make a cycle", cf->teams[i].name);
			if (d >= KV_TREE_DEPTH)
				return cfg_err(p, cf->teams[i].from_file ? 0 : cf->teams[i].line,
				    "[team %s]: more than %d teams from it to its org",
				    cf->teams[i].name, KV_TREE_DEPTH);
		}
	}
	return 0;
}

static int
cmp_key_hash(const void *a, const void *b)
{
	return memcmp((*(const struct kv_keydef *const *)a)->hash,
	    (*(const struct kv_keydef *const *)b)->hash, 32);
}

/* The index a worker finds a request's key in, built when a tree is. */
static int
index_keys(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	size_t i, caps = 0;

	for (i = 0; i < cf->nkeys; i++)
		caps += cf->keys[i].caps != NULL || cf->keys[i].team_idx >= 0;
	if (caps == 0 || cf->nkeys == 0)
		return 0;
	cf->keys_by_hash = calloc(cf->nkeys, sizeof(*cf->keys_by_hash));
	if (cf->keys_by_hash == NULL)
		return cfg_err(p, 0, "out of memory");
	for (i = 0; i < cf->nkeys; i++)
		cf->keys_by_hash[i] = &cf->keys[i];
	qsort(cf->keys_by_hash, cf->nkeys, sizeof(*cf->keys_by_hash), cmp_key_hash);
	return 0;
}

const struct kv_keydef *
kv_config_key_by_hash(const struct kv_config *cf, const uint8_t hash[32])
{
	size_t lo = 0, hi = cf->keys_by_hash != NULL ? cf->nkeys : 0, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = memcmp(cf->keys_by_hash[mid]->hash, hash, 32);
		if (c == 0)
			return cf->keys_by_hash[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int
cfg_tree_resolve(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	char owner[80];
	size_t i;

	if (link_teams(p) == -1)
		return -1;
	for (i = 0; i < cf->nteams; i++) {
		struct kv_teamdef *t = &cf->teams[i];

		if (t->period < 0)
			t->period = (int)cf->period;
		t->slot = (int)cf->nnodes++;
		snprintf(t->node, sizeof(t->node), "team/%s", t->name);
		if (cfg_node_hash(p, t->node, t->hash) == -1 || cfg_name_caps(p, t->caps, t->node) == -1)
			return -1;
	}
	for (i = 0; i < cf->nkeys; i++) {
		struct kv_keydef *k = &cf->keys[i];

		k->team_idx = -1;
		if (k->team[0] != '\0' && (k->team_idx = kv_config_team_index(cf, k->team)) == -1)
			return cfg_err(p, 0, "[key %s]: team '%s' is no [team]", k->label, k->team);
		snprintf(owner, sizeof(owner), "key/%s", k->label);
		if (cfg_name_caps(p, k->caps, owner) == -1)
			return -1;
	}
	return index_keys(p);
}

void
cfg_tree_free(struct kv_config *cf)
{
	size_t i;

	for (i = 0; i < cf->nteams; i++)
		free(cf->teams[i].caps);
	for (i = 0; i < cf->nkeys; i++)
		free(cf->keys[i].caps);
	free(cf->auth_jwt.user_caps);
	cf->auth_jwt.user_caps = NULL;
	free(cf->keys_by_hash);
	cf->keys_by_hash = NULL;
	cf->nnodes = 0;
	free(cf->teams);
	cf->teams = NULL;
	cf->nteams = 0;
	for (i = 0; i < cf->ntags; i++)
		free(cf->tags[i].caps);
	free(cf->tags);
	cf->tags = NULL;
	cf->ntags = 0;
}

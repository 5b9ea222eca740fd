/* The budget tree at admission: the nodes above a request's key found in
 * the ledger (its model caps, its team and theirs up to the org, then the
 * tags it named and their caps), their
 * periods rolled, the amount held at each, and the 402 that names the
 * node that refused (docs/ledger.md "Budget tree"). */
#include "worker/admission_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/glob.h"
#include "common/jwt.h"
#include "common/money.h"
#include "worker/leasewait.h"
#include "worker/reply.h"
#include "worker/worker.h"

#define USER_CAP_NAME	(KV_JWT_USER_MAX + KV_NAME_MAX + 16)

struct chain {
	struct kv_account *node[KV_TREE_NODES];
	const char	  *name[KV_TREE_NODES];
	int		   n;
	int		   missing;	/* a node not in the ledger: its index */
	int		   overflow;	/* more than KV_TREE_NODES nodes */
	/* a JWT user's own caps' names, "model/user/NAME/GLOB" */
	char		   user_cap[KV_MODEL_CAPS][USER_CAP_NAME];
};

/* The account of the node in SLOT: the one found last when it is still
 * that node's (a slot retired and reused since holds another hash),
 * else looked up by HASH. NULL when the ledger has none. */
static struct kv_account *
node_account(struct kv_conn *c, int slot, const uint8_t hash[32])
{
	struct kv_worker *w = c->w;
	struct kv_account *a;

	if (w->tree_nodes == NULL && w->cf->nnodes > 0)
		w->tree_nodes = calloc(w->cf->nnodes, sizeof(*w->tree_nodes));
	a = w->tree_nodes != NULL ? w->tree_nodes[slot] : NULL;
	if (a != NULL && atomic_load(&a->state) == KV_SLOT_READY && memcmp(a->hash, hash, 32) == 0)
		return a;
	a = kv_ledger_account(w->ledger, hash, 0, NULL, 0);
	if (w->tree_nodes != NULL)
		w->tree_nodes[slot] = a;
	return a;
}

static void
chain_add(struct kv_conn *c, struct chain *ch, int slot, const uint8_t hash[32],
    const char *name)
{
	struct kv_account *a;

	if (ch->missing >= 0)
		return;
	if (ch->n == KV_TREE_NODES) {	/* never a node silently left out */
		ch->overflow = 1;
		return;
	}
	a = node_account(c, slot, hash);
	if (a == NULL) {
		ch->missing = ch->n;
		ch->name[ch->n] = name;
		return;
	}
	kv_ledger_period_roll(c->w->ledger, a, c->w->cf->period, (int64_t)time(NULL));
	ch->name[ch->n] = name;
	ch->node[ch->n++] = a;
}

static void
chain_caps(struct kv_conn *c, struct chain *ch, const struct kv_modelcaps *caps)
{
	int i;

	for (i = 0; caps != NULL && i < caps->n; i++)
		if (kv_glob_match(caps->cap[i].glob, c->req.ri.model))
			chain_add(c, ch, caps->cap[i].slot, caps->cap[i].hash, caps->cap[i].node);
}

/* The account of a JWT user's cap NAME, made on first sight as the user's
 * own is ([auth jwt] model_budget: each user has its own), and kept at
 * the config's budget. NULL when the table has no room. */
static struct kv_account *
user_cap_account(struct kv_conn *c, const char *name, int64_t budget)
{
	struct kv_ledger *l = c->w->ledger;
	char buf[USER_CAP_NAME + 8];
	unsigned int mdlen = 32;
	uint8_t hash[32];
	struct kv_account *a;
	int n = snprintf(buf, sizeof(buf), "\001node:%s", name);

	if (EVP_Digest(buf, (size_t)n, hash, &mdlen, EVP_sha256(), NULL) != 1)
		return NULL;
	a = kv_ledger_account(l, hash, 1, name, budget);
	if (a == NULL || atomic_load(&a->state) != KV_SLOT_READY)
		return NULL;
	if (!(atomic_load(&a->aflags) & KV_AF_NODE)) {
		atomic_store(&a->rpm, 0);	/* money only, not the [budget] rpm */
		atomic_store(&a->tpm, 0);
		atomic_store(&a->period, (uint32_t)c->w->cf->period + 1);
		atomic_fetch_or(&a->aflags, KV_AF_NODE);
	}
	if (atomic_load(&a->config_budget_nusd) != budget)
		(void)kv_account_config_budget(a, budget);
	return a;
}

/* A JWT user's caps whose glob matches the model. */
static void
chain_user_caps(struct kv_conn *c, struct chain *ch)
{
	const struct kv_modelcaps *caps = c->w->cf->auth_jwt.user_caps;
	struct kv_account *a;
	char *name;
	int i;

	for (i = 0; caps != NULL && i < caps->n; i++) {
		if (!kv_glob_match(caps->cap[i].glob, c->req.ri.model) || ch->missing >= 0)
			continue;
		if (ch->n == KV_TREE_NODES) {
			ch->overflow = 1;
			return;
		}
		name = ch->user_cap[i];
		snprintf(name, USER_CAP_NAME, "model/%s/%s", c->req.user_node,
		    caps->cap[i].glob);
		ch->name[ch->n] = name;
		if ((a = user_cap_account(c, name, caps->cap[i].budget_nusd)) == NULL) {
			ch->missing = ch->n;
			return;
		}
		kv_ledger_period_roll(c->w->ledger, a, c->w->cf->period, (int64_t)time(NULL));
		ch->node[ch->n++] = a;
	}
}

/* The nodes of a chain from CAPS (a JWT user's own first when the request
 * is a user's) and team TEAM up, then the request's tags (distinct, so no
 * node is held twice), in the order they are held. */
static void
chain_of(struct kv_conn *c, const struct kv_modelcaps *caps, int team, struct chain *ch)
{
	const struct kv_config *cf = c->w->cf;
	int t;

	ch->n = 0;
	ch->missing = -1;
	ch->overflow = 0;
	if (c->req.jwt)
		chain_user_caps(c, ch);
	chain_caps(c, ch, caps);
	for (t = team; t >= 0; t = cf->teams[t].up) {
		chain_add(c, ch, cf->teams[t].slot, cf->teams[t].hash, cf->teams[t].node);
		chain_caps(c, ch, cf->teams[t].caps);
	}
	for (t = 0; t < c->req.ntags; t++) {
		const struct kv_teamdef *g = &cf->tags[c->req.tag[t]];

		chain_add(c, ch, g->slot, g->hash, g->node);
		chain_caps(c, ch, g->caps);
	}
}

static enum kv_rc
node_refusal(struct kv_conn *c, const char *node, int64_t remaining, int64_t amount)
{
	char msg[512], rem[32], need[32];
	enum kv_rc st;

	atomic_fetch_add(&c->w->ledger->hdr->counters.budget_refusals_total, 1);
	c->adm.refused_node = node;
	kv_format_dollars(remaining, rem, sizeof(rem));
	kv_format_dollars(amount, need, sizeof(need));
	snprintf(msg, sizeof(msg), "budget exceeded for %s: %s remaining, "
	    "this request may cost up to %s", node, rem, need);
	st = reply_error(c, 402, msg);
	c->adm.refused_node = NULL;	/* a user's cap's name is on tree_admit's stack */
	return st;
}

int
tree_admit(struct kv_conn *c, int64_t amount, enum kv_rc *st)
{
	const struct kv_keydef *k = c->req.jwt ? NULL :
	    kv_config_key_by_hash(c->w->cf, c->adm.acct->hash);
	const struct kv_modelcaps *caps = k != NULL ? k->caps : NULL;
	int team = c->req.jwt ? c->req.jwt_team : k != NULL ? k->team_idx : -1;
	struct chain ch;
	int64_t remaining;
	int rc, refused;

	c->adm.tree.n = 0;
	if (caps == NULL && team < 0 && c->req.ntags == 0 &&
	    !(c->req.jwt && c->w->cf->auth_jwt.user_caps != NULL))
		return 0;	/* a JWT's user's team or caps, or a key's, or tags */
	chain_of(c, caps, team, &ch);
	if (ch.overflow) {
		*st = reply_error(c, 400, "this request would be held at more than 32 budget "
		    "nodes (its key's team and model caps, its tags and theirs): send fewer tags");
		return -1;
	}
	if (ch.missing >= 0) {
		/* the master makes nodes before it starts the workers of a config */
		c->retry_after = 1;
		*st = reply_error(c, 503, "a budget node is not in the ledger yet; retry");
		return -1;
	}
	rc = kv_tree_reserve(c->w->ledger, c->w->slot, ch.node, ch.n, amount, &c->adm.tree,
	    &refused, &remaining);
	if (rc == 0)
		return 0;
	if (rc == -1)
		*st = node_refusal(c, ch.name[refused], remaining, amount);
	else if (rc == -3)	/* this host's lease of the node: wait, as for a key's */
		*st = conn_lease_park(c);
	else if (rc == -4 && (c->retry_after = 1))
		*st = reply_error(c, 503, "a budget node was being recycled; retry");
	else
		*st = reply_error(c, 503, "too many requests in flight");
	return -1;
}

int
tree_hold(struct kv_conn *c)
{
	const struct kv_keydef *k = c->req.jwt ? NULL :
	    kv_config_key_by_hash(c->w->cf, c->adm.acct->hash);
	struct chain ch;

	c->adm.tree.n = 0;
	chain_of(c, k != NULL ? k->caps : NULL,
	    c->req.jwt ? c->req.jwt_team : k != NULL ? k->team_idx : -1, &ch);
	if (ch.overflow || ch.missing >= 0)
		return -1;
	return kv_tree_hold(c->w->ledger, c->w->slot, ch.node, ch.n, &c->adm.tree);
}

void
tree_sent(struct kv_conn *c, int64_t min)
{
	kv_tree_sent(c->w->slot, &c->adm.tree, min);
}

void
tree_settle(struct kv_conn *c, int64_t cost, int counted)
{
	kv_tree_settle(c->w->ledger, c->w->slot, &c->adm.tree, cost, counted);
}

/* The budget tree's rate limits: a request takes one request and its
 * tokens at every node it holds that has rpm or tpm (a [team]'s), all or
 * nothing, in that node's own reservation record, so that a worker's
 * death gives the tokens back as it does a key's (kv_ratelimit_release_worker),
 * and settles them to the real count with the key's (tree_rate.h). */
#include "worker/tree_rate.h"

#include <stdio.h>
#include <string.h>

#include "shm/ratelimit.h"
#include "worker/reply.h"
#include "worker/worker.h"

/* The account of the I-th node held, from its record. */
static struct kv_account *
held_account(struct kv_conn *c, int i)
{
	struct kv_ledger *l = c->w->ledger;
	uint32_t idx = atomic_load(&c->w->slot->resv[c->adm.tree.resv[i]].account);

	return idx == 0 || idx > l->hdr->max_keys ? NULL : &l->accounts[idx - 1];
}

/* Node I's tokens given back (its record emptied), and its request when
 * REQUEST. */
static void
give_back(struct kv_conn *c, int i, int request)
{
	struct kv_account *a = held_account(c, i);

	if (a == NULL)
		return;
	kv_ratelimit_settle(c->w->ledger, c->w->slot, c->adm.tree.resv[i], 0, 0);
	if (request)
		kv_gcra_adjust(&a->rpm_tat, atomic_load(&a->rpm), -1);
}

/* The name of team node A in the config (a label is cut at 47 bytes). */
static const char *
node_name(const struct kv_config *cf, const struct kv_account *a)
{
	size_t i;

	for (i = 0; i < cf->nteams; i++)
		if (memcmp(cf->teams[i].hash, a->hash, 32) == 0)
			return cf->teams[i].node;
	return "a team";
}

static enum kv_rc
node_429(struct kv_conn *c, struct kv_account *a, int64_t asked)
{
	const struct kv_rl_view *v = &c->adm.rl;
	const char *node = node_name(c->w->cf, a);
	char msg[400];

	atomic_fetch_add(&a->rate_refusals, 1);
	atomic_fetch_add(&c->w->ledger->hdr->counters.rate_limited_total, 1);
	if (v->refused_by == 'r')
		snprintf(msg, sizeof(msg), "Rate limit reached for %s on requests per minute "
		    "(RPM): Limit %u, Remaining %lld. Please try again in %llds.", node,
		    v->rpm, (long long)v->req_remaining, (long long)v->retry_after_s);
	else
		snprintf(msg, sizeof(msg), "Rate limit reached for %s on tokens per minute "
		    "(TPM): Limit %u, Remaining %lld, Requested %lld. Please try again in "
		    "%llds.", node, v->tpm, (long long)v->tok_remaining, (long long)asked,
		    (long long)v->retry_after_s);
	c->adm.rl_on = 1;	/* the x-ratelimit-* and retry-after of the node */
	c->adm.refused_node = node;
	return reply_error(c, 429, msg);
}

int
tree_rate_admit(struct kv_conn *c, int64_t tokens, enum kv_rc *st)
{
	struct kv_ledger *l = c->w->ledger;
	struct kv_account *a;
	int i, rc;

	c->adm.tree_rl = 0;
	c->adm.tree_rl_sent = 0;
	if (atomic_load(&l->hdr->cluster))
		return 0;
	for (i = 0; i < c->adm.tree.n; i++) {
		if ((a = held_account(c, i)) == NULL ||
		    (atomic_load(&a->rpm) == 0 && atomic_load(&a->tpm) == 0))
			continue;
		kv_ledger_op_begin(l);
		rc = kv_ratelimit_admit(c->w->slot, c->adm.tree.resv[i], a, tokens,
		    kv_rl_now_ns(), 0, &c->adm.rl);
		kv_ledger_op_end(l);
		if (rc == -1) {
			tree_rate_undo(c);
			*st = node_429(c, a, tokens);
			return -1;
		}
		c->adm.tree_rl |= 1u << i;
		c->adm.tree_tok[i] = (uint32_t)c->adm.rl.tokens;
	}
	return 0;
}

void
tree_rate_sent(struct kv_conn *c)
{
	int i;

	if (c->adm.tree_rl == 0 || c->adm.tree_rl_sent)
		return;
	c->adm.tree_rl_sent = 1;
	kv_ledger_op_begin(c->w->ledger);
	for (i = 0; i < c->adm.tree.n; i++)
		if (c->adm.tree_rl & (1u << i))
			(void)kv_ratelimit_sent(c->w->slot, c->adm.tree.resv[i],
			    c->req.body_bytes / 4);
	kv_ledger_op_end(c->w->ledger);
}

void
tree_rate_settle(struct kv_conn *c, int64_t tokens)
{
	int64_t held;
	int i;

	for (i = 0; i < c->adm.tree.n && c->adm.tree_rl != 0; i++) {
		if (!(c->adm.tree_rl & (1u << i)))
			continue;
		/* what kv_ratelimit_sent made final: taken less what is left */
		held = atomic_load(&c->w->slot->resv[c->adm.tree.resv[i]].tokens);
		kv_ratelimit_settle(c->w->ledger, c->w->slot, c->adm.tree.resv[i], tokens,
		    (int64_t)c->adm.tree_tok[i] - held);
	}
	c->adm.tree_rl = 0;
}

void
tree_rate_undo(struct kv_conn *c)
{
	int i;

	kv_ledger_op_begin(c->w->ledger);
	for (i = 0; i < c->adm.tree.n; i++)
		if (c->adm.tree_rl & (1u << i))
			give_back(c, i, 1);
	kv_ledger_op_end(c->w->ledger);
	c->adm.tree_rl = 0;
}

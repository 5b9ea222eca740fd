/* Unit tests for tags (issue 36, docs/ledger.md "Tags"): the tags header's
 * value split into distinct names (common/tags.h), [tag NAME] sections
 * read into nodes "tag/NAME" with their slots, hashes and model caps, and
 * a request's tags held on a real ledger beside its team: a tag's refusal
 * releases the team's and the other tag's holds, a settle charges each
 * tag exactly what the team is charged. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/tags.h"
#include "shm/ledger.h"
#include "shm/tree.h"
#include "tests/unit.h"

static char tmpdir[64];
static char path[128];

struct got {
	char	  names[KV_TAGS_MAX * 2][KV_TAG_NAME];
	int	  n;
	int	  refuse_at;	/* -1 never */
};

static int
take(void *arg, const char *name, size_t len, const char **why)
{
	struct got *g = arg;

	if (g->n == g->refuse_at) {
		*why = "refused";
		return -1;
	}
	snprintf(g->names[g->n++], KV_TAG_NAME, "%.*s", (int)len, name);
	return 0;
}

static int
split(const char *v, int max, struct got *g, const char **why)
{
	memset(g, 0, sizeof(*g));
	g->refuse_at = -1;
	*why = NULL;
	return kv_tags_split(v, strlen(v), max, take, g, why);
}

static void
test_split(void)
{
	struct got g;
	const char *why;
	char big[80];

	CHECK_INT(split("alpha", 4, &g, &why), 1);
	CHECK_STR(g.names[0], "alpha");
	CHECK_INT(split(" alpha ,\tbeta:x , a.b-c_d ", 4, &g, &why), 3);
	CHECK_STR(g.names[1], "beta:x");
	CHECK_STR(g.names[2], "a.b-c_d");
	/* a name twice is held once, and does not count against the cap */
	CHECK_INT(split("a,b,a,b,a", 2, &g, &why), 2);
	CHECK_INT(g.n, 2);
	CHECK_INT(split("a,b,c", 2, &g, &why), -2);
	CHECK_INT(g.n, 2);
	CHECK_INT(split("", 4, &g, &why), -1);
	CHECK_INT(split("a,", 4, &g, &why), -1);
	CHECK_INT(split(",a", 4, &g, &why), -1);
	CHECK_INT(split("a,,b", 4, &g, &why), -1);
	CHECK_INT(split("a b", 4, &g, &why), -1);
	CHECK_INT(split("a;b", 4, &g, &why), -1);
	CHECK_INT(split("caf\xc3\xa9", 4, &g, &why), -1);
	memset(big, 'x', 63);
	big[63] = '\0';
	CHECK_INT(split(big, 4, &g, &why), 1);
	big[63] = 'x';
	big[64] = '\0';
	CHECK_INT(split(big, 4, &g, &why), -1);
	memset(&g, 0, sizeof(g));
	g.refuse_at = 1;
	CHECK_INT(kv_tags_split("a,b,c", 5, 4, take, &g, &why), -3);
	CHECK_STR(why, "refused");
	CHECK_INT(kv_tag_name_ok("a/b", 3), 0);
}

static int
load(struct kv_config *cf, const char *text, char *err, size_t errlen)
{
	char ini[128];
	FILE *f;

	snprintf(ini, sizeof(ini), "%s/kv.ini", tmpdir);
	f = fopen(ini, "w");
	if (f == NULL || fputs(text, f) == EOF || fclose(f) == EOF) {
		perror(ini);
		exit(1);
	}
	err[0] = '\0';
	return kv_config_load(cf, ini, err, errlen);
}

#define UP "[upstream o]\nurl = https://api.openai.com\npaths = /v1/chat/completions\n"

static void
test_config(void)
{
	struct kv_config cf;
	char err[512];
	uint8_t h[32];
	const char *n = "\001node:tag/beta";

	CHECK_INT(load(&cf, UP "[budget]\nperiod = monthly\nmax_tags = 3\n"
	    "tags_header = X-LiteLLM-Tags\n[team t]\n[tag alpha]\nbudget = 1.5\n"
	    "[tag beta]\nperiod = daily\nmodel_budget = gpt-5*:2\n", err, sizeof(err)), 0);
	if (err[0] != '\0')
		fprintf(stderr, "test_config: %s\n", err);
	CHECK_INT(cf.ntags, 2);
	CHECK_INT(cf.max_tags, 3);
	CHECK_STR(cf.tags_header, "x-litellm-tags");
	CHECK_STR(cf.tags[0].node, "tag/alpha");
	CHECK_INT(cf.tags[0].budget_nusd, 1500000000);
	CHECK_INT(cf.tags[0].period, KV_PERIOD_MONTHLY);	/* [budget]'s */
	CHECK_INT(cf.tags[0].up, -1);
	CHECK_INT(cf.tags[1].budget_nusd, -1);
	CHECK_INT(cf.tags[1].period, KV_PERIOD_DAILY);
	CHECK_STR(cf.tags[1].caps->cap[0].node, "model/tag/beta/gpt-5*");
	CHECK_INT(cf.tags[1].caps->cap[0].budget_nusd, 2000000000);
	kv_key_hash(n, strlen(n), h);
	CHECK_INT(memcmp(cf.tags[1].hash, h, 32), 0);
	/* every node its own slot: the team, the two tags, beta's cap */
	CHECK_INT(cf.nnodes, 4);
	CHECK(cf.tags[0].slot != cf.tags[1].slot && cf.tags[1].slot != cf.teams[0].slot);
	CHECK_INT(kv_config_tag(&cf, "beta", 4), 1);
	CHECK_INT(kv_config_tag(&cf, "betas", 4), 1);	/* the first LEN bytes */
	CHECK_INT(kv_config_tag(&cf, "bet", 3), -1);
	CHECK_INT(kv_config_tag(&cf, "gamma", 5), -1);
	kv_config_free(&cf);
	/* defaults */
	CHECK_INT(load(&cf, UP, err, sizeof(err)), 0);
	CHECK_STR(cf.tags_header, "x-kilovolt-tags");
	CHECK_INT(cf.max_tags, 4);
	CHECK_INT(cf.ntags, 0);
	kv_config_free(&cf);
	CHECK_INT(load(&cf, UP "[tag a/b]\n", err, sizeof(err)), -1);
	CHECK(strstr(err, "bad tag name 'a/b'") != NULL);
	CHECK_INT(load(&cf, UP "[tag a]\n[tag a]\n", err, sizeof(err)), -1);
	CHECK(strstr(err, "duplicate section [tag a]") != NULL);
	CHECK_INT(load(&cf, UP "[tag a]\nparent = t\n", err, sizeof(err)), -1);
	CHECK_INT(load(&cf, UP "[budget]\nmax_tags = 9\n", err, sizeof(err)), -1);
	CHECK_INT(load(&cf, UP "[budget]\ntags_header = x-api-key\n", err, sizeof(err)), -1);
	CHECK_INT(load(&cf, UP "[budget]\ntags_header = a:b\n", err, sizeof(err)), -1);
}

static struct kv_account *
node_acct(struct kv_ledger *l, const char *name, int64_t budget)
{
	uint8_t h[32];

	kv_key_hash(name, strlen(name), h);
	return kv_ledger_account(l, h, 1, NULL, budget);
}

/* team 100, tag a 100, tag b 40: b refuses the third 15 after a and the
 * team took theirs; each tag is charged what the team is. */
static void
test_ledger(void)
{
	struct kv_ledger l;
	struct kv_worker_slot *w;
	struct kv_account *n[3];
	struct kv_tree_hold h[3];
	char err[512];
	int64_t rem;
	int refused = -1, i;

	if (unlink(path) == -1 && errno != ENOENT)
		return;
	if (kv_ledger_open(&l, path, 256, KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "test_ledger: %s\n", err);
		unit_fail++;
		return;
	}
	w = &l.workers[0];
	n[0] = node_acct(&l, "team/t", 100);
	n[1] = node_acct(&l, "tag/a", 100);
	n[2] = node_acct(&l, "tag/b", 40);
	for (i = 0; i < 2; i++)
		CHECK_INT(kv_tree_reserve(&l, w, n, 3, 15, &h[i], &refused, &rem), 0);
	CHECK_INT(kv_tree_reserve(&l, w, n, 3, 15, &h[2], &refused, &rem), -1);
	CHECK_INT(refused, 2);
	CHECK_INT(rem, 10);
	CHECK_INT(atomic_load(&n[0]->reserved_nusd), 30);
	CHECK_INT(atomic_load(&n[1]->reserved_nusd), 30);
	CHECK_INT(atomic_load(&n[2]->reserved_nusd), 30);
	kv_tree_settle(&l, w, &h[0], 7, 1);
	kv_tree_settle(&l, w, &h[1], 15, 1);
	for (i = 0; i < 3; i++) {
		CHECK_INT(kv_account_spent(n[i]), 22);
		CHECK_INT(atomic_load(&n[i]->reserved_nusd), 0);
		CHECK_INT((int)atomic_load(&n[i]->requests), 2);
	}
	CHECK_INT(atomic_load(&n[2]->refusals), 1);
	kv_ledger_close(&l);
	unlink(path);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kvtags.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", tmpdir);
	test_split();
	test_config();
	test_ledger();
	snprintf(path, sizeof(path), "%s/kv.ini", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return unit_done();
}

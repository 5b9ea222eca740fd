/* Unit tests for the admission phase (worker/admission.c) on a fake
 * connection: a real config and a real ledger file, no sockets and no
 * event loop. What the phase returns is checked beside what it left in the
 * ledger (reserved_nusd) and in obuf (our answer), for an admitted request,
 * a budget refusal, an unrouted target, an unknown key under virtual keys
 * and a model kilovolt cannot price. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "shm/ledger.h"
#include "shm/targets.h"
#include "worker/admission.h"
#include "worker/conn-t.h"
#include "worker/upstream.h"
#include "tests/unit.h"

static char tmpdir[64];
static struct kv_config cf;
static struct kv_ledger ledger;
static struct kv_worker w;

static void
setup(const char *extra)
{
	char path[128], ini[2048], err[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kv.ini", tmpdir);
	snprintf(ini, sizeof(ini),
	    "[server]\nlisten = 127.0.0.1:1\nledger = %s/ledger\nmax_keys = 64\n"
	    "[budget]\ndefault = 0.01\nperiod = none\nunknown_keys = allow\n"
	    "reserve_output_tokens = 1000\n"
	    "[upstream openai]\nurl = http://127.0.0.1:9\n"
	    "paths = /v1/chat/completions /v1/responses\n"
	    "[price gpt-4o-mini*]\ninput = 0.15\noutput = 0.60\n%s", tmpdir, extra);
	if ((f = fopen(path, "w")) == NULL || fputs(ini, f) == EOF || fclose(f) == EOF) {
		perror(path);
		exit(1);
	}
	if (kv_config_load(&cf, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "config: %s\n", err);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/ledger", tmpdir);
	(void)unlink(path);
	if (kv_ledger_open(&ledger, path, cf.max_keys, KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "ledger: %s\n", err);
		exit(1);
	}
	memset(&w, 0, sizeof(w));
	w.cf = &cf;
	w.ledger = &ledger;
	w.slot = &ledger.workers[0];
	w.now_ms = 1000;
	if (kv_upstreams_init(&w.ups, &cf, NULL, err, sizeof(err)) == -1) {
		fprintf(stderr, "upstreams: %s\n", err);
		exit(1);
	}
}

static void
teardown(void)
{
	kv_upstreams_free(w.ups, cf.nupstreams);
	kv_ledger_close(&ledger);
	kv_config_free(&cf);
}

/* A connection whose head was read: a chat completion by KEY to TARGET,
 * its body still to be scanned (fake_body). */
static struct kv_conn *
fake_conn(const char *target, const char *key)
{
	struct kv_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		exit(1);
	c->w = &w;
	c->cfd = -1;
	c->adm.resv = -1;
	c->req.spfd = -1;
	c->resp.pipefd[0] = c->resp.pipefd[1] = -1;
	c->state = CS_ADMIT;
	strcpy(c->req.method, "POST");
	c->req.target = strdup(target);
	c->req.keep_alive = 1;
	c->req.body_done = 1;
	c->req.body_bytes = 400;
	c->req.api = KV_API_OPENAI_CHAT;
	kv_key_hash(key, strlen(key), c->req.keyhash);
	kv_key_id(c->req.keyhash, c->req.keyid);
	if ((c->req.rs = malloc(sizeof(*c->req.rs))) == NULL)
		exit(1);
	return c;
}

static void
fake_body(struct kv_conn *c, const char *json)
{
	kv_reqscan_init(c->req.rs, c->req.api);
	CHECK_INT(kv_reqscan_feed(c->req.rs, json, strlen(json)), 0);
	c->req.body_bytes = (int64_t)strlen(json);
}

static void
fake_free(struct kv_conn *c)
{
	if (c->adm.resv >= 0)
		kv_ledger_settle(&ledger, w.slot, c->adm.resv, 0, NULL, NULL);
	if (c->adm.counted_stream)
		atomic_fetch_sub(&w.slot->active_streams, 1);
	if (c->tslot1 > 0)
		kv_target_count(&ledger, w.slot, c->tslot1 - 1, -1);
	free(c->req.rs);
	free(c->req.target);
	free(c->obuf);
	free(c);
}

static int
obuf_has(const struct kv_conn *c, const char *s)
{
	return c->obuf != NULL && memmem(c->obuf, c->olen, s, strlen(s)) != NULL;
}

/* Admitted: the worst case reserved in the ledger, a target picked. */
static void
test_admitted(void)
{
	struct kv_conn *c = fake_conn("/v1/chat/completions", "sk-a");
	int64_t want;

	fake_body(c, "{\"model\":\"gpt-4o-mini\",\"max_tokens\":100,"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
	CHECK_INT(request_admit(c), KV_NEXT);
	CHECK(c->adm.acct != NULL);
	CHECK(c->adm.resv >= 0);
	CHECK(c->rt != NULL && c->tslot1 > 0);
	CHECK(c->obuf == NULL);		/* nothing of ours to say */
	/* every body byte an input token at $0.15/M, 100 output at $0.60/M */
	want = (int64_t)c->req.body_bytes * 150 + 100 * 600;
	CHECK_INT(atomic_load(&c->adm.acct->reserved_nusd), want);
	CHECK_INT(c->state, CS_ADMIT);	/* the engine moves it on, not the phase */
	fake_free(c);
}

/* A worst case past the key's $0.01: 402, nothing left reserved. */
static void
test_budget_refused(void)
{
	struct kv_conn *c = fake_conn("/v1/chat/completions", "sk-b");

	fake_body(c, "{\"model\":\"gpt-4o-mini\",\"max_tokens\":100000,"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
	CHECK_INT(request_admit(c), KV_REPLY);
	CHECK_INT(c->status, 402);
	CHECK(obuf_has(c, "HTTP/1.1 402"));
	CHECK(obuf_has(c, "budget exceeded for key"));
	CHECK(obuf_has(c, "x-should-retry: false"));
	CHECK_INT(c->adm.resv, -1);
	CHECK(c->adm.acct != NULL && atomic_load(&c->adm.acct->reserved_nusd) == 0);
	CHECK_INT(c->tslot1, 0);	/* no target was picked */
	fake_free(c);
}

/* No upstream serves the path: a 404 that names the fix, no account. */
static void
test_unrouted(void)
{
	struct kv_conn *c = fake_conn("/v1/nowhere", "sk-c");

	fake_body(c, "{\"model\":\"gpt-4o-mini\"}");
	CHECK_INT(request_admit(c), KV_REPLY);
	CHECK_INT(c->status, 404);
	CHECK(c->adm.acct == NULL);
	fake_free(c);
}

/* A model with no price and no default: refused before any reservation. */
static void
test_unpriced(void)
{
	struct kv_conn *c = fake_conn("/v1/chat/completions", "sk-d");

	fake_body(c, "{\"model\":\"no-such-model\",\"max_tokens\":10}");
	CHECK_INT(request_admit(c), KV_REPLY);
	CHECK_INT(c->status, 400);
	CHECK_INT(c->adm.resv, -1);
	fake_free(c);
}

/* Virtual keys (the upstream spends its own api_key): an unknown key is
 * a 401, and no account is made for it. */
static void
test_virtual_unknown(void)
{
	struct kv_conn *c;

	teardown();
	setup("[key known]\nkey = sk-known-key-0123456789\n");
	/* the upstream's own key: strangers are refused whatever unknown_keys */
	((struct kv_upstream *)&cf.upstreams[0])->api_key = strdup("sk-provider");
	c = fake_conn("/v1/chat/completions", "sk-stranger");
	fake_body(c, "{\"model\":\"gpt-4o-mini\",\"max_tokens\":10}");
	CHECK_INT(request_admit(c), KV_REPLY);
	CHECK_INT(c->status, 401);
	CHECK(obuf_has(c, "unknown API key"));
	CHECK(c->adm.acct == NULL);
	fake_free(c);
}

/* Bedrock's Converse (issue 35): the reservation is the exact bound of
 * Anthropic's rules. A 1000 x 500 PNG (667 tokens by Anthropic's rule)
 * beside the body's bytes, all at the cache-write rate (a cachePoint),
 * and the output limit named, within which the thinking budget lies. */
#define CONVERSE_MODEL	"us.anthropic.claude-kv-test-v1:0"	/* in no catalogue */
#define NOMAX_MODEL	"us.anthropic.claude-kv-nomax-v1:0"

static struct kv_conn *
converse_conn(const char *model, const char *key, const char *body)
{
	char path[128];
	struct kv_conn *c;
	struct kv_account *a;

	snprintf(path, sizeof(path), "/model/%s/converse", model);
	c = fake_conn(path, key);
	/* a bedrock upstream spends the operator's AWS account: only keys of
	 * the config, as the master marks them */
	a = kv_ledger_account(&ledger, c->req.keyhash, 1, NULL, 1000000000);
	CHECK(a != NULL);
	if (a != NULL)
		kv_account_config_key(a, 0, 0);
	c->req.api = KV_API_BEDROCK_CONVERSE;
	kv_reqscan_init(c->req.rs, c->req.api);
	CHECK_INT(kv_reqscan_model(c->req.rs, model, strlen(model)), 0);
	CHECK_INT(kv_reqscan_feed(c->req.rs, body, strlen(body)), 0);
	c->req.body_bytes = (int64_t)strlen(body);
	return c;
}

static void
test_converse_exact(void)
{
	static const char body[] = "{\"system\":[{\"text\":\"be brief\"},{\"cachePoint\":"
	    "{\"type\":\"default\"}}],\"messages\":[{\"role\":\"user\",\"content\":["
	    "{\"image\":{\"format\":\"png\",\"source\":{\"bytes\":"
	    "\"iVBORw0KGgoAAAANSUhEUgAAA+gAAAH0CAIAAAAAAAAA\"}}},{\"text\":\"what is it?\"}]}],"
	    "\"inferenceConfig\":{\"maxTokens\":2048},\"additionalModelRequestFields\":"
	    "{\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024}}}";
	static const char open[] = "{\"messages\":[{\"role\":\"user\",\"content\":"
	    "[{\"text\":\"hi\"}]}]}";
	static const char think[] = "{\"messages\":[{\"role\":\"user\",\"content\":"
	    "[{\"text\":\"hi\"}]}],\"additionalModelRequestFields\":{\"thinking\":"
	    "{\"type\":\"enabled\",\"budget_tokens\":5000}}}";
	struct kv_conn *c;
	int64_t want;

	teardown();
	setup("[upstream bedrock]\nprovider = bedrock\nregion = us-east-1\n"
	    "url = http://127.0.0.1:9\ncontrol_url = http://127.0.0.1:9\n"
	    "[price " CONVERSE_MODEL "]\ninput = 1\noutput = 2\ncache_write = 1.25\n"
	    "context_window = 200000\nmax_output = 64000\n"
	    "[price " NOMAX_MODEL "]\ninput = 1\noutput = 2\ncontext_window = 200000\n");
	c = converse_conn(CONVERSE_MODEL, "sk-converse-a", body);
	CHECK_INT(request_admit(c), KV_NEXT);
	CHECK(c->adm.acct != NULL && c->obuf == NULL);
	/* input: every body byte and the image's tokens at $1.25/M (the
	 * cache write); output: maxTokens at $2/M */
	want = ((int64_t)strlen(body) + 667) * 1250 + 2048 * 2000;
	if (c->adm.acct != NULL)
		CHECK_INT(atomic_load(&c->adm.acct->reserved_nusd), want);
	CHECK_INT(c->adm.out_bound, 2048);
	fake_free(c);
	/* no maxTokens: the model's max_output, 64,000 x $2/M */
	c = converse_conn(CONVERSE_MODEL, "sk-converse-b", open);
	CHECK_INT(request_admit(c), KV_NEXT);
	want = (int64_t)strlen(open) * 1000 + 64000 * 2000;
	if (c->adm.acct != NULL)
		CHECK_INT(atomic_load(&c->adm.acct->reserved_nusd), want);
	fake_free(c);
	/* neither a limit nor a max_output: the thinking budget, not the
	 * 1,000 of reserve_output_tokens, is the least the output can be */
	c = converse_conn(NOMAX_MODEL, "sk-converse-c", think);
	CHECK_INT(request_admit(c), KV_NEXT);
	CHECK_INT(c->adm.out_bound, 5000);
	want = (int64_t)strlen(think) * 1000 + 5000 * 2000;
	if (c->adm.acct != NULL)
		CHECK_INT(atomic_load(&c->adm.acct->reserved_nusd), want);
	fake_free(c);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kv-test-admission.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	setup("");
	test_admitted();
	test_budget_refused();
	test_unrouted();
	test_unpriced();
	test_virtual_unknown();
	test_converse_exact();
	teardown();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return unit_done();
}

/* Unit tests for Azure OpenAI: its request targets (common/azure_path.c),
 * the deployments words and the [upstream] checks of provider = azure
 * (common/config_azure.c), and its pricing falling back to OpenAI's. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/azure_path.h"
#include "common/config.h"
#include "common/pricetab.h"
#include "tests/unit.h"

static char tmpdir[] = "/tmp/kv-test-azure.XXXXXX";
static char err[1024];

static int
load(struct kv_config *cf, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/kv.ini", tmpdir);
	if ((f = fopen(path, "w")) == NULL || fputs(text, f) == EOF || fclose(f) == EOF) {
		perror(path);
		exit(1);
	}
	err[0] = '\0';
	return kv_config_load(cf, path, err, sizeof(err));
}

static void
check_path(const char *t, enum kv_az_kind want, const char *want_dep)
{
	const char *dep = NULL;
	size_t dlen = 0;
	enum kv_az_kind k = kv_az_path(t, strlen(t), &dep, &dlen);

	if (k != want)
		fprintf(stderr, "path: %s\n", t);
	CHECK_INT(k, want);
	if (want_dep != NULL)
		CHECK(dep != NULL && dlen == strlen(want_dep) && memcmp(dep, want_dep, dlen) == 0);
}

static void
test_paths(void)
{
	check_path("/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
	    KV_AZ_DEPLOYMENT, "gpt4o");
	check_path("/openai/deployments/my-emb.v3/embeddings", KV_AZ_DEPLOYMENT, "my-emb.v3");
	check_path("/openai/deployments/d/responses?api-version=x", KV_AZ_DEPLOYMENT, "d");
	check_path("/openai/deployments//chat/completions", KV_AZ_NONE, NULL);
	check_path("/openai/deployments/gpt4o", KV_AZ_NONE, NULL);
	check_path("/openai/deployments/gpt4o/", KV_AZ_NONE, NULL);
	check_path("/openai/deployments/gpt4o?x=/a/b", KV_AZ_NONE, NULL);
	check_path("/openai/v1/chat/completions", KV_AZ_BODY, NULL);
	check_path("/openai/v1/responses?api-version=preview", KV_AZ_BODY, NULL);
	check_path("/openai/responses?api-version=2025-03-01-preview", KV_AZ_BODY, NULL);
	check_path("/openai", KV_AZ_NONE, NULL);
	check_path("/openai/", KV_AZ_NONE, NULL);
	check_path("/openaix/v1/chat/completions", KV_AZ_NONE, NULL);
	check_path("/v1/chat/completions", KV_AZ_NONE, NULL);
	check_path("/model/x/converse", KV_AZ_NONE, NULL);
}

static void
test_words(void)
{
	static const struct { const char *w; int ok; } v[] = {
		{ "gpt4o:gpt-4o", 1 }, { "a.b-c_d:azure/gpt-4o-mini", 1 },
		{ ":gpt-4o", 0 }, { "gpt4o:", 0 }, { "gpt4o", 0 }, { "g/p:gpt-4o", 0 },
		{ "g%2F:gpt-4o", 0 }, { "gpt4o:gpt\x01", 0 },
		{ "0123456789012345678901234567890123456789012345678901234567890123:m", 1 },
		{ "01234567890123456789012345678901234567890123456789012345678901234:m", 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (kv_az_word_ok(v[i].w, strlen(v[i].w)) != v[i].ok)
			fprintf(stderr, "word: %s\n", v[i].w);
		CHECK_INT(kv_az_word_ok(v[i].w, strlen(v[i].w)), v[i].ok);
	}
}

#define AZ_HEAD	"[upstream az]\nprovider = azure\nurl = https://res.openai.azure.com\n"

static void
test_config(void)
{
	struct kv_config cf;
	const struct kv_upstream *u;

	CHECK_INT(load(&cf, AZ_HEAD "api_key = k\ndeployments = chat:gpt-4o e:text-embedding-3-small\n"
	    "deployments = m:gpt-4o-mini\n[price default]\ninput = 1\noutput = 1\n"), 0);
	u = &cf.upstreams[0];
	CHECK_INT(u->ndeployments, 3);
	CHECK_STR(kv_az_model(u, "chat", 4), "gpt-4o");
	CHECK_STR(kv_az_model(u, "e", 1), "text-embedding-3-small");
	CHECK_STR(kv_az_model(u, "m", 1), "gpt-4o-mini");
	CHECK(kv_az_model(u, "cha", 3) == NULL);
	CHECK(kv_az_model(u, "chat:gpt", 8) == NULL);	/* never into a model */
	CHECK(kv_az_model(u, "Chat", 4) == NULL);
	CHECK_INT(u->npaths, 1);
	CHECK_STR(u->paths[0], "/openai");
	CHECK(kv_config_route(&cf, "/openai/deployments/chat/chat/completions", NULL) == u);
	kv_config_free(&cf);

	CHECK_INT(load(&cf, AZ_HEAD "deployments = c:gpt-4o\ntenant = contoso.onmicrosoft.com\n"
	    "client_id = 00000000-1111-2222-3333-444444444444\nclient_secret = s\n"), 0);
	CHECK_STR(cf.upstreams[0].entra_url,
	    "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token");
	kv_config_free(&cf);
	/* one Entra identity per kilovolt */
	CHECK_INT(load(&cf, AZ_HEAD "deployments = c:m\ntenant = t\nclient_id = i\nclient_secret = s\n"
	    "[upstream az2]\nprovider = azure\nurl = https://b.openai.azure.com\npaths = /openai/v1\n"
	    "deployments = c:m\ntenant = t\nclient_id = i\nclient_secret = s\n"), 0);
	kv_config_free(&cf);
	CHECK_INT(load(&cf, AZ_HEAD "deployments = c:m\ntenant = t\nclient_id = i\nclient_secret = s\n"
	    "[upstream az2]\nprovider = azure\nurl = https://b.openai.azure.com\npaths = /openai/v1\n"
	    "deployments = c:m\ntenant = t\nclient_id = j\nclient_secret = s\n"), -1);
	CHECK(strstr(err, "one Entra ID token") != NULL);
	CHECK_INT(load(&cf, AZ_HEAD "deployments = c:m\ntenant = t\n"), -1);
	CHECK(strstr(err, "all of tenant, client_id and client_secret") != NULL);
	CHECK_INT(load(&cf, AZ_HEAD "deployments = c:m\napi_key = k\ntenant = t\nclient_id = i\n"
	    "client_secret = s\n"), -1);
	CHECK(strstr(err, "exclude each other") != NULL);
	CHECK_INT(load(&cf, AZ_HEAD "deployments = c:m\ntenant = a/b\n"), -1);
	CHECK_INT(load(&cf, AZ_HEAD "deployments = c:m\nentra_url = http://x/t\n"), -1);
	CHECK_INT(load(&cf, AZ_HEAD "api_key = k\n"), -1);
	CHECK(strstr(err, "needs deployments") != NULL);
	CHECK_INT(load(&cf, AZ_HEAD "deployments = c/x:gpt-4o\n"), -1);
	CHECK_INT(load(&cf, "[upstream o]\nurl = http://x\npaths = /v1\ndeployments = c:m\n"), -1);
	CHECK(strstr(err, "provider = azure only") != NULL);
}

/* A model the catalogue has as azure/M is at that entry; one it has only
 * as OpenAI's at OpenAI's. */
static void
test_prices(void)
{
	struct kv_config cf;
	const struct kv_price *p;
	char text[1024], file[4096], *abs;
	const char *top = getenv("top_srcdir");

	snprintf(file, sizeof(file), "%s/data/prices-2026-07-24.json", top != NULL ? top : ".");
	if ((abs = realpath(file, NULL)) == NULL) {
		perror(file);
		exit(1);
	}
	snprintf(text, sizeof(text), AZ_HEAD "api_key = k\ndeployments = c:gpt-4o\n"
	    "[budget]\nprices = %s\n", abs);
	free(abs);
	if (load(&cf, text) != 0)
		fprintf(stderr, "%s\n", err);
	CHECK_STR(err, "");
	p = kv_price_find_for(&cf, KV_PROVIDER_AZURE, "gpt-4o");
	CHECK(p != NULL && strcmp(p->model, "azure/gpt-4o") == 0);
	p = kv_price_find_for(&cf, KV_PROVIDER_AZURE, "chatgpt-4o-latest");
	CHECK(p != NULL && p == kv_price_find_for(&cf, KV_PROVIDER_OPENAI, "chatgpt-4o-latest"));
	kv_config_free(&cf);
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	test_paths();
	test_words();
	test_config();
	test_prices();
	snprintf(err, sizeof(err), "%s/kv.ini", tmpdir);
	unlink(err);
	rmdir(tmpdir);
	return unit_done();
}

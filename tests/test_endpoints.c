/* Unit tests for the endpoint policy: target checks and classification. */
#include <stdlib.h>
#include <string.h>

#include "common/bedrock_path.h"
#include "common/hex.h"
#include "tests/unit.h"
#include "worker/endpoints.h"

struct target_case {
	const char	*t;
	int		 ok;	/* kv_target_check's answer */
};

/* Each of the N cases V gets its answer, and a refusal says why. */
static void
check_targets(const struct target_case *v, size_t n)
{
	const char *why;
	size_t i;
	int got;

	for (i = 0; i < n; i++) {
		why = NULL;
		got = kv_target_check(v[i].t, strlen(v[i].t), &why);
		if (got != v[i].ok)
			fprintf(stderr, "target: %s\n", v[i].t);
		CHECK_INT(got, v[i].ok);
		if (got == -1)
			CHECK(why != NULL && why[0] != '\0');
	}
}

static void
test_target_check(void)
{
	static const struct target_case v[] = {
		{ "/v1/chat/completions", 0 },
		{ "/v1/chat/completions?x=a%2Fb&y=..", 0 },	/* the query is not a path */
		{ "/v1/models/", 0 },
		{ "/", 0 },
		{ "/v1/models/gpt%2D4o", 0 },			/* %2D is '-' */
		{ "/v1/chat/completions/.", -1 },
		{ "/v1/chat/completions/..", -1 },
		{ "/v1/models/../../x", -1 },
		{ "/./v1/models", -1 },
		{ "/v1//models", -1 },
		{ "//v1/models", -1 },
		{ "/v1/chat/completions/%2e", -1 },
		{ "/v1/chat/completions/%2E%2E", -1 },
		{ "/v1/chat%2fcompletions", -1 },
		{ "/v1/chat%2Fcompletions", -1 },
		{ "/v1/chat%5ccompletions", -1 },
		{ "/v1/chat\\completions", -1 },
		{ "/v1/chat/completions%", -1 },
		{ "/v1/chat/completions%2", -1 },
		{ "/v1/chat/completions%zz", -1 },
		{ "v1/chat/completions", -1 },
		{ "*", -1 },
		{ "", -1 },
		{ "/v1/.well", 0 },
		{ "/v1/..x", 0 },
	};

	check_targets(v, sizeof(v) / sizeof(v[0]));
}

/* The target check as it was before its one-pass rewrite (issue 26): the
 * new one must give the same answer and the same reason for every target. */
static size_t
ref_path_len(const char *target, size_t len)
{
	const char *q = memchr(target, '?', len);

	return q != NULL ? (size_t)(q - target) : len;
}

/* One segment (between slashes) of LEN bytes at S. */
static int
ref_segment_ok(const char *s, size_t len, const char **why)
{
	size_t i;
	int v, hi, lo;

	if (len == 0) {
		*why = "empty path segment (//) in the request target";
		return -1;
	}
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')) {
		*why = "dot segment (. or ..) in the request target";
		return -1;
	}
	for (i = 0; i < len; i++) {
		if (s[i] == '\\') {
			*why = "backslash in the request target";
			return -1;
		}
		if (s[i] != '%')
			continue;
		hi = i + 2 < len ? kv_hexval((unsigned char)s[i + 1]) : -1;
		lo = i + 2 < len ? kv_hexval((unsigned char)s[i + 2]) : -1;
		if (hi < 0 || lo < 0) {
			*why = "bad percent-encoding in the request target";
			return -1;
		}
		v = hi * 16 + lo;
		if (v == '/' || v == '.' || v == '\\') {
			*why = "percent-encoded '/', '.' or '\\' in the request target";
			return -1;
		}
	}
	return 0;
}

static int
ref_target_check(const char *target, size_t len, const char **why)
{
	size_t plen = ref_path_len(target, len), i, start;

	if (plen == 0 || target[0] != '/') {
		*why = "the request target must be a path starting with /";
		return -1;
	}
	/* Segments between slashes; a single trailing slash ends the last one
	 * (such a path simply matches no endpoint). */
	for (start = 1, i = 1; i <= plen; i++) {
		if (i < plen && target[i] != '/')
			continue;
		if (!(i == plen && i == start) &&
		    ref_segment_ok(target + start, i - start, why) == -1)
			return -1;
		start = i + 1;
	}
	return 0;
}

/* Every target of up to 7 bytes over the bytes that matter to the check. */
static void
test_target_check_same(void)
{
	static const char alpha[] = "/.%\\a2Fe?";
	const size_t na = sizeof(alpha) - 1;
	char t[8];
	size_t len, i, k, total, bad = 0;

	for (len = 0; len <= 7; len++) {
		for (total = 1, i = 0; i < len; i++)
			total *= na;
		for (k = 0; k < total; k++) {
			const char *w1 = NULL, *w2 = NULL;
			size_t x = k;
			int a, b;

			for (i = 0; i < len; i++, x /= na)
				t[i] = alpha[x % na];
			a = ref_target_check(t, len, &w1);
			b = kv_target_check(t, len, &w2);
			if (a != b || (a == -1 && strcmp(w1, w2) != 0)) {
				if (bad++ < 5)
					fprintf(stderr, "target %.*s: %d %s, was %d %s\n", (int)len, t,
					    b, b ? w2 : "", a, a ? w1 : "");
			}
		}
	}
	CHECK_INT((int)bad, 0);
}

static void
test_api(void)
{
	static const struct { const char *m, *p; enum kv_api want; } v[] = {
		{ "POST", "/v1/chat/completions", KV_API_OPENAI_CHAT },
		{ "POST", "/v1/chat/completions?x=1", KV_API_OPENAI_CHAT },
		{ "POST", "/v1/chat/completions/", KV_API_OTHER },
		{ "GET", "/v1/chat/completions", KV_API_OTHER },
		{ "POST", "/openai/deployments/d/chat/completions?api-version=1", KV_API_OPENAI_CHAT },
		{ "POST", "/v1/completions", KV_API_OPENAI_COMPLETIONS },
		{ "POST", "/v1/embeddings", KV_API_OPENAI_EMBEDDINGS },
		{ "POST", "/v1/responses", KV_API_OPENAI_RESPONSES },
		{ "POST", "/v1/responses/resp_123", KV_API_OTHER },
		{ "POST", "/v1/messages", KV_API_ANTHROPIC_MESSAGES },
		{ "POST", "/v1/threads/t/messages", KV_API_OTHER },
		{ "POST", "/v1/messages/count_tokens", KV_API_OTHER },
		{ "POST", "/v1/messages/batches", KV_API_OTHER },
		{ "GET", "/v1/models", KV_API_OTHER },
		{ "POST", "/", KV_API_OTHER },
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		CHECK_INT(kv_endpoint_api(v[i].m, v[i].p, strlen(v[i].p)), v[i].want);
}

static enum kv_ep_kind
kind(const struct kv_upstream *up, const char *m, const char *p, struct kv_endpoint *ep)
{
	kv_endpoint_classify(m, p, strlen(p), up, ep);
	return ep->kind;
}

static void
test_classify(void)
{
	char *free_paths[] = { "/v1/batches", "/v1/responses", "/v1/images", "/v1/chat/completions" };
	struct kv_upstream up;
	struct kv_endpoint ep;

	memset(&up, 0, sizeof(up));
	strcpy(up.name, "openai");
	CHECK_INT(kind(&up, "POST", "/v1/chat/completions", &ep), KV_EP_METERED);
	CHECK_INT(ep.api, KV_API_OPENAI_CHAT);
	CHECK_INT(kind(&up, "GET", "/v1/models", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/v1/models/gpt-4o", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/v1/models/gpt-4o/x", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "DELETE", "/v1/models/ft-x", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "POST", "/v1/messages/count_tokens", &ep), KV_EP_FREE);
	/* refused, naming the setting */
	CHECK_INT(kind(&up, "POST", "/v1/images/generations", &ep), KV_EP_REFUSED);
	CHECK_INT(ep.status, 404);
	CHECK(strstr(ep.msg, "[upstream openai] free_paths") != NULL);
	CHECK_INT(kind(&up, "POST", "/v1/batches", &ep), KV_EP_REFUSED);
	CHECK(strstr(ep.msg, "batches") != NULL && strstr(ep.msg, "free_paths") != NULL);
	CHECK_INT(kind(&up, "POST", "/v1/messages/batches", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "GET", "/v1/chat/completions", &ep), KV_EP_REFUSED);
	CHECK(strstr(ep.msg, "stored-object") != NULL);
	CHECK_INT(kind(&up, "GET", "/v1/responses/resp_1", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "DELETE", "/v1/responses/resp_1", &ep), KV_EP_REFUSED);
	/* listed: free in pass-through mode */
	up.free_paths = free_paths;
	up.nfree_paths = 4;
	CHECK_INT(kind(&up, "POST", "/v1/batches", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/v1/batches/b_1", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/v1/responses/resp_1", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "POST", "/v1/images/generations", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/v1/chat/completions", &ep), KV_EP_FREE);
	/* still metered, whatever free_paths says */
	CHECK_INT(kind(&up, "POST", "/v1/chat/completions", &ep), KV_EP_METERED);
	CHECK_INT(kind(&up, "POST", "/v1/responses", &ep), KV_EP_METERED);
	/* virtual keys: stored objects stay refused unless shared */
	up.api_key = "sk-provider";
	CHECK_INT(kind(&up, "GET", "/v1/responses/resp_1", &ep), KV_EP_REFUSED);
	CHECK(strstr(ep.msg, "shared_stored_objects = yes") != NULL);
	CHECK_INT(kind(&up, "GET", "/v1/chat/completions", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "POST", "/v1/batches", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "POST", "/v1/images/generations", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/v1/models", &ep), KV_EP_FREE);
	up.shared_stored_objects = 1;
	CHECK_INT(kind(&up, "GET", "/v1/responses/resp_1", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "POST", "/v1/batches", &ep), KV_EP_FREE);
	/* not listed: refused even when shared */
	CHECK_INT(kind(&up, "GET", "/v1/files", &ep), KV_EP_REFUSED);
}

static void
test_anthropic_shape(void)
{
	CHECK(kv_endpoint_anthropic("/v1/messages", 12));
	CHECK(kv_endpoint_anthropic("/v1/messages/batches", 20));
	CHECK(kv_endpoint_anthropic("/v1/messages?beta=true", 22));
	CHECK(!kv_endpoint_anthropic("/v1/chat/completions", 20));
	CHECK(!kv_endpoint_anthropic("/v1/messagesX", 13));
}

/* A percent-encoded '/' passes inside the model id of a Bedrock runtime
 * path (or the id of a control-plane read) only; everywhere else the
 * smuggling guard stands. */
static void
test_bedrock_target(void)
{
	static const struct target_case v[] = {
		{ "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2F"
		    "us.anthropic.claude-x/invoke", 0 },
		{ "/model/arn%3Aaws%3Ab%2Fx/invoke-with-response-stream?a=b", 0 },
		{ "/model/arn%3Aaws%3Ab%2fx/converse", 0 },
		{ "/model/a%2Fb/converse-stream", 0 },
		{ "/inference-profiles/arn%3Aaws%3Ab%2Fp", 0 },
		{ "/foundation-models/arn%3Aaws%3Ab%2Fm", 0 },
		/* not exactly /model/{segment}/{action} */
		{ "/model/a%2Fb/invoke/", -1 },
		{ "/model/a%2Fb/invoke/x", -1 },
		{ "/model/a%2Fb/chat/completions", -1 },
		{ "/model/a%2Fb", -1 },
		{ "/model/a/b%2Fc/invoke", -1 },
		{ "/model/a/invoke%2Fx", -1 },
		{ "/v1/model/a%2Fb/invoke", -1 },
		{ "/models/a%2Fb/invoke", -1 },
		{ "/model%2Fa/invoke", -1 },
		{ "/inference-profiles/a%2Fb/x", -1 },
		{ "/inference-profiles%2Fa", -1 },
		/* still no dot or backslash, there too */
		{ "/model/%2E%2E/invoke", -1 },
		{ "/model/a%5Cb/invoke", -1 },
		{ "/model/../invoke", -1 },
	};

	check_targets(v, sizeof(v) / sizeof(v[0]));
}

static void
test_bedrock_path(void)
{
	static const char arn[] = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3A"
	    "inference-profile%2Fus.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke";
	char m[KV_BR_MODEL_MAX], big[300];
	const char *why;
	size_t off, n;

	CHECK_INT(kv_br_path(arn, strlen(arn), &off, &n), KV_BR_INVOKE);
	CHECK_INT((int)off, 7);
	CHECK_INT(kv_br_model(arn + off, n, m, sizeof(m), &why), 0);
	/* an ARN prices as the profile it names */
	CHECK_STR(m, "us.anthropic.claude-sonnet-4-5-20250929-v1:0");
	CHECK_INT(kv_br_path("/model/m/invoke-with-response-stream", 36, NULL, NULL),
	    KV_BR_INVOKE_STREAM);
	CHECK_INT(kv_br_path("/model/m/converse?x", 19, NULL, NULL), KV_BR_CONVERSE);
	CHECK_INT(kv_br_path("/model/m/converse-stream", 24, NULL, NULL), KV_BR_CONVERSE_STREAM);
	CHECK_INT(kv_br_path("/model//invoke", 14, NULL, NULL), KV_BR_NONE);
	CHECK_INT(kv_br_path("/model/m/invokes", 16, NULL, NULL), KV_BR_NONE);
	CHECK_INT(kv_br_path("/model/m", 8, NULL, NULL), KV_BR_NONE);
	CHECK_INT(kv_br_path("/inference-profiles", 19, &off, &n), KV_BR_CONTROL);
	CHECK_INT((int)n, 0);
	CHECK_INT(kv_br_path("/inference-profiles?type=SYSTEM_DEFINED", 39, NULL, NULL),
	    KV_BR_CONTROL);
	CHECK_INT(kv_br_path("/foundation-models/x", 20, &off, &n), KV_BR_CONTROL);
	CHECK_INT((int)off, 19);
	CHECK_INT(kv_br_path("/foundation-models/", 19, NULL, NULL), KV_BR_NONE);
	CHECK_INT(kv_br_path("/foundation-modelsx", 19, NULL, NULL), KV_BR_NONE);
	CHECK_INT(kv_br_path("/foundation-models/x/y", 22, NULL, NULL), KV_BR_NONE);
	CHECK(kv_br_streams(KV_BR_CONVERSE_STREAM) && !kv_br_streams(KV_BR_CONVERSE));
	/* decoded once: %25 is a '%', not the start of another escape */
	CHECK_INT(kv_br_model("a%252F", 6, m, sizeof(m), &why), 0);
	CHECK_STR(m, "a%2F");
	CHECK_INT(kv_br_model("anthropic.claude-v2%3A1", 23, m, sizeof(m), &why), 0);
	CHECK_STR(m, "anthropic.claude-v2:1");
	/* refusals: bad escapes, control bytes, '/' outside an ARN, empty, long */
	CHECK_INT(kv_br_model("a%2", 3, m, sizeof(m), &why), -1);
	CHECK_INT(kv_br_model("a%zz", 4, m, sizeof(m), &why), -1);
	CHECK_INT(kv_br_model("a%00", 4, m, sizeof(m), &why), -1);
	CHECK_INT(kv_br_model("a%0A", 4, m, sizeof(m), &why), -1);
	CHECK_INT(kv_br_model("anthropic.x%2Fcheap", 19, m, sizeof(m), &why), -1);
	CHECK(strstr(why, "not an ARN") != NULL);
	CHECK_INT(kv_br_model("arn%3Ax%2F", 10, m, sizeof(m), &why), -1);
	CHECK_INT(kv_br_model("arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Aprompt%2FP1%3A1", 53, m,
	    sizeof(m), &why), -1);
	CHECK(strstr(why, "Prompt management") != NULL);
	CHECK_INT(kv_br_model("arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Aapplication-inference-"
	    "profile%2Fab12", 74, m, sizeof(m), &why), 0);
	CHECK_STR(m, "ab12");
	memset(big, 'a', sizeof(big));
	CHECK_INT(kv_br_model(big, KV_BR_MODEL_MAX - 1, m, sizeof(m), &why), 0);
	CHECK_INT(kv_br_model(big, KV_BR_MODEL_MAX, m, sizeof(m), &why), -1);
	CHECK(strstr(why, "too long") != NULL);
	/* a long ARN is fine when the id it names fits */
	{
		char arn2[KV_BR_ID_MAX + 16];

		memcpy(arn2, "arn:", 4);
		memset(arn2 + 4, 'x', 1000);
		memcpy(arn2 + 1004, "%2Fid", 5);
		CHECK_INT(kv_br_model(arn2, 1009, m, sizeof(m), &why), 0);
		CHECK_STR(m, "id");
		memset(arn2 + 4, 'x', KV_BR_ID_MAX);
		memcpy(arn2 + 4 + KV_BR_ID_MAX, "%2Fid", 5);
		CHECK_INT(kv_br_model(arn2, KV_BR_ID_MAX + 9, m, sizeof(m), &why), -1);
	}
	CHECK(kv_br_anthropic("us.anthropic.claude-x") && !kv_br_anthropic("amazon.nova-pro"));
}

static void
test_bedrock_classify(void)
{
	struct kv_upstream up;
	struct kv_endpoint ep;

	CHECK_INT(kv_endpoint_api("POST", "/model/anthropic.claude-x/invoke", 32),
	    KV_API_ANTHROPIC_MESSAGES);
	CHECK_INT(kv_endpoint_api("POST", "/model/us.anthropic.claude-x/invoke-with-response-stream",
	    56), KV_API_ANTHROPIC_MESSAGES);
	CHECK_INT(kv_endpoint_api("POST", "/model/amazon.nova-pro-v1%3A0/invoke", 36), KV_API_OTHER);
	CHECK_INT(kv_endpoint_api("POST", "/model/amazon.nova-pro-v1%3A0/converse", 38),
	    KV_API_BEDROCK_CONVERSE);
	CHECK_INT(kv_endpoint_api("POST", "/model/m/converse-stream", 24), KV_API_BEDROCK_CONVERSE);
	CHECK_INT(kv_endpoint_api("GET", "/model/m/converse", 17), KV_API_OTHER);
	/* Bedrock's OpenAI-compatible endpoints by their suffix, as OpenAI's */
	CHECK_INT(kv_endpoint_api("POST", "/openai/v1/chat/completions", 27), KV_API_OPENAI_CHAT);
	CHECK_INT(kv_endpoint_api("POST", "/openai/v1/responses", 20), KV_API_OPENAI_RESPONSES);

	memset(&up, 0, sizeof(up));
	strcpy(up.name, "br");
	up.provider = KV_PROVIDER_BEDROCK;
	CHECK_INT(kind(&up, "POST", "/model/anthropic.claude-x/invoke", &ep), KV_EP_METERED);
	CHECK_INT(ep.api, KV_API_ANTHROPIC_MESSAGES);
	CHECK_INT(kind(&up, "POST", "/model/meta.llama3/converse", &ep), KV_EP_METERED);
	CHECK_INT(ep.api, KV_API_BEDROCK_CONVERSE);
	CHECK_INT(kind(&up, "POST", "/model/meta.llama3/invoke", &ep), KV_EP_REFUSED);
	CHECK_INT(ep.status, 404);
	CHECK(strstr(ep.msg, "InvokeModel is metered") != NULL && strstr(ep.msg, "Converse") != NULL);
	CHECK_INT(kind(&up, "GET", "/model/anthropic.claude-x/invoke", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "GET", "/inference-profiles?type=SYSTEM_DEFINED", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/inference-profiles/us.anthropic.claude-x", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "HEAD", "/foundation-models", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "GET", "/foundation-models/anthropic.claude-x", &ep), KV_EP_FREE);
	CHECK_INT(kind(&up, "POST", "/inference-profiles", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "DELETE", "/inference-profiles/p", &ep), KV_EP_REFUSED);
	CHECK_INT(kind(&up, "POST", "/openai/v1/chat/completions", &ep), KV_EP_METERED);
	/* virtual keys without api_key: stored objects stay refused */
	CHECK_INT(kind(&up, "GET", "/openai/v1/responses/resp_1", &ep), KV_EP_REFUSED);
	/* the control plane is not built in on another kind */
	up.provider = KV_PROVIDER_AUTO;
	CHECK_INT(kind(&up, "GET", "/inference-profiles", &ep), KV_EP_REFUSED);
}

int
main(void)
{
	test_target_check();
	test_target_check_same();
	test_api();
	test_classify();
	test_anthropic_shape();
	test_bedrock_target();
	test_bedrock_path();
	test_bedrock_classify();
	return unit_done();
}

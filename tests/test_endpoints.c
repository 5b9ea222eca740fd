/* Unit tests for the endpoint policy: target checks and classification. */
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "tests/unit.h"
#include "worker/endpoints.h"

static void
test_target_check(void)
{
	static const struct { const char *t; int ok; } v[] = {
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
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		why = NULL;
		int got = kv_target_check(v[i].t, strlen(v[i].t), &why);
		if (got != v[i].ok)
			fprintf(stderr, "target: %s\n", v[i].t);
		CHECK_INT(got, v[i].ok);
		if (got == -1)
			CHECK(why != NULL && why[0] != '\0');
	}
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

int
main(void)
{
	test_target_check();
	test_target_check_same();
	test_api();
	test_classify();
	test_anthropic_shape();
	return unit_done();
}

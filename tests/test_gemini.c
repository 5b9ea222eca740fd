/* Unit tests for the Gemini API (issue 38): its paths (gemini_path.h), the
 * endpoint policy on them, the request scan of its bodies (reqscan.h), its
 * usageMetadata in a JSON body, an alt=sse stream and the JSON-array stream
 * at every split (usage.h), ?key= taken out of a target (credential.h) and
 * Google's error shape (errors.h). */
#include <stdlib.h>
#include <string.h>

#include "common/gemini_path.h"
#include "tests/unit.h"
#include "worker/credential.h"
#include "worker/endpoints.h"
#include "worker/errors.h"
#include "worker/reqscan.h"
#include "worker/usage.h"

static void
test_paths(void)
{
	static const struct { const char *t; enum kv_gm_kind k; const char *model; } v[] = {
		{ "/v1beta/models/gemini-2.5-pro:generateContent", KV_GM_GENERATE, "gemini-2.5-pro" },
		{ "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", KV_GM_STREAM,
		    "gemini-2.5-flash" },
		{ "/v1/models/gemini-2.0-flash:countTokens", KV_GM_COUNT, "gemini-2.0-flash" },
		{ "/v1beta/models/gemini-embedding-001:embedContent", KV_GM_EMBED,
		    "gemini-embedding-001" },
		{ "/v1beta/models/gemini-embedding-001:batchEmbedContents", KV_GM_BATCH_EMBED,
		    "gemini-embedding-001" },
		{ "/v1beta/models/gemini-2.5-pro:generateAnswer", KV_GM_OTHER, "gemini-2.5-pro" },
		{ "/v1beta/models", KV_GM_MODELS, "" },
		{ "/v1beta/models/gemini-2.5-pro", KV_GM_MODELS, "gemini-2.5-pro" },
		{ "/v1/models", KV_GM_NONE, NULL },		/* OpenAI's list */
		{ "/v1/models/gpt-4o", KV_GM_NONE, NULL },	/* OpenAI's read */
		{ "/v1beta/models/:generateContent", KV_GM_NONE, NULL },
		{ "/v1beta/models/a%2Fb:generateContent", KV_GM_NONE, NULL },
		{ "/v1beta/models/a/b:generateContent", KV_GM_NONE, NULL },
		{ "/v1beta/modelsx/a:generateContent", KV_GM_NONE, NULL },
		{ "/v1/chat/completions", KV_GM_NONE, NULL },
	};
	size_t i, off, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		enum kv_gm_kind k = kv_gm_path(v[i].t, strlen(v[i].t), &off, &n);

		if (k != v[i].k)
			fprintf(stderr, "path: %s\n", v[i].t);
		CHECK_INT(k, v[i].k);
		if (v[i].model != NULL && k == v[i].k) {
			CHECK_INT(n, strlen(v[i].model));
			CHECK(memcmp(v[i].t + off, v[i].model, n) == 0);
		}
	}
}

static void
test_endpoints(void)
{
	struct kv_upstream up;
	struct kv_endpoint ep;
	static const char gen[] = "/v1beta/models/gemini-2.5-pro:generateContent",
	    count[] = "/v1beta/models/gemini-2.5-pro:countTokens",
	    other[] = "/v1beta/models/gemini-2.5-pro:generateAnswer",
	    cache[] = "/v1beta/cachedContents";

	memset(&up, 0, sizeof(up));
	strcpy(up.name, "gemini");
	up.provider = KV_PROVIDER_GEMINI;
	CHECK_INT(kv_endpoint_api("POST", gen, sizeof(gen) - 1), KV_API_GEMINI);
	kv_endpoint_classify("POST", gen, sizeof(gen) - 1, &up, &ep);
	CHECK_INT(ep.kind, KV_EP_METERED);
	kv_endpoint_classify("POST", count, sizeof(count) - 1, &up, &ep);
	CHECK_INT(ep.kind, KV_EP_FREE);
	kv_endpoint_classify("POST", other, sizeof(other) - 1, &up, &ep);
	CHECK_INT(ep.kind, KV_EP_REFUSED);
	kv_endpoint_classify("GET", "/v1beta/models", 14, &up, &ep);
	CHECK_INT(ep.kind, KV_EP_FREE);
	kv_endpoint_classify("POST", cache, sizeof(cache) - 1, &up, &ep);
	CHECK_INT(ep.kind, KV_EP_REFUSED);
}

/* BODY scanned for API whole and at every split: the same answer. */
static int
scan(enum kv_api api, const char *body, struct kv_request_info *ri, char *err, size_t errlen)
{
	static struct kv_reqscan r;
	size_t len = strlen(body), at;
	int rc = 0, rc1;

	for (at = 0; at <= len; at++) {
		kv_reqscan_init(&r, api);
		(void)kv_reqscan_model(&r, "gemini-2.5-pro", 14);
		rc1 = kv_reqscan_feed(&r, body, at) == 0 && kv_reqscan_feed(&r, body + at,
		    len - at) == 0 && kv_reqscan_finish(&r) == 0 ? 0 : -1;
		if (at == 0) {
			rc = rc1;
			*ri = r.ri;
			snprintf(err, errlen, "%s", r.err);
		} else if (rc1 != rc || (rc == 0 && (r.ri.max_output != ri->max_output ||
		    r.ri.thinking != ri->thinking || r.ri.mult != ri->mult ||
		    strcmp(r.ri.fetches, ri->fetches) != 0 || r.ri.images != ri->images ||
		    r.ri.audio_in != ri->audio_in)))
			return -2;
	}
	return rc;
}

static void
test_reqscan(void)
{
	struct kv_request_info ri;
	char err[128];

	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":"
	    "\"hi\"}]}],\"generationConfig\":{\"maxOutputTokens\":100,\"candidateCount\":2,"
	    "\"thinkingConfig\":{\"thinkingBudget\":512}}}", &ri, err, sizeof(err)), 0);
	CHECK_INT(ri.max_output, 100);
	CHECK_INT(ri.mult, 2);
	CHECK_INT(ri.thinking, 512);
	CHECK_STR(ri.fetches, "");
	CHECK_STR(ri.model, "gemini-2.5-pro");
	/* unset or -1: dynamic, up to the model's maximum */
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[]}", &ri, err, sizeof(err)), 0);
	CHECK_INT(ri.thinking, KV_REQ_THINK_DYNAMIC);
	CHECK_INT(ri.max_output, -1);
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[],\"generationConfig\":{\"thinkingConfig\":"
	    "{\"thinkingBudget\":-1}}}", &ri, err, sizeof(err)), 0);
	CHECK_INT(ri.thinking, KV_REQ_THINK_DYNAMIC);
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[],\"generationConfig\":{\"thinkingConfig\":"
	    "{\"thinkingBudget\":-2}}}", &ri, err, sizeof(err)), -1);
	/* what the body does not show */
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[{\"parts\":[{\"fileData\":{\"fileUri\":"
	    "\"https://x/f\"}}]}]}", &ri, err, sizeof(err)), 0);
	CHECK_STR(ri.fetches, "fileData (a file by URI)");
	CHECK_INT(ri.audio_in, 1);	/* it may be audio: reserved at its price */
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[],\"cachedContent\":\"cachedContents/x\"}",
	    &ri, err, sizeof(err)), 0);
	CHECK(strncmp(ri.fetches, "cachedContent", 13) == 0);
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[{\"parts\":[{\"inlineData\":{\"mimeType\":"
	    "\"audio/mp3\",\"data\":\"SUQzBAAAAAAAI1RTU0U=\"}}]}]}", &ri, err, sizeof(err)), 0);
	CHECK_STR(ri.fetches, "inlineData that is not an image");
	CHECK_INT(ri.audio_in, 1);
	/* a 1x1 PNG is an image: its tokens, no context window */
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[{\"parts\":[{\"inlineData\":{\"mimeType\":"
	    "\"image/png\",\"data\":\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
	    "z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==\"}}]}]}", &ri, err, sizeof(err)), 0);
	CHECK_INT(ri.images, 1);
	CHECK_STR(ri.fetches, "");
	CHECK_INT(ri.audio_in, 0);
	/* the client's own JSON is not read as the API's */
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[{\"parts\":[{\"functionResponse\":{\"name\":"
	    "\"f\",\"response\":{\"fileData\":1,\"cachedContent\":2}}}]}],\"tools\":[{"
	    "\"functionDeclarations\":[{\"name\":\"f\",\"parameters\":{\"googleSearch\":{}}}]}]}",
	    &ri, err, sizeof(err)), 0);
	CHECK_STR(ri.fetches, "");
	/* refused: unknown members, tools billed apart, wrong types */
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[],\"extra\":1}", &ri, err, sizeof(err)), -1);
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[],\"tools\":[{\"googleSearch\":{}}]}", &ri,
	    err, sizeof(err)), -1);
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[],\"generationConfig\":{\"maxOutputTokens\":"
	    "\"9\"}}", &ri, err, sizeof(err)), -1);
	CHECK_INT(scan(KV_API_GEMINI, "{\"contents\":[],\"generationConfig\":{"
	    "\"responseModalities\":[\"IMAGE\"]}}", &ri, err, sizeof(err)), 0);
	CHECK(ri.dim_other[0] != '\0');
	CHECK_INT(scan(KV_API_GEMINI_EMBED, "{\"requests\":[{\"model\":\"models/e\",\"content\":"
	    "{\"parts\":[{\"text\":\"x\"}]},\"taskType\":\"RETRIEVAL_QUERY\"}]}", &ri, err,
	    sizeof(err)), 0);
	CHECK_INT(ri.thinking, -1);
}

/* BODY scanned whole and at every split (and byte by byte): the usage. */
static int
usage(enum kv_api api, int sse, const char *body, struct kv_usage *u, int *final)
{
	static struct kv_usage_scanner s;
	size_t len = strlen(body), at;
	int bad = 0;

	for (at = 0; at <= len; at++) {
		kv_usage_init(&s, api, sse);
		kv_usage_feed(&s, body, at);
		kv_usage_feed(&s, body + at, len - at);
		if (at == 0) {
			*u = *kv_usage_result(&s);
			*final = s.final;
		} else if (kv_usage_result(&s)->input != u->input ||
		    kv_usage_result(&s)->output != u->output ||
		    kv_usage_result(&s)->cached_input != u->cached_input ||
		    kv_usage_result(&s)->audio_input != u->audio_input || s.final != *final)
			bad = 1;
	}
	return bad ? -1 : 0;
}

#define CHUNK(text, usage_) "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"" text \
	"\"}],\"role\":\"model\"}" usage_ "}}"

static void
test_usage(void)
{
	struct kv_usage u;
	int final;
	static const char json[] = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}]},"
	    "\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":100,"
	    "\"candidatesTokenCount\":7,\"thoughtsTokenCount\":30,\"cachedContentTokenCount\":40,"
	    "\"toolUsePromptTokenCount\":5,\"totalTokenCount\":142},\"modelVersion\":\"g\"}";
	static const char sse[] =
	    "data: " CHUNK("a", "}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":1") "\r\n\r\n"
	    "data: " CHUNK("b", ",\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":9,"
	    "\"candidatesTokenCount\":2,\"thoughtsTokenCount\":4") "\r\n\r\n";
	static const char cut[] =
	    "data: " CHUNK("a", "}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":1") "\r\n\r\n";
	static const char array[] =
	    "[" CHUNK("a", "}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":1")
	    ",\r\n" CHUNK("b", ",\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":9,"
	    "\"candidatesTokenCount\":2,\"thoughtsTokenCount\":4") "]";
	/* audio among the prompt (and among its cached part, which is
	 * priced as cached input), in either member order */
	static const char audio[] = "{\"candidates\":[{\"finishReason\":\"STOP\"}],"
	    "\"usageMetadata\":{\"promptTokenCount\":300,\"candidatesTokenCount\":5,"
	    "\"cachedContentTokenCount\":100,\"promptTokensDetails\":[{\"modality\":\"TEXT\","
	    "\"tokenCount\":50},{\"tokenCount\":200,\"modality\":\"AUDIO\"},{\"modality\":"
	    "\"IMAGE\",\"tokenCount\":20},{\"modality\":\"AUDIO\",\"tokenCount\":30}],"
	    "\"cacheTokensDetails\":[{\"modality\":\"AUDIO\",\"tokenCount\":60},{\"modality\":"
	    "\"TEXT\",\"tokenCount\":40}]}}";
	static const char audio_sse[] =
	    "data: " CHUNK("a", "}],\"usageMetadata\":{\"promptTokenCount\":90,\"candidatesTokenCount\":1,"
	    "\"promptTokensDetails\":[{\"modality\":\"AUDIO\",\"tokenCount\":80},{\"modality\":"
	    "\"TEXT\",\"tokenCount\":10}]") "\r\n\r\n"
	    "data: " CHUNK("b", ",\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":90,"
	    "\"candidatesTokenCount\":2,\"promptTokensDetails\":[{\"modality\":\"AUDIO\","
	    "\"tokenCount\":80},{\"modality\":\"TEXT\",\"tokenCount\":10}]") "\r\n\r\n";
	/* an AUDIO count larger than the uncached prompt is held to it; a
	 * modality list elsewhere (a candidate's) is not the usage's */
	static const char over[] = "{\"candidates\":[{\"finishReason\":\"STOP\","
	    "\"promptTokensDetails\":[{\"modality\":\"AUDIO\",\"tokenCount\":7}]}],"
	    "\"usageMetadata\":{\"promptTokenCount\":10,\"candidatesTokenCount\":1,"
	    "\"promptTokensDetails\":[{\"modality\":\"AUDIO\",\"tokenCount\":500}]}}";
	static const char embed[] = "{\"embeddings\":[{\"values\":[0.5]}],\"usageMetadata\":"
	    "{\"promptTokenCount\":12,\"totalTokenCount\":12}}";

	CHECK_INT(usage(KV_API_GEMINI, 0, json, &u, &final), 0);
	CHECK(u.found && final);
	CHECK_INT(u.input, 105);	/* the prompt, the cached part in it, and the tools' */
	CHECK_INT(u.cached_input, 40);
	CHECK_INT(u.output, 37);	/* thoughts are output */
	CHECK_INT(u.reasoning, 30);
	CHECK_INT(usage(KV_API_GEMINI, 1, sse, &u, &final), 0);
	CHECK(u.found && final);
	CHECK_INT(u.input, 9);
	CHECK_INT(u.output, 6);
	CHECK_INT(usage(KV_API_GEMINI, 1, cut, &u, &final), 0);
	CHECK(u.found && !final);	/* no finishReason: not the last chunk */
	CHECK_INT(u.output, 1);
	CHECK_INT(usage(KV_API_GEMINI, 0, array, &u, &final), 0);
	CHECK(u.found && final);
	CHECK_INT(u.input, 9);
	CHECK_INT(u.output, 6);
	CHECK_INT(u.audio_input, 0);	/* no AUDIO entry: all text */
	CHECK_INT(usage(KV_API_GEMINI, 0, audio, &u, &final), 0);
	CHECK(u.found && final);
	CHECK_INT(u.input, 300);
	CHECK_INT(u.cached_input, 100);
	CHECK_INT(u.audio_input, 170);	/* 200 + 30 AUDIO, less the 60 cached */
	CHECK_INT(usage(KV_API_GEMINI, 1, audio_sse, &u, &final), 0);
	CHECK(u.found && final);
	CHECK_INT(u.audio_input, 80);	/* cumulative: the last chunk's, not a sum */
	CHECK_INT(usage(KV_API_GEMINI, 0, over, &u, &final), 0);
	CHECK_INT(u.audio_input, 10);
	CHECK_INT(usage(KV_API_GEMINI_EMBED, 0, embed, &u, &final), 0);
	CHECK(u.found && final);
	CHECK_INT(u.input, 12);
	CHECK_INT(u.output, 0);
}

static void
test_query_key(void)
{
	static const struct { const char *in, *out; int n; } v[] = {
		{ "/m:generateContent?key=K", "/m:generateContent", 1 },
		{ "/m:s?alt=sse&key=K", "/m:s?alt=sse", 1 },
		{ "/m:s?key=K&alt=sse", "/m:s?alt=sse", 1 },
		{ "/m:s?a=1&key=K&b=2", "/m:s?a=1&b=2", 1 },
		{ "/m:s?key=A&key=B", "/m:s", 2 },
		{ "/m:s?monkey=1", "/m:s?monkey=1", 0 },
		{ "/m:s", "/m:s", 0 },
	};
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", v[i].in);
		CHECK_INT(kv_cred_strip_query_key(buf), v[i].n);
		CHECK_STR(buf, v[i].out);
	}
}

static void
test_error_shape(void)
{
	char buf[2048];

	CHECK(kv_error_response(buf, sizeof(buf), KV_ERR_GOOGLE, 402, "budget exceeded", 1,
	    NULL) > 0);
	CHECK(strstr(buf, "HTTP/1.1 402 ") == buf);
	CHECK(strstr(buf, "{\"error\":{\"code\":402,\"message\":\"budget exceeded\","
	    "\"status\":\"RESOURCE_EXHAUSTED\"}}") != NULL);
}

int
main(void)
{
	test_paths();
	test_endpoints();
	test_reqscan();
	test_usage();
	test_query_key();
	test_error_shape();
	return unit_done();
}

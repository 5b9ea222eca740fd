/* The endpoint policy (see endpoints.h). The lists here are the whole of
 * what kilovolt meters: a provider endpoint missing from them is refused
 * rather than relayed uncharged. */
#include "worker/endpoints.h"

#include "common/bedrock_path.h"
#include "common/vertex_path.h"
#include "common/gemini_path.h"
#include "common/hex.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- the request target -------------------------------------------------- */

static size_t
path_len(const char *target, size_t len)
{
	const char *q = memchr(target, '?', len);

	return q != NULL ? (size_t)(q - target) : len;
}

/* The end of a segment (between slashes) of LEN bytes at S: neither empty
 * nor a dot segment. */
static int
segment_end_ok(const char *s, size_t len, const char **why)
{
	if (len == 0) {
		*why = "empty path segment (//) in the request target";
		return -1;
	}
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')) {
		*why = "dot segment (. or ..) in the request target";
		return -1;
	}
	return 0;
}

/* Where a percent-encoded '/' may stand: the id segment of a Bedrock
 * path (the AWS SDK sends an ARN's '/' as %2F), found at the first %2F. */
struct id_seg {
	int	 known;
	size_t	 off, len;
};

static int
in_id_segment(const char *p, size_t plen, size_t i, struct id_seg *seg)
{
	if (!seg->known) {
		seg->known = 1;
		if (kv_br_path(p, plen, &seg->off, &seg->len) == KV_BR_NONE)
			seg->len = 0;
	}
	return i >= seg->off && i < seg->off + seg->len;
}

/* The '%' at P[i] of a path of PLEN bytes: two hex digits (a '/' is not
 * one, so they are in the same segment) not encoding '/', '.' or '\\';
 * '/' only inside a Bedrock path's id segment. */
static int
percent_ok(const char *p, size_t plen, size_t i, struct id_seg *seg, const char **why)
{
	int hi = i + 2 < plen ? kv_hexval((unsigned char)p[i + 1]) : -1;
	int lo = i + 2 < plen ? kv_hexval((unsigned char)p[i + 2]) : -1, v;

	if (hi < 0 || lo < 0) {
		*why = "bad percent-encoding in the request target";
		return -1;
	}
	v = hi * 16 + lo;
	if (v == '/' && in_id_segment(p, plen, i, seg))
		return 0;
	if (v == '/' || v == '.' || v == '\\') {
		*why = "percent-encoded '/', '.' or '\\' in the request target";
		return -1;
	}
	return 0;
}

/* One pass over the path: only '/', '\\' and '%' stop it. Segments are
 * judged in order, each one's bytes before the next one's end. */
int
kv_target_check(const char *target, size_t len, const char **why)
{
	static const unsigned char special[256] = { ['/'] = 1, ['\\'] = 1, ['%'] = 1 };
	size_t plen = path_len(target, len), i, start = 1;
	struct id_seg seg = { 0, 0, 0 };

	if (plen == 0 || target[0] != '/') {
		*why = "the request target must be a path starting with /";
		return -1;
	}
	for (i = 1; i < plen; i++) {
		char ch = target[i];

		if (!special[(unsigned char)ch])
			continue;
		if (ch == '/') {
			if (segment_end_ok(target + start, i - start, why) == -1)
				return -1;
			start = i + 1;
		} else if (ch == '\\') {
			*why = "backslash in the request target";
			return -1;
		} else if (ch == '%' && percent_ok(target, plen, i, &seg, why) == -1)
			return -1;
	}
	/* a single trailing slash ends the last segment (such a path simply
	 * matches no endpoint) */
	if (plen > start && segment_end_ok(target + start, plen - start, why) == -1)
		return -1;
	return 0;
}

/* ---- the lists ----------------------------------------------------------- */

/* P[0..len) ends with suffix[0..n); ENDS_WITH takes a literal's length
 * from sizeof (no strlen per call: these run on every request). */
static int
ends_with(const char *p, size_t len, const char *suffix, size_t n)
{
	return len >= n && memcmp(p + len - n, suffix, n) == 0;
}
#define ENDS_WITH(p, len, lit)	ends_with((p), (len), (lit), sizeof(lit) - 1)
#define LIT(lit)		(lit), sizeof(lit) - 1

/* strcmp(method, m) == 0, inline: it runs several times a request. */
static int
method_is(const char *method, const char *m)
{
	while (*m != '\0' && *method == *m) {
		method++;
		m++;
	}
	return *method == *m;
}

static const struct {
	const char	*suffix;
	size_t		 len;
	enum kv_api	 api;
} metered[] = {
	/* OpenAI's by their last segments, so Azure's
	 * /openai/deployments/{name}/chat/completions is metered too */
	{ LIT("/chat/completions"),	KV_API_OPENAI_CHAT },
	{ LIT("/completions"),		KV_API_OPENAI_COMPLETIONS },
	{ LIT("/embeddings"),		KV_API_OPENAI_EMBEDDINGS },
	{ LIT("/responses"),		KV_API_OPENAI_RESPONSES },
	/* not .../threads/{id}/messages (OpenAI Assistants) */
	{ LIT("/v1/messages"),		KV_API_ANTHROPIC_MESSAGES },
};

/* A Bedrock runtime path's API: Converse's, or InvokeModel of an
 * Anthropic model (the Messages body); InvokeModel of another family's
 * body is not one kilovolt reads. */
static enum kv_api
bedrock_api(const char *target, size_t len)
{
	char model[KV_BR_MODEL_MAX];
	const char *why;
	size_t off, n;

	switch (kv_br_path(target, len, &off, &n)) {
	case KV_BR_CONVERSE:
	case KV_BR_CONVERSE_STREAM:
		return KV_API_BEDROCK_CONVERSE;
	case KV_BR_INVOKE:
	case KV_BR_INVOKE_STREAM:
		return kv_br_model(target + off, n, model, sizeof(model), &why) == 0 &&
		    kv_br_anthropic(model) ? KV_API_ANTHROPIC_MESSAGES : KV_API_OTHER;
	default:
		return KV_API_OTHER;
	}
}

/* A Gemini API path's: generateContent and its stream, the embeddings. */
static enum kv_api
gemini_api(const char *target, size_t len)
{
	switch (kv_gm_path(target, len, NULL, NULL)) {
	case KV_GM_GENERATE: case KV_GM_STREAM:
		return KV_API_GEMINI;
	case KV_GM_EMBED: case KV_GM_BATCH_EMBED:
		return KV_API_GEMINI_EMBED;
	default:
		return KV_API_OTHER;
	}
}

enum kv_api
kv_endpoint_api(const char *method, const char *target, size_t len)
{
	size_t plen = path_len(target, len), i;
	struct kv_vx_path vx;

	if (!method_is(method, "POST"))
		return KV_API_OTHER;
	if (plen > 7 && memcmp(target, "/model/", 7) == 0)
		return bedrock_api(target, len);
	if (kv_vx_path(target, len, &vx) != KV_VX_NONE)	/* Claude's is the Messages body */
		return vx.kind == KV_VX_RAW || vx.kind == KV_VX_STREAM_RAW ?
		    KV_API_ANTHROPIC_MESSAGES : vx.kind == KV_VX_GENERATE ||
		    vx.kind == KV_VX_STREAM_GENERATE ? KV_API_GEMINI : KV_API_OTHER;
	if (memchr(target, ':', plen) != NULL)
		return gemini_api(target, len);
	for (i = 0; i < sizeof(metered) / sizeof(metered[0]); i++)
		if (ends_with(target, plen, metered[i].suffix, metered[i].len))
			return metered[i].api;
	return KV_API_OTHER;
}

/* The path from its "/v1/" on (the provider's own namespace), or NULL. */
static const char *
v1_part(const char *path, size_t plen, size_t *rlen)
{
	const char *p = path, *end = path + plen;

	/* The first "/v1/" starts at a '/': the slashes in turn find it (most
	 * targets start with it), for less than memmem's set-up on a path
	 * without one, such as Azure's /openai/deployments/... (callgrind:
	 * 260 instructions a call). */
	while (p != NULL && end - p >= 4) {
		if (memcmp(p, "/v1/", 4) == 0) {
			*rlen = (size_t)(end - p);
			return p;
		}
		p = memchr(p + 1, '/', (size_t)(end - p) - 1);
	}
	return NULL;
}

/* P[0..len) is PREFIX or below it (at a segment boundary). */
static int
under(const char *p, size_t len, const char *prefix, size_t n)
{
	return len >= n && memcmp(p, prefix, n) == 0 && (len == n || p[n] == '/');
}
#define UNDER(p, len, lit)	under((p), (len), (lit), sizeof(lit) - 1)

static int
builtin_free(const char *method, const char *path, size_t plen)
{
	const char *r, *id;
	size_t rlen;

	if (method_is(method, "POST"))
		return ENDS_WITH(path, plen, "/v1/messages/count_tokens");
	if (!method_is(method, "GET") && !method_is(method, "HEAD"))
		return 0;
	if (ENDS_WITH(path, plen, "/v1/models"))
		return 1;
	/* /v1/models/{id}: one segment after it */
	if ((r = v1_part(path, plen, &rlen)) == NULL || !UNDER(r, rlen, "/v1/models") ||
	    rlen <= 11)
		return 0;
	id = r + 11;
	return memchr(id, '/', rlen - 11) == NULL;
}

static int
is_batch(const char *r, size_t rlen)
{
	return UNDER(r, rlen, "/v1/batches") || UNDER(r, rlen, "/v1/messages/batches");
}

/* Endpoints that read or change objects the provider keeps per account:
 * under one shared api_key every tenant would see every other's. */
static int
is_stored_object(const char *method, const char *r, size_t rlen)
{
	static const struct { const char *s; size_t len; } prefixes[] = {
		{ LIT("/v1/conversations") }, { LIT("/v1/files") },
		{ LIT("/v1/vector_stores") }, { LIT("/v1/assistants") },
		{ LIT("/v1/threads") }, { LIT("/v1/batches") }, { LIT("/v1/fine_tuning") },
		{ LIT("/v1/uploads") }, { LIT("/v1/containers") }, { LIT("/v1/evals") },
		{ LIT("/v1/messages/batches") }, { LIT("/v1/skills") }, { LIT("/v1/videos") },
		{ LIT("/v1/chatkit") },
	};
	size_t i;

	if (rlen == 20 && memcmp(r, "/v1/chat/completions", 20) == 0)
		return !method_is(method, "POST");	/* GET lists stored completions */
	if (UNDER(r, rlen, "/v1/chat/completions") || UNDER(r, rlen, "/v1/responses"))
		return 1;	/* .../{id}, .../{id}/messages, .../{id}/input_items */
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (under(r, rlen, prefixes[i].s, prefixes[i].len))
			return 1;
	return 0;
}

static int
listed_free(const struct kv_upstream *up, const char *target)
{
	size_t i;

	for (i = 0; i < up->nfree_paths; i++)
		if (kv_path_match(up->free_paths[i], target))
			return 1;
	return 0;
}

static void
refuse(struct kv_endpoint *ep, const char *method, const char *path, size_t plen,
    const char *fmt, const char *name, int virtual_keys)
{
	int n;

	ep->kind = KV_EP_REFUSED;
	ep->status = 404;
	n = snprintf(ep->msg, sizeof(ep->msg), "%s %.*s%s: ", method,
	    (int)(plen > 96 ? 96 : plen), path, plen > 96 ? "..." : "");
	if (n < 0 || (size_t)n >= sizeof(ep->msg))
		return;
	snprintf(ep->msg + n, sizeof(ep->msg) - (size_t)n, fmt, name,
	    virtual_keys ? " and set shared_stored_objects = yes (every kilovolt key "
	    "then shares the stored objects of the provider account behind api_key)" : "");
}

/* A Bedrock path on a bedrock upstream: the runtime's metered (InvokeModel
 * for Anthropic models only), the control plane's reads free. Returns 1
 * when it decided *EP. */
static int
bedrock_classify(const char *method, const char *target, size_t len,
    const struct kv_upstream *up, struct kv_endpoint *ep)
{
	size_t plen = path_len(target, len), off, n;
	enum kv_br_kind k = kv_br_path(target, len, &off, &n);

	if (up->provider != KV_PROVIDER_BEDROCK || k == KV_BR_NONE)
		return 0;
	if (k == KV_BR_CONTROL && (method_is(method, "GET") || method_is(method, "HEAD"))) {
		ep->kind = KV_EP_FREE;
		return 1;
	}
	ep->kind = KV_EP_REFUSED;
	ep->status = 404;
	if (k == KV_BR_CONTROL || !method_is(method, "POST"))
		snprintf(ep->msg, sizeof(ep->msg), "%s %.*s%s: kilovolt relays POST to "
		    "Bedrock's runtime paths and GET of /inference-profiles and "
		    "/foundation-models only", method, (int)(plen > 96 ? 96 : plen), target,
		    plen > 96 ? "..." : "");
	else
		snprintf(ep->msg, sizeof(ep->msg), "InvokeModel is metered by kilovolt for "
		    "Anthropic models only (their Messages body), and model '%.*s' is not "
		    "one: use Converse (POST /model/{modelId}/converse or /converse-stream), "
		    "which kilovolt meters for every model", (int)(n > 128 ? 128 : n),
		    target + off);
	return 1;
}

/* A Vertex AI path on a vertex upstream: countTokens free, the rest
 * (the metered ones were decided before) refused. Returns 1 when it
 * decided *EP. */
static int
vertex_classify(const char *method, const char *target, size_t len,
    const struct kv_upstream *up, struct kv_endpoint *ep)
{
	size_t plen = path_len(target, len);
	struct kv_vx_path vx;

	if (up->provider != KV_PROVIDER_VERTEX || kv_vx_path(target, len, &vx) == KV_VX_NONE)
		return 0;
	if (vx.kind == KV_VX_COUNT && method_is(method, "POST")) {
		ep->kind = KV_EP_FREE;
		return 1;
	}
	ep->kind = KV_EP_REFUSED;
	ep->status = 404;
	snprintf(ep->msg, sizeof(ep->msg), "%s %.*s%s: kilovolt relays POST to Vertex AI's "
	    "Claude models (:rawPredict, :streamRawPredict), its Gemini models "
	    "(:generateContent, :streamGenerateContent) and :countTokens only", method,
	    (int)(plen > 96 ? 96 : plen), target, plen > 96 ? "..." : "");
	return 1;
}

/* A Gemini API path on a gemini upstream: generateContent, its stream and
 * the embeddings metered (above), countTokens and reads of the model list
 * free, anything else refused. Returns 1 when it decided *EP. */
static int
gemini_classify(const char *method, const char *target, size_t len,
    const struct kv_upstream *up, struct kv_endpoint *ep)
{
	size_t plen = path_len(target, len);
	enum kv_gm_kind k = kv_gm_path(target, len, NULL, NULL);

	if (up->provider != KV_PROVIDER_GEMINI || k == KV_GM_NONE)
		return 0;
	if ((k == KV_GM_COUNT && method_is(method, "POST")) || (k == KV_GM_MODELS &&
	    (method_is(method, "GET") || method_is(method, "HEAD")))) {
		ep->kind = KV_EP_FREE;
		return 1;
	}
	ep->kind = KV_EP_REFUSED;
	ep->status = 404;
	snprintf(ep->msg, sizeof(ep->msg), "%s %.*s%s: kilovolt relays POST to a Gemini "
	    "model's :generateContent, :streamGenerateContent, :countTokens, "
	    ":embedContent and :batchEmbedContents, and GET of the model list",
	    method, (int)(plen > 96 ? 96 : plen), target, plen > 96 ? "..." : "");
	return 1;
}

void
kv_endpoint_classify(const char *method, const char *target, size_t len,
    const struct kv_upstream *up, struct kv_endpoint *ep)
{
	size_t plen = path_len(target, len), rlen = 0;
	const char *r = v1_part(target, plen, &rlen);
	int stored = r != NULL && is_stored_object(method, r, rlen);
	/* a bedrock upstream always spends the operator's AWS account */
	int vk = (up->api_key != NULL || up->provider == KV_PROVIDER_BEDROCK ||
	    up->provider == KV_PROVIDER_VERTEX || up->tenant[0] != '\0') &&
	    !up->shared_stored_objects;

	/* not a memset of msg's 1 KB on every request: refuse() writes it */
	ep->kind = KV_EP_METERED;
	ep->status = 0;
	ep->msg[0] = '\0';
	ep->api = kv_endpoint_api(method, target, len);
	if (ep->api != KV_API_OTHER) {
		ep->kind = KV_EP_METERED;
		return;
	}
	if (bedrock_classify(method, target, len, up, ep) ||
	    vertex_classify(method, target, len, up, ep) ||
	    gemini_classify(method, target, len, up, ep))
		return;
	if (builtin_free(method, target, plen)) {
		ep->kind = KV_EP_FREE;
		return;
	}
	if (listed_free(up, target) && !(stored && vk)) {
		ep->kind = KV_EP_FREE;
		return;
	}
	if (stored && listed_free(up, target))
		refuse(ep, method, target, plen, "with api_key set, every kilovolt key would "
		    "share the stored objects of one provider account; set [upstream %s] "
		    "shared_stored_objects = yes to relay it%s", up->name, 0);
	else if (r != NULL && is_batch(r, rlen))
		refuse(ep, method, target, plen, "batches are not metered by kilovolt (their "
		    "usage never passes through it), so they are not relayed; to relay them "
		    "unmetered, list the path in [upstream %s] free_paths%s", up->name, vk);
	else if (stored)
		refuse(ep, method, target, plen, "stored-object endpoints are not relayed by "
		    "default; to relay them unmetered, list the path in [upstream %s] "
		    "free_paths%s", up->name, vk);
	else
		refuse(ep, method, target, plen, "not an endpoint kilovolt meters, so it is "
		    "not relayed; to relay it unmetered ($0 to the key), list it in "
		    "[upstream %s] free_paths%s", up->name, 0);
}

int
kv_endpoint_anthropic(const char *target, size_t len)
{
	size_t plen = path_len(target, len), rlen;
	const char *r = v1_part(target, plen, &rlen);

	if (ENDS_WITH(target, plen, "/v1/messages"))
		return 1;
	return r != NULL && UNDER(r, rlen, "/v1/messages");
}

/* mock_gemini: the Gemini API's model methods as Google documents them
 * (https://ai.google.dev/api/generate-content, /api/tokens,
 * /api/embeddings, read 2026-12-07): generateContent's
 * GenerateContentResponse, streamGenerateContent as SSE (alt=sse) or as
 * one JSON array of the same chunks, each chunk with the cumulative
 * usageMetadata and the last with finishReason, countTokens'
 * {"totalTokens"}, embedContent's and batchEmbedContents' embeddings with
 * usageMetadata. The prompt's promptTokensDetails name its AUDIO tokens
 * apart, as Google's do, when the body has inlineData of an audio/...
 * mimeType: a quarter of its base64 bytes, the rest TEXT. */
#include "tests/mock_gemini.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gbuf {
	struct mock_gm_out	*o;
	size_t			 len, cap;
	int			 bad;
};

static void
put(struct gbuf *g, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(g->o->buf + g->len, g->cap - g->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			g->bad = 1;
			return;
		}
		if ((size_t)n < g->cap - g->len)
			break;
		g->cap = (g->cap + (size_t)n) * 2;
		if ((g->o->buf = realloc(g->o->buf, g->cap)) == NULL) {
			g->bad = 1;
			return;
		}
	}
	g->len += (size_t)n;
}

static void
piece_end(struct gbuf *g)
{
	if (g->o->npieces < MOCK_GM_PIECES)
		g->o->off[++g->o->npieces] = g->len;
}

static long
body_long(const char *body, const char *name, long dflt)
{
	const char *p = strstr(body, name);

	if (p == NULL)
		return dflt;
	p += strlen(name);
	while (*p == ' ' || *p == ':' || *p == '"')
		p++;
	return strtol(p, NULL, 10);
}

/* The AUDIO tokens of BODY: a quarter of the base64 bytes of each
 * inlineData whose mimeType is audio/... (an inlineData object holds no
 * other object, so its first '}' ends it), at most PROMPT. */
static long
audio_tokens(const char *body, long prompt)
{
	const char *p = body, *end, *d;
	long n = 0;

	while ((p = strstr(p, "\"inlineData\"")) != NULL && (end = strchr(p, '}')) != NULL) {
		d = strstr(p, "\"data\"");
		if (d != NULL && d < end && memmem(p, (size_t)(end - p), "\"audio/", 7) != NULL) {
			d += 6;
			while (*d == ' ' || *d == ':')
				d++;
			if (*d == '"')
				n += (long)(strcspn(d + 1, "\"") / 4);
		}
		p = end;
	}
	return n < prompt ? n : prompt;
}

static void
usage(struct gbuf *g, long prompt, long cand, long thoughts, long cached, long audio)
{
	put(g, "\"usageMetadata\":{\"promptTokenCount\":%ld,\"candidatesTokenCount\":%ld,"
	    "\"totalTokenCount\":%ld", prompt, cand, prompt + cand + thoughts);
	if (thoughts > 0)
		put(g, ",\"thoughtsTokenCount\":%ld", thoughts);
	if (cached > 0)
		put(g, ",\"cachedContentTokenCount\":%ld", cached);
	put(g, ",\"promptTokensDetails\":[{\"modality\":\"TEXT\",\"tokenCount\":%ld}", prompt - audio);
	if (audio > 0)
		put(g, ",{\"modality\":\"AUDIO\",\"tokenCount\":%ld}", audio);
	put(g, "]}");
}

/* One chunk (or the whole response): tokens FROM..TO of the text. */
static void
chunk(struct gbuf *g, const char *model, long from, long to, int last, long prompt,
    long thoughts, long cached, long audio)
{
	long i;

	put(g, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"");
	for (i = from; i < to; i++)
		put(g, "tok%ld ", i);
	put(g, "\"}],\"role\":\"model\"}%s,\"index\":0}],", last ? ",\"finishReason\":\"STOP\"" : "");
	usage(g, prompt, to, last ? thoughts : 0, cached, audio);
	put(g, ",\"modelVersion\":\"%s\",\"responseId\":\"mock-gemini\"}", model);
}

static void
generate(struct gbuf *g, const char *model, const char *query, int stream, long prompt,
    long audio, const struct mock_gm_in *in, long tokens)
{
	int sse = query != NULL && strstr(query, "alt=sse") != NULL;
	long i;

	if (!stream) {
		chunk(g, model, 0, tokens, 1, prompt, in->thoughts, in->cached, audio);
		piece_end(g);
		return;
	}
	g->o->chunked = 1;
	g->o->ctype = sse ? "text/event-stream" : "application/json";
	if (!sse) {
		put(g, "[");
		piece_end(g);
	}
	for (i = 0; i < tokens || i == 0; i++) {
		int last = i + 1 >= tokens;

		put(g, sse ? "data: " : i > 0 ? ",\r\n" : "");
		chunk(g, model, i, tokens > 0 ? i + 1 : 0, last, prompt, in->thoughts, in->cached,
		    audio);
		put(g, sse ? "\r\n\r\n" : "");
		piece_end(g);
	}
	if (!sse) {
		put(g, "]");
		piece_end(g);
	}
}

int
mock_gemini(const char *method, const char *path, const char *query, const char *body,
    size_t len, const struct mock_gm_in *in, struct mock_gm_out *out)
{
	const char *m = strstr(path, "/models/"), *colon;
	struct gbuf g = { out, 0, 4096, 0 };
	char model[128];
	long prompt = (long)(len / 4), tokens = in->tokens, max;

	if (strcmp(method, "POST") != 0 || (strncmp(path, "/v1beta/", 8) != 0 &&
	    strncmp(path, "/v1/", 4) != 0) || m == NULL || (colon = strchr(m, ':')) == NULL)
		return -1;
	snprintf(model, sizeof(model), "%.*s", (int)(colon - m - 8), m + 8);
	memset(out, 0, sizeof(*out));
	out->status = 200;
	out->ctype = "application/json";
	if ((out->buf = malloc(g.cap)) == NULL)
		return -1;
	max = body_long(body, "\"maxOutputTokens\"", -1);
	if (max >= 0 && tokens > max)
		tokens = max;
	colon++;
	if (strcmp(colon, "generateContent") == 0 || strcmp(colon, "streamGenerateContent") == 0)
		generate(&g, model, query, colon[0] == 's', prompt, audio_tokens(body, prompt),
		    in, tokens);
	else if (strcmp(colon, "countTokens") == 0) {
		put(&g, "{\"totalTokens\":%ld,\"promptTokensDetails\":[{\"modality\":\"TEXT\","
		    "\"tokenCount\":%ld}]}", prompt, prompt);
		piece_end(&g);
	} else if (strcmp(colon, "embedContent") == 0 || strcmp(colon, "batchEmbedContents") == 0) {
		put(&g, colon[0] == 'e' ? "{\"embedding\":{\"values\":[0.25,-0.5,0.125]}," :
		    "{\"embeddings\":[{\"values\":[0.25,-0.5,0.125]}],");
		usage(&g, prompt, 0, 0, 0, 0);
		put(&g, "}");
		piece_end(&g);
	} else {
		out->status = 404;
		put(&g, "{\"error\":{\"code\":404,\"message\":\"Method not found (mock).\","
		    "\"status\":\"NOT_FOUND\"}}");
		piece_end(&g);
	}
	return g.bad ? -1 : 0;
}

/* Vertex AI's request targets: see vertex_path.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/vertex_path.h"

#include <string.h>

#define LIT(s)	s, sizeof(s) - 1

/* LIT at *AT of T (N bytes): moved past it, 1; else 0. */
static int
eat(const char *t, size_t n, size_t *at, const char *lit, size_t ll)
{
	if (n - *at < ll || memcmp(t + *at, lit, ll) != 0)
		return 0;
	*at += ll;
	return 1;
}

/* One non-empty segment at *AT, up to '/', '?', STOP or the end: its
 * length (0: none), *AT moved past it. */
static size_t
segment(const char *t, size_t n, size_t *at, char stop)
{
	size_t s = *at, i = s;	/* a local: t's chars may alias *at */

	while (i < n && t[i] != '/' && t[i] != '?' && t[i] != stop)
		i++;
	*at = i;
	return i - s;
}

/* The bytes of a model id: letters, digits and "-._@" (a table: this runs
 * several times a request). */
static const unsigned char model_byte[256] = {
	['-'] = 1, ['.'] = 1, ['_'] = 1, ['@'] = 1,
	['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
	['8'] = 1, ['9'] = 1,
	['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1,
	['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1,
	['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1,
	['Y'] = 1, ['Z'] = 1,
	['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1,
	['i'] = 1, ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1,
	['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1,
	['y'] = 1, ['z'] = 1,
};

static int
model_ok(const char *m, size_t n)
{
	size_t i;

	if (n == 0 || n >= KV_VX_MODEL_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (!model_byte[(unsigned char)m[i]])
			return 0;
	return 1;
}

/* The method after ':' (M, ML bytes) of publisher ANTHROPIC's model
 * MODEL: its kind. */
static enum kv_vx_kind
method_kind(int anthropic, const char *model, size_t mlen, const char *m, size_t ml)
{
#define IS(lit)	(ml == sizeof(lit) - 1 && memcmp(m, lit, ml) == 0)
	if (IS("countTokens"))
		return KV_VX_COUNT;
	if (anthropic && IS("rawPredict"))
		return mlen == 12 && memcmp(model, "count-tokens", 12) == 0 ? KV_VX_COUNT :
		    KV_VX_RAW;
	if (anthropic && IS("streamRawPredict"))
		return KV_VX_STREAM_RAW;
	if (!anthropic && IS("generateContent"))
		return KV_VX_GENERATE;
	if (!anthropic && IS("streamGenerateContent"))
		return KV_VX_STREAM_GENERATE;
	return KV_VX_OTHER;
#undef IS
}

enum kv_vx_kind
kv_vx_path(const char *target, size_t len, struct kv_vx_path *p)
{
	size_t at = 0, pub_off, pub_len, ml;

	memset(p, 0, sizeof(*p));
	if (!eat(target, len, &at, LIT("/v1/projects/")) &&
	    !eat(target, len, &at, LIT("/v1beta1/projects/")))
		return p->kind = KV_VX_NONE;
	p->kind = KV_VX_OTHER;
	if (segment(target, len, &at, '\0') == 0 || !eat(target, len, &at, LIT("/locations/")) ||
	    segment(target, len, &at, '\0') == 0)
		return p->kind;
	p->rest_off = at;
	if (!eat(target, len, &at, LIT("/publishers/")))
		return p->kind;
	pub_off = at;
	pub_len = segment(target, len, &at, '\0');
	if (pub_len == 9 && memcmp(target + pub_off, "anthropic", 9) == 0)
		p->anthropic = 1;
	else if (!(pub_len == 6 && memcmp(target + pub_off, "google", 6) == 0))
		return p->kind;
	if (!eat(target, len, &at, LIT("/models/")))
		return p->kind;
	p->model_off = at;
	p->model_len = segment(target, len, &at, ':');
	if (!model_ok(target + p->model_off, p->model_len) || !eat(target, len, &at, LIT(":")))
		return p->kind;
	ml = segment(target, len, &at, '\0');
	if (at < len && target[at] != '?')
		return p->kind;
	return p->kind = method_kind(p->anthropic, target + p->model_off, p->model_len,
	    target + at - ml, ml);
}

int
kv_vx_streams(enum kv_vx_kind k)
{
	return k == KV_VX_STREAM_RAW || k == KV_VX_STREAM_GENERATE;
}

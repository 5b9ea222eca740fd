/* The Bedrock request targets and the model id in them (bedrock_path.h). */
#include "common/bedrock_path.h"

#include <string.h>

#include "common/hex.h"

#define LIT(s)	(s), sizeof(s) - 1

static const struct {
	const char	*name;
	size_t		 len;
	enum kv_br_kind	 kind;
} actions[] = {
	{ LIT("invoke"), KV_BR_INVOKE },
	{ LIT("invoke-with-response-stream"), KV_BR_INVOKE_STREAM },
	{ LIT("converse"), KV_BR_CONVERSE },
	{ LIT("converse-stream"), KV_BR_CONVERSE_STREAM },
};

static const struct {
	const char	*prefix;
	size_t		 len;
} controls[] = {
	{ LIT("/inference-profiles") },
	{ LIT("/foundation-models") },
};

static void
put_id(size_t *id_off, size_t *id_len, size_t off, size_t len)
{
	if (id_off != NULL)
		*id_off = off;
	if (id_len != NULL)
		*id_len = len;
}

/* /model/{id}/{action} in P[0..plen), or KV_BR_NONE. */
static enum kv_br_kind
runtime_path(const char *p, size_t plen, size_t *id_off, size_t *id_len)
{
	const char *id = p + 7, *end = p + plen, *slash;
	size_t i, alen;

	if (plen < 9 || memcmp(p, "/model/", 7) != 0)
		return KV_BR_NONE;
	slash = memchr(id, '/', (size_t)(end - id));
	if (slash == NULL || slash == id)
		return KV_BR_NONE;
	alen = (size_t)(end - slash - 1);
	for (i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (alen == actions[i].len && memcmp(slash + 1, actions[i].name, alen) == 0) {
			put_id(id_off, id_len, 7, (size_t)(slash - id));
			return actions[i].kind;
		}
	return KV_BR_NONE;
}

enum kv_br_kind
kv_br_path(const char *target, size_t len, size_t *id_off, size_t *id_len)
{
	const char *q = memchr(target, '?', len);
	size_t plen = q != NULL ? (size_t)(q - target) : len, i, n;
	enum kv_br_kind k;

	if ((k = runtime_path(target, plen, id_off, id_len)) != KV_BR_NONE)
		return k;
	for (i = 0; i < sizeof(controls) / sizeof(controls[0]); i++) {
		n = controls[i].len;
		if (plen < n || memcmp(target, controls[i].prefix, n) != 0)
			continue;
		if (plen == n) {
			put_id(id_off, id_len, n, 0);
			return KV_BR_CONTROL;
		}
		/* one non-empty segment after it */
		if (target[n] != '/' || plen == n + 1 ||
		    memchr(target + n + 1, '/', plen - n - 1) != NULL)
			return KV_BR_NONE;
		put_id(id_off, id_len, n + 1, plen - n - 1);
		return KV_BR_CONTROL;
	}
	return KV_BR_NONE;
}

int
kv_br_streams(enum kv_br_kind k)
{
	return k == KV_BR_INVOKE_STREAM || k == KV_BR_CONVERSE_STREAM;
}

/* The byte the unit at S[i] stands for into *CH: a plain byte or a %XX
 * escape. Returns the unit's length, or 0 for a bad escape. */
static size_t
unit_at(const char *s, size_t len, size_t i, unsigned char *ch)
{
	int hi, lo;

	if (s[i] != '%') {
		*ch = (unsigned char)s[i];
		return 1;
	}
	if (i + 2 >= len)
		return 0;
	hi = kv_hexval((unsigned char)s[i + 1]);
	lo = kv_hexval((unsigned char)s[i + 2]);
	if (hi < 0 || lo < 0)
		return 0;
	*ch = (unsigned char)(hi * 16 + lo);
	return 3;
}

/* S decoded once into D (at most KV_BR_ID_MAX bytes); its length, or -1. */
static long
decode(const char *s, size_t len, char *d, const char **why)
{
	size_t i = 0, o = 0, n;
	unsigned char ch;

	while (i < len) {
		if ((n = unit_at(s, len, i, &ch)) == 0) {
			*why = "bad percent-encoding in the model id";
			return -1;
		}
		if (ch < 0x20 || ch == 0x7f) {
			*why = "a control character in the model id";
			return -1;
		}
		if (o == KV_BR_ID_MAX) {
			*why = "the model id is too long";
			return -1;
		}
		d[o++] = (char)ch;
		i += n;
	}
	return (long)o;
}

int
kv_br_model(const char *s, size_t len, char *out, size_t outlen, const char **why)
{
	char d[KV_BR_ID_MAX];
	const char *slash, *id;
	long n = decode(s, len, d, why);

	if (n == -1)
		return -1;
	/* arn:PARTITION:SERVICE:REGION:ACCOUNT:TYPE/ID: the id after the last
	 * '/' is what it names (an inference profile, a foundation model) */
	if ((slash = memchr(d, '/', (size_t)n)) != NULL) {
		if (n < 4 || memcmp(d, "arn:", 4) != 0) {
			*why = "a '/' in a model id that is not an ARN";
			return -1;
		}
		if (slash - d >= 7 && memcmp(slash - 7, ":prompt", 7) == 0) {
			*why = "a Prompt management ARN as the model: the model its prompt "
			    "runs is not in the request, so kilovolt cannot price it";
			return -1;
		}
	}
	id = d;
	for (slash = d; (slash = memchr(slash, '/', (size_t)(d + n - slash))) != NULL; )
		id = ++slash;
	if (id == d + n) {
		*why = "empty model id";
		return -1;
	}
	if ((size_t)(d + n - id) >= outlen) {
		*why = "the model id is too long";
		return -1;
	}
	memcpy(out, id, (size_t)(d + n - id));
	out[d + n - id] = '\0';
	return 0;
}

int
kv_br_anthropic(const char *model)
{
	return strstr(model, "anthropic.") != NULL;
}

/* [auth jwt] of kilovolt.ini: the OpenID provider whose tokens identify
 * clients (common/jwt.h, docs/identity.md). Its key rows, the setters of
 * the keys with a grammar of their own beside their -T printers, and the
 * checks of the whole section, which load a jwks_file so that
 * `kilovoltd -t` finds a broken key set before a reload does. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/jwks.h"

/* Printable, no blanks: an iss, an aud, a URL, a claim name. */
static int
word_ok(const char *v, size_t width)
{
	size_t i, n = strlen(v);

	if (n == 0 || n >= width)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] <= ' ' || v[i] == 0x7f)
			return 0;
	return 1;
}

static int
set_word(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	char *dst = (char *)p->cf + k->off;

	if (!word_ok(v, k->width))
		return cfg_err(p, p->lineno, "%s: want at most %zu printable characters, "
		    "no blanks", k->name, k->width - 1);
	strcpy(dst, v);
	return 0;
}

static int
set_jwks_url(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	if ((strncmp(v, "https://", 8) != 0 && strncmp(v, "http://", 7) != 0) ||
	    strchr(v, '#') != NULL || !word_ok(v, k->width))
		return cfg_err(p, p->lineno, "jwks_url: want an https:// URL");
	strcpy(p->cf->auth_jwt.jwks_url, v);
	return 0;
}

/* The claims the verifier reads itself cannot name the teams. */
static int
set_team_claim(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	static const char *const taken[] = { "iss", "aud", "exp", "nbf", "iat", "sub",
		"email", "email_verified", NULL };
	size_t i;

	if (strcmp(v, "none") == 0) {
		p->cf->auth_jwt.team_claim[0] = '\0';
		return 0;
	}
	for (i = 0; taken[i] != NULL; i++)
		if (strcmp(v, taken[i]) == 0)
			return cfg_err(p, p->lineno, "team_claim: %s is not a claim of teams", v);
	return set_word(p, k, v);
}

static void
show_team_claim(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	(void)obj;
	cfg_show_kv(f, k->name, cf->auth_jwt.team_claim[0] != '\0' ?
	    cf->auth_jwt.team_claim : "none");
}

/* RS256 ES256 EdDSA, any of them; never none or an HMAC. */
static int
set_algorithms(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	char w[16];
	size_t n;
	unsigned alg, mask = 0;

	(void)k;
	while (*(v += strspn(v, " \t")) != '\0') {
		n = strcspn(v, " \t");
		snprintf(w, sizeof(w), "%.*s", (int)(n < sizeof(w) ? n : sizeof(w) - 1), v);
		if (n >= sizeof(w) || (alg = kv_jwt_alg_parse(w)) == 0)
			return cfg_err(p, p->lineno, "algorithms: '%.*s' is not RS256, ES256 or "
			    "EdDSA (none and HMAC are never accepted)", (int)n, v);
		mask |= alg;
		v += n;
	}
	if (mask == 0)
		return cfg_err(p, p->lineno, "algorithms: none given");
	p->cf->auth_jwt.algorithms = (int)mask;
	return 0;
}

static void
show_algorithms(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	unsigned a;

	(void)obj;
	fprintf(f, "%s =", k->name);
	for (a = 1; a <= KV_JWT_ALGS_ALL; a <<= 1)
		if ((unsigned)cf->auth_jwt.algorithms & a)
			fprintf(f, " %s", kv_jwt_alg_name(a));
	fputc('\n', f);
}

/* A request header's name (RFC 9110 token), kept in lower case. */
static int
set_header(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	char *dst = p->cf->auth_jwt.header;
	size_t i, n = strlen(v);

	if (n == 0 || n >= k->width || strspn(v, "!#$%&'*+-.^_`|~0123456789"
	    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != n)
		return cfg_err(p, p->lineno, "header: '%s' is not a header name", v);
	for (i = 0; i <= n; i++)
		dst[i] = (char)(v[i] >= 'A' && v[i] <= 'Z' ? v[i] + 32 : v[i]);
	return 0;
}

static void
show_header(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	(void)obj;
	if (cf->auth_jwt.header[0] == '\0')
		fprintf(f, "; %s: not set (the token is the Authorization: Bearer credential)\n",
		    k->name);
	else
		cfg_show_kv(f, k->name, cf->auth_jwt.header);
}

int
cfg_end_auth_jwt(struct cfg_parse *p)
{
	struct kv_auth_jwt *a = &p->cf->auth_jwt;
	struct kv_jwks ks;
	char why[256];

	if (a->issuer[0] == '\0' || a->audience[0] == '\0')
		return cfg_err(p, p->sect_line, "%s: issuer and audience are required",
		    p->sect_text);
	if ((a->jwks_url[0] != '\0') == (a->jwks_file[0] != '\0'))
		return cfg_err(p, p->sect_line, "%s: set one of jwks_url and jwks_file",
		    p->sect_text);
	if (a->jwks_file[0] == '\0')
		return 0;
	if (kv_jwks_load(&ks, a->jwks_file, why, sizeof(why)) == -1)
		return cfg_err(p, p->sect_line, "%s: jwks_file: %s", p->sect_text, why);
	if (ks.nkeys == 0) {
		kv_jwks_free(&ks);
		return cfg_err(p, p->sect_line, "%s: jwks_file %s holds no RS256, ES256 or "
		    "EdDSA signing key", p->sect_text, a->jwks_file);
	}
	kv_jwks_free(&ks);
	return 0;
}

#define AUTH(f)		.base = CFG_B_CONFIG, .off = offsetof(struct kv_config, auth_jwt.f), \
			.width = sizeof(((struct kv_config *)0)->auth_jwt.f)

static const struct cfg_word user_claims[] = { { "sub", KV_JWT_USER_SUB },
	{ "email", KV_JWT_USER_EMAIL }, { NULL, 0 } };

const struct cfg_key kv_cfg_auth_jwt_keys[] = {
	{ "issuer", .type = CFG_T_STR, AUTH(issuer), .set = set_word },
	{ "audience", .type = CFG_T_STR, AUTH(audience), .set = set_word },
	{ "jwks_url", .type = CFG_T_STR, AUTH(jwks_url), .set = set_jwks_url },
	{ "jwks_file", .type = CFG_T_PATH, AUTH(jwks_file) },
	{ "algorithms", .type = CFG_T_SPECIAL, .set = set_algorithms,
	    .show = show_algorithms },
	{ "clock_skew", .type = CFG_T_SECS, .min = 0, .max = 3600, AUTH(clock_skew) },
	{ "user_claim", .type = CFG_T_ENUM, .words = user_claims, AUTH(user_claim) },
	{ "team_claim", .type = CFG_T_STR, AUTH(team_claim), .set = set_team_claim,
	    .show = show_team_claim },
	{ "user_budget", .type = CFG_T_MONEY, AUTH(user_budget_nusd),
	    .flags = CFG_OPTIONAL },
	{ "user_rpm", .type = CFG_T_INT, .min = 0, .max = CFG_MAX_RATE, AUTH(user_rpm),
	    .flags = CFG_OPTIONAL },
	{ "user_tpm", .type = CFG_T_INT, .min = 0, .max = CFG_MAX_RATE, AUTH(user_tpm),
	    .flags = CFG_OPTIONAL },
	{ "model_budget", .type = CFG_T_SPECIAL, .set = cfg_set_model_budget,
	    .show = cfg_show_model_budget, .base = CFG_B_CONFIG },
	{ "header", .type = CFG_T_STR, AUTH(header), .set = set_header,
	    .show = show_header },
	{ NULL }
};

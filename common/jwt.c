/* A compact JWS token verified and its claims read (jwt.h): the header,
 * the key, the signature, then the claims, in that order, so that nothing
 * of the claims is believed before the signature holds. Why OpenSSL and
 * not a JOSE library from Debian: see common/jwks.c. */
#include "common/jwt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/b64url.h"
#include "common/jsonread.h"

#define JWT_HEAD_MAX	2048	/* decoded header bytes */
#define JWT_SIG_MAX	(KV_JWK_RSA_MAX_BITS / 8)
#define JWT_ISS_MAX	1024	/* an iss or aud value longer is malformed */

struct jwt_head {
	char		 alg[16];
	char		 kid[KV_JWK_KID_MAX];
	unsigned	 seen;		/* 1 alg, 2 kid */
};

/* The claims read, before they are checked against the policy. */
struct jwt_claims {
	char		 iss[JWT_ISS_MAX];
	int		 aud_match;	/* aud is, or holds, the audience */
	long long	 exp, nbf, iat;
	int		 email_unverified;
	unsigned	 seen;		/* bits of claim_names, user, team */
};

enum { C_ISS, C_AUD, C_EXP, C_NBF, C_IAT, C_EMAIL_VERIFIED, C_USER, C_TEAM };
static const char *const claim_names[] = { "iss", "aud", "exp", "nbf", "iat",
	"email_verified", NULL };

static enum kv_jwt_status __attribute__((format(printf, 4, 5)))
refuse(char *why, size_t whylen, enum kv_jwt_status st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return st;
}

/* A header or claims member that is not a string, or too long: -1. */
static int
read_string(struct kv_jr *jr, char *out, size_t cap)
{
	if (kv_jr_peek(jr) != KV_JR_STRING)
		return kv_jr_fail(jr, "a string was expected");
	return kv_jr_string(jr, out, cap);
}

/* A segment of base64url into OUT; its length, or -1. */
static long
segment(const char *s, size_t len, unsigned char *out, size_t cap)
{
	return len == 0 ? -1 : kv_b64url_decode(s, len, out, cap);
}

static int
head_read(struct kv_jr *jr, struct jwt_head *hd)
{
	char name[64];
	int more;

	if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((more = kv_jr_member(jr, name, sizeof(name))) == 1) {
		/* RFC 7515 4.1.11: extensions it must understand; none are */
		if (strcmp(name, "crit") == 0)
			return kv_jr_fail(jr, "a crit header (no extension is understood)");
		if (strcmp(name, "alg") == 0 || strcmp(name, "kid") == 0) {
			unsigned bit = name[0] == 'a' ? 1 : 2;

			if (hd->seen & bit)
				return kv_jr_fail(jr, "a header member repeated");
			hd->seen |= bit;
			if (read_string(jr, bit == 1 ? hd->alg : hd->kid,
			    bit == 1 ? sizeof(hd->alg) : sizeof(hd->kid)) == -1)
				return -1;
		} else if (kv_jr_skip(jr) == -1) {	/* typ, and jwk/jku/x5u: never used */
			return -1;
		}
	}
	if (more == -1 || kv_jr_finish(jr) == -1)
		return -1;
	return (hd->seen & 1) ? 0 : kv_jr_fail(jr, "no alg");
}

/* The header's alg: one of the policy's, and never none or an HMAC. */
static enum kv_jwt_status
check_alg(const struct jwt_head *hd, unsigned algs, unsigned *alg, char *why, size_t wl)
{
	*alg = kv_jwt_alg_parse(hd->alg);
	if (strcmp(hd->alg, "none") == 0)
		return refuse(why, wl, KV_JWT_ALG_REFUSED, "alg none: an unsigned token "
		    "is never accepted");
	if (strncmp(hd->alg, "HS", 2) == 0)
		return refuse(why, wl, KV_JWT_ALG_REFUSED, "an HMAC alg (HS*) is never "
		    "accepted: the provider's keys are public");
	if (*alg == 0)
		return refuse(why, wl, KV_JWT_ALG_REFUSED, "alg is not RS256, ES256 or "
		    "EdDSA");
	if (!(*alg & algs))
		return refuse(why, wl, KV_JWT_ALG_REFUSED, "alg %s is not in [auth jwt] "
		    "algorithms", kv_jwt_alg_name(*alg));
	return KV_JWT_OK;
}

/* The header decoded and read, its alg checked, its key found. */
static enum kv_jwt_status
head_key(const char *h, size_t hl, const struct kv_jwks *ks, unsigned algs,
    struct kv_jwt_identity *id, char *why, size_t wl)
{
	unsigned char buf[JWT_HEAD_MAX];
	struct jwt_head hd;
	struct kv_jr jr;
	enum kv_jwt_status st;
	long n;
	int wrong;

	memset(&hd, 0, sizeof(hd));
	if ((n = segment(h, hl, buf, sizeof(buf))) < 0)
		return refuse(why, wl, KV_JWT_MALFORMED, "the header is not base64url "
		    "of at most %d bytes", JWT_HEAD_MAX);
	kv_jr_init(&jr, (const char *)buf, (size_t)n);
	if (head_read(&jr, &hd) == -1)
		return refuse(why, wl, KV_JWT_MALFORMED, "header: %s", jr.err);
	if ((st = check_alg(&hd, algs, &id->alg, why, wl)) != KV_JWT_OK)
		return st;
	id->key = kv_jwks_find(ks, (hd.seen & 2) ? hd.kid : NULL, id->alg, &wrong);
	if (id->key != NULL)
		return KV_JWT_OK;
	if (wrong)
		return refuse(why, wl, KV_JWT_ALG_REFUSED, "the key it names is not an %s "
		    "key", kv_jwt_alg_name(id->alg));
	if (hd.seen & 2)
		return refuse(why, wl, KV_JWT_UNKNOWN_KID, "no key of the JWKS has its kid");
	return refuse(why, wl, KV_JWT_UNKNOWN_KID, "it names no kid and the JWKS holds "
	    "%zu keys", ks->nkeys);
}

/* A NumericDate: a number, not negative, whole seconds (a fraction
 * rounds up). */
static int
read_date(struct kv_jr *jr, long long *out)
{
	const char *text;
	size_t len;
	int inexact;

	if (kv_jr_peek(jr) != KV_JR_NUMBER || kv_jr_number(jr, &text, &len) == -1)
		return kv_jr_fail(jr, "a date claim that is not a number");
	if (kv_jr_decimal(text, len, 0, out, &inexact) == -1)
		return kv_jr_fail(jr, "a date claim that is negative or too large");
	return 0;
}

/* aud: the audience, or an array of strings holding it. */
static int
read_aud(struct kv_jr *jr, const char *audience, struct jwt_claims *c)
{
	char s[JWT_ISS_MAX];
	int more;

	if (kv_jr_peek(jr) == KV_JR_STRING) {
		if (kv_jr_string(jr, s, sizeof(s)) == -1)
			return -1;
		c->aud_match = strcmp(s, audience) == 0;
		return 0;
	}
	if (kv_jr_enter(jr, KV_JR_ARRAY) == -1)
		return -1;
	while ((more = kv_jr_element(jr)) == 1) {
		if (read_string(jr, s, sizeof(s)) == -1)
			return -1;
		c->aud_match |= strcmp(s, audience) == 0;
	}
	return more;
}

/* Printable: no control bytes (names go into logs and ledger rows). */
static int
printable(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* The team claim: a string, or an array of strings. */
static int
read_teams(struct kv_jr *jr, struct kv_jwt_identity *id)
{
	char t[KV_JWT_TEAM_MAX];
	int more, array = kv_jr_peek(jr) == KV_JR_ARRAY;

	if (array && kv_jr_enter(jr, KV_JR_ARRAY) == -1)
		return -1;
	while ((more = array ? kv_jr_element(jr) : 1) == 1) {
		if (read_string(jr, t, sizeof(t)) == -1)
			return -1;
		if (!printable(t))
			return kv_jr_fail(jr, "a team with control characters");
		if (t[0] != '\0' && id->nteams == KV_JWT_TEAMS_MAX)
			return kv_jr_fail(jr, "more teams than kilovolt reads (64)");
		if (t[0] != '\0')
			memcpy(id->teams[id->nteams++], t, sizeof(t));
		if (!array)
			return 0;
	}
	return more;
}

/* email_verified: false (or "false", as some providers write it). */
static int
read_verified(struct kv_jr *jr, struct jwt_claims *c)
{
	char s[8];

	switch (kv_jr_peek(jr)) {
	case KV_JR_FALSE:
		c->email_unverified = 1;
		return kv_jr_skip(jr);
	case KV_JR_STRING:
		if (kv_jr_string(jr, s, sizeof(s)) == -1)
			return -1;
		c->email_unverified = strcmp(s, "false") == 0;
		return 0;
	default:
		return kv_jr_skip(jr);
	}
}

/* The value of claim I (an index into claim_names, or C_USER, C_TEAM). */
static int
read_claim(struct kv_jr *jr, int i, const struct kv_jwt_policy *pol, struct jwt_claims *c,
    struct kv_jwt_identity *id)
{
	switch (i) {
	case C_ISS:	return read_string(jr, c->iss, sizeof(c->iss));
	case C_AUD:	return read_aud(jr, pol->audience, c);
	case C_EXP:	return read_date(jr, &c->exp);
	case C_NBF:	return read_date(jr, &c->nbf);
	case C_IAT:	return read_date(jr, &c->iat);
	case C_EMAIL_VERIFIED:	return read_verified(jr, c);
	case C_USER:	return read_string(jr, id->user, sizeof(id->user));
	default:	return read_teams(jr, id);
	}
}

static int
claims_read(struct kv_jr *jr, const struct kv_jwt_policy *pol, struct jwt_claims *c,
    struct kv_jwt_identity *id)
{
	char name[256];
	int i, more;

	if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((more = kv_jr_member(jr, name, sizeof(name))) == 1) {
		for (i = 0; claim_names[i] != NULL && strcmp(claim_names[i], name) != 0; i++)
			;
		if (claim_names[i] == NULL)
			i = strcmp(name, pol->user_claim) == 0 ? C_USER :
			    pol->team_claim[0] != '\0' && strcmp(name, pol->team_claim) == 0 ?
			    C_TEAM : -1;
		if (i == -1) {
			if (kv_jr_skip(jr) == -1)
				return -1;
			continue;
		}
		if (c->seen & (1u << i))
			return kv_jr_fail(jr, "a claim repeated");
		c->seen |= 1u << i;
		if (read_claim(jr, i, pol, c, id) == -1)
			return -1;
	}
	return more == -1 ? -1 : kv_jr_finish(jr);
}

/* The claims against the policy: issuer, audience, then time, then user. */
static enum kv_jwt_status
check_claims(const struct jwt_claims *c, const struct kv_jwt_policy *pol, int64_t now,
    struct kv_jwt_identity *id, char *why, size_t wl)
{
	if (!(c->seen & (1u << C_ISS)) || strcmp(c->iss, pol->issuer) != 0)
		return refuse(why, wl, KV_JWT_WRONG_ISSUER, "iss is %s the issuer of "
		    "[auth jwt]", (c->seen & (1u << C_ISS)) ? "not" : "missing, not");
	if (!c->aud_match)
		return refuse(why, wl, KV_JWT_WRONG_AUDIENCE, "aud %s the audience of "
		    "[auth jwt]", (c->seen & (1u << C_AUD)) ? "does not name" : "is missing, "
		    "not");
	if (!(c->seen & (1u << C_EXP)))
		return refuse(why, wl, KV_JWT_EXPIRED, "no exp: a token without an end "
		    "is not accepted");
	if (now - pol->skew >= c->exp)
		return refuse(why, wl, KV_JWT_EXPIRED, "exp was %lld s ago (clock skew "
		    "%lld s)", (long long)(now - c->exp), (long long)pol->skew);
	if ((c->seen & (1u << C_NBF)) && now + pol->skew < c->nbf)
		return refuse(why, wl, KV_JWT_NOT_YET_VALID, "nbf is %lld s ahead (clock "
		    "skew %lld s)", (long long)(c->nbf - now), (long long)pol->skew);
	if ((c->seen & (1u << C_IAT)) && c->iat > now + pol->skew)
		return refuse(why, wl, KV_JWT_NOT_YET_VALID, "iat is %lld s ahead: issued "
		    "in the future (clock skew %lld s)", (long long)(c->iat - now),
		    (long long)pol->skew);
	if (id->user[0] == '\0' || !printable(id->user))
		return refuse(why, wl, KV_JWT_NO_USER, "no %s claim, or an empty or "
		    "unprintable one", pol->user_claim);
	if (c->email_unverified && strcmp(pol->user_claim, "email") == 0)
		return refuse(why, wl, KV_JWT_NO_USER, "email_verified is false");
	id->exp = c->exp;
	return KV_JWT_OK;
}

/* The claims segment decoded, read and checked. */
static enum kv_jwt_status
claims(const char *p, size_t pl, const struct kv_jwt_policy *pol, int64_t now,
    struct kv_jwt_identity *id, char *why, size_t wl)
{
	unsigned char buf[KV_JWT_MAX_TOKEN / 4 * 3];
	struct jwt_claims c;
	struct kv_jr jr;
	long n;

	memset(&c, 0, sizeof(c));
	if ((n = segment(p, pl, buf, sizeof(buf))) < 0)
		return refuse(why, wl, KV_JWT_MALFORMED, "the claims are not base64url");
	kv_jr_init(&jr, (const char *)buf, (size_t)n);
	if (claims_read(&jr, pol, &c, id) == -1)
		return refuse(why, wl, KV_JWT_MALFORMED, "claims: %s", jr.err);
	return check_claims(&c, pol, now, id, why, wl);
}

enum kv_jwt_status
kv_jwt_verify(const char *token, size_t len, const struct kv_jwks *ks,
    const struct kv_jwt_policy *pol, int64_t now, struct kv_jwt_identity *id,
    char *why, size_t whylen)
{
	unsigned char sig[JWT_SIG_MAX];
	const char *d1, *d2;
	enum kv_jwt_status st;
	long sl;

	memset(id, 0, sizeof(*id));
	if (len > KV_JWT_MAX_TOKEN)
		return refuse(why, whylen, KV_JWT_MALFORMED, "longer than %d bytes",
		    KV_JWT_MAX_TOKEN);
	if ((d1 = memchr(token, '.', len)) == NULL ||
	    (d2 = memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token))) == NULL ||
	    memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)) != NULL)
		return refuse(why, whylen, KV_JWT_MALFORMED, "not three dot-separated parts "
		    "(a compact JWS)");
	st = head_key(token, (size_t)(d1 - token), ks, pol->algs, id, why, whylen);
	if (st != KV_JWT_OK)
		return st;
	sl = segment(d2 + 1, len - (size_t)(d2 + 1 - token), sig, sizeof(sig));
	if (sl < 0)
		return refuse(why, whylen, KV_JWT_MALFORMED, "the signature is not base64url "
		    "of at most %d bytes", JWT_SIG_MAX);
	if (!kv_jwk_verify(id->key, (const unsigned char *)token, (size_t)(d2 - token), sig,
	    (size_t)sl))
		return refuse(why, whylen, KV_JWT_BAD_SIGNATURE, "the %s signature does not "
		    "verify with the JWKS key", kv_jwt_alg_name(id->alg));
	st = claims(d1 + 1, (size_t)(d2 - d1 - 1), pol, now, id, why, whylen);
	if (st != KV_JWT_OK) {
		id->user[0] = '\0';
		id->nteams = 0;
	}
	return st;
}

void
kv_jwt_policy_of(const struct kv_auth_jwt *a, struct kv_jwt_policy *pol)
{
	pol->issuer = a->issuer;
	pol->audience = a->audience;
	pol->algs = (unsigned)a->algorithms;
	pol->skew = a->clock_skew;
	pol->user_claim = a->user_claim == KV_JWT_USER_EMAIL ? "email" : "sub";
	pol->team_claim = a->team_claim;
}

const char *
kv_jwt_reason(enum kv_jwt_status st)
{
	static const char *const reasons[] = {
		[KV_JWT_OK] = "ok",
		[KV_JWT_MALFORMED] = "malformed",
		[KV_JWT_ALG_REFUSED] = "algorithm not accepted",
		[KV_JWT_UNKNOWN_KID] = "unknown kid",
		[KV_JWT_BAD_SIGNATURE] = "bad signature",
		[KV_JWT_EXPIRED] = "expired",
		[KV_JWT_NOT_YET_VALID] = "not yet valid",
		[KV_JWT_WRONG_ISSUER] = "wrong issuer",
		[KV_JWT_WRONG_AUDIENCE] = "wrong audience",
		[KV_JWT_NO_USER] = "no user claim",
	};

	if ((unsigned)st >= sizeof(reasons) / sizeof(reasons[0]))
		return "malformed";
	return reasons[st];
}

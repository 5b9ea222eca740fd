/* A client's JSON Web Token (RFC 7519), verified: a compact JWS (RFC 7515)
 * signed with a key of the OpenID provider's JWKS (common/jwks.h), its
 * claims checked against the [auth jwt] policy, and the identity it names
 * (a user, the teams it is in) handed back. Pure: no I/O, no clock (the
 * caller gives the time), no allocation; safe on the request path. What
 * is verified and why is in docs/identity.md. */
#ifndef KV_JWT_H
#define KV_JWT_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/jwks.h"

#define KV_JWT_MAX_TOKEN	16384	/* bytes of a compact token */
#define KV_JWT_USER_MAX		256	/* a user's name, with its NUL */
#define KV_JWT_TEAMS_MAX	64	/* teams (groups) a token may name */
#define KV_JWT_TEAM_MAX		128	/* a team's name, with its NUL */
#define KV_JWT_CLAIM_MAX	128	/* a claim's name, with its NUL */

/* Why a token was refused; kv_jwt_reason names each for the 401. */
enum kv_jwt_status {
	KV_JWT_OK = 0,
	KV_JWT_MALFORMED,	/* not a compact JWS with JSON header and claims */
	KV_JWT_ALG_REFUSED,	/* alg not accepted (none, HMAC, other) or not the key's */
	KV_JWT_UNKNOWN_KID,	/* no key of the JWKS is the one it names */
	KV_JWT_BAD_SIGNATURE,
	KV_JWT_EXPIRED,		/* exp passed (beyond the skew), or no exp */
	KV_JWT_NOT_YET_VALID,	/* nbf, or iat, after now (beyond the skew) */
	KV_JWT_WRONG_ISSUER,	/* iss absent or not the issuer */
	KV_JWT_WRONG_AUDIENCE,	/* aud absent or without the audience */
	KV_JWT_NO_USER,		/* the user claim absent, empty or unusable */
};

/* What a token must satisfy: [auth jwt]. */
struct kv_jwt_policy {
	const char	*issuer;	/* iss equals it, byte for byte */
	const char	*audience;	/* aud is it, or an array holding it */
	unsigned	 algs;		/* KV_JWT_* accepted */
	int64_t		 skew;		/* seconds allowed either way on exp, nbf, iat */
	/* claims naming the user ("sub" or "email") and its teams ("" none);
	 * neither may be a registered claim the verifier reads (iss, aud, exp,
	 * nbf, iat): such a name is never matched */
	const char	*user_claim;
	const char	*team_claim;
};

/* POL from the [auth jwt] section A (its strings stay A's). */
void	kv_jwt_policy_of(const struct kv_auth_jwt *a, struct kv_jwt_policy *pol);

/* Who a verified token says the client is. */
struct kv_jwt_identity {
	char		 user[KV_JWT_USER_MAX];
	char		 teams[KV_JWT_TEAMS_MAX][KV_JWT_TEAM_MAX];
	size_t		 nteams;
	int64_t		 exp;		/* until when it may be used */
	unsigned	 alg;		/* KV_JWT_* it was signed with */
	const struct kv_jwk *key;	/* the key of KS that verified it */
};

/* Verify TOKEN (LEN bytes, the compact form header.claims.signature)
 * with the keys of KS under POL at NOW (seconds since the epoch):
 *  - the header's alg is one of POL's and the algorithm of the key: never
 *    "none", never an HMAC (HS256 keyed with a public key is the classic
 *    confusion), whatever the key set holds; a "crit" header is refused;
 *  - the key is the JWKS's one with the header's kid; a token without kid
 *    takes the set's only key, when it holds one;
 *  - the signature verifies (kv_jwk_verify) over header.claims as sent;
 *  - then the claims: iss is POL's issuer, aud is or holds its audience,
 *    exp is present and now < exp + skew, now >= nbf - skew, iat <= now +
 *    skew; a claim read twice is malformed;
 *  - the user claim is a non-empty string of printable bytes (with
 *    user_claim "email", an "email_verified": false refuses it); the team
 *    claim, when present, a string or an array of strings (at most
 *    KV_JWT_TEAMS_MAX), empty ones left out.
 * Returns KV_JWT_OK with ID filled, or the status with a sentence in WHY
 * (never a string taken from the token). */
enum kv_jwt_status kv_jwt_verify(const char *token, size_t len, const struct kv_jwks *ks,
	    const struct kv_jwt_policy *pol, int64_t now, struct kv_jwt_identity *id,
	    char *why, size_t whylen);

/* The status in a few words: "expired", "not yet valid", "wrong issuer",
 * "wrong audience", "unknown kid", "bad signature", "algorithm not
 * accepted", "malformed", "no user claim"; "ok" for KV_JWT_OK. */
const char *kv_jwt_reason(enum kv_jwt_status st);

#endif

/* A JSON Web Key Set (RFC 7517) read into OpenSSL public keys: the keys an
 * OpenID provider signs its tokens with, for common/jwt.c to verify them.
 * Three kinds, one algorithm each (RFC 7518, RFC 8037): RSA (n, e) for
 * RS256, EC P-256 (x, y) for ES256, OKP Ed25519 (x) for EdDSA. Keys of
 * other kinds or algorithms, and keys whose "use" is not "sig", are
 * skipped (counted); a symmetric ("oct") key is never one of ours. Pure:
 * no I/O but kv_jwks_load; at load time, never per request. */
#ifndef KV_JWKS_H
#define KV_JWKS_H

#include <stddef.h>

#include <openssl/evp.h>

#define KV_JWKS_MAX_KEYS	32	/* keys kept (a rotation holds 2-3) */
#define KV_JWKS_MAX_BYTES	(256 * 1024)	/* a document larger is refused */
#define KV_JWK_KID_MAX		128	/* a kid's bytes, with its NUL */
#define KV_JWK_RSA_MIN_BITS	2048
#define KV_JWK_RSA_MAX_BITS	8192

/* The signature algorithms kilovolt verifies, as bits of a mask. */
enum kv_jwt_alg { KV_JWT_RS256 = 1, KV_JWT_ES256 = 2, KV_JWT_EDDSA = 4 };
#define KV_JWT_ALGS_ALL	(KV_JWT_RS256 | KV_JWT_ES256 | KV_JWT_EDDSA)

struct kv_jwk {
	char		 kid[KV_JWK_KID_MAX];	/* "" when has_kid is 0 */
	int		 has_kid;
	unsigned	 alg;		/* the one KV_JWT_* this key verifies */
	EVP_PKEY	*pkey;
};

struct kv_jwks {
	struct kv_jwk	 keys[KV_JWKS_MAX_KEYS];
	size_t		 nkeys;
	size_t		 skipped;	/* keys of kinds or uses not verified here */
};

/* Read the JWKS document BUF (LEN bytes; strict JSON, common/jsonread.h)
 * into KS. A key of a kind read here must be whole and well-formed (an RSA
 * modulus of 2048 to 8192 bits, a P-256 point on the curve, 32-byte
 * Ed25519 and P-256 coordinates); private members (d, p, q, k...) are
 * refused: a public set never holds them. Returns 0, or -1 with the reason
 * in ERR and KS empty. KS needs kv_jwks_free after a 0. */
int	kv_jwks_parse(struct kv_jwks *ks, const char *buf, size_t len, char *err,
	    size_t errlen);

/* kv_jwks_parse of the file PATH (at most KV_JWKS_MAX_BYTES). */
int	kv_jwks_load(struct kv_jwks *ks, const char *path, char *err, size_t errlen);

void	kv_jwks_free(struct kv_jwks *ks);

/* The key a token signed with ALG names by KID (NULL: the token has no
 * kid). With a kid: the key of that kid and algorithm. Without: the set's
 * only key, when it holds one. NULL when none; then *WRONG_ALG says
 * whether a key was there but for another algorithm. */
const struct kv_jwk *kv_jwks_find(const struct kv_jwks *ks, const char *kid, unsigned alg,
	    int *wrong_alg);

/* KEY's signature SIG over MSG in the JOSE form of its algorithm: RS256
 * RSASSA-PKCS1-v1_5 with SHA-256; ES256 ECDSA P-256 SHA-256 as the 64-byte
 * r || s (turned into DER for OpenSSL); EdDSA Ed25519. 1 valid, 0 not
 * (jwk_verify.c). */
int	kv_jwk_verify(const struct kv_jwk *key, const unsigned char *msg, size_t msglen,
	    const unsigned char *sig, size_t siglen);

/* "RS256", "ES256", "EdDSA" for one KV_JWT_* bit; "?" otherwise. */
const char *kv_jwt_alg_name(unsigned alg);

/* The KV_JWT_* bit of a JOSE alg name, or 0 for any other (none, HS256...). */
unsigned kv_jwt_alg_parse(const char *name);

#endif

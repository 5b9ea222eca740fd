/* A JWS signature checked with a JWKS key through OpenSSL (jwks.h
 * kv_jwk_verify): the three algorithms' signature forms as JOSE writes
 * them (RFC 7518 section 3, RFC 8037 section 3.1). */
#include "common/jwks.h"

#include <openssl/ecdsa.h>

/* JOSE's ES256 signature is r || s, 32 bytes each; OpenSSL verifies the
 * DER SEQUENCE of the two INTEGERs. Returns the DER length in DER (its
 * cap 80 holds 2 + 2 x 35), or -1. */
static int
es256_der(const unsigned char *sig, unsigned char *der)
{
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
	unsigned char *p = der;
	int n = -1;

	if (es != NULL && r != NULL && s != NULL && ECDSA_SIG_set0(es, r, s) == 1) {
		r = s = NULL;	/* es owns them */
		if (i2d_ECDSA_SIG(es, NULL) <= 80)
			n = i2d_ECDSA_SIG(es, &p);
	}
	BN_free(r);
	BN_free(s);
	ECDSA_SIG_free(es);
	return n;
}

int
kv_jwk_verify(const struct kv_jwk *key, const unsigned char *msg, size_t msglen,
    const unsigned char *sig, size_t siglen)
{
	unsigned char der[80];
	EVP_MD_CTX *md;
	const EVP_MD *h = EVP_sha256();
	int n, ok = 0;

	switch (key->alg) {
	case KV_JWT_RS256:
		/* the modulus's size exactly (RFC 8017 8.2.2 step 1) */
		if ((int)siglen != EVP_PKEY_get_size(key->pkey))
			return 0;
		break;
	case KV_JWT_ES256:
		if (siglen != 64 || (n = es256_der(sig, der)) <= 0)
			return 0;
		sig = der;
		siglen = (size_t)n;
		break;
	case KV_JWT_EDDSA:
		if (siglen != 64)
			return 0;
		h = NULL;	/* Ed25519 hashes the message itself */
		break;
	default:
		return 0;
	}
	if ((md = EVP_MD_CTX_new()) == NULL)
		return 0;
	/* RSA's padding is PKCS #1 v1.5 unless set otherwise: RS256's */
	if (EVP_DigestVerifyInit(md, NULL, h, NULL, key->pkey) == 1)
		ok = EVP_DigestVerify(md, sig, siglen, msg, msglen) == 1;
	EVP_MD_CTX_free(md);
	return ok;
}

/* libFuzzer target: the JWKS reader (common/jwks.h) and the JWT verifier
 * (common/jwt.h). The first byte picks what the rest is:
 *  - even: "TOKEN\nJWKS": the key set read (refused or kept), then the
 *    token verified against it, or against the target's own set when it
 *    was refused: header, kid and signature paths;
 *  - odd: "HEADER\nCLAIMS", two JSON texts that the target encodes and
 *    signs with its own Ed25519 key, so that the claims reader and the
 *    checks after a valid signature are reached too.
 * A verified token must name a user, and the verifier must say the same
 * twice. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/b64url.h"
#include "common/jwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char seed[32] = "kilovolt fuzz_jwt ed25519 seed!";
static EVP_PKEY *priv;
static struct kv_jwks own;
static const struct kv_jwt_policy pol = { "https://idp.example", "kilovolt", KV_JWT_ALGS_ALL,
	60, "sub", "groups" };

/* The target's key pair, and a set holding its public half (kid "f"). */
static void
init(void)
{
	unsigned char pub[32];
	size_t n = sizeof(pub);
	char x[64], doc[256], err[128];

	priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof(seed));
	if (priv == NULL || EVP_PKEY_get_raw_public_key(priv, pub, &n) != 1)
		abort();
	kv_b64url_encode(pub, n, x);
	snprintf(doc, sizeof(doc), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\","
	    "\"kid\":\"f\",\"x\":\"%s\"}]}", x);
	if (kv_jwks_parse(&own, doc, strlen(doc), err, sizeof(err)) == -1)
		abort();
}

static void
check(const char *tok, size_t len, const struct kv_jwks *ks)
{
	struct kv_jwt_identity id, id2;
	char why[256], why2[256];
	enum kv_jwt_status st, st2;

	st = kv_jwt_verify(tok, len, ks, &pol, 1800000000, &id, why, sizeof(why));
	st2 = kv_jwt_verify(tok, len, ks, &pol, 1800000000, &id2, why2, sizeof(why2));
	if (st != st2 || (st == KV_JWT_OK && (id.user[0] == '\0' || strcmp(id.user, id2.user))) ||
	    (st != KV_JWT_OK && strcmp(why, why2) != 0))
		abort();
	(void)kv_jwt_reason(st);
}

/* HEADER\nCLAIMS encoded and signed with the target's key. */
static void
signed_claims(const char *in, size_t size)
{
	static char tok[3 * 8192];
	const char *nl = memchr(in, '\n', size);
	unsigned char sig[64];
	size_t n, hl = nl ? (size_t)(nl - in) : size, sl = sizeof(sig);
	EVP_MD_CTX *md;

	if (size > 8000)
		return;
	n = kv_b64url_encode((const unsigned char *)in, hl, tok);
	tok[n++] = '.';
	n += kv_b64url_encode((const unsigned char *)(nl ? nl + 1 : ""),
	    nl ? size - hl - 1 : 0, tok + n);
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestSignInit(md, NULL, NULL, NULL, priv) != 1 ||
	    EVP_DigestSign(md, sig, &sl, (unsigned char *)tok, n) != 1)
		abort();
	EVP_MD_CTX_free(md);
	tok[n++] = '.';
	n += kv_b64url_encode(sig, sl, tok + n);
	check(tok, n, &own);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_jwks ks;
	const char *in = (const char *)data + 1, *nl;
	char err[256];

	if (priv == NULL)
		init();
	if (size == 0)
		return 0;
	size--;
	if (data[0] & 1) {
		signed_claims(in, size);
		return 0;
	}
	nl = memchr(in, '\n', size);
	if (nl != NULL && kv_jwks_parse(&ks, nl + 1, size - (size_t)(nl + 1 - in), err,
	    sizeof(err)) == 0) {
		check(in, (size_t)(nl - in), &ks);
		kv_jwks_free(&ks);
		return 0;
	}
	check(in, nl ? (size_t)(nl - in) : size, &own);
	return 0;
}

/* JWT verification (common/jwt.h) and JWKS reading (common/jwks.h) with
 * keys made by OpenSSL at test time: tokens of each algorithm signed here
 * and verified, and each way a token or a key set must be refused (alg
 * none, HS256 keyed with the RSA public key, a wrong key, times, issuer,
 * audience, kid, malformed parts, private or weak keys). The same cases
 * with tokens minted by the jose library and an OpenID provider are
 * tests/t_jwt.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "common/b64url.h"
#include "common/jwt.h"
#include "tests/unit.h"

#define NOW	1800000000LL

static EVP_PKEY *rsa, *rsa2, *ec, *ed;
static struct kv_jwks set;

static const struct kv_jwt_policy pol = { "https://idp.example", "kilovolt", KV_JWT_ALGS_ALL,
	60, "sub", "groups" };

/* The signature of MSG by KEY in ALG's JOSE form into SIG; its length. */
static size_t
sign(EVP_PKEY *key, const char *alg, const char *msg, unsigned char *sig)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char der[128];
	size_t n = 1024;	/* the caller's sig holds an RSA-8192 signature */
	const unsigned char *p = der;
	ECDSA_SIG *es;

	if (strcmp(alg, "ES256") == 0) {
		n = sizeof(der);
		EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, key);
		EVP_DigestSign(md, der, &n, (const unsigned char *)msg, strlen(msg));
		es = d2i_ECDSA_SIG(NULL, &p, (long)n);
		BN_bn2binpad(ECDSA_SIG_get0_r(es), sig, 32);
		BN_bn2binpad(ECDSA_SIG_get0_s(es), sig + 32, 32);
		ECDSA_SIG_free(es);
		n = 64;
	} else {
		EVP_DigestSignInit(md, NULL, strcmp(alg, "EdDSA") == 0 ? NULL : EVP_sha256(), NULL,
		    key);
		EVP_DigestSign(md, sig, &n, (const unsigned char *)msg, strlen(msg));
	}
	EVP_MD_CTX_free(md);
	return n;
}

/* A token: HEADER and CLAIMS (JSON) signed by KEY as ALG ("" no signature). */
static char *
mint(EVP_PKEY *key, const char *alg, const char *header, const char *claims)
{
	static char tok[8192];
	unsigned char sig[1024];
	size_t n;

	kv_b64url_encode((const unsigned char *)header, strlen(header), tok);
	strcat(tok, ".");
	kv_b64url_encode((const unsigned char *)claims, strlen(claims), tok + strlen(tok));
	n = key != NULL ? sign(key, alg, tok, sig) : 0;
	strcat(tok, ".");
	kv_b64url_encode(sig, n, tok + strlen(tok));
	return tok;
}

static char *
claims_at(long long exp, const char *extra)
{
	static char c[1024];

	snprintf(c, sizeof(c), "{\"iss\":\"https://idp.example\",\"aud\":\"kilovolt\","
	    "\"sub\":\"ana@x.io\",\"groups\":[\"payments\",\"\",\"search\"],\"exp\":%lld%s}",
	    exp, extra);
	return c;
}

static enum kv_jwt_status
verify(const char *tok, const struct kv_jwt_policy *p, struct kv_jwt_identity *id)
{
	char why[256];
	enum kv_jwt_status st = kv_jwt_verify(tok, strlen(tok), &set, p, NOW, id, why,
	    sizeof(why));

	if (st != KV_JWT_OK)
		fprintf(stderr, "  (%s: %s)\n", kv_jwt_reason(st), why);
	return st;
}

static enum kv_jwt_status
verify_p(const char *tok)
{
	struct kv_jwt_identity id;

	return verify(tok, &pol, &id);
}

/* ---- the key set, written as a provider would ---------------------------- */

static void
bn_member(EVP_PKEY *k, const char *param, const char *name, char *out)
{
	unsigned char b[1024];
	BIGNUM *bn = NULL;
	int n;

	EVP_PKEY_get_bn_param(k, param, &bn);
	n = BN_bn2bin(bn, b);
	BN_free(bn);
	out += sprintf(out, "\"%s\":\"", name);
	kv_b64url_encode(b, (size_t)n, out);
	strcat(out, "\"");
}

static char *
jwk_rsa(EVP_PKEY *k, const char *kid, char *out)
{
	char n[1500], e[32];

	bn_member(k, OSSL_PKEY_PARAM_RSA_N, "n", n);
	bn_member(k, OSSL_PKEY_PARAM_RSA_E, "e", e);
	sprintf(out, "{\"kty\":\"RSA\",\"kid\":\"%s\",\"use\":\"sig\",\"alg\":\"RS256\",%s,%s}",
	    kid, n, e);
	return out;
}

static char *
jwk_ec(EVP_PKEY *k, const char *kid, char *out)
{
	unsigned char pt[65];
	char x[64], y[64];
	size_t n;

	EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt), &n);
	kv_b64url_encode(pt + 1, 32, x);
	kv_b64url_encode(pt + 33, 32, y);
	sprintf(out, "{\"kty\":\"EC\",\"kid\":\"%s\",\"crv\":\"P-256\",\"x\":\"%s\",\"y\":\"%s\"}",
	    kid, x, y);
	return out;
}

static char *
jwk_ed(EVP_PKEY *k, const char *kid, char *out)
{
	unsigned char raw[32];
	size_t n = sizeof(raw);
	char x[64];

	EVP_PKEY_get_raw_public_key(k, raw, &n);
	kv_b64url_encode(raw, n, x);
	sprintf(out, "{\"kty\":\"OKP\",\"kid\":\"%s\",\"crv\":\"Ed25519\",\"x\":\"%s\"}", kid, x);
	return out;
}

static int
parse(const char *doc, struct kv_jwks *ks)
{
	char err[256];
	int r = kv_jwks_parse(ks, doc, strlen(doc), err, sizeof(err));

	if (r == -1)
		fprintf(stderr, "  (jwks: %s)\n", err);
	return r;
}

static char jwks_doc[8192];

static void
make_set(void)
{
	char *doc = jwks_doc, a[2048], b[256], c[256];

	snprintf(doc, sizeof(jwks_doc), "{\"keys\":[%s,%s,%s,{\"kty\":\"oct\",\"kid\":\"h\"},"
	    "{\"kty\":\"RSA\",\"kid\":\"enc\",\"use\":\"enc\",\"n\":\"AQAB\",\"e\":\"AQAB\"}]}",
	    jwk_rsa(rsa, "r1", a), jwk_ec(ec, "e1", b), jwk_ed(ed, "d1", c));
	CHECK_INT(parse(doc, &set), 0);
	CHECK_INT(set.nkeys, 3);
	CHECK_INT(set.skipped, 2);
}

/* ---- tokens ----------------------------------------------------------------- */

static void
test_good(void)
{
	struct kv_jwt_identity id;

	CHECK_INT(verify(mint(rsa, "RS256", "{\"alg\":\"RS256\",\"kid\":\"r1\",\"typ\":\"JWT\"}",
	    claims_at(NOW + 600, "")), &pol, &id), KV_JWT_OK);
	CHECK_STR(id.user, "ana@x.io");
	CHECK_INT(id.nteams, 2);
	CHECK_STR(id.teams[0], "payments");
	CHECK_STR(id.teams[1], "search");
	CHECK_INT(id.exp, NOW + 600);
	CHECK(id.key == &set.keys[0]);
	CHECK_INT(verify(mint(ec, "ES256", "{\"alg\":\"ES256\",\"kid\":\"e1\"}",
	    claims_at(NOW + 600, ",\"nbf\":1800000000,\"iat\":1800000000")), &pol, &id), KV_JWT_OK);
	CHECK_INT(id.alg, KV_JWT_ES256);
	CHECK_INT(verify(mint(ed, "EdDSA", "{\"alg\":\"EdDSA\",\"kid\":\"d1\"}",
	    claims_at(NOW + 600, "")), &pol, &id), KV_JWT_OK);
	CHECK_INT(id.alg, KV_JWT_EDDSA);
	/* aud as an array holding the audience; groups as one string */
	CHECK_INT(verify(mint(ed, "EdDSA", "{\"alg\":\"EdDSA\",\"kid\":\"d1\"}",
	    "{\"iss\":\"https://idp.example\",\"aud\":[\"other\",\"kilovolt\"],\"sub\":\"u1\","
	    "\"groups\":\"ops\",\"exp\":1800000600}"), &pol, &id), KV_JWT_OK);
	CHECK_INT(id.nteams, 1);
	CHECK_STR(id.teams[0], "ops");
	/* within the skew either way */
	CHECK_INT(verify_p(mint(rsa, "RS256", "{\"alg\":\"RS256\",\"kid\":\"r1\"}",
	    claims_at(NOW - 59, ",\"nbf\":1800000059"))), KV_JWT_OK);
}

static void
test_algorithms(void)
{
	struct kv_jwt_policy rs_only = pol;
	unsigned char mac[32];
	unsigned int ml = 0;
	char pem[4096], tok[8192];
	BIO *bio = BIO_new(BIO_s_mem());
	char *p;
	long n;

	CHECK_INT(verify_p(mint(NULL, "none", "{\"alg\":\"none\",\"kid\":\"r1\"}",
	    claims_at(NOW + 600, ""))), KV_JWT_ALG_REFUSED);
	CHECK_INT(verify_p(mint(NULL, "none", "{\"alg\":\"none\"}", claims_at(NOW + 600, ""))),
	    KV_JWT_ALG_REFUSED);
	/* HS256 keyed with the RSA public key's PEM: the classic confusion */
	PEM_write_bio_PUBKEY(bio, rsa);
	n = BIO_get_mem_data(bio, &p);
	memcpy(pem, p, (size_t)n);
	p = mint(NULL, "", "{\"alg\":\"HS256\",\"kid\":\"r1\"}", claims_at(NOW + 600, ""));
	*strrchr(p, '.') = '\0';
	HMAC(EVP_sha256(), pem, (int)n, (unsigned char *)p, strlen(p), mac, &ml);
	snprintf(tok, sizeof(tok), "%s.", p);
	kv_b64url_encode(mac, ml, tok + strlen(tok));
	CHECK_INT(verify_p(tok), KV_JWT_ALG_REFUSED);
	BIO_free(bio);
	/* not in the accepted list; a kid of a key of another kind */
	rs_only.algs = KV_JWT_RS256;
	{
		struct kv_jwt_identity id;

		CHECK_INT(verify(mint(ed, "EdDSA", "{\"alg\":\"EdDSA\",\"kid\":\"d1\"}",
		    claims_at(NOW + 600, "")), &rs_only, &id), KV_JWT_ALG_REFUSED);
	}
	CHECK_INT(verify_p(mint(ec, "ES256", "{\"alg\":\"ES256\",\"kid\":\"r1\"}",
	    claims_at(NOW + 600, ""))), KV_JWT_ALG_REFUSED);
	CHECK_INT(verify_p(mint(rsa, "RS256", "{\"alg\":\"PS256\",\"kid\":\"r1\"}",
	    claims_at(NOW + 600, ""))), KV_JWT_ALG_REFUSED);
}

static void
test_keys_and_signatures(void)
{
	struct kv_jwks one;
	char doc[512], b[256], *t;

	/* signed by a key not in the set, under a kid that is */
	CHECK_INT(verify_p(mint(rsa2, "RS256", "{\"alg\":\"RS256\",\"kid\":\"r1\"}",
	    claims_at(NOW + 600, ""))), KV_JWT_BAD_SIGNATURE);
	CHECK_INT(verify_p(mint(rsa2, "RS256", "{\"alg\":\"RS256\",\"kid\":\"rotated\"}",
	    claims_at(NOW + 600, ""))), KV_JWT_UNKNOWN_KID);
	CHECK_INT(verify_p(mint(rsa, "RS256", "{\"alg\":\"RS256\"}", claims_at(NOW + 600, ""))),
	    KV_JWT_UNKNOWN_KID);
	/* claims changed after signing */
	t = mint(ec, "ES256", "{\"alg\":\"ES256\",\"kid\":\"e1\"}", claims_at(NOW + 600, ""));
	t[strchr(t, '.') - t + 5] ^= 1;
	CHECK_INT(verify_p(t), KV_JWT_BAD_SIGNATURE);
	/* a truncated ES256 signature */
	t = mint(ec, "ES256", "{\"alg\":\"ES256\",\"kid\":\"e1\"}", claims_at(NOW + 600, ""));
	t[strlen(t) - 6] = '\0';	/* 80 digits: 60 bytes */
	CHECK_INT(verify_p(t), KV_JWT_BAD_SIGNATURE);
	/* no kid, and a set of one key: that key */
	snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", jwk_ed(ed, "d1", b));
	CHECK_INT(parse(doc, &one), 0);
	{
		struct kv_jwt_identity id;
		char why[200];

		t = mint(ed, "EdDSA", "{\"alg\":\"EdDSA\"}", claims_at(NOW + 600, ""));
		CHECK_INT(kv_jwt_verify(t, strlen(t), &one, &pol, NOW, &id, why, sizeof(why)),
		    KV_JWT_OK);
		t = mint(ec, "ES256", "{\"alg\":\"ES256\"}", claims_at(NOW + 600, ""));
		CHECK_INT(kv_jwt_verify(t, strlen(t), &one, &pol, NOW, &id, why, sizeof(why)),
		    KV_JWT_ALG_REFUSED);
	}
	kv_jwks_free(&one);
}

static void
test_claims(void)
{
	const char *h = "{\"alg\":\"RS256\",\"kid\":\"r1\"}";
	struct kv_jwt_policy by_email = pol;
	struct kv_jwt_identity id;

	CHECK_INT(verify_p(mint(rsa, "RS256", h, claims_at(NOW - 60, ""))), KV_JWT_EXPIRED);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, claims_at(NOW + 600, ",\"nbf\":1800000061"))),
	    KV_JWT_NOT_YET_VALID);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, claims_at(NOW + 600, ",\"iat\":1800003600"))),
	    KV_JWT_NOT_YET_VALID);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"iss\":\"https://idp.example\","
	    "\"aud\":\"kilovolt\",\"sub\":\"u\"}")), KV_JWT_EXPIRED);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"iss\":\"https://idp.example/\","
	    "\"aud\":\"kilovolt\",\"sub\":\"u\",\"exp\":1800000600}")), KV_JWT_WRONG_ISSUER);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"aud\":\"kilovolt\",\"sub\":\"u\","
	    "\"exp\":1800000600}")), KV_JWT_WRONG_ISSUER);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"iss\":\"https://idp.example\","
	    "\"aud\":[\"kilovolt2\"],\"sub\":\"u\",\"exp\":1800000600}")), KV_JWT_WRONG_AUDIENCE);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"iss\":\"https://idp.example\","
	    "\"sub\":\"u\",\"exp\":1800000600}")), KV_JWT_WRONG_AUDIENCE);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"iss\":\"https://idp.example\","
	    "\"aud\":\"kilovolt\",\"exp\":1800000600}")), KV_JWT_NO_USER);
	/* the user from email, refused when the provider says it is unverified */
	by_email.user_claim = "email";
	CHECK_INT(verify(mint(rsa, "RS256", h, claims_at(NOW + 600, ",\"email\":\"b@x.io\"")),
	    &by_email, &id), KV_JWT_OK);
	CHECK_STR(id.user, "b@x.io");
	CHECK_INT(verify(mint(rsa, "RS256", h, claims_at(NOW + 600, ",\"email\":\"b@x.io\","
	    "\"email_verified\":false")), &by_email, &id), KV_JWT_NO_USER);
	CHECK_INT(id.user[0], 0);
}

/* base64url both ways, and the decoder's strictness */
static void
test_b64url(void)
{
	unsigned char in[5] = { 0xfb, 0xff, 0x00, 0x3e, 0x7f }, out[8];
	char enc[16];
	size_t i;

	for (i = 0; i <= sizeof(in); i++) {
		CHECK_INT(kv_b64url_encode(in, i, enc), (i * 4 + 2) / 3);
		CHECK_INT(kv_b64url_decode(enc, strlen(enc), out, sizeof(out)), i);
		CHECK(memcmp(in, out, i) == 0);
	}
	CHECK_STR(enc, "-_8APn8");
	CHECK_INT(kv_b64url_decode("-_8APn9", 7, out, sizeof(out)), -1);	/* bits left */
	CHECK_INT(kv_b64url_decode("+/8A", 4, out, sizeof(out)), -1);
	CHECK_INT(kv_b64url_decode("AAA=", 4, out, sizeof(out)), -1);
	CHECK_INT(kv_b64url_decode("AAAAA", 5, out, sizeof(out)), -1);
	CHECK_INT(kv_b64url_decode("AAAAAAAAAAAA", 12, out, sizeof(out)), -1);	/* 9 > 8 */
}

static void
test_malformed(void)
{
	const char *h = "{\"alg\":\"RS256\",\"kid\":\"r1\"}";
	char big[KV_JWT_MAX_TOKEN + 2];

	CHECK_INT(verify_p("abc.def"), KV_JWT_MALFORMED);
	CHECK_INT(verify_p("a.b.c.d"), KV_JWT_MALFORMED);
	CHECK_INT(verify_p("e30=.e30.AA"), KV_JWT_MALFORMED);
	CHECK_INT(verify_p(mint(rsa, "RS256", "not json", "{}")), KV_JWT_MALFORMED);
	CHECK_INT(verify_p(mint(rsa, "RS256", "{\"alg\":\"RS256\",\"alg\":\"RS256\"}", "{}")),
	    KV_JWT_MALFORMED);
	CHECK_INT(verify_p(mint(rsa, "RS256", "{\"alg\":\"RS256\",\"kid\":\"r1\","
	    "\"crit\":[\"exp\"]}", claims_at(NOW + 600, ""))), KV_JWT_MALFORMED);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, claims_at(NOW + 600, ",\"exp\":1"))),
	    KV_JWT_MALFORMED);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, claims_at(NOW + 600, ",\"x\":1,}"))),
	    KV_JWT_MALFORMED);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"iss\":\"https://idp.example\","
	    "\"aud\":\"kilovolt\",\"sub\":\"u\",\"groups\":[1],\"exp\":1800000600}")),
	    KV_JWT_MALFORMED);
	CHECK_INT(verify_p(mint(rsa, "RS256", h, "{\"iss\":\"https://idp.example\","
	    "\"aud\":\"kilovolt\",\"sub\":\"u\",\"exp\":-5}")), KV_JWT_MALFORMED);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(verify_p(big), KV_JWT_MALFORMED);
	CHECK_STR(kv_jwt_reason(KV_JWT_UNKNOWN_KID), "unknown kid");
}

/* ---- the key set's refusals ---------------------------------------------- */

static void
test_jwks(void)
{
	struct kv_jwks ks;
	char doc[8192], a[2048];
	EVP_PKEY *small = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024);
	size_t i;
	int off;

	CHECK_INT(parse("{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AA\","
	    "\"d\":\"AA\"}]}", &ks), -1);
	CHECK_INT(parse("{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\","
	    "\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\","
	    "\"y\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\"}]}", &ks), -1);
	CHECK_INT(parse("{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AAAA\"}]}",
	    &ks), -1);
	CHECK_INT(parse("{\"keys\":[{\"kty\":\"RSA\",\"kty\":\"RSA\"}]}", &ks), -1);
	CHECK_INT(parse("{\"keys\":[{\"crv\":\"P-256\"}]}", &ks), -1);
	CHECK_INT(parse("{\"keys\":[]}", &ks), 0);
	CHECK_INT(parse("{\"kids\":[]}", &ks), -1);
	CHECK_INT(parse("{\"keys\":[]} x", &ks), -1);
	CHECK_INT(parse("{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\"},"
	    "{\"kty\":\"RSA\",\"alg\":\"RS384\",\"n\":\"AA\",\"e\":\"AQAB\"}]}", &ks), 0);
	CHECK_INT(ks.skipped, 2);
	snprintf(doc, sizeof(doc), "{\"keys\":[%s]}", jwk_rsa(small, "weak", a));
	CHECK_INT(parse(doc, &ks), -1);
	/* 33 usable keys: past the bound */
	off = snprintf(doc, sizeof(doc), "{\"keys\":[");
	for (i = 0; i <= KV_JWKS_MAX_KEYS; i++)
		off += snprintf(doc + off, sizeof(doc) - (size_t)off, "%s%s", i ? "," : "",
		    jwk_ed(ed, "k", a));
	snprintf(doc + off, sizeof(doc) - (size_t)off, "]}");
	CHECK_INT(parse(doc, &ks), -1);
	EVP_PKEY_free(small);
}

/* ---- [auth jwt] in kilovolt.ini ---------------------------------------- */

static char dir[] = "/tmp/kv-test-jwt.XXXXXX";

static void
write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) == NULL || fputs(text, f) == EOF || fclose(f) == EOF) {
		perror(path);
		exit(1);
	}
}

#define UP "[upstream o]\nurl = https://api.openai.com\npaths = /v1/\n[auth jwt]\n"

/* Load SECTION's text after an upstream; the loader's result, ERR its message. */
static int
load(struct kv_config *cf, const char *section, char *err, size_t errlen)
{
	char text[2048], path[256];
	int r;

	snprintf(text, sizeof(text), UP "%s", section);
	write_file("kv.ini", text);
	snprintf(path, sizeof(path), "%s/kv.ini", dir);
	err[0] = '\0';
	r = kv_config_load_prices(cf, path, "", err, 512);
	(void)errlen;
	return r;
}

static void
expect_refused(const char *section, const char *want)
{
	struct kv_config cf;
	char err[512];

	if (load(&cf, section, err, sizeof(err)) == 0) {
		kv_config_free(&cf);
		CHECK(0);
		return;
	}
	if (strstr(err, want) == NULL)
		fprintf(stderr, "  (%s: got \"%s\")\n", want, err);
	CHECK(strstr(err, want) != NULL);
}

/* -T of a config, read back, gives the same -T. */
static void
dump_twice(struct kv_config *cf)
{
	char *a = NULL, *b = NULL, err[512], path[256];
	size_t al = 0, bl = 0;
	FILE *f = open_memstream(&a, &al);
	struct kv_config again;

	CHECK_INT(kv_config_dump(cf, f), 0);
	fclose(f);
	write_file("dump.ini", a);
	snprintf(path, sizeof(path), "%s/dump.ini", dir);
	CHECK_INT(kv_config_load_prices(&again, path, "", err, sizeof(err)), 0);
	f = open_memstream(&b, &bl);
	kv_config_dump(&again, f);
	fclose(f);
	CHECK(strstr(a, "[auth jwt]\nissuer = https://idp.example\n") != NULL);
	CHECK(strstr(b, strstr(a, "[auth jwt]")) != NULL);
	kv_config_free(&again);
	free(a);
	free(b);
}

static void
remove_dir(void)
{
	const char *names[] = { "kv.ini", "dump.ini", "jwks.json", "empty.json" };
	char path[256];
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

static void
test_config_section(void)
{
	struct kv_config cf;
	struct kv_jwt_policy p;
	char err[512];

	if (mkdtemp(dir) == NULL) {
		perror(dir);
		exit(1);
	}
	write_file("jwks.json", jwks_doc);
	write_file("empty.json", "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"x\"}]}");
	CHECK_INT(load(&cf, "issuer = https://idp.example\naudience = kilovolt\n"
	    "jwks_file = jwks.json\n", err, sizeof(err)), 0);
	CHECK_INT(cf.auth_jwt.algorithms, KV_JWT_ALGS_ALL);
	CHECK_INT(cf.auth_jwt.clock_skew, 60);
	CHECK_STR(cf.auth_jwt.team_claim, "groups");
	CHECK_INT(cf.auth_jwt.user_budget_nusd, -1);
	kv_jwt_policy_of(&cf.auth_jwt, &p);
	CHECK_STR(p.user_claim, "sub");
	dump_twice(&cf);
	kv_config_free(&cf);
	CHECK_INT(load(&cf, "issuer = https://idp.example\naudience = kilovolt\n"
	    "jwks_url = https://idp.example/jwks\nalgorithms = EdDSA ES256\nclock_skew = 2m\n"
	    "user_claim = email\nteam_claim = none\nuser_budget = 5\nheader = X-Id-Token\n",
	    err, sizeof(err)), 0);
	CHECK_INT(cf.auth_jwt.algorithms, KV_JWT_EDDSA | KV_JWT_ES256);
	CHECK_INT(cf.auth_jwt.clock_skew, 120);
	CHECK_STR(cf.auth_jwt.team_claim, "");
	CHECK_INT(cf.auth_jwt.user_budget_nusd, 5000000000LL);
	CHECK_STR(cf.auth_jwt.header, "x-id-token");
	kv_jwt_policy_of(&cf.auth_jwt, &p);
	CHECK_STR(p.user_claim, "email");
	kv_config_free(&cf);
	expect_refused("audience = k\njwks_file = jwks.json\n", "issuer and audience are "
	    "required");
	expect_refused("issuer = i\naudience = k\n", "set one of jwks_url and jwks_file");
	expect_refused("issuer = i\naudience = k\njwks_file = jwks.json\n"
	    "jwks_url = https://i/j\n", "set one of jwks_url and jwks_file");
	expect_refused("issuer = i\naudience = k\njwks_file = nope.json\n", "nope.json: No "
	    "such file");
	expect_refused("issuer = i\naudience = k\njwks_file = empty.json\n", "holds no RS256");
	expect_refused("algorithms = RS256 HS256\n", "algorithms: 'HS256' is not RS256");
	expect_refused("algorithms = none\n", "algorithms: 'none' is not RS256");
	expect_refused("team_claim = sub\n", "team_claim: sub is not a claim of teams");
	expect_refused("user_claim = name\n", "user_claim");
	expect_refused("header = x y\n", "header: 'x y' is not a header name");
	expect_refused("jwks_url = ftp://x\n", "jwks_url: want an https:// URL");
	expect_refused("issuer = a b\n", "issuer: want at most 511 printable");
	expect_refused("clock_skew = 2h\n", "clock_skew");
#define WHOLE "issuer = i\naudience = k\njwks_url = https://i/j\n"
	expect_refused(WHOLE "[auth jwt]\n", "duplicate section [auth jwt]");
	expect_refused(WHOLE "[auth oidc]\n", "unknown section [auth oidc]");
	remove_dir();
}

int
main(void)
{
	rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	rsa2 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
	ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	if (rsa == NULL || rsa2 == NULL || ec == NULL || ed == NULL) {
		fprintf(stderr, "OpenSSL could not make the test keys\n");
		return 1;
	}
	make_set();
	test_good();
	test_algorithms();
	test_keys_and_signatures();
	test_claims();
	test_malformed();
	test_b64url();
	test_jwks();
	test_config_section();
	kv_jwks_free(&set);
	EVP_PKEY_free(rsa);
	EVP_PKEY_free(rsa2);
	EVP_PKEY_free(ec);
	EVP_PKEY_free(ed);
	return unit_done();
}

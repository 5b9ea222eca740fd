/* A JWKS document into OpenSSL public keys (jwks.h).
 *
 * Why OpenSSL and not a JOSE library: Debian 12's libjwt (1.10.2) has no
 * EdDSA (its algorithms are HS, RS and ES only) and no JWK or JWKS reader
 * (its jwt_decode takes one PEM key, and the algorithm from the token's
 * own header); Debian 12's cjose (0.6.2) reads JWKs but has no OKP keys
 * and no EdDSA either. Covering RS256 and ES256 with one of them and
 * EdDSA with OpenSSL would mean two verifiers, two JSON readers (both
 * use jansson) and the algorithm checks ours anyway. So the keys are built
 * here with OpenSSL 3's EVP_PKEY_fromdata, and the JSON is the project's
 * strict reader (common/jsonread.c). */
#include "common/jwks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/param_build.h>

#include "common/b64url.h"
#include "common/jsonread.h"

#define RSA_N_MAX	(KV_JWK_RSA_MAX_BITS / 8)

/* The members of one key that are read, as written. */
struct jwk_raw {
	char		 kty[8], crv[16], alg[16], use[8];
	char		 kid[KV_JWK_KID_MAX];
	char		 n[RSA_N_MAX * 4 / 3 + 4], e[16], x[48], y[48];
	unsigned	 seen;
};

/* The members read; a bit each, so a repeated one is refused. */
static const char *const jwk_members[] = { "kty", "crv", "alg", "use", "kid", "n", "e",
	"x", "y", NULL };
/* A public set never holds these (RSA, EC and OKP private parts, oct's k). */
static const char *const jwk_private[] = { "d", "p", "q", "dp", "dq", "qi", "oth", "k",
	NULL };

static char *
jwk_field(struct jwk_raw *r, int i, size_t *cap)
{
	char *f[] = { r->kty, r->crv, r->alg, r->use, r->kid, r->n, r->e, r->x, r->y };
	size_t c[] = { sizeof(r->kty), sizeof(r->crv), sizeof(r->alg), sizeof(r->use),
		sizeof(r->kid), sizeof(r->n), sizeof(r->e), sizeof(r->x), sizeof(r->y) };

	*cap = c[i];
	return f[i];
}

static int
name_index(const char *const *names, const char *name)
{
	int i;

	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* One key object's members into R. 0 or -1 (jr->err says why). */
static int
jwk_read(struct kv_jr *jr, struct jwk_raw *r)
{
	char name[64], *dst;
	size_t cap;
	int i, more;

	memset(r, 0, sizeof(*r));
	if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((more = kv_jr_member(jr, name, sizeof(name))) == 1) {
		if (name_index(jwk_private, name) >= 0)
			return kv_jr_fail(jr, "a private key member: a JWKS publishes "
			    "public keys only");
		if ((i = name_index(jwk_members, name)) < 0) {
			if (kv_jr_skip(jr) == -1)
				return -1;
			continue;
		}
		if (r->seen & (1u << i))
			return kv_jr_fail(jr, "a member repeated in a key");
		r->seen |= 1u << i;
		dst = jwk_field(r, i, &cap);
		if (kv_jr_peek(jr) != KV_JR_STRING)
			return kv_jr_fail(jr, "a key member that is not a string");
		if (kv_jr_string(jr, dst, cap) == -1)
			return -1;
	}
	return more;
}

/* Base64url member S into exactly WANT bytes (WANT 0: 1..CAP bytes);
 * the length or -1. */
static long
jwk_bytes(const char *s, unsigned char *out, size_t cap, size_t want)
{
	long n = kv_b64url_decode(s, strlen(s), out, cap);

	if (n <= 0 || (want > 0 && (size_t)n != want))
		return -1;
	return n;
}

static EVP_PKEY *
pkey_fromdata(const char *type, OSSL_PARAM *params)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
	EVP_PKEY *pk = NULL;

	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pk = NULL;
	EVP_PKEY_CTX_free(ctx);
	return pk;
}

static EVP_PKEY *
rsa_key(const struct jwk_raw *r, const char **why)
{
	unsigned char n[RSA_N_MAX], e[8];
	long nl = jwk_bytes(r->n, n, sizeof(n), 0), el = jwk_bytes(r->e, e, sizeof(e), 0);
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	BIGNUM *bn = NULL, *be = NULL;
	EVP_PKEY *pk = NULL;

	*why = "an RSA key's n or e is not base64url of a usable size";
	if (nl < 0 || el < 0 || n[0] == 0 || e[0] == 0)
		return NULL;
	if (nl * 8 < KV_JWK_RSA_MIN_BITS) {
		*why = "an RSA key shorter than 2048 bits";
		return NULL;
	}
	*why = "OpenSSL could not build an RSA key";
	if ((bld = OSSL_PARAM_BLD_new()) != NULL &&
	    (bn = BN_bin2bn(n, (int)nl, NULL)) != NULL &&
	    (be = BN_bin2bn(e, (int)el, NULL)) != NULL &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) == 1 &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) == 1 &&
	    (params = OSSL_PARAM_BLD_to_param(bld)) != NULL)
		pk = pkey_fromdata("RSA", params);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	return pk;
}

/* P-256: the point 04 || x || y, checked to be on the curve. */
static EVP_PKEY *
ec_key(const struct jwk_raw *r, const char **why)
{
	unsigned char pt[65];
	char group[] = "P-256";
	OSSL_PARAM params[3];
	EVP_PKEY_CTX *ctx;
	EVP_PKEY *pk;
	int ok;

	*why = "a P-256 key's x or y is not 32 bytes of base64url";
	pt[0] = 4;
	if (jwk_bytes(r->x, pt + 1, 32, 32) == -1 || jwk_bytes(r->y, pt + 33, 32, 32) == -1)
		return NULL;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pt, sizeof(pt));
	params[2] = OSSL_PARAM_construct_end();
	*why = "a P-256 key whose point is not on the curve";
	if ((pk = pkey_fromdata("EC", params)) == NULL)
		return NULL;
	ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
	ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;
	EVP_PKEY_CTX_free(ctx);
	if (!ok) {
		EVP_PKEY_free(pk);
		return NULL;
	}
	return pk;
}

static EVP_PKEY *
ed25519_key(const struct jwk_raw *r, const char **why)
{
	unsigned char x[32];

	*why = "an Ed25519 key's x is not 32 bytes of base64url";
	if (jwk_bytes(r->x, x, sizeof(x), sizeof(x)) == -1)
		return NULL;
	return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, sizeof(x));
}

/* The algorithm R is a key for, or 0: a kind, curve or alg not verified
 * here, or a key not for signatures. */
static unsigned
jwk_alg(const struct jwk_raw *r)
{
	unsigned alg = 0;

	if (r->use[0] != '\0' && strcmp(r->use, "sig") != 0)
		return 0;
	if (strcmp(r->kty, "RSA") == 0)
		alg = KV_JWT_RS256;
	else if (strcmp(r->kty, "EC") == 0 && strcmp(r->crv, "P-256") == 0)
		alg = KV_JWT_ES256;
	else if (strcmp(r->kty, "OKP") == 0 && strcmp(r->crv, "Ed25519") == 0)
		alg = KV_JWT_EDDSA;
	/* a key bound to another algorithm (PS256, RS384...) stays out */
	if (alg != 0 && r->alg[0] != '\0' && kv_jwt_alg_parse(r->alg) != alg &&
	    !(alg == KV_JWT_EDDSA && strcmp(r->alg, "Ed25519") == 0))
		return 0;
	return alg;
}

/* R into KS's next key, or skipped. 0 or -1 with jr's error. */
static int
jwk_add(struct kv_jr *jr, struct kv_jwks *ks, const struct jwk_raw *r)
{
	struct kv_jwk *k;
	const char *why = "";
	EVP_PKEY *pk;
	unsigned alg;

	if (!(r->seen & 1u))
		return kv_jr_fail(jr, "a key without kty");
	if ((alg = jwk_alg(r)) == 0) {
		ks->skipped++;
		return 0;
	}
	if (ks->nkeys == KV_JWKS_MAX_KEYS)
		return kv_jr_fail(jr, "more keys than kilovolt keeps (32)");
	pk = alg == KV_JWT_RS256 ? rsa_key(r, &why) : alg == KV_JWT_ES256 ? ec_key(r, &why) :
	    ed25519_key(r, &why);
	if (pk == NULL)
		return kv_jr_fail(jr, why);
	k = &ks->keys[ks->nkeys++];
	k->pkey = pk;
	k->alg = alg;
	k->has_kid = (r->seen & (1u << 4)) != 0;
	memcpy(k->kid, r->kid, sizeof(k->kid));
	return 0;
}

/* {"keys": [key, ...]}, other members skipped. */
static int
jwks_read(struct kv_jr *jr, struct kv_jwks *ks)
{
	struct jwk_raw r;
	char name[64];
	int more, seen_keys = 0;

	if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((more = kv_jr_member(jr, name, sizeof(name))) == 1) {
		if (strcmp(name, "keys") != 0) {
			if (kv_jr_skip(jr) == -1)
				return -1;
			continue;
		}
		if (seen_keys++)
			return kv_jr_fail(jr, "\"keys\" repeated");
		if (kv_jr_enter(jr, KV_JR_ARRAY) == -1)
			return -1;
		while ((more = kv_jr_element(jr)) == 1)
			if (jwk_read(jr, &r) == -1 || jwk_add(jr, ks, &r) == -1)
				return -1;
		if (more == -1)
			return -1;
	}
	if (more == -1 || kv_jr_finish(jr) == -1)
		return -1;
	return seen_keys ? 0 : kv_jr_fail(jr, "no \"keys\" member");
}

int
kv_jwks_parse(struct kv_jwks *ks, const char *buf, size_t len, char *err, size_t errlen)
{
	struct kv_jr jr;

	memset(ks, 0, sizeof(*ks));
	if (len > KV_JWKS_MAX_BYTES) {
		snprintf(err, errlen, "larger than %d bytes", KV_JWKS_MAX_BYTES);
		return -1;
	}
	kv_jr_init(&jr, buf, len);
	if (jwks_read(&jr, ks) == -1) {
		snprintf(err, errlen, "%s", jr.err);
		kv_jwks_free(ks);
		return -1;
	}
	return 0;
}

int
kv_jwks_load(struct kv_jwks *ks, const char *path, char *err, size_t errlen)
{
	char *buf;
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd, r;

	memset(ks, 0, sizeof(*ks));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 || fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > KV_JWKS_MAX_BYTES ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		snprintf(err, errlen, "%s: not a regular file of at most %d bytes", path,
		    KV_JWKS_MAX_BYTES);
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size &&
	    ((n = read(fd, buf + got, (size_t)st.st_size - got)) > 0 || (n == -1 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	if (got < (size_t)st.st_size)
		snprintf(err, errlen, "%s: short read", path);
	r = got < (size_t)st.st_size ? -1 : kv_jwks_parse(ks, buf, got, err, errlen);
	close(fd);
	free(buf);
	return r;
}

void
kv_jwks_free(struct kv_jwks *ks)
{
	size_t i;

	for (i = 0; i < ks->nkeys; i++)
		EVP_PKEY_free(ks->keys[i].pkey);
	memset(ks, 0, sizeof(*ks));
}

const struct kv_jwk *
kv_jwks_find(const struct kv_jwks *ks, const char *kid, unsigned alg, int *wrong_alg)
{
	const struct kv_jwk *k;
	size_t i;

	*wrong_alg = 0;
	if (kid == NULL) {
		if (ks->nkeys != 1)
			return NULL;
		*wrong_alg = ks->keys[0].alg != alg;
		return *wrong_alg ? NULL : &ks->keys[0];
	}
	for (i = 0; i < ks->nkeys; i++) {
		k = &ks->keys[i];
		if (!k->has_kid || strcmp(k->kid, kid) != 0)
			continue;
		if (k->alg == alg)
			return k;
		*wrong_alg = 1;
	}
	return NULL;
}

static const struct {
	const char	*name;
	unsigned	 alg;
} alg_names[] = { { "RS256", KV_JWT_RS256 }, { "ES256", KV_JWT_ES256 },
	{ "EdDSA", KV_JWT_EDDSA } };

const char *
kv_jwt_alg_name(unsigned alg)
{
	size_t i;

	for (i = 0; i < sizeof(alg_names) / sizeof(alg_names[0]); i++)
		if (alg_names[i].alg == alg)
			return alg_names[i].name;
	return "?";
}

unsigned
kv_jwt_alg_parse(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(alg_names) / sizeof(alg_names[0]); i++)
		if (strcmp(alg_names[i].name, name) == 0)
			return alg_names[i].alg;
	return 0;
}

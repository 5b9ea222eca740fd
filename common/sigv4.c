/* SigV4 signing: the signing key (HMAC chain from "AWS4" + secret over the
 * day, region, service and "aws4_request", kept for the day), the string
 * to sign over the canonical request's SHA-256, and the Authorization
 * value. OpenSSL does the SHA-256, HMAC is built on it here. */
#include "common/sigv4.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "common/hex.h"

#define SECRET_MAX	256

static int
fail(char *err, size_t errlen, const char *why)
{
	snprintf(err, errlen, "%s", why);
	return -1;
}

/* SHA-256 of the LEN[i]-byte parts P[0..N) into OUT. The digest and its
 * context are made once per process and reused: OpenSSL's one-shot
 * EVP_Digest and HMAC look the implementation up and allocate on every
 * call, which cost more than the hashing of a request's few blocks. */
static int
sha256(const void *const *p, const size_t *len, int n, unsigned char out[32])
{
	static EVP_MD *md;
	static EVP_MD_CTX *ctx;
	unsigned int outlen = 0;
	int i;

	if (md == NULL && (md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		return -1;
	if (ctx == NULL && (ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestInit_ex2(ctx, md, NULL) != 1)
		return -1;
	for (i = 0; i < n; i++)
		if (EVP_DigestUpdate(ctx, p[i], len[i]) != 1)
			return -1;
	return EVP_DigestFinal_ex(ctx, out, &outlen) == 1 && outlen == 32 ? 0 : -1;
}

/* HMAC-SHA-256 (RFC 2104) of MSG under KEY, on the reused digest. */
static int
hmac(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32])
{
	unsigned char k[64] = { 0 }, ipad[64], opad[64], inner[32];
	const void *p[2];
	size_t len[2];
	int i, rc;

	p[0] = key;
	len[0] = klen;
	if (klen > sizeof(k)) {
		if (sha256(p, len, 1, k) == -1)
			return -1;
	} else {
		memcpy(k, key, klen);
	}
	for (i = 0; i < 64; i++) {
		ipad[i] = k[i] ^ 0x36;
		opad[i] = k[i] ^ 0x5c;
	}
	p[0] = ipad;
	len[0] = 64;
	p[1] = msg;
	len[1] = mlen;
	rc = sha256(p, len, 2, inner);
	p[0] = opad;
	p[1] = inner;
	len[1] = 32;
	rc = rc == -1 ? -1 : sha256(p, len, 2, out);
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(ipad, sizeof(ipad));
	OPENSSL_cleanse(opad, sizeof(opad));
	return rc;
}

/* A region or service name: lowercase letters, digits, '-', 1..32. */
static int
scope_word_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

static int
creds_ok(const struct kv_sigv4_creds *c, const char *region, const char *service,
    char *err, size_t errlen)
{
	size_t n = c->access_key ? strlen(c->access_key) : 0;

	if (n == 0 || n > 128 || strspn(c->access_key,
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != n)
		return fail(err, errlen, "malformed access key id");
	if (c->secret == NULL || c->secret[0] == '\0' || strlen(c->secret) > SECRET_MAX)
		return fail(err, errlen, "no secret access key, or too long a one");
	if (!scope_word_ok(region) || !scope_word_ok(service))
		return fail(err, errlen, "malformed region or service");
	return 0;
}

/* KEY holds the signing key of C, DATE, REGION and SERVICE: reused when it
 * was derived for them, else derived. */
static int
signing_key(struct kv_sigv4_key *key, const struct kv_sigv4_creds *c, const char *date,
    const char *region, const char *service)
{
	char k0[4 + SECRET_MAX];
	unsigned char k[32];
	size_t n = strlen(c->secret);
	int rc;

	if (strcmp(key->access_key, c->access_key) == 0 && strcmp(key->date, date) == 0 &&
	    strcmp(key->region, region) == 0 && strcmp(key->service, service) == 0)
		return 0;
	memcpy(k0, "AWS4", 4);
	memcpy(k0 + 4, c->secret, n);
	rc = hmac(k0, 4 + n, date, strlen(date), k) == -1 ||
	    hmac(k, 32, region, strlen(region), k) == -1 ||
	    hmac(k, 32, service, strlen(service), k) == -1 ||
	    hmac(k, 32, "aws4_request", 12, key->key) == -1 ? -1 : 0;
	OPENSSL_cleanse(k0, sizeof(k0));
	OPENSSL_cleanse(k, sizeof(k));
	if (rc == -1) {
		memset(key, 0, sizeof(*key));
		return -1;
	}
	snprintf(key->access_key, sizeof(key->access_key), "%s", c->access_key);
	snprintf(key->date, sizeof(key->date), "%s", date);
	snprintf(key->region, sizeof(key->region), "%s", region);
	snprintf(key->service, sizeof(key->service), "%s", service);
	return 0;
}

static int
amz_date(time_t now, char out[17])
{
	struct tm tm;

	if (gmtime_r(&now, &tm) == NULL || strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		return -1;
	return 0;
}

int
kv_sigv4_sign(const struct kv_sigv4_request *r, const struct kv_sigv4_creds *c,
    const char *region, const char *service, time_t now, struct kv_sigv4_key *key,
    struct kv_sigv4_out *out, char *err, size_t errlen)
{
	char canon[KV_SIGV4_CANON_MAX], signed_hdrs[KV_SIGV4_AUTH_MAX], sts[256];
	char date[9], hash_hex[65], sig_hex[65];
	unsigned char hash[32], sig[32];
	struct kv_sigv4_key local;
	const void *cp;
	size_t cl;
	long clen;
	int n;

	if (creds_ok(c, region, service, err, errlen) == -1)
		return -1;
	if (amz_date(now, out->amz_date) == -1)
		return fail(err, errlen, "the clock is out of range");
	memcpy(date, out->amz_date, 8);
	date[8] = '\0';
	clen = kv_sigv4_canonical(r, out->amz_date, c->token, canon, sizeof(canon),
	    signed_hdrs, sizeof(signed_hdrs), err, errlen);
	if (clen == -1)
		return -1;
	if (key == NULL) {
		memset(&local, 0, sizeof(local));
		key = &local;
	}
	cp = canon;
	cl = (size_t)clen;
	if (sha256(&cp, &cl, 1, hash) == -1 || signing_key(key, c, date, region, service) == -1)
		return fail(err, errlen, "SHA-256 or HMAC failed");
	kv_hex_encode(hash, 32, hash_hex);
	n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s",
	    out->amz_date, date, region, service, hash_hex);
	if (n < 0 || (size_t)n >= sizeof(sts) || hmac(key->key, 32, sts, (size_t)n, sig) == -1)
		return fail(err, errlen, "HMAC failed");
	if (key == &local)
		OPENSSL_cleanse(&local, sizeof(local));
	kv_hex_encode(sig, 32, sig_hex);
	n = snprintf(out->authorization, sizeof(out->authorization),
	    "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, SignedHeaders=%s, Signature=%s",
	    c->access_key, date, region, service, signed_hdrs, sig_hex);
	if (n < 0 || (size_t)n >= sizeof(out->authorization))
		return fail(err, errlen, "too many signed headers for the Authorization header");
	return 0;
}

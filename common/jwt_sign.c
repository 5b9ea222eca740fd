/* The RS256 JWT signer: see jwt_sign.h. OpenSSL's EVP_DigestSign over the
 * signing input; the key is read from memory and freed at once (it is
 * used once an hour). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/jwt_sign.h"

#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "common/b64url.h"

#define SIG_MAX	1024	/* RSA 8192 */

/* "b64(header).b64(claims)" into OUT; its length, or 0 when it does not fit. */
static size_t
signing_input(const char *kid, const char *claims, char *out, size_t cap)
{
	char head[256];
	size_t hl = (size_t)snprintf(head, sizeof(head), "{\"alg\":\"RS256\",\"typ\":\"JWT\"%s%s%s}",
	    kid[0] != '\0' ? ",\"kid\":\"" : "", kid, kid[0] != '\0' ? "\"" : "");
	size_t cl = strlen(claims), n;

	if (hl >= sizeof(head) || strchr(kid, '"') != NULL || strchr(kid, '\\') != NULL ||
	    4 * ((hl + 2) / 3) + 1 + 4 * ((cl + 2) / 3) + 1 + 4 * (SIG_MAX / 3 + 1) + 1 > cap)
		return 0;
	n = kv_b64url_encode((const unsigned char *)head, hl, out);
	out[n++] = '.';
	n += kv_b64url_encode((const unsigned char *)claims, cl, out + n);
	return n;
}

static EVP_PKEY *
read_key(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k;

	if (b == NULL)
		return NULL;
	k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	return k;
}

long
kv_jwt_sign_rs256(const char *pem, const char *kid, const char *claims, char *out,
    size_t cap, char *err, size_t errlen)
{
	unsigned char sig[SIG_MAX];
	size_t n, slen = sizeof(sig);
	EVP_MD_CTX *md = NULL;
	EVP_PKEY *k;
	long rc = -1;

	if ((n = signing_input(kid != NULL ? kid : "", claims, out, cap)) == 0) {
		snprintf(err, errlen, "the assertion does not fit its buffer, or a bad kid");
		return -1;
	}
	if ((k = read_key(pem)) == NULL || EVP_PKEY_get_base_id(k) != EVP_PKEY_RSA) {
		snprintf(err, errlen, "private_key is not an RSA private key in PEM");
		goto out;
	}
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(md, sig, &slen, (const unsigned char *)out, n) != 1 ||
	    slen > SIG_MAX) {
		snprintf(err, errlen, "signing with the private key failed");
		goto out;
	}
	out[n++] = '.';
	n += kv_b64url_encode(sig, slen, out + n);
	rc = (long)n;
out:
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
	return rc;
}

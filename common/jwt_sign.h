/* A JWT signed with RS256 (RFC 7515/7519): the assertion a Google service
 * account exchanges for an access token (RFC 7523). The verifier is
 * common/jwt.h; this is its one signer. */
#ifndef KV_JWT_SIGN_H
#define KV_JWT_SIGN_H

#include <stddef.h>

/* header.claims.signature into OUT (CAP bytes, NUL-terminated): the header
 * {"alg":"RS256","typ":"JWT"} (with "kid":KID when KID is not empty), the
 * claims CLAIMS (a JSON object, as given) and the RSASSA-PKCS1-v1_5
 * SHA-256 signature with the PEM private key PEM (PKCS #8 or PKCS #1).
 * Returns the token's length, or -1 with the reason in ERR[0..ERRLEN)
 * (a key that is not RSA or does not parse; OUT too small). */
long	kv_jwt_sign_rs256(const char *pem, const char *kid, const char *claims, char *out,
	    size_t cap, char *err, size_t errlen);

#endif

/* Google's credential documents, parsed: a service account's JSON key file
 * (GOOGLE_APPLICATION_CREDENTIALS) and the OAuth token endpoint's (or the
 * metadata server's) access token answer. Pure functions: no allocation,
 * no I/O; strict JSON (common/jsonread.h). */
#ifndef KV_GCP_PARSE_H
#define KV_GCP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "common/gcp_token.h"

#define KV_GCP_EMAIL_MAX	256
#define KV_GCP_PEM_MAX		8192	/* an RSA 4096 key's PEM is ~3.3 KB */
#define KV_GCP_URI_MAX		512
#define KV_GCP_KID_MAX		128

/* What kilovolt uses of a service account key file. */
struct kv_gcp_sa {
	char	client_email[KV_GCP_EMAIL_MAX];
	char	private_key[KV_GCP_PEM_MAX];	/* PEM, PKCS #8 */
	char	private_key_id[KV_GCP_KID_MAX];	/* "" when absent */
	char	token_uri[KV_GCP_URI_MAX];	/* Google's when absent */
};

/* The token endpoint used when the file names none. */
#define KV_GCP_TOKEN_URI	"https://oauth2.googleapis.com/token"

/* JSON (LEN bytes) of a key file into *OUT: "type" must be
 * "service_account", "client_email" and "private_key" present; other
 * members are skipped. 0, or -1 with the reason in ERR[0..ERRLEN), which
 * never holds the key. */
int	kv_gcp_parse_sa(const char *json, size_t len, struct kv_gcp_sa *out, char *err,
	    size_t errlen);

/* A token answer (LEN bytes): "access_token" (fit for a header: printable
 * ASCII, no blank) and "expires_in" (seconds, 1 to 86400) into *OUT, its
 * expiry NOW + expires_in; "token_type", when present, must be Bearer. An
 * OAuth error answer gives its "error" and "error_description" in ERR.
 * 0, or -1 with the reason in ERR[0..ERRLEN). */
int	kv_gcp_parse_token(const char *json, size_t len, int64_t now, struct kv_gcp_token *out,
	    char *err, size_t errlen);

#endif

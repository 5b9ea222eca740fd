/* AWS Signature Version 4 for a request kilovolt sends upstream (Bedrock:
 * service "bedrock", the upstream's region): the canonical request, the
 * string to sign, the signing key and the Authorization header, as AWS's
 * own signer (@smithy/signature-v4, which the AWS SDK for JavaScript uses)
 * computes them. The body is whole before sending, so its SHA-256 is given,
 * never read here. Header signing only: no presigned URLs, no chunked
 * payload signing, no SigV4a. */
#ifndef KV_SIGV4_H
#define KV_SIGV4_H

#include <stddef.h>
#include <time.h>

#define KV_SIGV4_AUTH_MAX	1024	/* the Authorization value, NUL included */
#define KV_SIGV4_CANON_MAX	(16 * 1024)	/* a canonical request, at most */
#define KV_SIGV4_HEADERS_MAX	32	/* caller's headers signed, at most */
#define KV_SIGV4_QUERY_MAX	64	/* query parameters, at most */
#define KV_SIGV4_SEGMENTS_MAX	128	/* path segments, at most */

/* One header of the request as it will be sent: the name in any case, the
 * value as sent (no CR, LF or NUL in either). */
struct kv_sigv4_header {
	const char	*name;
	size_t		 name_len;
	const char	*value;
	size_t		 value_len;
};

/* The request to sign. TARGET is the request-target exactly as it goes on
 * the wire (path, then '?' and the query if any), percent-escapes and all:
 * the canonical URI escapes it once more (a model ARN sent as
 * arn%3Aaws%3A...%2F... signs as arn%253Aaws%253A...%252F..., as AWS does for
 * every service but S3). HOST is the Host header's value. HEADERS are the
 * other headers to sign (content-type, accept, x-amzn-...); the ones AWS's
 * signer never signs (user-agent, connection, expect, transfer-encoding,
 * proxy-*, sec-*, ...) are left out as it leaves them out, and the ones
 * this signer writes (host, authorization, x-amz-date,
 * x-amz-security-token, x-amz-content-sha256) are refused. BODY_SHA256 is
 * the body's SHA-256 in lowercase hex (64 digits); CONTENT_SHA256 asks for
 * an x-amz-content-sha256 header holding it (S3 needs one; AWS's signer
 * adds it by default). */
struct kv_sigv4_request {
	const char			*method;
	const char			*target;
	size_t				 target_len;
	const char			*host;
	const struct kv_sigv4_header	*headers;
	size_t				 nheaders;
	const char			*body_sha256;
	int				 content_sha256;
};

/* Credentials: TOKEN is the session token of temporary credentials (STS,
 * the instance role), NULL or "" for long-term keys. */
struct kv_sigv4_creds {
	const char	*access_key;
	const char	*secret;
	const char	*token;
};

/* The signing key of one access key, day, region and service, kept
 * between requests (deriving it is four HMACs). Zero it to start; an
 * access key id names one secret, so a new key id or day re-derives it. */
struct kv_sigv4_key {
	char		access_key[129];
	char		date[9];
	char		region[33];
	char		service[33];
	unsigned char	key[32];
};

/* What the caller adds to the request: Authorization: AUTHORIZATION and
 * X-Amz-Date: AMZ_DATE, then X-Amz-Security-Token: the token when there is
 * one, and X-Amz-Content-Sha256: the body hash when asked. */
struct kv_sigv4_out {
	char	amz_date[17];	/* YYYYMMDDTHHMMSSZ */
	char	authorization[KV_SIGV4_AUTH_MAX];
};

/* Sign R with C for REGION and SERVICE at NOW (UTC seconds), the signing
 * key from, or derived into, KEY (may be NULL: derived each time). Returns
 * 0, or -1 with the reason in ERR[0..ERRLEN) (malformed request, a limit
 * above passed, a crypto failure). */
int	kv_sigv4_sign(const struct kv_sigv4_request *r, const struct kv_sigv4_creds *c,
	    const char *region, const char *service, time_t now, struct kv_sigv4_key *key,
	    struct kv_sigv4_out *out, char *err, size_t errlen);

/* The canonical request of R signed at AMZ_DATE (with token TOKEN, NULL
 * for none) into BUF[0..CAP), NUL-terminated, and the semicolon-separated
 * signed-header list into SIGNED[0..SIGNED_CAP). Returns the canonical
 * request's length, or -1 with the reason in ERR. Pure; kv_sigv4_sign
 * hashes what it writes. */
long	kv_sigv4_canonical(const struct kv_sigv4_request *r, const char *amz_date,
	    const char *token, char *buf, size_t cap, char *signed_hdrs, size_t signed_cap,
	    char *err, size_t errlen);

#endif

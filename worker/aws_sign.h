/* Upstream authentication of a request to a Bedrock upstream (provider =
 * bedrock) without api_key: AWS SigV4 (service "bedrock", the upstream's
 * region) with the credentials the master publishes (common/aws_creds.h),
 * and which of the client's headers never go to such an upstream. One
 * signing key per worker and upstream, re-derived when the day, or the
 * credentials' generation, changes. Called by the build phase
 * (request_build.c) and the retry's rewrite (upstream_rewrite.c). */
#ifndef KV_AWS_SIGN_H
#define KV_AWS_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "common/aws_creds.h"
#include "common/config.h"
#include "common/sigv4.h"

/* Room the lines kv_aws_sign_lines writes take, at most. */
#define KV_AWS_SIGN_ROOM	(KV_AWS_TOKEN_MAX + KV_SIGV4_AUTH_MAX + 128)

/* Whether a client's header NAME (LEN bytes) is kept from a Bedrock
 * upstream: a credential (Authorization, x-api-key, api-key) or any
 * X-Amz-* (a client's own signature, date or token). */
int	kv_aws_drop_header(const char *name, size_t len);

/* The lowercase hex SHA-256 (HEX: 65 bytes) of a body: N parts in memory,
 * or the spool file FD's BODY_BYTES with INJ (INJLEN bytes, may be NULL)
 * inserted at INJ_AT, as request_send.c sends them. 0, or -1. */
int	kv_aws_hash_parts(const void *const *p, const size_t *len, int n, char hex[65]);
int	kv_aws_hash_spool(int fd, int64_t body_bytes, const char *inj, size_t injlen,
	    int64_t inj_at, char hex[65]);

/* The lines signing METHOD TARGET (TLEN bytes, exactly as on the wire)
 * with body hash HEX for UP (its Host, its region): "X-Amz-Date: ...",
 * "X-Amz-Security-Token: ..." with a session token, "Authorization:
 * AWS4-HMAC-SHA256 ...", each ending CRLF, at OUT (KV_AWS_SIGN_ROOM
 * bytes). Returns their length, or -1 with *MSG for the client (no
 * credentials published yet; a request the signer refuses). No secret is
 * ever logged. */
int	kv_aws_sign_lines(const struct kv_upstream *up, const char *method, const char *target,
	    size_t tlen, const char *hex, char *out, const char **msg);

#endif

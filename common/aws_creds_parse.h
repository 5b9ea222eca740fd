/* The answers of AWS's credential services, parsed: STS
 * AssumeRoleWithWebIdentity's XML, the instance metadata service's role
 * list and role credentials JSON, and the ISO 8601 times they carry. Pure
 * functions: no allocation, no I/O. Every value kept is checked to be fit
 * for an HTTP header (printable ASCII, no blank) and to fit its field. */
#ifndef KV_AWS_CREDS_PARSE_H
#define KV_AWS_CREDS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "common/aws_creds.h"

#define KV_AWS_ROLE_MAX		128	/* an IAM role name (AWS: 64) */

/* "YYYY-MM-DDTHH:MM:SS[.fff]Z" (or "+00:00") into Unix seconds *OUT.
 * Returns 0, or -1 for anything else. */
int	kv_aws_parse_time(const char *s, size_t len, int64_t *out);

/* STS's AssumeRoleWithWebIdentityResponse (XML, LEN bytes, not
 * terminated): AccessKeyId, SecretAccessKey, SessionToken and Expiration
 * of its Credentials element into *OUT (source not set). An ErrorResponse
 * gives its Code and Message in ERR. Returns 0, or -1 with the reason in
 * ERR[0..ERRLEN). */
int	kv_aws_parse_sts(const char *xml, size_t len, struct kv_aws_creds *out,
	    char *err, size_t errlen);

/* IMDS's GET .../iam/security-credentials/ answer: the first line, the
 * instance role's name, into ROLE[0..KV_AWS_ROLE_MAX + 1). Returns 0, or -1
 * (no role, or not a role name) with the reason in ERR. */
int	kv_aws_parse_role(const char *body, size_t len, char *role, char *err, size_t errlen);

/* IMDS's GET .../iam/security-credentials/ROLE answer (JSON): Code must be
 * "Success"; AccessKeyId, SecretAccessKey, Token and Expiration into *OUT.
 * Returns 0, or -1 with the reason in ERR. */
int	kv_aws_parse_imds(const char *json, size_t len, struct kv_aws_creds *out,
	    char *err, size_t errlen);

/* Whether S is fit to be a credential value in a header: 1..MAX bytes of
 * printable ASCII with no blank. */
int	kv_aws_value_ok(const char *s, size_t max);

#endif

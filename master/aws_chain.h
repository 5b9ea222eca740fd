/* AWS's credential chain, in AWS's own order and with its variable names,
 * run once: the static keys of kilovoltd's environment
 * (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN); else web
 * identity (AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN,
 * AWS_ROLE_SESSION_NAME) through STS AssumeRoleWithWebIdentity at
 * AWS_ENDPOINT_URL_STS or https://sts.REGION.amazonaws.com; else the
 * instance role through IMDSv2 at AWS_EC2_METADATA_SERVICE_ENDPOINT or
 * http://169.254.169.254 (AWS_EC2_METADATA_DISABLED=true skips it).
 * Blocking, each exchange bounded (master/http_fetch.h): for the master's
 * start-up and its refresh helper process, never its loop. */
#ifndef KV_AWS_CHAIN_H
#define KV_AWS_CHAIN_H

#include <stddef.h>

#include "common/aws_creds.h"

#define KV_AWS_STS_TIMEOUT_MS	10000	/* one STS exchange */
#define KV_AWS_IMDS_TIMEOUT_MS	2000	/* one IMDS exchange (the SDKs: 1 s) */

/* Credentials from the first source of the chain that is set up, into
 * *OUT (source set). REGION names STS's regional endpoint (AWS_REGION or
 * AWS_DEFAULT_REGION win when set). Returns 0, or -1 with the reason in
 * ERR[0..ERRLEN): which source failed and why, or that none is set up.
 * Nothing secret goes into ERR. */
int	kv_aws_chain_fetch(const char *region, struct kv_aws_creds *out, char *err,
	    size_t errlen);

#endif

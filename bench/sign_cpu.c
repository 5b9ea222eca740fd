/* bench/sign_cpu: the CPU a Bedrock request's SigV4 costs kilovolt's
 * worker (issue 35; goal: at most 5 us a request), timed with
 * CLOCK_PROCESS_CPUTIME_ID: the body's SHA-256 and the signing lines
 * (kv_aws_sign_lines: the credentials' generation checked, the canonical
 * request hashed, one HMAC with the cached key) of an
 * invoke-with-response-stream request with a session token, as
 * request_build.c calls them; then the same with the key derived every
 * time (a new day or new credentials), and the body hash alone.
 *
 * usage: bench/sign_cpu [N] [BODY_BYTES]   (200000, 1024) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/aws_creds.h"
#include "worker/aws_sign.h"

static double
cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int
main(int argc, char **argv)
{
	static const char target[] = "/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/"
	    "invoke-with-response-stream";
	static char out[KV_AWS_SIGN_ROOM];
	long n = argc > 1 ? atol(argv[1]) : 200000, i, blen = argc > 2 ? atol(argv[2]) : 1024;
	struct kv_upstream up;
	struct kv_aws_creds c;
	struct kv_aws_slot *s = kv_aws_slot_map();
	char hex[65], *body = malloc((size_t)blen);
	const char *msg;
	const void *p[1];
	size_t len[1];
	double t0, mode[3];
	int m;

	if (s == NULL || body == NULL)
		return 1;
	memset(body, 'x', (size_t)blen);
	memset(&up, 0, sizeof(up));
	snprintf(up.name, sizeof(up.name), "bedrock");
	snprintf(up.host_header, sizeof(up.host_header), "bedrock-runtime.us-east-1.amazonaws.com");
	snprintf(up.aws_region, sizeof(up.aws_region), "us-east-1");
	memset(&c, 0, sizeof(c));
	snprintf(c.access_key, sizeof(c.access_key), "ASIAEXAMPLE000000001");
	snprintf(c.secret, sizeof(c.secret), "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
	memset(c.token, 'T', 1100);	/* an STS session token's usual size */
	kv_aws_slot_publish(s, &c);
	p[0] = body;
	len[0] = (size_t)blen;
	for (m = 0; m < 3; m++) {
		t0 = cpu_us();
		for (i = 0; i < n; i++) {
			if (m == 1)	/* new credentials: every key re-derived */
				kv_aws_slot_publish(s, &c);
			if (kv_aws_hash_parts(p, len, 1, hex) == -1)
				return 1;
			if (m < 2 && kv_aws_sign_lines(&up, "POST", target, sizeof(target) - 1, hex, out,
			    &msg) == -1) {
				fprintf(stderr, "%s\n", msg);
				return 1;
			}
		}
		mode[m] = (cpu_us() - t0) / (double)n;
	}
	printf("body %ld B, %ld requests: signed (key cached) %.2f us, signed (key derived) "
	    "%.2f us, body hash alone %.2f us a request\n", blen, n, mode[0], mode[1], mode[2]);
	return 0;
}

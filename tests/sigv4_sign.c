/* A driver for tests/t_sigv4.sh: signs the requests read from stdin with
 * kilovolt's signer (common/sigv4.h) and prints each Authorization value,
 * for tests/sdk/sigv4_check.mjs to compare with AWS's own signer. One
 * request a line, tab-separated fields, each hex-encoded (so any byte can
 * be given): method, request-target, host, headers (name=value pairs,
 * each side hex, joined by ','), body SHA-256, x-amz-content-sha256 wanted
 * (1/0), access key id, secret, session token, region, service, and the
 * time in seconds since the epoch (decimal). Output per line: the
 * X-Amz-Date and the Authorization value tab-separated, or "ERROR reason". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/sigv4.h"

#define FIELDS	12
#define LINE_MAX_ (256 * 1024)

/* Decode hex S[0..N) in place, NUL-terminated; its length, or -1. */
static long
unhex(char *s, size_t n)
{
	size_t i;
	int hi, lo;

	if (n % 2)
		return -1;
	for (i = 0; i < n / 2; i++) {
		if ((hi = kv_hexval((unsigned char)s[2 * i])) < 0 ||
		    (lo = kv_hexval((unsigned char)s[2 * i + 1])) < 0)
			return -1;
		s[i] = (char)(hi << 4 | lo);
	}
	s[n / 2] = '\0';
	return (long)(n / 2);
}

/* The headers field: "name=value,name=value" (each side hex). */
static int
parse_headers(char *s, struct kv_sigv4_header *h, size_t *nh)
{
	char *pair, *eq, *save = NULL;
	long nl, vl;

	*nh = 0;
	for (pair = strtok_r(s, ",", &save); pair; pair = strtok_r(NULL, ",", &save)) {
		if ((eq = strchr(pair, '=')) == NULL || *nh == 64)
			return -1;
		*eq = '\0';
		if ((nl = unhex(pair, strlen(pair))) < 0 || (vl = unhex(eq + 1, strlen(eq + 1))) < 0)
			return -1;
		h[*nh].name = pair;
		h[*nh].name_len = (size_t)nl;
		h[*nh].value = eq + 1;
		h[*nh].value_len = (size_t)vl;
		(*nh)++;
	}
	return 0;
}

static void
sign_line(char *line)
{
	char *f[FIELDS], *p = line, err[256];
	struct kv_sigv4_header h[64];
	struct kv_sigv4_request r;
	struct kv_sigv4_creds c;
	struct kv_sigv4_out out;
	long tlen = 0;
	size_t i, nh;

	for (i = 0; i < FIELDS; i++) {
		f[i] = p;
		p = strchr(p, '\t');
		if ((p == NULL) != (i == FIELDS - 1)) {
			printf("ERROR field count\n");
			return;
		}
		if (p)
			*p++ = '\0';
		if (i != 3 && i != FIELDS - 1 &&
		    (i == 1 ? (tlen = unhex(f[i], strlen(f[i]))) : unhex(f[i], strlen(f[i]))) < 0) {
			printf("ERROR hex\n");
			return;
		}
	}
	if (parse_headers(f[3], h, &nh) == -1) {
		printf("ERROR headers\n");
		return;
	}
	r = (struct kv_sigv4_request){ f[0], f[1], (size_t)tlen, f[2], h, nh, f[4],
		strcmp(f[5], "1") == 0 };
	c = (struct kv_sigv4_creds){ f[6], f[7], f[8] };
	if (kv_sigv4_sign(&r, &c, f[9], f[10], (time_t)strtoll(f[11], NULL, 10), NULL, &out,
	    err, sizeof(err)) == -1)
		printf("ERROR %s\n", err);
	else
		printf("%s\t%s\n", out.amz_date, out.authorization);
}

int
main(void)
{
	static char line[LINE_MAX_];
	size_t n;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		n = strlen(line);
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		sign_line(line);
	}
	return ferror(stdin) ? 1 : 0;
}

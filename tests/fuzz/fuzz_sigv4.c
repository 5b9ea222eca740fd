/* libFuzzer target: the SigV4 canonical request (common/sigv4.h), which
 * parses the request-target (path segments, query parameters and their
 * percent-escapes) and the headers it is given. The input is split at
 * '\n' into the target, the host and up to 40 "name:value" headers. The
 * canonical request must come out NUL-terminated within its buffer or be
 * refused with a reason, the same twice, and signing must agree with it:
 * it fails exactly when the canonical request does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sigv4.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char canon[KV_SIGV4_CANON_MAX], again[KV_SIGV4_CANON_MAX];
	static char sh[KV_SIGV4_AUTH_MAX], sh2[KV_SIGV4_AUTH_MAX];
	struct kv_sigv4_header h[40];
	struct kv_sigv4_creds c = { "AKIDEXAMPLE", "secret", "token" };
	struct kv_sigv4_request r;
	struct kv_sigv4_out out;
	char *in, *line, *next, *colon, err[128], host[256] = "h";
	size_t nh = 0;
	long n, m;
	int rc, have_host = 0;

	if ((in = malloc(size + 1)) == NULL)
		abort();
	memcpy(in, data, size);
	in[size] = '\0';
	line = in;
	next = memchr(line, '\n', size);
	r = (struct kv_sigv4_request){ "POST", line, next ? (size_t)(next - line) : size,
		host, h, 0, EMPTY, size % 2 };
	for (line = next; line != NULL && nh < 40; line = next) {
		line++;
		next = memchr(line, '\n', size - (size_t)(line - in));
		if (!have_host) {
			have_host = 1;
			snprintf(host, sizeof(host), "%.*s",
			    (int)(next ? next - line : (long)strlen(line)), line);
			if (host[0] == '\0')
				strcpy(host, "h");
			continue;
		}
		colon = memchr(line, ':', next ? (size_t)(next - line) : strlen(line));
		if (colon == NULL)
			continue;
		h[nh].name = line;
		h[nh].name_len = (size_t)(colon - line);
		h[nh].value = colon + 1;
		h[nh].value_len = (size_t)((next ? next : line + strlen(line)) - colon - 1);
		nh++;
	}
	r.nheaders = nh;
	n = kv_sigv4_canonical(&r, "20150830T123600Z", "token", canon, sizeof(canon), sh,
	    sizeof(sh), err, sizeof(err));
	m = kv_sigv4_canonical(&r, "20150830T123600Z", "token", again, sizeof(again), sh2,
	    sizeof(sh2), err, sizeof(err));
	if (n != m || (n >= 0 && (strlen(canon) != (size_t)n || strcmp(canon, again) != 0 ||
	    strcmp(sh, sh2) != 0)) || (n < 0 && err[0] == '\0'))
		abort();
	rc = kv_sigv4_sign(&r, &c, "us-east-1", "bedrock", 1440938160, NULL, &out, err, sizeof(err));
	/* signing fails where the canonical request does, or on a signed-header
	 * list too long for the Authorization header */
	if ((n < 0) != (rc < 0) && !(rc < 0 && strlen(sh) > KV_SIGV4_AUTH_MAX - 200))
		abort();
	free(in);
	return 0;
}

/* libFuzzer target for worker/tls13.c's record parser: the input is a byte
 * stream from a hostile server. The first byte picks the suite; the rest is
 * cut into records by kv_tls13_header and each is opened with a fixed key
 * and, if its tag should ever verify, acted on with kv_tls13_post. Then the
 * same bytes are sealed and must open to themselves. */
#include "worker/tls13.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static EVP_CIPHER_CTX *c;
	static uint8_t rec[KV_TLS13_HDR + KV_TLS13_MAX_CIPHER];
	static const uint8_t sec[48] = {7, 1, 2, 3};
	if (c == NULL && (c = EVP_CIPHER_CTX_new()) == NULL)
		abort();
	if (n == 0)
		return 0;
	enum kv_tls13_suite s = (enum kv_tls13_suite)(1 + d[0] % 3);
	struct kv_tls13_conn t = {0};
	if (kv_tls13_dir_init(&t.rd, s, sec, kv_tls13_secret_len(s)) < 0 ||
	    kv_tls13_dir_init(&t.wd, s, sec, kv_tls13_secret_len(s)) < 0)
		abort();
	d++, n--;
	for (size_t off = 0; n - off >= KV_TLS13_HDR;) {
		long body = kv_tls13_header(d + off);
		if (body < 0 || n - off - KV_TLS13_HDR < (size_t)body)
			break;
		size_t rl = KV_TLS13_HDR + (size_t)body;
		memcpy(rec, d + off, rl);
		off += rl;
		uint8_t type, alert;
		long m = kv_tls13_open(c, &t.rd, rec, rl, &type);
		if (m < 0)
			continue;
		if (m > KV_TLS13_MAX_PLAIN)
			abort();
		(void)kv_tls13_post(&t, type, rec + KV_TLS13_HDR, (size_t)m, &alert);
	}
	/* round trip: what we seal, we open, to the byte */
	size_t len = n > KV_TLS13_MAX_PLAIN ? KV_TLS13_MAX_PLAIN : n;
	struct kv_tls13_dir w = t.wd, r = t.wd;
	long rl = kv_tls13_seal(c, &w, KV_TLS13_APPDATA, d, len, rec);
	uint8_t type;
	if (rl < 0 || kv_tls13_open(c, &r, rec, (size_t)rl, &type) != (long)len ||
	    type != KV_TLS13_APPDATA || memcmp(rec + KV_TLS13_HDR, d, len) != 0)
		abort();
	return 0;
}

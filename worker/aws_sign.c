/* SigV4 for Bedrock upstreams in the worker: see aws_sign.h. The worker
 * copies the master's credentials out of the shared slot only when their
 * generation moved (one atomic load a request otherwise), and keeps a
 * signing key per upstream, so a request costs the body's hash, one
 * canonical request's hash and one HMAC. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "worker/aws_sign.h"

#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/hex.h"
#include "common/log.h"
#include "worker/spool.h"

#define KEYS_MAX	16	/* Bedrock upstreams with a cached key; more derive each time */

static struct {
	uint64_t		 gen;		/* of the copy below; 0: none */
	struct kv_aws_creds	 creds;
	struct {
		const struct kv_upstream *up;
		struct kv_sigv4_key	  key;
	}			 keys[KEYS_MAX];
} W;

int
kv_aws_drop_header(const char *name, size_t len)
{
	return (len >= 6 && strncasecmp(name, "x-amz-", 6) == 0) ||
	    (len == 13 && strncasecmp(name, "authorization", 13) == 0) ||
	    (len == 9 && strncasecmp(name, "x-api-key", 9) == 0) ||
	    (len == 7 && strncasecmp(name, "api-key", 7) == 0);
}

/* One digest context per process, reused (allocating one per request
 * costs more than hashing a small body). */
static EVP_MD_CTX *
digest_start(void)
{
	static EVP_MD *md;
	static EVP_MD_CTX *ctx;

	if (md == NULL && (md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		return NULL;
	if (ctx == NULL && (ctx = EVP_MD_CTX_new()) == NULL)
		return NULL;
	return EVP_DigestInit_ex2(ctx, md, NULL) == 1 ? ctx : NULL;
}

static int
digest_end(EVP_MD_CTX *ctx, char hex[65])
{
	unsigned char d[32];
	unsigned int n = 0;

	if (EVP_DigestFinal_ex(ctx, d, &n) != 1 || n != 32)
		return -1;
	kv_hex_encode(d, 32, hex);
	return 0;
}

int
kv_aws_hash_parts(const void *const *p, const size_t *len, int n, char hex[65])
{
	EVP_MD_CTX *ctx = digest_start();
	int i;

	if (ctx == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (len[i] > 0 && EVP_DigestUpdate(ctx, p[i], len[i]) != 1)
			return -1;
	return digest_end(ctx, hex);
}

/* The file's bytes [FROM, TO) into the digest. */
static int
hash_file(EVP_MD_CTX *ctx, int fd, int64_t from, int64_t to)
{
	static char buf[64 * 1024];
	ssize_t n;

	while (from < to) {
		size_t want = to - from < (int64_t)sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
		if ((n = kv_spool_pread(fd, buf, want, from)) != (ssize_t)want)
			return -1;
		if (EVP_DigestUpdate(ctx, buf, want) != 1)
			return -1;
		from += (int64_t)want;
	}
	return 0;
}

int
kv_aws_hash_spool(int fd, int64_t body_bytes, const char *inj, size_t injlen, int64_t inj_at,
    char hex[65])
{
	EVP_MD_CTX *ctx = digest_start();
	int64_t at = inj != NULL ? inj_at : body_bytes;

	if (ctx == NULL || hash_file(ctx, fd, 0, at) == -1 ||
	    (inj != NULL && EVP_DigestUpdate(ctx, inj, injlen) != 1) ||
	    hash_file(ctx, fd, at, body_bytes) == -1)
		return -1;
	return digest_end(ctx, hex);
}

/* The worker's copy of the credentials, fresh; NULL when none yet. */
static const struct kv_aws_creds *
creds_now(void)
{
	const struct kv_aws_slot *s = kv_aws_slot_get();
	uint64_t g;

	if (s == NULL || (g = kv_aws_slot_generation(s)) == 0)
		return NULL;
	if (g != W.gen) {
		if (kv_aws_slot_read(s, &W.creds, &W.gen) == -1)
			return NULL;
		/* The secret may have changed under the same key id. */
		kv_aws_wipe(W.keys, sizeof(W.keys));
	}
	return &W.creds;
}

static struct kv_sigv4_key *
key_of(const struct kv_upstream *up)
{
	int i;

	for (i = 0; i < KEYS_MAX; i++) {
		if (W.keys[i].up == up)
			return &W.keys[i].key;
		if (W.keys[i].up == NULL) {
			W.keys[i].up = up;
			return &W.keys[i].key;
		}
	}
	return NULL;	/* derived for this request only */
}

/* "NAME" VALUE CRLF at OUT + N; the new length. */
static int
put(char *out, int n, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	memcpy(out + n, name, nl);
	memcpy(out + n + nl, value, vl);
	memcpy(out + n + nl + vl, "\r\n", 2);
	return n + (int)(nl + vl + 2);
}

int
kv_aws_sign_lines(const struct kv_upstream *up, const char *method, const char *target,
    size_t tlen, const char *hex, char *out, const char **msg)
{
	const struct kv_aws_creds *c = creds_now();
	struct kv_sigv4_request r = { .method = method, .target = target, .target_len = tlen,
	    .host = up->host_header, .body_sha256 = hex };
	struct kv_sigv4_creds sc;
	struct kv_sigv4_out o;
	char err[160];
	int n;

	if (c == NULL) {
		*msg = "the gateway has no AWS credentials for this upstream yet";
		return -1;
	}
	sc = (struct kv_sigv4_creds){ c->access_key, c->secret, c->token };
	if (kv_sigv4_sign(&r, &sc, up->aws_region, "bedrock", time(NULL), key_of(up), &o,
	    err, sizeof(err)) == -1) {
		kv_log_warnx("KV0477", "upstream %s: cannot sign the request: %s", up->name, err);
		*msg = "the gateway cannot sign this request for AWS";
		return -1;
	}
	/* By hand, not snprintf: a session token is a kilobyte or more. The
	 * pieces' limits add up to less than KV_AWS_SIGN_ROOM. */
	n = put(out, 0, "X-Amz-Date: ", o.amz_date);
	if (c->token[0] != '\0')
		n = put(out, n, "X-Amz-Security-Token: ", c->token);
	return put(out, n, "Authorization: ", o.authorization);
}

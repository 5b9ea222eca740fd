/* Google's credentials for Vertex AI: see gcp_chain.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/gcp_chain.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/gcp_parse.h"
#include "common/jwt_sign.h"
#include "master/http_fetch.h"

#define ANSWER_MAX	(64 * 1024)
#define FILE_MAX	(64 * 1024)
#define ASSERT_MAX	4096
#define LIFE_S		3600	/* the assertion's, Google's most */

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The key file's contents into BUF (CAP bytes), terminated; its length. */
static long
read_file(const char *path, char *buf, size_t cap, char *err, size_t errlen)
{
	size_t got = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "GOOGLE_APPLICATION_CREDENTIALS %s: %s", path, strerror(errno));
		return -1;
	}
	while (got + 1 < cap && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	if (got + 1 >= cap) {
		snprintf(err, errlen, "GOOGLE_APPLICATION_CREDENTIALS %s: over %zu bytes", path,
		    cap - 2);
		return -1;
	}
	return (long)got;
}

/* The form posted to the token endpoint: the grant and the signed
 * assertion, into FORM (CAP bytes); its length, or 0. */
static size_t
assertion_form(const struct kv_gcp_sa *sa, char *form, size_t cap, char *err, size_t errlen)
{
	char claims[1536], jwt[ASSERT_MAX];
	long now = (long)time(NULL);
	size_t at = 0;
	int n;

	n = snprintf(claims, sizeof(claims), "{\"iss\":\"%s\",\"scope\":\"%s\",\"aud\":\"%s\","
	    "\"iat\":%ld,\"exp\":%ld}", sa->client_email, KV_GCP_SCOPE, sa->token_uri, now,
	    now + LIFE_S);
	if (n < 0 || (size_t)n >= sizeof(claims) || strpbrk(sa->client_email, "\"\\") != NULL ||
	    strpbrk(sa->token_uri, "\"\\") != NULL) {
		snprintf(err, errlen, "client_email or token_uri too long or holding quotes");
		return 0;
	}
	if (kv_jwt_sign_rs256(sa->private_key, sa->private_key_id, claims, jwt, sizeof(jwt),
	    err, errlen) == -1)
		return 0;
	if (kv_fetch_form_add(form, cap, &at, "grant_type",
	    "urn:ietf:params:oauth:grant-type:jwt-bearer") == -1 ||
	    kv_fetch_form_add(form, cap, &at, "assertion", jwt) == -1) {
		snprintf(err, errlen, "the assertion does not fit the form");
		at = 0;
	}
	OPENSSL_cleanse(jwt, sizeof(jwt));
	return at;
}

/* One exchange, its 200 answer parsed into *OUT; WHERE names it in ERR. */
static int
exchange(const struct kv_fetch_req *r, const char *where, struct kv_gcp_token *out,
    char *err, size_t errlen)
{
	static char ans[ANSWER_MAX];
	const char *body;
	char why[512];
	size_t blen;
	int st, rc = -1;

	if ((st = kv_fetch(r, ans, sizeof(ans), &body, &blen, why, sizeof(why))) == -1)
		snprintf(err, errlen, "%s %s:%s: %s", where, r->url->host, r->url->port, why);
	else if (kv_gcp_parse_token(body, blen, (int64_t)time(NULL), out, why, sizeof(why)) == -1)
		snprintf(err, errlen, "%s %s:%s answered %d: %s", where, r->url->host,
		    r->url->port, st, why);
	else if (st != 200)
		snprintf(err, errlen, "%s %s:%s answered %d", where, r->url->host, r->url->port, st);
	else
		rc = 0;
	OPENSSL_cleanse(ans, sizeof(ans));
	return rc;
}

static int
from_file(const char *path, struct kv_gcp_token *out, char *err, size_t errlen)
{
	static char file[FILE_MAX], form[2 * ASSERT_MAX];
	static struct kv_gcp_sa sa;
	struct kv_fetch_url u;
	struct kv_fetch_req r = { .url = &u, .method = "POST", .timeout_ms =
	    KV_GCP_TOKEN_TIMEOUT_MS, .headers = "Content-Type: application/x-www-form-urlencoded\r\n" };
	char why[256];
	long n;
	int rc = -1;

	if ((n = read_file(path, file, sizeof(file), err, errlen)) == -1)
		goto out;
	if (kv_gcp_parse_sa(file, (size_t)n, &sa, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "GOOGLE_APPLICATION_CREDENTIALS %s: %s", path, why);
		goto out;
	}
	if (kv_fetch_parse_url(sa.token_uri, &u) == -1) {
		snprintf(err, errlen, "%s: token_uri is not an http(s) URL", path);
		goto out;
	}
	if ((r.body_len = assertion_form(&sa, form, sizeof(form), why, sizeof(why))) == 0) {
		snprintf(err, errlen, "service account %s: %s", sa.client_email, why);
		goto out;
	}
	r.body = form;
	if ((rc = exchange(&r, "service account: token endpoint", out, err, errlen)) == 0)
		out->source = KV_GCP_SA_FILE;
out:
	OPENSSL_cleanse(file, sizeof(file));
	OPENSSL_cleanse(form, sizeof(form));
	OPENSSL_cleanse(&sa, sizeof(sa));
	return rc;
}

static int
from_metadata(struct kv_gcp_token *out, char *err, size_t errlen)
{
	const char *host = env("GCE_METADATA_HOST");
	char url[300];
	struct kv_fetch_url u;
	struct kv_fetch_req r = { .url = &u, .method = "GET", .timeout_ms =
	    KV_GCP_METADATA_TIMEOUT_MS, .headers = "Metadata-Flavor: Google\r\n",
	    .path = "/computeMetadata/v1/instance/service-accounts/default/token" };

	snprintf(url, sizeof(url), "http://%s", host != NULL ? host : "metadata.google.internal");
	if (kv_fetch_parse_url(url, &u) == -1) {
		snprintf(err, errlen, "metadata server: GCE_METADATA_HOST %s is not a HOST[:PORT]",
		    host);
		return -1;
	}
	if (exchange(&r, "metadata server", out, err, errlen) == -1)
		return -1;
	out->source = KV_GCP_METADATA;
	return 0;
}

int
kv_gcp_chain_fetch(struct kv_gcp_token *out, char *err, size_t errlen)
{
	const char *file = env("GOOGLE_APPLICATION_CREDENTIALS");

	if (file != NULL)
		return from_file(file, out, err, errlen);
	return from_metadata(out, err, errlen);
}

/* AWS's credential chain: see aws_chain.h. Each source either is not set
 * up (the next one is tried), or gives credentials, or fails: a source
 * that is set up and fails is the answer, as in AWS's SDKs, so a broken
 * web identity is not hidden behind an instance role nobody meant. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/aws_chain.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/aws_creds_parse.h"
#include "master/http_fetch.h"

#define ANSWER_MAX	(64 * 1024)
#define WEB_TOKEN_MAX	(16 * 1024)

enum { NOT_SET_UP = 1 };

static const char *
env(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

static int
from_env(struct kv_aws_creds *out, char *err, size_t errlen)
{
	const char *id = env("AWS_ACCESS_KEY_ID"), *sk = env("AWS_SECRET_ACCESS_KEY"),
	    *tok = env("AWS_SESSION_TOKEN");

	if (id == NULL || sk == NULL)
		return NOT_SET_UP;
	memset(out, 0, sizeof(*out));
	snprintf(out->access_key, sizeof(out->access_key), "%s", id);
	snprintf(out->secret, sizeof(out->secret), "%s", sk);
	snprintf(out->token, sizeof(out->token), "%s", tok != NULL ? tok : "");
	if (!kv_aws_value_ok(out->access_key, KV_AWS_KEY_MAX) || strlen(id) > KV_AWS_KEY_MAX ||
	    !kv_aws_value_ok(out->secret, KV_AWS_SECRET_MAX) || strlen(sk) > KV_AWS_SECRET_MAX ||
	    (tok != NULL && (!kv_aws_value_ok(out->token, KV_AWS_TOKEN_MAX) ||
	    strlen(tok) > KV_AWS_TOKEN_MAX))) {
		snprintf(err, errlen, "env: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or "
		    "AWS_SESSION_TOKEN is too long or holds blanks or control bytes");
		return -1;
	}
	out->source = KV_AWS_ENV;
	return 0;
}

/* The web identity token file's contents, trimmed, into TOK[0..CAP). */
static int
read_token(const char *path, char *tok, size_t cap, char *err, size_t errlen)
{
	ssize_t n;
	size_t got = 0;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "web identity: AWS_WEB_IDENTITY_TOKEN_FILE %s: %s", path,
		    strerror(errno));
		return -1;
	}
	while (got + 1 < cap && (n = read(fd, tok + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	while (got > 0 && (tok[got - 1] == '\n' || tok[got - 1] == '\r' || tok[got - 1] == ' '))
		got--;
	tok[got] = '\0';
	if (got == 0 || got + 1 >= cap) {
		snprintf(err, errlen, "web identity: token file %s is empty or over %zu bytes",
		    path, cap - 2);
		return -1;
	}
	return 0;
}

/* STS's URL: AWS_ENDPOINT_URL_STS, else the region's endpoint. */
static int
sts_url(const char *region, struct kv_fetch_url *u, char *err, size_t errlen)
{
	const char *e = env("AWS_ENDPOINT_URL_STS");
	char url[256];

	if (e == NULL)
		snprintf(url, sizeof(url), "https://sts.%s.amazonaws.com/", region);
	if (kv_fetch_parse_url(e != NULL ? e : url, u) == -1) {
		snprintf(err, errlen, "web identity: STS endpoint %s is not an http(s) URL",
		    e != NULL ? e : url);
		return -1;
	}
	return 0;
}

static int
from_web_identity(const char *region, struct kv_aws_creds *out, char *err, size_t errlen)
{
	const char *file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), *arn = env("AWS_ROLE_ARN"),
	    *name = env("AWS_ROLE_SESSION_NAME"), *body;
	static char tok[WEB_TOKEN_MAX], form[3 * WEB_TOKEN_MAX + 1024], ans[ANSWER_MAX];
	char session[64], why[256];
	struct kv_fetch_url u;
	struct kv_fetch_req r = { .url = &u, .method = "POST", .timeout_ms = KV_AWS_STS_TIMEOUT_MS,
	    .headers = "Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\n" };
	size_t at = 0, blen;
	int st, rc = -1;

	if (file == NULL || arn == NULL)
		return NOT_SET_UP;
	snprintf(session, sizeof(session), "kilovolt-%lld", (long long)time(NULL));
	if (sts_url(region, &u, err, errlen) == -1 ||
	    read_token(file, tok, sizeof(tok), err, errlen) == -1)
		goto out;
	if (kv_fetch_form_add(form, sizeof(form), &at, "Action", "AssumeRoleWithWebIdentity") == -1 ||
	    kv_fetch_form_add(form, sizeof(form), &at, "Version", "2011-06-15") == -1 ||
	    kv_fetch_form_add(form, sizeof(form), &at, "RoleArn", arn) == -1 ||
	    kv_fetch_form_add(form, sizeof(form), &at, "RoleSessionName", name ? name : session) == -1 ||
	    kv_fetch_form_add(form, sizeof(form), &at, "WebIdentityToken", tok) == -1) {
		snprintf(err, errlen, "web identity: AWS_ROLE_ARN or the session name too long");
		goto out;
	}
	r.body = form;
	r.body_len = at;
	r.ca_file = env("AWS_CA_BUNDLE");
	if ((st = kv_fetch(&r, ans, sizeof(ans), &body, &blen, why, sizeof(why))) == -1)
		snprintf(err, errlen, "web identity: STS %s:%s: %s", u.host, u.port, why);
	else if (kv_aws_parse_sts(body, blen, out, why, sizeof(why)) == -1)
		snprintf(err, errlen, "web identity: STS %s:%s answered %d: %s", u.host, u.port, st, why);
	else if (st != 200)
		snprintf(err, errlen, "web identity: STS %s:%s answered %d", u.host, u.port, st);
	else {
		out->source = KV_AWS_WEB_IDENTITY;
		rc = 0;
	}
out:
	kv_aws_wipe(tok, sizeof(tok));
	kv_aws_wipe(form, sizeof(form));
	kv_aws_wipe(ans, sizeof(ans));
	return rc;
}

/* One IMDS exchange: METHOD PATH (under the endpoint's own path) with
 * HEADERS; the body at *BODY on a 200, else -1 with the reason. */
static int
imds_call(const struct kv_fetch_url *u, const char *method, const char *path,
    const char *headers, char *ans, const char **body, size_t *blen, char *err, size_t errlen)
{
	struct kv_fetch_req r = { .url = u, .method = method, .headers = headers,
	    .timeout_ms = KV_AWS_IMDS_TIMEOUT_MS };
	char full[1300], why[256];
	size_t bl = strlen(u->path);
	int st;

	while (bl > 0 && u->path[bl - 1] == '/')
		bl--;
	snprintf(full, sizeof(full), "%.*s%s", (int)bl, u->path, path);
	r.path = full;
	if (strcmp(method, "PUT") == 0)
		r.body = "";
	if ((st = kv_fetch(&r, ans, ANSWER_MAX, body, blen, why, sizeof(why))) == 200)
		return 0;
	if (st == -1)
		snprintf(err, errlen, "instance role: IMDS %s:%s %s %s: %s", u->host, u->port,
		    method, path, why);
	else
		snprintf(err, errlen, "instance role: IMDS %s:%s answered %d to %s %s", u->host,
		    u->port, st, method, path);
	return -1;
}

static int
from_imds(struct kv_aws_creds *out, char *err, size_t errlen)
{
	static const char creds_path[] = "/latest/meta-data/iam/security-credentials/";
	const char *e = env("AWS_EC2_METADATA_SERVICE_ENDPOINT"), *dis, *body;
	static char ans[ANSWER_MAX];
	char hdr[256], path[256], role[KV_AWS_ROLE_MAX + 1], why[256];
	struct kv_fetch_url u;
	size_t blen;
	int rc = -1;

	if ((dis = env("AWS_EC2_METADATA_DISABLED")) != NULL && strcasecmp(dis, "true") == 0)
		return NOT_SET_UP;
	if (kv_fetch_parse_url(e != NULL ? e : "http://169.254.169.254", &u) == -1) {
		snprintf(err, errlen, "instance role: AWS_EC2_METADATA_SERVICE_ENDPOINT %s is "
		    "not an http(s) URL", e);
		return -1;
	}
	if (imds_call(&u, "PUT", "/latest/api/token",
	    "X-aws-ec2-metadata-token-ttl-seconds: 21600\r\n", ans, &body, &blen, err, errlen) == -1)
		goto out;
	if (blen == 0 || blen > 200 || !kv_aws_value_ok(body, 200)) {
		snprintf(err, errlen, "instance role: IMDS gave no usable session token");
		goto out;
	}
	snprintf(hdr, sizeof(hdr), "X-aws-ec2-metadata-token: %s\r\n", body);
	if (imds_call(&u, "GET", creds_path, hdr, ans, &body, &blen, err, errlen) == -1)
		goto out;
	if (kv_aws_parse_role(body, blen, role, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "instance role: %s", why);
		goto out;
	}
	snprintf(path, sizeof(path), "%s%s", creds_path, role);
	if (imds_call(&u, "GET", path, hdr, ans, &body, &blen, err, errlen) == -1)
		goto out;
	if (kv_aws_parse_imds(body, blen, out, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "instance role %s: %s", role, why);
		goto out;
	}
	out->source = KV_AWS_IMDS;
	rc = 0;
out:
	kv_aws_wipe(hdr, sizeof(hdr));
	kv_aws_wipe(ans, sizeof(ans));
	return rc;
}

int
kv_aws_chain_fetch(const char *region, struct kv_aws_creds *out, char *err, size_t errlen)
{
	const char *r = env("AWS_REGION");
	int rc;

	if (r == NULL)
		r = env("AWS_DEFAULT_REGION");
	if (r == NULL)
		r = region;
	if ((rc = from_env(out, err, errlen)) != NOT_SET_UP ||
	    (rc = from_web_identity(r, out, err, errlen)) != NOT_SET_UP ||
	    (rc = from_imds(out, err, errlen)) != NOT_SET_UP)
		return rc;
	snprintf(err, errlen, "no AWS credentials: set AWS_ACCESS_KEY_ID and "
	    "AWS_SECRET_ACCESS_KEY, or AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, or run "
	    "with an instance role (IMDS is disabled by AWS_EC2_METADATA_DISABLED)");
	return -1;
}

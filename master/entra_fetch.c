/* Entra ID's client-credentials grant (RFC 6749 4.4) at the tenant's token
 * endpoint: a form POST, answered in OAuth 2.0's JSON, which Google's
 * token endpoint speaks too (common/gcp_parse.h reads both). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/entra_fetch.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "common/entra_token.h"
#include "common/gcp_parse.h"
#include "master/http_fetch.h"

#define ENTRA_TIMEOUT_MS	10000

/* The grant's form into FORM (CAP bytes); its length, or -1. */
static int
entra_form(const struct kv_upstream *u, char *form, size_t cap, size_t *len)
{
	*len = 0;
	if (kv_fetch_form_add(form, cap, len, "grant_type", "client_credentials") == -1 ||
	    kv_fetch_form_add(form, cap, len, "client_id", u->client_id) == -1 ||
	    kv_fetch_form_add(form, cap, len, "client_secret", u->client_secret) == -1 ||
	    kv_fetch_form_add(form, cap, len, "scope", KV_ENTRA_SCOPE) == -1)
		return -1;
	return 0;
}

int
kv_entra_fetch(const struct kv_upstream *u, struct kv_gcp_token *t, char *err, size_t errlen)
{
	static char buf[32768];		/* the answer; a token is ~2 KB */
	struct kv_fetch_url url;
	struct kv_fetch_req rq;
	char form[2048], why[512];
	const char *body;
	size_t flen, blen;
	int status, r = -1;

	memset(t, 0, sizeof(*t));
	why[0] = '\0';
	if (kv_fetch_parse_url(u->entra_url, &url) == -1) {
		snprintf(err, errlen, "entra_url %s is not a URL kilovolt can fetch", u->entra_url);
		return -1;
	}
	if (entra_form(u, form, sizeof(form), &flen) == -1) {
		snprintf(err, errlen, "client_id and client_secret do not fit a form");
		goto out;
	}
	memset(&rq, 0, sizeof(rq));
	rq.url = &url;
	rq.method = "POST";
	rq.headers = "Content-Type: application/x-www-form-urlencoded\r\nAccept: application/json\r\n";
	rq.body = form;
	rq.body_len = flen;
	rq.ca_file = u->ca_file;
	rq.timeout_ms = ENTRA_TIMEOUT_MS;
	if ((status = kv_fetch(&rq, buf, sizeof(buf), &body, &blen, why, sizeof(why))) == -1) {
		snprintf(err, errlen, "%s: %s", u->entra_url, why);
		goto out;
	}
	if (kv_gcp_parse_token(body, blen, (int64_t)time(NULL), t, why, sizeof(why)) == -1 ||
	    status != 200) {
		snprintf(err, errlen, "%s answered %d: %s", u->entra_url, status,
		    status != 200 && why[0] == '\0' ? "no token" : why);
		memset(t, 0, sizeof(*t));
		goto out;
	}
	t->source = KV_ENTRA_CLIENT_SECRET;
	r = 0;
out:
	OPENSSL_cleanse(form, sizeof(form));
	OPENSSL_cleanse(buf, sizeof(buf));
	return r;
}

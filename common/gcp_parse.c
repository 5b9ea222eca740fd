/* Parsers of Google's credential documents: see gcp_parse.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/gcp_parse.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/jsonread.h"

/* A string member's value into OUT (CAP bytes); a value too long, or not
 * a string, says which member. */
static int
str_member(struct kv_jr *jr, const char *name, char *out, size_t cap)
{
	char what[96];

	if (kv_jr_peek(jr) != KV_JR_STRING) {
		snprintf(what, sizeof(what), "\"%s\" is not a string", name);
		return kv_jr_fail(jr, what);
	}
	return kv_jr_string(jr, out, cap);
}

static void
say(char *err, size_t errlen, const char *what, const struct kv_jr *jr)
{
	snprintf(err, errlen, "%s%s%s", what, jr != NULL ? ": " : "", jr != NULL ? jr->err : "");
}

int
kv_gcp_parse_sa(const char *json, size_t len, struct kv_gcp_sa *out, char *err,
    size_t errlen)
{
	struct kv_jr jr;
	char key[32], type[32] = "";
	int r;

	memset(out, 0, sizeof(*out));
	kv_jr_init(&jr, json, len);
	if (kv_jr_enter(&jr, KV_JR_OBJECT) == -1) {
		say(err, errlen, "not a JSON object", &jr);
		return -1;
	}
	while ((r = kv_jr_member(&jr, key, sizeof(key))) == 1) {
		if (strcmp(key, "type") == 0)
			r = str_member(&jr, key, type, sizeof(type));
		else if (strcmp(key, "client_email") == 0)
			r = str_member(&jr, key, out->client_email, sizeof(out->client_email));
		else if (strcmp(key, "private_key") == 0)
			r = str_member(&jr, key, out->private_key, sizeof(out->private_key));
		else if (strcmp(key, "private_key_id") == 0)
			r = str_member(&jr, key, out->private_key_id, sizeof(out->private_key_id));
		else if (strcmp(key, "token_uri") == 0)
			r = str_member(&jr, key, out->token_uri, sizeof(out->token_uri));
		else
			r = kv_jr_skip(&jr);
		if (r == -1)
			break;
	}
	if (r == -1 || kv_jr_finish(&jr) == -1) {
		say(err, errlen, "not a service account key file", &jr);
		return -1;
	}
	if (strcmp(type, "service_account") != 0) {
		say(err, errlen, "\"type\" is not \"service_account\"", NULL);
		return -1;
	}
	if (out->client_email[0] == '\0' || out->private_key[0] == '\0') {
		say(err, errlen, "\"client_email\" or \"private_key\" is missing", NULL);
		return -1;
	}
	if (out->token_uri[0] == '\0')
		snprintf(out->token_uri, sizeof(out->token_uri), "%s", KV_GCP_TOKEN_URI);
	return 0;
}

/* A header-safe value: 1 or more bytes of printable ASCII, no blank. */
static int
value_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s != '\0'; s++)
		if (*s <= ' ' || *s > '~')
			return 0;
	return 1;
}

/* The members of a token answer, read into T, and an error's words. */
struct tok_read {
	char	 type[32], error[128], desc[256];
	int64_t	 expires_in;
};

static int
tok_member(struct kv_jr *jr, const char *key, struct kv_gcp_token *t, struct tok_read *tr)
{
	const char *num;
	size_t n, i;

	if (strcmp(key, "access_token") == 0)
		return str_member(jr, key, t->token, sizeof(t->token));
	if (strcmp(key, "token_type") == 0)
		return str_member(jr, key, tr->type, sizeof(tr->type));
	if (strcmp(key, "error") == 0 && kv_jr_peek(jr) == KV_JR_STRING)
		return kv_jr_string(jr, tr->error, sizeof(tr->error));
	if (strcmp(key, "error_description") == 0 && kv_jr_peek(jr) == KV_JR_STRING)
		return kv_jr_string(jr, tr->desc, sizeof(tr->desc));
	if (strcmp(key, "expires_in") != 0)
		return kv_jr_skip(jr);
	if (kv_jr_peek(jr) != KV_JR_NUMBER || kv_jr_number(jr, &num, &n) == -1)
		return kv_jr_fail(jr, "\"expires_in\" is not a number");
	tr->expires_in = 0;
	for (i = 0; i < n && i < 7; i++) {
		if (num[i] < '0' || num[i] > '9')
			return kv_jr_fail(jr, "\"expires_in\" is not a whole number of seconds");
		tr->expires_in = tr->expires_in * 10 + (num[i] - '0');
	}
	if (i < n)
		return kv_jr_fail(jr, "\"expires_in\" is too large");
	return 0;
}

int
kv_gcp_parse_token(const char *json, size_t len, int64_t now, struct kv_gcp_token *out,
    char *err, size_t errlen)
{
	struct tok_read tr = { .expires_in = -1 };
	struct kv_jr jr;
	char key[32];
	int r;

	memset(out, 0, sizeof(*out));
	kv_jr_init(&jr, json, len);
	if (kv_jr_enter(&jr, KV_JR_OBJECT) == -1) {
		say(err, errlen, "the token answer is not a JSON object", &jr);
		return -1;
	}
	while ((r = kv_jr_member(&jr, key, sizeof(key))) == 1)
		if (tok_member(&jr, key, out, &tr) == -1)
			break;
	if (r == 1 || r == -1 || kv_jr_finish(&jr) == -1) {
		say(err, errlen, "a malformed token answer", &jr);
		return -1;
	}
	if (tr.error[0] != '\0') {
		snprintf(err, errlen, "%s%s%s", tr.error, tr.desc[0] != '\0' ? ": " : "", tr.desc);
		return -1;
	}
	if (!value_ok(out->token) || (tr.type[0] != '\0' && strcasecmp(tr.type, "bearer") != 0) ||
	    tr.expires_in < 1 || tr.expires_in > 86400) {
		say(err, errlen, "the token answer has no usable access_token, a token_type "
		    "other than Bearer, or expires_in missing or not 1 to 86400", NULL);
		memset(out, 0, sizeof(*out));
		return -1;
	}
	out->expires = now + tr.expires_in;
	return 0;
}

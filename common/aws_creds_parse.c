/* Parsers of AWS's credential answers: see aws_creds_parse.h. STS's XML is
 * read by element name, not by a general XML parser: the answer's shape is
 * fixed, its values are base64 and ASCII, and anything unexpected (a value
 * with markup inside, an entity we do not know) is refused. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/aws_creds_parse.h"

#include <stdio.h>
#include <string.h>

#include "common/jsonread.h"

int
kv_aws_value_ok(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);

	if (n == 0 || n > max)
		return 0;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static int
digits(const char *s, int n, int *out)
{
	int i, v = 0;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's). */
static int64_t
days_from_civil(int y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int
kv_aws_parse_time(const char *s, size_t len, int64_t *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h, mi, sec;
	size_t i = 19;

	if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
	    s[13] != ':' || s[16] != ':' || digits(s, 4, &y) == -1 ||
	    digits(s + 5, 2, &mo) == -1 || digits(s + 8, 2, &d) == -1 ||
	    digits(s + 11, 2, &h) == -1 || digits(s + 14, 2, &mi) == -1 ||
	    digits(s + 17, 2, &sec) == -1)
		return -1;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || sec > 60)
		return -1;
	if (s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == 20)
			return -1;
	}
	if (!((len == i + 1 && (s[i] == 'Z' || s[i] == 'z')) ||
	    (len == i + 6 && memcmp(s + i, "+00:00", 6) == 0)))
		return -1;
	*out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	return 0;
}

/* The text of the first <NAME>...</NAME> in [P, END), entities decoded,
 * into OUT[0..CAP). Returns its length, or -1 (absent, markup inside, an
 * unknown entity, too long). */
static long
xml_text(const char *p, const char *end, const char *name, char *out, size_t cap)
{
	static const struct { const char *e; char c; } ents[] = {
		{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
	};
	char open[64], close[64];
	const char *s, *e;
	size_t n = 0, k, ol, cl;

	ol = (size_t)snprintf(open, sizeof(open), "<%s>", name);
	cl = (size_t)snprintf(close, sizeof(close), "</%s>", name);
	if ((s = memmem(p, (size_t)(end - p), open, ol)) == NULL)
		return -1;
	s += ol;
	if ((e = memchr(s, '<', (size_t)(end - s))) == NULL || (size_t)(end - e) < cl ||
	    memcmp(e, close, cl) != 0)
		return -1;
	while (s < e) {
		char c = *s++;
		if (c == '&') {
			for (k = 0; k < sizeof(ents) / sizeof(ents[0]); k++)
				if ((size_t)(e - s + 1) >= strlen(ents[k].e) &&
				    memcmp(s - 1, ents[k].e, strlen(ents[k].e)) == 0)
					break;
			if (k == sizeof(ents) / sizeof(ents[0]))
				return -1;
			s += strlen(ents[k].e) - 1;
			c = ents[k].c;
		}
		if (n + 1 >= cap)
			return -1;
		out[n++] = c;
	}
	out[n] = '\0';
	return (long)n;
}

/* Printable ASCII of S into the error (what STS said, never trusted). */
static void
sts_error(const char *xml, const char *end, char *err, size_t errlen)
{
	char code[128], msg[256];
	size_t i;

	if (xml_text(xml, end, "Code", code, sizeof(code)) == -1)
		snprintf(code, sizeof(code), "?");
	if (xml_text(xml, end, "Message", msg, sizeof(msg)) == -1)
		msg[0] = '\0';
	for (i = 0; msg[i] != '\0'; i++)
		if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] >= 0x7f)
			msg[i] = '?';
	for (i = 0; code[i] != '\0'; i++)
		if ((unsigned char)code[i] < 0x20 || (unsigned char)code[i] >= 0x7f)
			code[i] = '?';
	snprintf(err, errlen, "STS refused: %s%s%s", code, msg[0] ? ": " : "", msg);
}

int
kv_aws_parse_sts(const char *xml, size_t len, struct kv_aws_creds *out, char *err, size_t errlen)
{
	const char *end = xml + len, *cs, *ce;
	char t[64];

	if (memmem(xml, len, "<ErrorResponse", 14) != NULL) {
		sts_error(xml, end, err, errlen);
		return -1;
	}
	if (memmem(xml, len, "<AssumeRoleWithWebIdentityResponse", 34) == NULL ||
	    (cs = memmem(xml, len, "<Credentials>", 13)) == NULL ||
	    (ce = memmem(cs, (size_t)(end - cs), "</Credentials>", 14)) == NULL) {
		snprintf(err, errlen, "STS answer has no AssumeRoleWithWebIdentityResponse Credentials");
		return -1;
	}
	memset(out, 0, sizeof(*out));
	if (xml_text(cs, ce, "AccessKeyId", out->access_key, sizeof(out->access_key)) == -1 ||
	    xml_text(cs, ce, "SecretAccessKey", out->secret, sizeof(out->secret)) == -1 ||
	    xml_text(cs, ce, "SessionToken", out->token, sizeof(out->token)) == -1 ||
	    xml_text(cs, ce, "Expiration", t, sizeof(t)) == -1) {
		snprintf(err, errlen, "STS Credentials lack AccessKeyId, SecretAccessKey, "
		    "SessionToken or Expiration, or one is malformed or too long");
		return -1;
	}
	if (!kv_aws_value_ok(out->access_key, KV_AWS_KEY_MAX) ||
	    !kv_aws_value_ok(out->secret, KV_AWS_SECRET_MAX) ||
	    !kv_aws_value_ok(out->token, KV_AWS_TOKEN_MAX) ||
	    kv_aws_parse_time(t, strlen(t), &out->expires) == -1) {
		snprintf(err, errlen, "STS Credentials hold a value unfit for a header or a bad Expiration");
		return -1;
	}
	return 0;
}

int
kv_aws_parse_role(const char *body, size_t len, char *role, char *err, size_t errlen)
{
	size_t n = 0;

	while (n < len && body[n] != '\n' && body[n] != '\r')
		n++;
	if (n == 0 || n > KV_AWS_ROLE_MAX) {
		snprintf(err, errlen, "IMDS lists no instance role (is one attached?)");
		return -1;
	}
	memcpy(role, body, n);
	role[n] = '\0';
	/* IAM's role-name characters: it goes into the next request's path. */
	if (strspn(role, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+=,.@_-") != n ||
	    strcmp(role, ".") == 0 || strcmp(role, "..") == 0) {
		snprintf(err, errlen, "IMDS role name is not an IAM role name");
		return -1;
	}
	return 0;
}

/* One member of IMDS's object: kept ones read into their field (a second
 * copy of one is refused), others skipped. Returns 0 or -1. */
static int
imds_member(struct kv_jr *jr, const char *name, struct kv_aws_creds *out, char *code,
    char *t, unsigned *seen)
{
	static const char *const names[] = { "Code", "AccessKeyId", "SecretAccessKey",
	    "Token", "Expiration" };
	char *dst[] = { code, out->access_key, out->secret, out->token, t };
	size_t cap[] = { 32, sizeof(out->access_key), sizeof(out->secret),
	    sizeof(out->token), 64 };
	unsigned i;

	for (i = 0; i < 5; i++)
		if (strcmp(name, names[i]) == 0)
			break;
	if (i == 5)
		return kv_jr_skip(jr);
	if (*seen & (1u << i))
		return kv_jr_fail(jr, "a member appears twice");
	*seen |= 1u << i;
	if (kv_jr_peek(jr) != KV_JR_STRING)
		return kv_jr_fail(jr, "a credential member is not a string");
	return kv_jr_string(jr, dst[i], cap[i]);
}

int
kv_aws_parse_imds(const char *json, size_t len, struct kv_aws_creds *out, char *err, size_t errlen)
{
	struct kv_jr jr;
	char name[64], code[32] = "", t[64] = "";
	unsigned seen = 0;
	int r;

	memset(out, 0, sizeof(*out));
	kv_jr_init(&jr, json, len);
	if (kv_jr_enter(&jr, KV_JR_OBJECT) == -1)
		goto bad;
	while ((r = kv_jr_member(&jr, name, sizeof(name))) == 1)
		if (imds_member(&jr, name, out, code, t, &seen) == -1)
			goto bad;
	if (r == -1 || kv_jr_finish(&jr) == -1)
		goto bad;
	if (strcmp(code, "Success") != 0) {
		snprintf(err, errlen, "IMDS credentials Code is not Success");
		return -1;
	}
	if (seen != 0x1f || !kv_aws_value_ok(out->access_key, KV_AWS_KEY_MAX) ||
	    !kv_aws_value_ok(out->secret, KV_AWS_SECRET_MAX) ||
	    !kv_aws_value_ok(out->token, KV_AWS_TOKEN_MAX) ||
	    kv_aws_parse_time(t, strlen(t), &out->expires) == -1) {
		snprintf(err, errlen, "IMDS credentials lack AccessKeyId, SecretAccessKey, Token "
		    "or Expiration, or one is unfit for a header");
		return -1;
	}
	return 0;
bad:
	snprintf(err, errlen, "IMDS credentials are not the JSON expected: %s", jr.err);
	return -1;
}

/* The one credential a request head carries: pure (no connection, no
 * I/O), so that it can be fuzzed (tests/fuzz/fuzz_cred.c). */
#include "worker/credential.h"

#include <string.h>
#include <strings.h>

/* The bearer token of an Authorization value, or NULL. */
static const char *
bearer(const struct kv_http_header *h, size_t *len)
{
	const char *k;
	size_t n;

	if (h->value_len <= 7 || !kv_http_lit_eq(h->value, "bearer ", 7))
		return NULL;
	k = h->value + 7;
	n = h->value_len - 7;
	while (n > 0 && *k == ' ') {
		k++;
		n--;
	}
	*len = n;
	return n > 0 ? k : NULL;
}

/* H is named name[0..len) (lower case), case aside: the length first (most
 * headers stop there), a literal's length from sizeof (IS_NAME), not
 * strlen. */
static int
is_name(const struct kv_http_header *h, const char *name, size_t len)
{
	return h->name_len == len && kv_http_lit_eq(h->name, name, len);
}
#define IS_NAME(h, lit)	is_name((h), (lit), sizeof(lit) - 1)

/* Does a Connection header list a header kilovolt reads? Such a header
 * would be hop-by-hop to an intermediary and end-to-end to us. */
static int
connection_names_ours(const struct kv_http_header *h)
{
#define OURS(lit)	{ lit, sizeof(lit) - 1 }
	static const struct { const char *name; size_t len; } ours[] = {
	    OURS("authorization"), OURS("x-api-key"), OURS("api-key"),
	    OURS("x-goog-api-key"), OURS("content-length"),
	    OURS("transfer-encoding"), OURS("content-encoding"), OURS("host") };
#undef OURS
	const char *p = h->value, *end = h->value + h->value_len, *t;
	size_t o;

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		for (t = p; p < end && *p != ',' && *p != ' ' && *p != '\t'; p++)
			;
		for (o = 0; o < sizeof(ours) / sizeof(ours[0]) && p > t; o++)
			if ((size_t)(p - t) == ours[o].len &&
			    strncasecmp(t, ours[o].name, ours[o].len) == 0)
				return 1;
	}
	return 0;
}

const char *
kv_cred_query_key(const char *target, size_t *len)
{
	const char *q = strchr(target, '?');

	while (q != NULL) {
		q++;
		if (strncmp(q, "key=", 4) == 0) {
			*len = strcspn(q + 4, "&#");
			return q + 4;
		}
		q = strchr(q, '&');
	}
	return NULL;
}

/* One credential seen: the first is the key; any other that differs is
 * refused. */
static int
cred_take(const char *v, size_t n, const char **key, size_t *len, const char **why)
{
	if (n == 0)
		return 0;	/* an empty header carries no key */
	if (*key == NULL) {
		*key = v;
		*len = n;
		return 0;
	}
	if (n != *len || memcmp(v, *key, n) != 0) {
		*why = "two credentials (Authorization, x-api-key, api-key, x-goog-api-key "
		    "or ?key=) carry different keys";
		return -2;
	}
	return 0;
}

#define NO_HDR	((size_t)-1)

/* Where the credential headers are, in one pass over the head: the first
 * two of each of the credential headers (by index into it: authorization,
 * x-api-key, api-key, x-goog-api-key; picked by length) and the first
 * Connection header naming a header kilovolt reads. */
struct cred_seen {
	size_t	 first[4], second[4], conn;
};

static void
cred_scan(const struct kv_http_request *req, struct cred_seen *cs)
{
	size_t i;
	int k;

	for (k = 0; k < 4; k++)
		cs->first[k] = cs->second[k] = NO_HDR;
	cs->conn = NO_HDR;
	for (i = 0; i < req->nheaders; i++) {
		const struct kv_http_header *h = &req->headers[i];

		switch (h->name_len) {
		case 13: k = IS_NAME(h, "authorization") ? 0 : -1; break;
		case 9: k = IS_NAME(h, "x-api-key") ? 1 : -1; break;
		case 7: k = IS_NAME(h, "api-key") ? 2 : -1; break;
		case 14: k = IS_NAME(h, "x-goog-api-key") ? 3 : -1; break;
		case 10:
			if (cs->conn == NO_HDR && IS_NAME(h, "connection") &&
			    connection_names_ours(h))
				cs->conn = i;
			k = -1;
			break;
		default: k = -1;
		}
		if (k >= 0 && cs->first[k] == NO_HDR)
			cs->first[k] = i;
		else if (k >= 0 && cs->second[k] == NO_HDR)
			cs->second[k] = i;
	}
}

int
kv_cred_find(const struct kv_http_request *req, const char *target, const char **key,
    size_t *len, int *x_api_key, const char **why)
{
	struct cred_seen cs;
	const char *v;
	size_t vl;
	int k, other = 0;

	*key = NULL;
	*len = 0;
	*x_api_key = 0;
	cred_scan(req, &cs);
	if (cs.conn != NO_HDR && cs.conn < cs.second[0]) {
		*why = "a Connection header names a header kilovolt reads";
		return -2;
	}
	for (k = 0; k < 4; k++) {
		const struct kv_http_header *h;

		if (cs.first[k] == NO_HDR)
			continue;
		h = &req->headers[cs.first[k]];
		v = k == 0 ? bearer(h, &vl) : h->value;
		if (k != 0)
			vl = h->value_len;
		if (v == NULL)		/* Authorization, not Bearer: no key of ours */
			other = 1;
		else if (cred_take(v, vl, key, len, why) == -2)
			return -2;
		else if (*key == v && k == 1)
			*x_api_key = 1;
		if (cs.second[k] != NO_HDR) {
			*why = "the credential header is repeated";
			return -2;
		}
	}
	if ((v = kv_cred_query_key(target, &vl)) != NULL && cred_take(v, vl, key, len, why) == -2)
		return -2;
	if (*key != NULL && other) {
		*why = "two credentials (Authorization, x-api-key, api-key, x-goog-api-key "
		    "or ?key=) carry different keys";
		return -2;
	}
	return *key != NULL ? 0 : -1;
}

int
kv_cred_strip_query_key(char *target)
{
	char *q = strchr(target, '?'), *p, *end;
	int n = 0;

	if (q == NULL)
		return 0;
	p = q + 1;
	while (*p != '\0' && *p != '#') {
		end = p + strcspn(p, "&#");
		if (strncmp(p, "key=", 4) != 0) {
			p = *end == '&' ? end + 1 : end;
			continue;
		}
		n++;
		/* the parameter and the '&' after it, else the '&' or '?' before it */
		if (*end == '&')
			end++;
		else if (p > q + 1)
			p--;
		else if (p == q + 1)
			p = q;
		memmove(p, end, strlen(end) + 1);
		if (p == q)
			break;
	}
	return n;
}

/* Query parameter NAME (LEN bytes, lower case) in TARGET's query, any case. */
static int
query_has(const char *target, const char *name, size_t len)
{
	const char *q = strchr(target, '?');

	while (q != NULL) {
		q++;
		if (strncasecmp(q, name, len) == 0 && q[len] == '=')
			return 1;
		q = strchr(q, '&');
	}
	return 0;
}

int
kv_cred_sigv4(const struct kv_http_request *req, const char *target)
{
	size_t i;

	for (i = 0; i < req->nheaders; i++) {
		const struct kv_http_header *h = &req->headers[i];

		if (IS_NAME(h, "authorization") && h->value_len >= 16 &&
		    kv_http_lit_eq(h->value, "aws4-hmac-sha256", 16))
			return 1;
	}
	return query_has(target, "x-amz-signature", 15);
}

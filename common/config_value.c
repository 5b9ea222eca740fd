/* kilovolt.ini values: the small parsers every key handler uses, and the
 * generic setter of each key type (config_int.h), so that a plain key is a
 * row of the table in config_keys.c and not a function. The error record
 * (cfg_err) and the struct a key lands in (cfg_base) are here too: every
 * file of the loader uses them and this one sits below the others. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config_units.h"
#include "common/money.h"

/* ---- errors ------------------------------------------------------------ */

int
cfg_err(struct cfg_parse *p, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->failed)
		return -1;
	p->failed = 1;
	if (line > 0)
		n = snprintf(p->err, p->errlen, "%s:%d: ", p->file, line);
	else if (line == 0)
		n = snprintf(p->err, p->errlen, "%s: ", p->file);
	else
		n = 0;
	if (n < 0 || (size_t)n >= p->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- where keys go ------------------------------------------------------ */

static struct kv_upstream *
cur_upstream(struct cfg_parse *p)
{
	return &p->cf->upstreams[p->cf->nupstreams - 1];
}

static struct kv_price *
cur_price(struct cfg_parse *p)
{
	if (p->price_default)
		return &p->cf->default_price;
	return &p->cf->prices[p->cf->nprices - 1];
}

static struct kv_keydef *
cur_key(struct cfg_parse *p)
{
	return &p->cf->keys[p->cf->nkeys - 1];
}

void *
cfg_base(struct cfg_parse *p, enum cfg_base base)
{
	switch (base) {
	case CFG_B_UPSTREAM:
		return cur_upstream(p);
	case CFG_B_PRICE:
		return cur_price(p);
	case CFG_B_KEY:
		return cur_key(p);
	case CFG_B_TEAM:
		return &p->cf->teams[p->cf->nteams - 1];
	case CFG_B_TAG:
		return &p->cf->tags[p->cf->ntags - 1];
	case CFG_B_CONFIG:
		break;
	}
	return p->cf;
}

/* ---- small value parsers (0 / -1, no messages) ------------------------- */

int
cfg_parse_ll(const char *s, long long min, long long max, long long *out)
{
	long long v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		/* v * 10 + digit <= max; a digit above max on its own too (the
		 * division truncates -1 / 10 to 0: "9" passed a max of 8) */
		if (!isdigit((unsigned char)*s) || *s - '0' > max || v > (max - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (v < min)
		return -1;
	*out = v;
	return 0;
}

int
cfg_parse_port(const char *s, char port[8])
{
	long long v;

	if (strlen(s) > 5 || cfg_parse_ll(s, 1, 65535, &v) == -1)
		return -1;
	snprintf(port, 8, "%lld", v);
	return 0;
}

static int
valid_hostname(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 253)
		return 0;
	for (i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("-._", s[i]) == NULL)
			return 0;
	return 1;
}

int
cfg_parse_host(const char *s, size_t len, char host[256])
{
	struct in6_addr a6;

	if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
		if (len - 2 >= 256)
			return -1;
		memcpy(host, s + 1, len - 2);
		host[len - 2] = '\0';
		return inet_pton(AF_INET6, host, &a6) == 1 ? 0 : -1;
	}
	if (!valid_hostname(s, len))
		return -1;
	memcpy(host, s, len);
	host[len] = '\0';
	return 0;
}

int
cfg_parse_hostport(const char *s, char host[256], char port[8])
{
	const char *colon = strrchr(s, ':');

	if (colon == NULL) {
		strcpy(host, "0.0.0.0");
		return cfg_parse_port(s, port);
	}
	if (cfg_parse_port(colon + 1, port) == -1)
		return -1;
	if (colon - s == 1 && s[0] == '*') {
		strcpy(host, "0.0.0.0");
		return 0;
	}
	/* An unbracketed v6 address would make the port ambiguous. */
	if (s[0] != '[' && memchr(s, ':', colon - s) != NULL)
		return -1;
	return cfg_parse_host(s, colon - s, host);
}

int
cfg_valid_env_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

int
cfg_valid_name(const char *s, size_t max, int glob)
{
	size_t len = strlen(s), i;

	if (len == 0 || len >= max)
		return 0;
	for (i = 0; i < len; i++) {
		if (!isgraph((unsigned char)s[i]) || strchr("[]\"'", s[i]) != NULL)
			return 0;
		if (s[i] == '*' && (!glob || i != len - 1))
			return 0;
	}
	return 1;
}

/* A relative path in the config is relative to the config file's
 * directory, not to wherever kilovoltd or kvctl was started (issue 24):
 * `kvctl -c /srv/kv/kilovolt.ini` finds the bundled ./var/ledger from
 * anywhere. */
int
cfg_path(const struct cfg_parse *p, const char *v, char *dst, size_t len)
{
	const char *slash = strrchr(p->file, '/');
	int n;

	while (strncmp(v, "./", 2) == 0 && v[2] != '\0')
		v += 2;
	if (*v == '/' || slash == NULL)
		n = snprintf(dst, len, "%s", v);
	else
		n = snprintf(dst, len, "%.*s/%s", (int)(slash - p->file), p->file, v);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* ---- URL --------------------------------------------------------------- */

/* Host: header value: the port only when it is not the scheme's default. */
static void
url_host_header(struct kv_upstream *u)
{
	int v6 = strchr(u->host, ':') != NULL;
	int dflt = strcmp(u->port, u->tls ? "443" : "80") == 0;

	snprintf(u->host_header, sizeof(u->host_header), "%s%s%s%s%s",
	    v6 ? "[" : "", u->host, v6 ? "]" : "", dflt ? "" : ":",
	    dflt ? "" : u->port);
}


/* http[s]://HOST[:PORT][/BASE]: no user info, query or fragment. */
/* What follows http:// or https:// (TLS in *TLS), when the rest has no
 * user info, query, fragment, blank or control byte (the base path goes
 * on the upstream request line); NULL otherwise. */
static const char *
url_authority(const char *url, int *tls)
{
	const char *auth, *c;

	*tls = strncasecmp(url, "https://", 8) == 0;
	if (!*tls && strncasecmp(url, "http://", 7) != 0)
		return NULL;
	auth = url + (*tls ? 8 : 7);
	if (strpbrk(auth, "@?# \t") != NULL)
		return NULL;
	for (c = auth; *c != '\0'; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return NULL;
	return auth;
}

int
cfg_parse_url(const char *url, struct kv_upstream *u)
{
	const char *auth, *end, *colon = NULL;
	size_t blen;

	if ((auth = url_authority(url, &u->tls)) == NULL)
		return -1;
	end = auth + strcspn(auth, "/");
	if (auth[0] == '[') {
		const char *rb = memchr(auth, ']', end - auth);
		if (rb == NULL)
			return -1;
		colon = rb + 1 < end ? rb + 1 : NULL;
		if (colon != NULL && *colon != ':')
			return -1;
	} else
		colon = memchr(auth, ':', end - auth);
	if (cfg_parse_host(auth, (colon ? colon : end) - auth, u->host) == -1)
		return -1;
	if (colon != NULL) {
		char port[8];
		if (end - colon - 1 <= 0 || end - colon - 1 > 5)
			return -1;
		memcpy(port, colon + 1, end - colon - 1);
		port[end - colon - 1] = '\0';
		if (cfg_parse_port(port, u->port) == -1)
			return -1;
	} else
		strcpy(u->port, u->tls ? "443" : "80");
	blen = strlen(end);
	while (blen > 0 && end[blen - 1] == '/')
		blen--;
	if (blen >= sizeof(u->base_path))
		return -1;
	memcpy(u->base_path, end, blen);
	u->base_path[blen] = '\0';
	url_host_header(u);
	return 0;
}

/* ---- arrays ------------------------------------------------------------ */

int
cfg_grow(void *arrp, size_t n, size_t size)
{
	void **arr = arrp, *na;

	if (n >= SIZE_MAX / size - 1)
		return -1;
	na = realloc(*arr, (n + 1) * size);
	if (na == NULL)
		return -1;
	*arr = na;
	memset((char *)na + n * size, 0, size);
	return 0;
}

static int
push_str(char ***arr, size_t *n, const char *s, size_t len)
{
	char *d;

	if (cfg_grow(arr, *n, sizeof(char *)) == -1)
		return -1;
	d = strndup(s, len);
	if (d == NULL)
		return -1;
	(*arr)[(*n)++] = d;
	return 0;
}

void
cfg_free_strs(char **arr, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(arr[i]);
	free(arr);
}

void
cfg_free_secret(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

int
cfg_set_words(struct cfg_parse *p, const char *name, const char *v, char ***arr,
    size_t *n, int (*check)(const char *, size_t))
{
	size_t len;

	for (v += strspn(v, " \t"); *v != '\0'; v += strspn(v, " \t")) {
		len = strcspn(v, " \t");
		if (!check(v, len))
			return cfg_err(p, p->lineno, "%s: bad entry '%.*s'", name, (int)len, v);
		if (push_str(arr, n, v, len) == -1)
			return cfg_err(p, p->lineno, "out of memory");
		v += len;
	}
	return 0;
}

/* ---- checked values with their messages -------------------------------- */

int
cfg_int(struct cfg_parse *p, const char *name, const char *v, long long min,
    long long max, long long *out)
{
	if (cfg_parse_ll(v, min, max, out) == 0)
		return 0;
	if (*v != '\0' && strspn(v, "0123456789") == strlen(v))
		return cfg_err(p, p->lineno, "%s: %s is out of range (%lld..%lld)",
		    name, v, min, max);
	return cfg_err(p, p->lineno, "%s: '%s' is not a number", name, v);
}

int
cfg_size(struct cfg_parse *p, const char *name, const char *v, long long min,
    long long max, uint64_t *out)
{
	char lo[32];

	if (kv_cfg_parse_size(v, out) == 0 && *out >= (uint64_t)min && *out <= (uint64_t)max)
		return 0;
	if (min <= 0)
		return cfg_err(p, p->lineno, "%s: '%s' is not a size "
		    "(bytes with an optional k, m or g)", name, v);
	if (min == 1)
		return cfg_err(p, p->lineno, "%s: '%s' is not a size above 0 "
		    "(bytes with an optional k, m or g)", name, v);
	kv_cfg_format_size((uint64_t)min, lo, sizeof(lo));
	return cfg_err(p, p->lineno, "%s: '%s' is not a size of at least %s "
	    "(bytes with an optional k, m or g)", name, v, lo);
}

/* A duration key: the message keeps the form the value was written in, so
 * "0" is out of range (1..3600) and "2h" out of range (1s..1h). */
static int
cfg_secs(struct cfg_parse *p, const struct cfg_key *k, const char *v, long long *out)
{
	int64_t ms;
	char lo[32], hi[32];

	if (*v != '\0' && strspn(v, "0123456789") == strlen(v))
		return cfg_int(p, k->name, v, k->min, k->max, out);
	if (kv_cfg_parse_duration(v, 1000, &ms) == -1)
		return cfg_err(p, p->lineno, "%s: '%s' is not a number of seconds or a "
		    "duration (10s, 500ms, 2m, 1h)", k->name, v);
	if (ms % 1000 != 0)
		return cfg_err(p, p->lineno, "%s: '%s' is not a whole number of seconds",
		    k->name, v);
	if (ms / 1000 < k->min || ms / 1000 > k->max) {
		kv_cfg_format_secs(k->min, lo, sizeof(lo));
		kv_cfg_format_secs(k->max, hi, sizeof(hi));
		return cfg_err(p, p->lineno, "%s: %s is out of range (%s..%s)", k->name, v,
		    lo, hi);
	}
	*out = ms / 1000;
	return 0;
}

/* ---- the generic setters ----------------------------------------------- */

/* An integer field of WIDTH bytes: int and uint32_t fields share a width
 * and every value the table allows them (0..4e9) has the same bits. */
static void
store_int(void *field, size_t width, long long v)
{
	int64_t v64 = v;
	uint32_t v32 = (uint32_t)v;

	if (width == sizeof(v32))
		memcpy(field, &v32, sizeof(v32));
	else
		memcpy(field, &v64, sizeof(v64));
}

static int
set_enum(struct cfg_parse *p, const struct cfg_key *k, const char *v, void *field)
{
	char list[256];
	const struct cfg_word *w;
	size_t n = 0;

	for (w = k->words; w->word != NULL; w++)
		if (strcmp(v, w->word) == 0) {
			store_int(field, k->width, w->value);
			return 0;
		}
	/* "A, B or C" from the table: the message cannot miss a word */
	list[0] = '\0';
	for (w = k->words; w->word != NULL && n < sizeof(list); w++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
		    w == k->words ? "" : w[1].word == NULL ? " or " : ", ", w->word);
	return cfg_err(p, p->lineno, "%s: '%s' is not %s", k->name, v, list);
}

static int
set_money(struct cfg_parse *p, const struct cfg_key *k, const char *v, void *field)
{
	int64_t n, scale = k->scale > 0 ? k->scale : 1;

	if (kv_parse_nano(v, &n) == -1)
		return cfg_err(p, p->lineno, "%s: '%s' is not a decimal amount", k->name, v);
	/* Fees per 1,000 calls are kept per call, rounded up to the
	 * nano-dollar: a fee never charges less than the price list says. */
	n = n / scale + (n % scale != 0);
	memcpy(field, &n, sizeof(n));
	return 0;
}

static int
set_secret(struct cfg_parse *p, const struct cfg_key *k, const char *v, char **field)
{
	if (*v == '\0' && (k->flags & CFG_NONEMPTY))
		return cfg_err(p, p->lineno, "%s: empty value", k->name);
	cfg_free_secret(*field);
	*field = NULL;
	/* An empty token would match "Authorization: Bearer ": none. */
	if (*v == '\0')
		return 0;
	if ((*field = strdup(v)) == NULL)
		return cfg_err(p, p->lineno, "out of memory");
	return 0;
}

int
cfg_set_value(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	char *obj = cfg_base(p, k->base);
	void *field = obj + k->off;
	long long n;
	uint64_t sz;

	if (k->set != NULL)
		return k->set(p, k, v);
	switch (k->type) {
	case CFG_T_INT:
		if (cfg_int(p, k->name, v, k->min, k->max, &n) == -1)
			return -1;
		store_int(field, k->width, n);
		return 0;
	case CFG_T_SECS:
		if (cfg_secs(p, k, v, &n) == -1)
			return -1;
		store_int(field, k->width, n);
		return 0;
	case CFG_T_SIZE:
		if (cfg_size(p, k->name, v, k->min, k->max, &sz) == -1)
			return -1;
		store_int(field, k->width, (long long)sz);
		return 0;
	case CFG_T_MONEY:
		return set_money(p, k, v, field);
	case CFG_T_ENUM:
		return set_enum(p, k, v, field);
	case CFG_T_PATH:
		if (*v == '\0' || cfg_path(p, v, field, k->width) == -1)
			return cfg_err(p, p->lineno, "%s: empty or too long", k->name);
		return 0;
	case CFG_T_SECRET:
		return set_secret(p, k, v, field);
	case CFG_T_WORDS:
		return cfg_set_words(p, k->name, v, (char ***)field, (size_t *)(obj + k->off_n),
		    k->check);
	case CFG_T_STR:
	case CFG_T_SPECIAL:
		break;
	}
	return cfg_err(p, p->lineno, "%s: no setter", k->name);	/* a table bug */
}

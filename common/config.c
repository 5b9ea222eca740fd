/* kilovolt.ini loader.
 *
 * libinih splits "name = value" lines, but its handler gets no line number
 * and Debian's build truncates lines past 200 bytes into a second "line".
 * So the file is fed through our own reader (cfg_read): it counts lines,
 * strips comments and indentation (which also disables inih's surprising
 * multi-line continuation), rejects over-long lines, and handles section
 * headers itself so that empty, unknown and duplicate sections are seen
 * with the line they are on. inih is left to split the key lines. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>
#include <openssl/evp.h>

#include "common/money.h"
#include "common/catalog.h"
#include "common/pricetab.h"
#include "shm/ledger-t.h"

#define CFG_DEFAULT_FILE	"/etc/kilovolt/kilovolt.ini"
/* Two generations of workers must fit the ledger's slots during a reload. */
#define CFG_MAX_WORKERS		(KV_WORKER_SLOTS / 2)
#define CFG_MAX_SECONDS		86400
#define CFG_MAX_KEYS		(1u << 20)

enum cfg_sect { SECT_NONE, SECT_SERVER, SECT_BUDGET, SECT_UPSTREAM, SECT_PRICE, SECT_KEY,
    SECT_CLUSTER, SECT_ALERTS };

struct cfg_parse {
	struct kv_config *cf;
	const char	*file;
	FILE		*fp;
	char		*buf;		/* getline's buffer */
	size_t		 bufcap;
	int		 lineno;
	enum cfg_sect	 sect;
	char		 sect_text[200];	/* "[upstream openai]", for messages */
	int		 sect_line;
	int		 price_default;	/* the current section is [price default] */
	int		 prices_line;	/* of [budget] prices, for errors */
	const char	*prices_instead;	/* kv_config_load_prices: this catalogue */
	uint32_t	 seen;		/* keys already set in this section */
	int		 seen_server;
	int		 seen_budget;
	int		 seen_cluster;
	int		 seen_alerts;
	int		 workers_auto;
	int		 failed;
	char		*err;
	size_t		 errlen;
};

#define CFG_SECRET	0x1	/* never echo the value */
#define CFG_LIST	0x2	/* may repeat; values accumulate */
#define CFG_ENV_OPT	0x4	/* env:NAME unset means "not set" */

struct cfg_key {
	const char	*name;
	int		(*set)(struct cfg_parse *, const char *);
	int		 flags;
};

/* ---- errors ------------------------------------------------------------ */

/* Record the first error as "FILE:LINE: message"; LINE 0 gives
 * "FILE: message" and a negative LINE the bare message (environment errors
 * are not the file's). Returns -1 so callers can `return cfg_err(...)`. */
static int __attribute__((format(printf, 3, 4)))
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

/* ---- small value parsers (0 / -1, no messages) ------------------------- */

static int
parse_ll(const char *s, long long min, long long max, long long *out)
{
	long long v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (!isdigit((unsigned char)*s) || v > (max - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (v < min)
		return -1;
	*out = v;
	return 0;
}

static int
parse_port(const char *s, char port[8])
{
	long long v;

	if (strlen(s) > 5 || parse_ll(s, 1, 65535, &v) == -1)
		return -1;
	snprintf(port, 8, "%lld", v);
	return 0;
}

/* Bytes with an optional k/m/g (binary) suffix. */
static int
parse_size(const char *s, size_t *out)
{
	char num[32];
	size_t len = strlen(s);
	unsigned shift = 0;
	long long v;

	if (len == 0 || len >= sizeof(num))
		return -1;
	switch (tolower((unsigned char)s[len - 1])) {
	case 'k': shift = 10; len--; break;
	case 'm': shift = 20; len--; break;
	case 'g': shift = 30; len--; break;
	}
	memcpy(num, s, len);
	num[len] = '\0';
	if (parse_ll(num, 0, (1LL << 40) >> shift, &v) == -1)
		return -1;
	*out = (size_t)v << shift;
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

/* "[v6]" or a host name / IPv4 literal of LEN bytes into host (no brackets). */
static int
parse_host(const char *s, size_t len, char host[256])
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

/* HOST:PORT, [V6]:PORT, *:PORT or PORT (all addresses). */
static int
parse_hostport(const char *s, char host[256], char port[8])
{
	const char *colon = strrchr(s, ':');

	if (colon == NULL) {
		strcpy(host, "0.0.0.0");
		return parse_port(s, port);
	}
	if (parse_port(colon + 1, port) == -1)
		return -1;
	if (colon - s == 1 && s[0] == '*') {
		strcpy(host, "0.0.0.0");
		return 0;
	}
	/* An unbracketed v6 address would make the port ambiguous. */
	if (s[0] != '[' && memchr(s, ':', colon - s) != NULL)
		return -1;
	return parse_host(s, colon - s, host);
}

static int
valid_env_name(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return 0;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* Names of sections: printable, no blanks; '*' only at the end when allowed. */
static int
valid_name(const char *s, size_t max, int glob)
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

/* ---- URL --------------------------------------------------------------- */

/* http[s]://HOST[:PORT][/BASE]: no user info, query or fragment. */
static int
parse_url(const char *url, struct kv_upstream *u)
{
	const char *auth, *end, *colon = NULL;
	size_t blen;

	if (strncasecmp(url, "https://", 8) == 0) {
		u->tls = 1;
		auth = url + 8;
	} else if (strncasecmp(url, "http://", 7) == 0) {
		u->tls = 0;
		auth = url + 7;
	} else
		return -1;
	if (strpbrk(auth, "@?# \t") != NULL)
		return -1;
	end = auth + strcspn(auth, "/");
	if (auth[0] == '[') {
		const char *rb = memchr(auth, ']', end - auth);
		if (rb == NULL)
			return -1;
		if (rb + 1 < end)
			colon = rb + 1;
		if (colon != NULL && *colon != ':')
			return -1;
	} else
		colon = memchr(auth, ':', end - auth);
	if (parse_host(auth, (colon ? colon : end) - auth, u->host) == -1)
		return -1;
	if (colon != NULL) {
		char port[8];
		if (end - colon - 1 <= 0 || end - colon - 1 > 5)
			return -1;
		memcpy(port, colon + 1, end - colon - 1);
		port[end - colon - 1] = '\0';
		if (parse_port(port, u->port) == -1)
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
	return 0;
}

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

/* ---- arrays ------------------------------------------------------------ */

static int
grow(void *arrp, size_t n, size_t size)
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

	if (grow(arr, *n, sizeof(char *)) == -1)
		return -1;
	d = strndup(s, len);
	if (d == NULL)
		return -1;
	(*arr)[(*n)++] = d;
	return 0;
}

static void
free_strs(char **arr, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(arr[i]);
	free(arr);
}

static void
free_secret(char *s)
{
	if (s != NULL) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

/* ---- [server] ------------------------------------------------------------ */

static int
cfg_int(struct cfg_parse *p, const char *name, const char *v, long long min,
    long long max, long long *out)
{
	if (parse_ll(v, min, max, out) == 0)
		return 0;
	if (*v != '\0' && strspn(v, "0123456789") == strlen(v))
		return cfg_err(p, p->lineno, "%s: %s is out of range (%lld..%lld)",
		    name, v, min, max);
	return cfg_err(p, p->lineno, "%s: '%s' is not a number", name, v);
}

static int
set_listen(struct cfg_parse *p, const char *v)
{
	if (parse_hostport(v, p->cf->listen_host, p->cf->listen_port) == -1)
		return cfg_err(p, p->lineno, "listen: bad address '%s' "
		    "(want HOST:PORT, [IPV6]:PORT or PORT)", v);
	return 0;
}

static int
set_workers(struct cfg_parse *p, const char *v)
{
	long long n;

	p->workers_auto = strcmp(v, "auto") == 0;
	if (p->workers_auto)
		return 0;
	if (cfg_int(p, "workers", v, 1, CFG_MAX_WORKERS, &n) == -1)
		return -1;
	p->cf->workers = (int)n;
	return 0;
}

static int
set_status_listen(struct cfg_parse *p, const char *v)
{
	if (*v == '\0' || strcmp(v, "off") == 0) {
		p->cf->status_host[0] = p->cf->status_port[0] = '\0';
		return 0;
	}
	if (parse_hostport(v, p->cf->status_host, p->cf->status_port) == -1)
		return cfg_err(p, p->lineno, "status_listen: bad address '%s' "
		    "(want HOST:PORT, [IPV6]:PORT, PORT or off)", v);
	/* It shows every key's spend and takes admin writes: a bare port
	 * stays on loopback; other interfaces must be named. */
	if (strchr(v, ':') == NULL)
		strcpy(p->cf->status_host, "127.0.0.1");
	return 0;
}

/* A relative path in the config is relative to the config file's
 * directory, not to wherever kilovoltd or kvctl was started (issue 24):
 * `kvctl -c /srv/kv/kilovolt.ini` finds the bundled ./var/ledger from
 * anywhere. DST gets V joined to that directory ("./" dropped); -1 when it
 * does not fit. */
static int
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

static int
set_ledger(struct cfg_parse *p, const char *v)
{
	if (*v == '\0' || cfg_path(p, v, p->cf->ledger, sizeof(p->cf->ledger)) == -1)
		return cfg_err(p, p->lineno, "ledger: empty or too long");
	return 0;
}

static int
set_max_keys(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "max_keys", v, 1, CFG_MAX_KEYS, &n) == -1)
		return -1;
	p->cf->max_keys = (uint32_t)n;
	return 0;
}

static int
set_seconds(struct cfg_parse *p, const char *name, const char *v, int min, int *out)
{
	long long n;

	if (cfg_int(p, name, v, min, CFG_MAX_SECONDS, &n) == -1)
		return -1;
	*out = (int)n;
	return 0;
}

static int
set_client_timeout(struct cfg_parse *p, const char *v)
{
	return set_seconds(p, "client_timeout", v, 1, &p->cf->client_timeout);
}

static int
set_upstream_timeout(struct cfg_parse *p, const char *v)
{
	return set_seconds(p, "upstream_timeout", v, 1, &p->cf->upstream_timeout);
}

static int
set_connect_timeout(struct cfg_parse *p, const char *v)
{
	return set_seconds(p, "connect_timeout", v, 1, &p->cf->connect_timeout);
}

static int
set_header_timeout(struct cfg_parse *p, const char *v)
{
	return set_seconds(p, "header_timeout", v, 1, &p->cf->header_timeout);
}

static int
set_shutdown_timeout(struct cfg_parse *p, const char *v)
{
	return set_seconds(p, "shutdown_timeout", v, 0, &p->cf->shutdown_timeout);
}

static int
set_max_connections(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "max_connections", v, 1, 1 << 20, &n) == -1)
		return -1;
	p->cf->max_connections = (int)n;
	return 0;
}

static int
set_max_body(struct cfg_parse *p, const char *v)
{
	if (parse_size(v, &p->cf->max_body) == -1)
		return cfg_err(p, p->lineno, "max_body: '%s' is not a size "
		    "(bytes with an optional k, m or g)", v);
	return 0;
}

/* auto: the limit of the memory cgroup the daemon runs in (read by each
 * worker at start); off; or a size. */
static int
set_memory_limit(struct cfg_parse *p, const char *v)
{
	size_t n;

	if (strcmp(v, "auto") == 0)
		p->cf->memory_limit = -1;
	else if (strcmp(v, "off") == 0)
		p->cf->memory_limit = 0;
	else if (parse_size(v, &n) == 0 && n >= (1u << 20))
		p->cf->memory_limit = (int64_t)n;
	else
		return cfg_err(p, p->lineno, "memory_limit: '%s' is not auto, off or a size "
		    "of at least 1m (bytes with an optional k, m or g)", v);
	return 0;
}

static int
set_memory_refuse(struct cfg_parse *p, const char *v)
{
	long long n;
	size_t len = strlen(v);
	char num[8];

	if (len == 0 || len >= sizeof(num) || v[len - 1] != '%')
		return cfg_err(p, p->lineno, "memory_refuse: '%s' is not a percentage (50%%..99%%)", v);
	memcpy(num, v, len - 1);
	num[len - 1] = '\0';
	if (cfg_int(p, "memory_refuse", num, 50, 99, &n) == -1)
		return -1;
	p->cf->memory_refuse_pct = (int)n;
	return 0;
}

static int
set_spool_dir(struct cfg_parse *p, const char *v)
{
	if (*v == '\0' || cfg_path(p, v, p->cf->spool_dir, sizeof(p->cf->spool_dir)) == -1)
		return cfg_err(p, p->lineno, "spool_dir: empty or too long");
	return 0;
}

static int
set_spool_max(struct cfg_parse *p, const char *v)
{
	if (parse_size(v, &p->cf->spool_max) == -1 || p->cf->spool_max == 0)
		return cfg_err(p, p->lineno, "spool_max: '%s' is not a size above 0 "
		    "(bytes with an optional k, m or g)", v);
	return 0;
}

static int
set_request_log(struct cfg_parse *p, const char *v)
{
	if (*v == '\0' || strlen(v) >= sizeof(p->cf->request_log))
		return cfg_err(p, p->lineno, "request_log: a file name or off");
	if (strcmp(v, "off") == 0)
		p->cf->request_log[0] = '\0';
	else if (cfg_path(p, v, p->cf->request_log, sizeof(p->cf->request_log)) == -1)
		return cfg_err(p, p->lineno, "request_log: too long");
	return 0;
}

/* Origins as a browser sends them: scheme://host[:port], no path, or "*". */
static int
set_cors_origins(struct cfg_parse *p, const char *v)
{
	const char *s = v;
	size_t n, sl;

	if (strlen(v) >= sizeof(p->cf->cors_origins))
		return cfg_err(p, p->lineno, "cors_origins: too long");
	while (*(s += strspn(s, " \t")) != '\0') {
		n = strcspn(s, " \t");
		sl = strncmp(s, "http://", 7) == 0 ? 7 : strncmp(s, "https://", 8) == 0 ? 8 : 0;
		if (!(n == 1 && *s == '*') && (sl == 0 || n <= sl ||
		    memchr(s + sl, '/', n - sl) != NULL))
			return cfg_err(p, p->lineno, "cors_origins: '%.*s' is not an "
			    "origin (scheme://host[:port], or *)", (int)n, s);
		s += n;
	}
	snprintf(p->cf->cors_origins, sizeof(p->cf->cors_origins), "%s", v);
	return 0;
}

/* An empty token would match "Authorization: Bearer " — treat it as none. */
static int
set_admin_token(struct cfg_parse *p, const char *v)
{
	free_secret(p->cf->admin_token);
	p->cf->admin_token = NULL;
	if (*v == '\0')
		return 0;
	p->cf->admin_token = strdup(v);
	if (p->cf->admin_token == NULL)
		return cfg_err(p, p->lineno, "out of memory");
	return 0;
}

static int
set_user(struct cfg_parse *p, const char *v)
{
	if (strlen(v) >= sizeof(p->cf->user) || (*v != '\0' && !valid_name(v, 64, 0)))
		return cfg_err(p, p->lineno, "user: bad user name '%s'", v);
	strcpy(p->cf->user, v);
	return 0;
}

/* ---- [budget] ------------------------------------------------------------ */

static int
cfg_money(struct cfg_parse *p, const char *name, const char *v, int64_t *out)
{
	if (kv_parse_nano(v, out) == -1)
		return cfg_err(p, p->lineno, "%s: '%s' is not a decimal amount", name, v);
	return 0;
}

static int
set_default_budget(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "default", v, &p->cf->default_budget_nusd);
}

static int
set_period(struct cfg_parse *p, const char *v)
{
	static const char *names[] = { "none", "daily", "weekly", "monthly" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(v, names[i]) == 0) {
			p->cf->period = (enum kv_period)i;
			return 0;
		}
	}
	return cfg_err(p, p->lineno, "period: '%s' is not none, daily, weekly or monthly", v);
}

static int
set_unknown_keys(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "allow") == 0 || strcmp(v, "deny") == 0) {
		p->cf->unknown_keys_deny = v[0] == 'd';
		return 0;
	}
	return cfg_err(p, p->lineno, "unknown_keys: '%s' is not allow or deny", v);
}

/* Stays -1 ("unset") until the end of the file, where it resolves to
 * default when a [price default] exists, else deny. */
static int
set_unknown_models(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "default") == 0 || strcmp(v, "deny") == 0) {
		p->cf->unknown_models_deny = strcmp(v, "deny") == 0;
		return 0;
	}
	return cfg_err(p, p->lineno, "unknown_models: '%s' is not default or deny", v);
}

/* [budget] prices = FILE.json: relative to the config file's directory,
 * so that the bundled kilovolt.ini finds its catalogue wherever it runs
 * from. Read once the whole ini is parsed (cfg_load_prices). */
static int
set_prices_file(struct cfg_parse *p, const char *v)
{
	const char *slash = strrchr(p->file, '/');
	int n;

	if (*v == '\0')
		return cfg_err(p, p->lineno, "prices: a file name is required");
	if (*v == '/' || slash == NULL)
		n = snprintf(p->cf->prices_file, sizeof(p->cf->prices_file), "%s", v);
	else
		n = snprintf(p->cf->prices_file, sizeof(p->cf->prices_file), "%.*s/%s",
		    (int)(slash - p->file), p->file, v);
	if (n < 0 || (size_t)n >= sizeof(p->cf->prices_file))
		return cfg_err(p, p->lineno, "prices: path too long");
	p->prices_line = p->lineno;
	return 0;
}

static int
set_reserve_output(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "reserve_output_tokens", v, 0, 10000000, &n) == -1)
		return -1;
	p->cf->reserve_output_tokens = n;
	return 0;
}

static int
set_on_cut(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "charge_reserved") != 0 && strcmp(v, "drain") != 0)
		return cfg_err(p, p->lineno, "on_cut: '%s' is not charge_reserved or drain", v);
	p->cf->on_cut_drain = v[0] == 'd';
	return 0;
}

static int
set_drain_timeout(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "drain_timeout", v, 1, 3600, &n) == -1)
		return -1;
	p->cf->drain_timeout = (int)n;
	return 0;
}

static int
set_drain_max(struct cfg_parse *p, const char *v)
{
	if (parse_size(v, &p->cf->drain_max) == -1 || p->cf->drain_max == 0)
		return cfg_err(p, p->lineno, "drain_max: '%s' is not a size "
		    "(bytes with an optional k, m or g, not 0)", v);
	return 0;
}

/* Server-tool loops (issue 20): the calls a tool without max_uses may
 * make, each an internal turn that bills up to a context window. */
static int
set_max_tool_turns(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "max_tool_turns", v, 0, 1000, &n) == -1)
		return -1;
	p->cf->max_tool_turns = n;
	return 0;
}

/* Rate limits per key and minute: 0 (or unset) is no limit. */
static int
cfg_rate(struct cfg_parse *p, const char *name, const char *v, long long *n)
{
	return cfg_int(p, name, v, 0, 4000000000LL, n);
}

static int
set_default_rpm(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_rate(p, "rpm", v, &n) == -1)
		return -1;
	p->cf->default_rpm = (uint32_t)n;
	return 0;
}

static int
set_default_tpm(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_rate(p, "tpm", v, &n) == -1)
		return -1;
	p->cf->default_tpm = (uint32_t)n;
	return 0;
}

/* ---- [upstream NAME] ----------------------------------------------------- */

static struct kv_upstream *
cur_upstream(struct cfg_parse *p)
{
	return &p->cf->upstreams[p->cf->nupstreams - 1];
}

static int set_words(struct cfg_parse *p, const char *name, const char *v, char ***arr,
    size_t *n, int (*check)(const char *, size_t));

/* url = URL [URL ...]: the first is this entry's; the others are checked
 * now and become targets of their own after the file (expand_targets). */
static int
set_url(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p), tmp;
	char one[512];
	size_t len, n = 0, n0;

	/* A url line after the first adds targets (a line holds 198 bytes). */
	if (u->url[0] != '\0')
		n = 1 + u->nextra;
	n0 = n;
	for (v += strspn(v, " \t"); *v != '\0'; v += strspn(v, " \t"), n++) {
		len = strcspn(v, " \t");
		memset(&tmp, 0, sizeof(tmp));
		if (len >= sizeof(one))
			return cfg_err(p, p->lineno, "url: URL too long");
		if (n == KV_MAX_TARGETS)
			return cfg_err(p, p->lineno, "url: at most %d targets per upstream",
			    KV_MAX_TARGETS);
		memcpy(one, v, len);
		one[len] = '\0';
		v += len;
		if (parse_url(one, n == 0 ? u : &tmp) == -1)
			return cfg_err(p, p->lineno, "url: bad URL '%s' "
			    "(want http[s]://HOST[:PORT][/PATH])", one);
		if (n == 0) {
			strcpy(u->url, one);
			url_host_header(u);
		} else if (grow(&u->extra_urls, u->nextra, sizeof(char *)) == -1 ||
		    (u->extra_urls[u->nextra++] = strdup(one)) == NULL)
			return cfg_err(p, p->lineno, "out of memory");
	}
	if (n == n0)
		return cfg_err(p, p->lineno, "url: empty value");
	return 0;
}

static int
set_fallback(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);

	if (!valid_name(v, sizeof(u->fallback), 0))
		return cfg_err(p, p->lineno, "fallback: bad upstream name '%s'", v);
	strcpy(u->fallback, v);
	return 0;
}

static int
check_model_pair(const char *w, size_t len)
{
	const char *eq = memchr(w, '=', len);

	return eq != NULL && eq != w && eq != w + len - 1 &&
	    memchr(eq + 1, '=', len - (size_t)(eq + 1 - w)) == NULL && len < KV_NAME_MAX * 2;
}

static int
set_model_map(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);

	return set_words(p, "model_map", v, &u->model_map, &u->nmodel_map, check_model_pair);
}

static int
set_eject_after(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "eject_after", v, 1, 1000, &n) == -1)
		return -1;
	cur_upstream(p)->eject_after = (int)n;
	return 0;
}

static int
set_eject_time(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "eject_time", v, 1, 3600, &n) == -1)
		return -1;
	cur_upstream(p)->eject_secs = (int)n;
	return 0;
}

static int
set_retry_budget(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "retry_budget", v, 0, 600, &n) == -1)
		return -1;
	cur_upstream(p)->retry_budget = (int)n;
	return 0;
}

static int
set_health_check(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);
	size_t n = strlen(v), i;

	/* An origin-form path: it goes on the request line as written. */
	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] <= ' ' || v[i] == 0x7f || v[i] == '#')
			break;
	if (v[0] != '/' || n >= sizeof(u->health_path) || i != n)
		return cfg_err(p, p->lineno, "health_check: '%s' is not a path "
		    "(want /PATH, no spaces)", v);
	memcpy(u->health_path, v, n + 1);
	return 0;
}

/* Seconds, "10" or "10s". */
static int
set_health_interval(struct cfg_parse *p, const char *v)
{
	char num[24];
	size_t n = strlen(v);
	long long secs;

	if (n > 1 && n < sizeof(num) && v[n - 1] == 's')
		n--;
	if (n >= sizeof(num))
		n = sizeof(num) - 1;
	memcpy(num, v, n);
	num[n] = '\0';
	if (cfg_int(p, "health_interval", num, 1, 3600, &secs) == -1)
		return -1;
	cur_upstream(p)->health_interval = (int)secs;
	return 0;
}

/* Space-separated words into a list; CHECK rejects a bad word. */
static int
set_words(struct cfg_parse *p, const char *name, const char *v, char ***arr,
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

static int
check_path(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || s[0] != '/' || len > 255)
		return 0;
	for (i = 0; i < len; i++)
		if (!isgraph((unsigned char)s[i]) || s[i] == '?' || s[i] == '#')
			return 0;
	return 1;
}

static int
check_glob(const char *s, size_t len)
{
	char buf[KV_NAME_MAX];

	if (len >= sizeof(buf))
		return 0;
	memcpy(buf, s, len);
	buf[len] = '\0';
	return valid_name(buf, sizeof(buf), 1);
}

static int
set_paths(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);

	return set_words(p, "paths", v, &u->paths, &u->npaths, check_path);
}

static int
set_models(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);

	return set_words(p, "models", v, &u->models, &u->nmodels, check_glob);
}

static int
set_api_key(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);

	if (*v == '\0')
		return cfg_err(p, p->lineno, "api_key: empty value");
	free_secret(u->api_key);
	u->api_key = strdup(v);
	if (u->api_key == NULL)
		return cfg_err(p, p->lineno, "out of memory");
	return 0;
}

static int
set_free_paths(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);

	return set_words(p, "free_paths", v, &u->free_paths, &u->nfree_paths, check_path);
}

static int
set_shared_stored_objects(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
		return cfg_err(p, p->lineno, "shared_stored_objects: '%s' is not yes or no", v);
	cur_upstream(p)->shared_stored_objects = v[0] == 'y';
	return 0;
}

static int
set_tls_record_layer(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "own") != 0 && strcmp(v, "openssl") != 0 && strcmp(v, "kernel") != 0)
		return cfg_err(p, p->lineno, "tls_record_layer: want own, openssl or kernel, not '%s'", v);
	cur_upstream(p)->tls_openssl_records = v[0] == 'o' && v[1] == 'p';
	cur_upstream(p)->tls_kernel_records = v[0] == 'k';
	return 0;
}

/* Checked here so that `kilovoltd -t` catches a typo before a reload. */
static int
set_ca_file(struct cfg_parse *p, const char *v)
{
	struct kv_upstream *u = cur_upstream(p);
	char path[4096];

	if (cfg_path(p, v, path, sizeof(path)) == -1)
		return cfg_err(p, p->lineno, "ca_file: too long");
	if (access(path, R_OK) == -1)
		return cfg_err(p, p->lineno, "ca_file: %s: %s", path, strerror(errno));
	free(u->ca_file);
	u->ca_file = strdup(path);
	if (u->ca_file == NULL)
		return cfg_err(p, p->lineno, "out of memory");
	return 0;
}

/* ---- [price MODEL] ------------------------------------------------------- */

static struct kv_price *
cur_price(struct cfg_parse *p)
{
	if (p->price_default)
		return &p->cf->default_price;
	return &p->cf->prices[p->cf->nprices - 1];
}

static int
set_input(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "input", v, &cur_price(p)->input);
}

static int
set_output(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "output", v, &cur_price(p)->output);
}

static int
set_cached_input(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "cached_input", v, &cur_price(p)->cached_input);
}

static int
set_cache_write(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "cache_write", v, &cur_price(p)->cache_write);
}

static int
set_cache_write_1h(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "cache_write_1h", v, &cur_price(p)->cache_write_1h);
}

static int
set_long_context_threshold(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "long_context_threshold", v, 1, 100000000, &n) == -1)
		return -1;
	cur_price(p)->long_context_threshold = n;
	return 0;
}

static int
set_long_context_input(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "long_context_input", v, &cur_price(p)->long_context_input);
}

static int
set_long_context_output(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "long_context_output", v, &cur_price(p)->long_context_output);
}

static int
set_priority_input(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "priority_input", v, &cur_price(p)->priority_input);
}

static int
set_priority_output(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "priority_output", v, &cur_price(p)->priority_output);
}

static int
set_flex_input(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "flex_input", v, &cur_price(p)->flex_input);
}

static int
set_flex_output(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "flex_output", v, &cur_price(p)->flex_output);
}

/* Fees per 1,000 calls, stored per call: rounded up to the nano-dollar so
 * that a fee never charges less than the price list says. */
static int
cfg_fee_per_1000(struct cfg_parse *p, const char *name, const char *v, int64_t *out)
{
	int64_t n;

	if (cfg_money(p, name, v, &n) == -1)
		return -1;
	*out = n / 1000 + (n % 1000 != 0);
	return 0;
}

static int
set_web_search(struct cfg_parse *p, const char *v)
{
	return cfg_fee_per_1000(p, "web_search", v, &cur_price(p)->web_search_call);
}

static int
set_web_fetch(struct cfg_parse *p, const char *v)
{
	return cfg_fee_per_1000(p, "web_fetch", v, &cur_price(p)->web_fetch_call);
}

static int
set_code_execution(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "code_execution", v, &cur_price(p)->code_exec_hour);
}

/* A price section is whole: output is never silently $0, and each tier
 * has both of its prices. */
static int
end_price(struct cfg_parse *p)
{
	const struct kv_price *pr = cur_price(p);

	if (!(p->seen & 1u))
		return cfg_err(p, p->sect_line, "%s: input is required", p->sect_text);
	if (!(p->seen & 2u))
		return cfg_err(p, p->sect_line, "%s: output is required (write output = 0 "
		    "for a model that bills no output, such as embeddings)", p->sect_text);
	if ((pr->long_context_threshold > 0) != (pr->long_context_input >= 0) ||
	    (pr->long_context_threshold > 0) != (pr->long_context_output >= 0))
		return cfg_err(p, p->sect_line, "%s: long_context_threshold, long_context_input "
		    "and long_context_output go together", p->sect_text);
	if ((pr->priority_input >= 0) != (pr->priority_output >= 0))
		return cfg_err(p, p->sect_line, "%s: priority_input and priority_output go "
		    "together", p->sect_text);
	if ((pr->flex_input >= 0) != (pr->flex_output >= 0))
		return cfg_err(p, p->sect_line, "%s: flex_input and flex_output go together",
		    p->sect_text);
	return 0;
}

/* Token counts the reservation uses (issue 10): the most output a request
 * naming no limit can cost, and the most input one that makes the provider
 * fetch content can cost. */
static int
set_max_output(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "max_output", v, 1, 100000000, &n) == -1)
		return -1;
	cur_price(p)->max_output = n;
	return 0;
}

static int
set_context_window(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "context_window", v, 1, 100000000, &n) == -1)
		return -1;
	cur_price(p)->context_window = n;
	return 0;
}

/* ---- [key NAME] ---------------------------------------------------------- */

static struct kv_keydef *
cur_key(struct cfg_parse *p)
{
	return &p->cf->keys[p->cf->nkeys - 1];
}

static int
unhex(const char *s, uint8_t *out, size_t n)
{
	size_t i;
	unsigned hi, lo;

	for (i = 0; i < n; i++) {
		if (!isxdigit((unsigned char)s[2 * i]) || !isxdigit((unsigned char)s[2 * i + 1]))
			return -1;
		hi = (unsigned)(isdigit((unsigned char)s[2 * i]) ? s[2 * i] - '0' :
		    tolower((unsigned char)s[2 * i]) - 'a' + 10);
		lo = (unsigned)(isdigit((unsigned char)s[2 * i + 1]) ? s[2 * i + 1] - '0' :
		    tolower((unsigned char)s[2 * i + 1]) - 'a' + 10);
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return s[2 * n] == '\0' ? 0 : -1;
}

/* "sha256:<64 hex>" or the raw key, of which only the hash is kept. */
static int
set_key(struct cfg_parse *p, const char *v)
{
	struct kv_keydef *k = cur_key(p);
	unsigned int mdlen = 0;

	if (strncmp(v, "sha256:", 7) == 0) {
		if (unhex(v + 7, k->hash, sizeof(k->hash)) == -1)
			return cfg_err(p, p->lineno, "key: sha256: needs 64 hex digits");
		return 0;
	}
	if (*v == '\0')
		return cfg_err(p, p->lineno, "key: empty value");
	if (EVP_Digest(v, strlen(v), k->hash, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != sizeof(k->hash))
		return cfg_err(p, p->lineno, "key: SHA-256 failed");
	return 0;
}

static int
set_key_budget(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "budget", v, &cur_key(p)->budget_nusd);
}

static int
set_key_rpm(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_rate(p, "rpm", v, &n) == -1)
		return -1;
	cur_key(p)->rpm = n;
	return 0;
}

static int
set_key_tpm(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_rate(p, "tpm", v, &n) == -1)
		return -1;
	cur_key(p)->tpm = n;
	return 0;
}

/* ---- [cluster] ------------------------------------------------------------ */

/* redis+sentinel://H:P[,H:P...]/NAME (port 26379 when omitted) */
static int
set_sentinels(struct cfg_parse *p, const char *v)
{
	struct kv_cluster *c = &p->cf->cluster;
	const char *list = v + 17, *slash = strchr(list, '/'), *q;
	char hp[300];
	size_t n;

	if (slash == NULL || slash[1] == '\0' || strlen(slash + 1) >= sizeof(c->sentinel_master) ||
	    !valid_name(slash + 1, sizeof(c->sentinel_master), 0) || strchr(list, '@') != NULL)
		return cfg_err(p, p->lineno, "redis: want redis+sentinel://HOST:PORT[,HOST:PORT...]"
		    "/MASTER");
	strcpy(c->sentinel_master, slash + 1);
	for (q = list; q < slash; q += n + (q[n] == ',')) {
		n = strcspn(q, ",/");
		if (c->nsentinels == KV_SENTINELS_MAX || n == 0 || n >= sizeof(hp) - 7)
			return cfg_err(p, p->lineno, "redis: at most %d sentinels, each "
			    "HOST[:PORT]", KV_SENTINELS_MAX);
		snprintf(hp, sizeof(hp), "%.*s%s", (int)n, q,
		    memchr(q, ':', n) == NULL ? ":26379" : "");
		if (parse_hostport(hp, c->sentinel_host[c->nsentinels],
		    c->sentinel_port[c->nsentinels]) == -1 || hp[0] == ':')
			return cfg_err(p, p->lineno, "redis: bad sentinel '%.*s'", (int)n, q);
		c->nsentinels++;
	}
	/* a placeholder until a Sentinel names the master */
	strcpy(c->redis_host, c->sentinel_host[0]);
	strcpy(c->redis_port, c->sentinel_port[0]);
	return 0;
}

/* redis://HOST[:PORT], rediss://HOST[:PORT] (TLS), redis+sentinel://... or
 * unix:PATH */
static int
set_redis(struct cfg_parse *p, const char *v)
{
	struct kv_cluster *c = &p->cf->cluster;
	const char *hostport;
	char hp[300];

	c->redis_host[0] = c->redis_unix[0] = '\0';
	c->redis_tls = c->nsentinels = 0;
	c->sentinel_master[0] = '\0';
	if (strncmp(v, "redis+sentinel://", 17) == 0)
		return set_sentinels(p, v);
	if (strncmp(v, "unix:", 5) == 0) {
		if (v[5] != '/' || strlen(v + 5) >= sizeof(c->redis_unix))
			return cfg_err(p, p->lineno, "redis: unix: needs an absolute path "
			    "of at most %zu bytes", sizeof(c->redis_unix) - 1);
		strcpy(c->redis_unix, v + 5);
		return 0;
	}
	c->redis_tls = strncmp(v, "rediss://", 9) == 0;
	hostport = v + (c->redis_tls ? 9 : 8);
	if ((!c->redis_tls && strncmp(v, "redis://", 8) != 0) ||
	    strlen(hostport) >= sizeof(hp) - 6 ||
	    strchr(hostport, '/') != NULL || strchr(hostport, '@') != NULL)
		return cfg_err(p, p->lineno, "redis: want redis://HOST:PORT, "
		    "rediss://HOST:PORT, redis+sentinel://HOST:PORT/MASTER or unix:PATH "
		    "(the password goes in 'password')");
	snprintf(hp, sizeof(hp), "%s%s", hostport,
	    (strrchr(hostport, ':') == NULL || strrchr(hostport, ']') > strrchr(hostport, ':')) ?
	    ":6379" : "");
	if (parse_hostport(hp, c->redis_host, c->redis_port) == -1 || hp[0] == ':')
		return cfg_err(p, p->lineno, "redis: bad host or port in '%s'", v);
	return 0;
}

/* A ca_file kept in a fixed buffer DST of SIZE bytes: readable now, so a
 * typo fails the config check, not the first handshake. */
static int
set_ca_path(struct cfg_parse *p, const char *v, char *dst, size_t size)
{
	if (strlen(v) >= size)
		return cfg_err(p, p->lineno, "ca_file: at most %zu bytes", size - 1);
	if (access(v, R_OK) == -1)
		return cfg_err(p, p->lineno, "ca_file: %s: %s", v, strerror(errno));
	strcpy(dst, v);
	return 0;
}

/* [cluster] ca_file: the trust anchors a rediss:// server is verified with */
static int
set_cluster_ca_file(struct cfg_parse *p, const char *v)
{
	return set_ca_path(p, v, p->cf->cluster.ca_file, sizeof(p->cf->cluster.ca_file));
}

static int
set_redis_password(struct cfg_parse *p, const char *v)
{
	free_secret(p->cf->cluster.password);
	p->cf->cluster.password = NULL;
	if (*v == '\0')
		return 0;
	if ((p->cf->cluster.password = strdup(v)) == NULL)
		return cfg_err(p, p->lineno, "out of memory");
	return 0;
}

static int
set_host_id(struct cfg_parse *p, const char *v)
{
	if (!valid_name(v, sizeof(p->cf->cluster.host_id), 0) || strchr(v, ':') != NULL)
		return cfg_err(p, p->lineno, "host_id: at most %zu printable characters, "
		    "no blanks or ':'", sizeof(p->cf->cluster.host_id) - 1);
	strcpy(p->cf->cluster.host_id, v);
	return 0;
}

static int
set_lease_min(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "lease_min", v, &p->cf->cluster.lease_min_nusd);
}

static int
set_lease_max(struct cfg_parse *p, const char *v)
{
	return cfg_money(p, "lease_max", v, &p->cf->cluster.lease_max_nusd);
}

static int
set_lease_share(struct cfg_parse *p, const char *v)
{
	long long n;

	if (cfg_int(p, "lease_share", v, 1, 100, &n) == -1)
		return -1;
	p->cf->cluster.lease_share = (int)n;
	return 0;
}

static int
set_lease_ttl(struct cfg_parse *p, const char *v)
{
	return set_seconds(p, "lease_ttl", v, 2, &p->cf->cluster.lease_ttl);
}

static int
set_departed_after(struct cfg_parse *p, const char *v)
{
	return set_seconds(p, "departed_after", v, 0, &p->cf->cluster.departed_after);
}

/* ---- [alerts] --------------------------------------------------------------- */

static int
set_alert_webhook(struct cfg_parse *p, const char *v)
{
	if ((strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) ||
	    strlen(v) >= sizeof(p->cf->alerts.webhook) || strchr(v, ' ') != NULL)
		return cfg_err(p, p->lineno, "webhook: want an http:// or https:// URL");
	strcpy(p->cf->alerts.webhook, v);
	return 0;
}

static int
set_alert_thresholds(struct cfg_parse *p, const char *v)
{
	struct kv_alerts *a = &p->cf->alerts;
	const char *s = v;
	char *end;
	long t;

	a->nthresholds = 0;
	while (*(s += strspn(s, " \t")) != '\0') {
		errno = 0;
		t = strtol(s, &end, 10);
		if (end == s || errno != 0 || t < 1 || t > 1000 || (*end != '\0' &&
		    *end != ' ' && *end != '\t') || a->nthresholds == KV_ALERT_THRESHOLDS_MAX ||
		    (a->nthresholds > 0 && t <= a->thresholds[a->nthresholds - 1]))
			return cfg_err(p, p->lineno, "thresholds: want up to %d ascending "
			    "percentages of the budget, e.g. 50 80 100", KV_ALERT_THRESHOLDS_MAX);
		a->thresholds[a->nthresholds++] = (int)t;
		s = end;
	}
	if (a->nthresholds == 0)
		return cfg_err(p, p->lineno, "thresholds: none given");
	return 0;
}

static int
set_alert_format(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "json") != 0 && strcmp(v, "slack") != 0)
		return cfg_err(p, p->lineno, "format: want json or slack, not '%s'", v);
	p->cf->alerts.slack = strcmp(v, "slack") == 0;
	return 0;
}

/* [alerts] ca_file: the trust anchors an https:// webhook is verified with */
static int
set_alert_ca_file(struct cfg_parse *p, const char *v)
{
	return set_ca_path(p, v, p->cf->alerts.ca_file, sizeof(p->cf->alerts.ca_file));
}

/* An ACL user: AUTH user password (Redis 6+). */
static int
set_redis_user(struct cfg_parse *p, const char *v)
{
	if (!valid_name(v, sizeof(p->cf->cluster.user), 0))
		return cfg_err(p, p->lineno, "user: at most %zu printable characters, "
		    "no blanks", sizeof(p->cf->cluster.user) - 1);
	strcpy(p->cf->cluster.user, v);
	return 0;
}

static int
set_require_persistence(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
		return cfg_err(p, p->lineno, "require_persistence: '%s' is not yes or no", v);
	p->cf->cluster.require_persistence = v[0] == 'y';
	return 0;
}

static int
set_on_redis_down(struct cfg_parse *p, const char *v)
{
	if (strcmp(v, "closed") != 0 && strcmp(v, "open") != 0)
		return cfg_err(p, p->lineno, "on_redis_down: want closed or open, not '%s'", v);
	p->cf->cluster.open_when_down = strcmp(v, "open") == 0;
	return 0;
}

/* ---- key tables ---------------------------------------------------------- */

static const struct cfg_key server_keys[] = {
	{ "listen",		set_listen,		0 },
	{ "workers",		set_workers,		0 },
	{ "status_listen",	set_status_listen,	0 },
	{ "ledger",		set_ledger,		0 },
	{ "max_keys",		set_max_keys,		0 },
	{ "client_timeout",	set_client_timeout,	0 },
	{ "upstream_timeout",	set_upstream_timeout,	0 },
	{ "connect_timeout",	set_connect_timeout,	0 },
	{ "header_timeout",	set_header_timeout,	0 },
	{ "shutdown_timeout",	set_shutdown_timeout,	0 },
	{ "max_connections",	set_max_connections,	0 },
	{ "max_body",		set_max_body,		0 },
	{ "spool_dir",		set_spool_dir,		0 },
	{ "spool_max",		set_spool_max,		0 },
	{ "memory_limit",	set_memory_limit,	0 },
	{ "memory_refuse",	set_memory_refuse,	0 },
	{ "admin_token",	set_admin_token,	CFG_SECRET | CFG_ENV_OPT },
	{ "user",		set_user,		0 },
	{ "request_log",	set_request_log,	0 },
	{ "cors_origins",	set_cors_origins,	0 },
	{ NULL, NULL, 0 }
};

static const struct cfg_key budget_keys[] = {
	{ "default",		set_default_budget,	0 },
	{ "period",		set_period,		0 },
	{ "unknown_keys",	set_unknown_keys,	0 },
	{ "unknown_models",	set_unknown_models,	0 },
	{ "reserve_output_tokens", set_reserve_output,	0 },
	{ "prices",		set_prices_file,	0 },
	{ "max_tool_turns",	set_max_tool_turns,	0 },
	{ "rpm",		set_default_rpm,	0 },
	{ "tpm",		set_default_tpm,	0 },
	{ "on_cut",		set_on_cut,		0 },
	{ "drain_timeout",	set_drain_timeout,	0 },
	{ "drain_max",		set_drain_max,		0 },
	{ NULL, NULL, 0 }
};

static const struct cfg_key upstream_keys[] = {
	{ "url",	set_url,	CFG_LIST },
	{ "paths",	set_paths,	CFG_LIST },
	{ "models",	set_models,	CFG_LIST },
	{ "api_key",	set_api_key,	CFG_SECRET },
	{ "ca_file",	set_ca_file,	0 },
	{ "tls_record_layer", set_tls_record_layer, 0 },
	{ "free_paths",	set_free_paths,	CFG_LIST },
	{ "fallback",	set_fallback,	0 },
	{ "model_map",	set_model_map,	CFG_LIST },
	{ "eject_after", set_eject_after, 0 },
	{ "eject_time",	set_eject_time,	0 },
	{ "retry_budget", set_retry_budget, 0 },
	{ "health_check", set_health_check, 0 },
	{ "health_interval", set_health_interval, 0 },
	{ "shared_stored_objects", set_shared_stored_objects, 0 },
	{ NULL, NULL, 0 }
};

static const struct cfg_key price_keys[] = {
	{ "input",		set_input,		0 },
	{ "output",		set_output,		0 },
	{ "cached_input",	set_cached_input,	0 },
	{ "cache_write",	set_cache_write,	0 },
	{ "max_output",		set_max_output,		0 },
	{ "context_window",	set_context_window,	0 },
	{ "cache_write_1h",	set_cache_write_1h,	0 },
	{ "long_context_threshold", set_long_context_threshold, 0 },
	{ "long_context_input",	set_long_context_input,	0 },
	{ "long_context_output", set_long_context_output, 0 },
	{ "priority_input",	set_priority_input,	0 },
	{ "priority_output",	set_priority_output,	0 },
	{ "flex_input",		set_flex_input,		0 },
	{ "flex_output",	set_flex_output,	0 },
	{ "web_search",		set_web_search,		0 },
	{ "web_fetch",		set_web_fetch,		0 },
	{ "code_execution",	set_code_execution,	0 },
	{ NULL, NULL, 0 }
};

static const struct cfg_key key_keys[] = {
	{ "key",	set_key,	CFG_SECRET },
	{ "budget",	set_key_budget,	0 },
	{ "rpm",	set_key_rpm,	0 },
	{ "tpm",	set_key_tpm,	0 },
	{ NULL, NULL, 0 }
};

static const struct cfg_key cluster_keys[] = {
	{ "redis",		set_redis,		0 },
	{ "ca_file",		set_cluster_ca_file,	0 },
	{ "password",		set_redis_password,	CFG_SECRET | CFG_ENV_OPT },
	{ "user",		set_redis_user,		0 },
	{ "host_id",		set_host_id,		0 },
	{ "lease_min",		set_lease_min,		0 },
	{ "lease_max",		set_lease_max,		0 },
	{ "lease_share",	set_lease_share,	0 },
	{ "lease_ttl",		set_lease_ttl,		0 },
	{ "departed_after",	set_departed_after,	0 },
	{ "require_persistence",	set_require_persistence,	0 },
	{ "on_redis_down",	set_on_redis_down,	0 },
	{ NULL, NULL, 0 }
};

static const struct cfg_key alerts_keys[] = {
	{ "webhook",		set_alert_webhook,	CFG_SECRET },
	{ "thresholds",		set_alert_thresholds,	0 },
	{ "format",		set_alert_format,	0 },
	{ "ca_file",		set_alert_ca_file,	0 },
	{ NULL, NULL, 0 }
};

static const struct cfg_key *const sect_keys[] = {
	[SECT_NONE] = NULL,
	[SECT_SERVER] = server_keys,
	[SECT_BUDGET] = budget_keys,
	[SECT_UPSTREAM] = upstream_keys,
	[SECT_PRICE] = price_keys,
	[SECT_KEY] = key_keys,
	[SECT_CLUSTER] = cluster_keys,
	[SECT_ALERTS] = alerts_keys,
};

/* ---- the inih handler ---------------------------------------------------- */

/* Resolve env:NAME. Returns 1 with *v replaced, 0 when an optional variable
 * is unset (skip the key), -1 on error. */
static int
resolve_env(struct cfg_parse *p, const struct cfg_key *k, const char **v)
{
	const char *name = *v + 4, *val;

	if (strncmp(*v, "env:", 4) != 0)
		return 1;
	if (!valid_env_name(name))
		return cfg_err(p, p->lineno, "%s: bad environment variable name '%s'",
		    k->name, name);
	val = getenv(name);
	if (val != NULL) {
		*v = val;
		return 1;
	}
	if (k->flags & CFG_ENV_OPT)
		return 0;
	return cfg_err(p, p->lineno, "%s: environment variable %s is not set",
	    k->name, name);
}

static int
cfg_set(struct cfg_parse *p, const char *name, const char *value)
{
	const struct cfg_key *k;
	uint32_t bit;
	int r;

	if (p->sect == SECT_NONE)
		return cfg_err(p, p->lineno, "'%s' is outside any section", name);
	for (k = sect_keys[p->sect]; k->name != NULL; k++)
		if (strcmp(k->name, name) == 0)
			break;
	if (k->name == NULL)
		return cfg_err(p, p->lineno, "unknown key '%s' in %s", name, p->sect_text);
	bit = 1u << (k - sect_keys[p->sect]);
	if ((p->seen & bit) && !(k->flags & CFG_LIST))
		return cfg_err(p, p->lineno, "'%s' is set twice in %s", name, p->sect_text);
	p->seen |= bit;
	r = resolve_env(p, k, &value);
	if (r <= 0)
		return r;
	return k->set(p, value);
}

static int
cfg_handler(void *user, const char *section, const char *name, const char *value)
{
	struct cfg_parse *p = user;

	(void)section;	/* ours is tracked by cfg_read; inih truncates long ones */
	if (!p->failed)
		cfg_set(p, name, value);
	/* Raw keys and tokens sit in inih's line buffer; wipe them. The buffer
	 * is inih's own writable array, only handed to us as const. */
	explicit_bzero((char *)value, strlen(value));
	return 1;
}

/* ---- sections ------------------------------------------------------------ */

/* Checks that need the whole section, reported at its header line. */
static int
end_section(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	size_t i;

	switch (p->sect) {
	case SECT_UPSTREAM:
		if (cur_upstream(p)->url[0] == '\0')
			return cfg_err(p, p->sect_line, "%s: url is required", p->sect_text);
		/* With neither, it must be another's fallback (expand_targets). */
		cur_upstream(p)->sect_line = p->sect_line;
		break;
	case SECT_PRICE:
		return end_price(p);
	case SECT_CLUSTER:
		if (!(p->seen & 1u))
			return cfg_err(p, p->sect_line, "%s: redis is required", p->sect_text);
		if (cf->cluster.user[0] != '\0' && cf->cluster.password == NULL)
			return cfg_err(p, p->sect_line, "%s: user needs a password",
			    p->sect_text);
		if (cf->cluster.lease_min_nusd > cf->cluster.lease_max_nusd)
			return cfg_err(p, p->sect_line, "%s: lease_min is above lease_max",
			    p->sect_text);
		break;
	case SECT_ALERTS:
		if (cf->alerts.webhook[0] == '\0')
			return cfg_err(p, p->sect_line, "%s: webhook is required", p->sect_text);
		if (cf->alerts.nthresholds == 0) {	/* the default */
			cf->alerts.thresholds[0] = 50;
			cf->alerts.thresholds[1] = 80;
			cf->alerts.thresholds[2] = 100;
			cf->alerts.nthresholds = 3;
		}
		break;
	case SECT_KEY:
		if (!(p->seen & 1u))
			return cfg_err(p, p->sect_line, "%s: key is required", p->sect_text);
		for (i = 0; i + 1 < cf->nkeys; i++)
			if (memcmp(cf->keys[i].hash, cur_key(p)->hash, 32) == 0)
				return cfg_err(p, p->sect_line, "%s: same key as [key %s]",
				    p->sect_text, cf->keys[i].label);
		break;
	default:
		break;
	}
	return 0;
}

static int
dup_section(struct cfg_parse *p)
{
	return cfg_err(p, p->lineno, "duplicate section %s", p->sect_text);
}

static int
begin_upstream(struct cfg_parse *p, const char *name)
{
	struct kv_config *cf = p->cf;
	size_t i;

	if (!valid_name(name, sizeof(cf->upstreams->name), 0))
		return cfg_err(p, p->lineno, "bad upstream name '%s'", name);
	for (i = 0; i < cf->nupstreams; i++)
		if (strcmp(cf->upstreams[i].name, name) == 0)
			return dup_section(p);
	if (grow(&cf->upstreams, cf->nupstreams, sizeof(*cf->upstreams)) == -1)
		return cfg_err(p, p->lineno, "out of memory");
	cf->upstreams[cf->nupstreams].eject_after = 5;
	cf->upstreams[cf->nupstreams].eject_secs = 30;
	cf->upstreams[cf->nupstreams].retry_budget = 10;
	cf->upstreams[cf->nupstreams].health_interval = 10;
	strcpy(cf->upstreams[cf->nupstreams++].name, name);
	return 0;
}

static int
begin_price(struct cfg_parse *p, const char *model)
{
	struct kv_config *cf = p->cf;
	struct kv_price *pr;
	size_t i;

	if (!valid_name(model, KV_NAME_MAX, 1))
		return cfg_err(p, p->lineno, "bad model name '%s'", model);
	if (strcmp(model, "default") == 0) {
		if (cf->has_default_price)
			return dup_section(p);
		cf->has_default_price = p->price_default = 1;
		pr = &cf->default_price;
	} else {
		for (i = 0; i < cf->nprices; i++)
			if (strcmp(cf->prices[i].model, model) == 0)
				return dup_section(p);
		if (grow(&cf->prices, cf->nprices, sizeof(*cf->prices)) == -1)
			return cfg_err(p, p->lineno, "out of memory");
		pr = &cf->prices[cf->nprices++];
	}
	kv_price_unset(pr, model);
	pr->input = pr->output = 0;	/* end_price insists on both */
	return 0;
}

static int
begin_key(struct cfg_parse *p, const char *label)
{
	struct kv_config *cf = p->cf;
	size_t i;

	/* The ledger stores labels in KV_LABEL_MAX bytes. */
	if (!valid_name(label, KV_LABEL_MAX, 0))
		return cfg_err(p, p->lineno, "bad key name '%s' (at most %d characters)",
		    label, KV_LABEL_MAX - 1);
	for (i = 0; i < cf->nkeys; i++)
		if (strcmp(cf->keys[i].label, label) == 0)
			return dup_section(p);
	if (grow(&cf->keys, cf->nkeys, sizeof(*cf->keys)) == -1)
		return cfg_err(p, p->lineno, "out of memory");
	strcpy(cf->keys[cf->nkeys].label, label);
	cf->keys[cf->nkeys].rpm = cf->keys[cf->nkeys].tpm = -1;
	cf->keys[cf->nkeys++].budget_nusd = -1;
	return 0;
}

static int
begin_plain(struct cfg_parse *p, enum cfg_sect s, int *seen)
{
	if (*seen)
		return dup_section(p);
	*seen = 1;
	p->sect = s;
	return 0;
}

/* TEXT is what is between the brackets: "server" or "upstream openai". */
static int
begin_section(struct cfg_parse *p, const char *text)
{
	char kind[16];
	const char *name;
	size_t klen = strcspn(text, " \t");

	if (end_section(p) == -1)
		return -1;
	snprintf(p->sect_text, sizeof(p->sect_text), "[%s]", text);
	p->sect = SECT_NONE;
	p->sect_line = p->lineno;
	p->seen = 0;
	p->price_default = 0;
	name = text + klen + strspn(text + klen, " \t");
	if (klen >= sizeof(kind))
		return cfg_err(p, p->lineno, "unknown section %s", p->sect_text);
	memcpy(kind, text, klen);
	kind[klen] = '\0';
	if (strcmp(kind, "server") == 0 && *name == '\0')
		return begin_plain(p, SECT_SERVER, &p->seen_server);
	if (strcmp(kind, "budget") == 0 && *name == '\0')
		return begin_plain(p, SECT_BUDGET, &p->seen_budget);
	if (strcmp(kind, "alerts") == 0 && *name == '\0') {
		p->cf->alerts.enabled = 1;
		return begin_plain(p, SECT_ALERTS, &p->seen_alerts);
	}
	if (strcmp(kind, "cluster") == 0 && *name == '\0') {
		p->cf->cluster.enabled = 1;
		return begin_plain(p, SECT_CLUSTER, &p->seen_cluster);
	}
	if (*name == '\0')
		return cfg_err(p, p->lineno, "unknown section %s", p->sect_text);
	if (strcmp(kind, "upstream") == 0)
		p->sect = SECT_UPSTREAM;
	else if (strcmp(kind, "price") == 0)
		p->sect = SECT_PRICE;
	else if (strcmp(kind, "key") == 0)
		p->sect = SECT_KEY;
	else
		return cfg_err(p, p->lineno, "unknown section %s", p->sect_text);
	if (p->sect == SECT_UPSTREAM)
		return begin_upstream(p, name);
	if (p->sect == SECT_PRICE)
		return begin_price(p, name);
	return begin_key(p, name);
}

/* ---- the reader ---------------------------------------------------------- */

/* Cut a ';' comment that follows a blank (inih's rule, so "a;b" stays),
 * then trailing blanks. Returns the new length. */
static size_t
strip_line(char *s, size_t len)
{
	size_t i;

	for (i = 1; i < len; i++) {
		if (s[i] == ';' && isspace((unsigned char)s[i - 1])) {
			len = i;
			break;
		}
	}
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	s[len] = '\0';
	return len;
}

/* A meaningful line (no comment, no indentation): a section header is
 * handled here; anything else must be NAME = VALUE for inih. */
static int
cfg_line(struct cfg_parse *p, char *s, size_t len)
{
	const char *sep;

	if (s[0] == '[') {
		if (s[len - 1] != ']' || len < 3)
			return cfg_err(p, p->lineno, "bad section header (want [NAME])");
		s[len - 1] = '\0';
		return begin_section(p, s + 1);
	}
	/* inih also splits "NAME: VALUE"; refusing it keeps a mistyped
	 * "api_key sk-...:x" from becoming a key name echoed in a message. */
	sep = strpbrk(s, "=:");
	if (sep == NULL || *sep != '=')
		return cfg_err(p, p->lineno, "syntax error (want NAME = VALUE or [SECTION])");
	return 0;
}

/* inih's fgets-style reader: hands inih one cleaned line at a time. */
static char *
cfg_read(char *str, int num, void *stream)
{
	struct cfg_parse *p = stream;
	ssize_t n;
	size_t len;
	char *s;

	if (p->failed)
		return NULL;
	errno = 0;
	n = getline(&p->buf, &p->bufcap, p->fp);
	if (n == -1) {
		if (errno != 0 || ferror(p->fp))
			cfg_err(p, 0, "read error: %s", strerror(errno ? errno : EIO));
		else
			end_section(p);
		return NULL;
	}
	p->lineno++;
	s = p->buf;
	if (strlen(s) != (size_t)n) {
		cfg_err(p, p->lineno, "NUL byte in line");
		return NULL;
	}
	if (p->lineno == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	s += strspn(s, " \t\r\n\f\v");
	len = *s == ';' || *s == '#' ? 0 : strip_line(s, strlen(s));
	str[0] = '\0';
	if (len > 0 && s[0] != '[') {
		if (len + 2 > (size_t)num) {
			cfg_err(p, p->lineno, "line too long (at most %d bytes "
			    "without comments)", num - 2);
			return NULL;
		}
		memcpy(str, s, len);
		str[len] = '\0';
	}
	if (len > 0 && cfg_line(p, s, len) == -1)
		return NULL;
	/* Raw keys pass through this buffer too. */
	explicit_bzero(p->buf, (size_t)n);
	strcat(str, "\n");
	return str;
}

/* ---- environment overrides ----------------------------------------------- */

static int
env_overrides(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	const char *v;
	long long n;

	v = getenv("KILOVOLT_PORT");
	if (v != NULL && *v != '\0' && parse_port(v, cf->listen_port) == -1)
		return cfg_err(p, -1, "KILOVOLT_PORT: not a port");
	v = getenv("KILOVOLT_WORKERS");
	if (v != NULL && *v != '\0') {
		p->workers_auto = strcmp(v, "auto") == 0;
		if (!p->workers_auto && parse_ll(v, 1, CFG_MAX_WORKERS, &n) == -1)
			return cfg_err(p, -1, "KILOVOLT_WORKERS: not auto or 1..%d",
			    CFG_MAX_WORKERS);
		if (!p->workers_auto)
			cf->workers = (int)n;
	}
	v = getenv("KILOVOLT_LEDGER");
	if (v != NULL && *v != '\0') {
		if (strlen(v) >= sizeof(cf->ledger))
			return cfg_err(p, -1, "KILOVOLT_LEDGER: path too long");
		strcpy(cf->ledger, v);
	}
	v = getenv("KILOVOLT_DEFAULT_BUDGET");
	if (v != NULL && *v != '\0' && kv_parse_nano(v, &cf->default_budget_nusd) == -1)
		return cfg_err(p, -1, "KILOVOLT_DEFAULT_BUDGET: not a decimal amount");
	return 0;
}

/* ---- load ---------------------------------------------------------------- */

static void
cfg_defaults(struct kv_config *cf)
{
	memset(cf, 0, sizeof(*cf));
	strcpy(cf->listen_host, "0.0.0.0");
	strcpy(cf->listen_port, "8080");
	strcpy(cf->status_host, "127.0.0.1");
	strcpy(cf->status_port, "9090");
	strcpy(cf->ledger, "/var/lib/kilovolt/ledger");
	cf->max_keys = 4096;
	cf->client_timeout = 60;
	cf->upstream_timeout = 600;
	cf->connect_timeout = 5;
	cf->header_timeout = 10;
	cf->shutdown_timeout = 30;
	cf->max_connections = 4096;
	cf->max_body = 64 << 20;
	cf->spool_max = (size_t)1 << 30;
	cf->memory_limit = -1;
	cf->memory_refuse_pct = 95;
	cf->default_budget_nusd = 2000000000;
	cf->period = KV_PERIOD_NONE;
	cf->reserve_output_tokens = 1024;
	cf->max_tool_turns = 10;
	cf->unknown_models_deny = -1;	/* resolved after the file */
	cf->drain_timeout = 60;
	cf->drain_max = 4 << 20;
	cf->cluster.lease_min_nusd = 10000000;		/* $0.01 */
	cf->cluster.lease_max_nusd = 1000000000;	/* $1.00 */
	cf->cluster.lease_share = 25;
	cf->cluster.lease_ttl = 10;
	cf->cluster.departed_after = 300;
}

/* The machine id (/etc/machine-id, 32 hex digits) into OUT; 0 or -1. */
static int
machine_id(char *out, size_t size)
{
	FILE *f = fopen("/etc/machine-id", "r");
	int ok;

	if (f == NULL)
		return -1;
	ok = fgets(out, (int)size, f) != NULL;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok)
		return -1;
	out[strcspn(out, " \t\r\n")] = '\0';
	return out[0] != '\0' && strchr(out, ':') == NULL ? 0 : -1;
}

/* The cluster's host_id defaults to the full host name, which tells apart
 * gw1.us-east and gw1.eu-west (a cut name made them one host and let both
 * admit against one grant, issue 22); a name that does not fit, or
 * localhost, gives way to the machine id. */
static int
cluster_defaults(struct cfg_parse *p)
{
	struct kv_cluster *c = &p->cf->cluster;
	char name[256];

	if (!c->enabled || c->host_id[0] != '\0')
		return 0;
	if (gethostname(name, sizeof(name)) == -1)
		name[0] = '\0';
	name[sizeof(name) - 1] = '\0';
	if (name[0] == '\0' || strlen(name) >= sizeof(c->host_id) ||
	    name[strcspn(name, " \t:")] != '\0' || strcmp(name, "localhost") == 0 ||
	    strncmp(name, "localhost.", 10) == 0) {
		if (machine_id(name, sizeof(c->host_id)) == -1)
			return cfg_err(p, 0, "[cluster]: no usable host name and no "
			    "/etc/machine-id: set host_id");
	}
	memcpy(c->host_id, name, strlen(name) + 1);
	return 0;
}

static int
cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		return 1;
	return n > CFG_MAX_WORKERS ? CFG_MAX_WORKERS : (int)n;
}

/* One entry per extra target of upstream I: its own URL, the rest as I's. */
static int
add_target(struct cfg_parse *p, size_t i, const char *url)
{
	struct kv_config *cf = p->cf;
	struct kv_upstream *t, *u;

	if (grow(&cf->upstreams, cf->nupstreams, sizeof(*cf->upstreams)) == -1)
		return cfg_err(p, 0, "out of memory");
	u = &cf->upstreams[i];
	t = &cf->upstreams[cf->nupstreams++];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, u->name);
	(void)parse_url(url, t);	/* checked by set_url */
	strcpy(t->url, url);
	url_host_header(t);
	t->target_of = i + 1;
	t->shared_stored_objects = u->shared_stored_objects;
	t->tls_openssl_records = u->tls_openssl_records;
	t->tls_kernel_records = u->tls_kernel_records;
	if ((u->api_key != NULL && (t->api_key = strdup(u->api_key)) == NULL) ||
	    (u->ca_file != NULL && (t->ca_file = strdup(u->ca_file)) == NULL))
		return cfg_err(p, 0, "out of memory");
	return 0;
}

/* Every upstream is reached by its paths or models, or as a fallback. */
static int
check_reachable(struct cfg_parse *p, size_t n0)
{
	const struct kv_config *cf = p->cf;
	size_t i, j;
	int named;

	for (i = 0; i < n0; i++) {
		const struct kv_upstream *u = &cf->upstreams[i];

		if (u->npaths > 0 || u->nmodels > 0 || u->nfree_paths > 0)
			continue;
		for (named = 0, j = 0; j < n0; j++)
			named |= cf->upstreams[j].fallback_idx == i + 1;
		if (!named)
			return cfg_err(p, u->sect_line, "[upstream %s]: needs paths or models "
			    "(or to be another upstream's fallback)", u->name);
	}
	return 0;
}

/* After the whole file: extra targets become entries, fallbacks resolve. */
static int
expand_targets(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	size_t n0 = cf->nupstreams, i, j;

	for (i = 0; i < n0; i++) {
		cf->upstreams[i].first_extra = cf->nupstreams;
		for (j = 0; j < cf->upstreams[i].nextra; j++)
			if (add_target(p, i, cf->upstreams[i].extra_urls[j]) == -1)
				return -1;
		free_strs(cf->upstreams[i].extra_urls, cf->upstreams[i].nextra);
		cf->upstreams[i].extra_urls = NULL;
	}
	for (i = 0; i < n0; i++) {
		struct kv_upstream *u = &cf->upstreams[i];

		if (u->fallback[0] == '\0')
			continue;
		for (j = 0; j < n0; j++)
			if (j != i && strcmp(cf->upstreams[j].name, u->fallback) == 0)
				u->fallback_idx = j + 1;
		if (u->fallback_idx == 0)
			return cfg_err(p, 0, "[upstream %s] fallback: no other upstream named '%s'",
			    u->name, u->fallback);
	}
	return check_reachable(p, n0);
}

static int
cfg_parse_file(struct cfg_parse *p)
{
	int r;

	p->fp = fopen(p->file, "re");
	if (p->fp == NULL)
		return cfg_err(p, 0, "%s", strerror(errno));
	r = ini_parse_stream(cfg_read, p, cfg_handler, p);
	if (p->buf != NULL)
		explicit_bzero(p->buf, p->bufcap);	/* a line may hold a raw key */
	free(p->buf);
	p->buf = NULL;
	if (fclose(p->fp) == EOF && !p->failed)
		return cfg_err(p, 0, "%s", strerror(errno));
	if (p->failed)
		return -1;
	if (r == -2)
		return cfg_err(p, 0, "out of memory");
	if (r != 0)
		return cfg_err(p, r, "syntax error");
	if (p->cf->nupstreams == 0)
		return cfg_err(p, 0, "no [upstream NAME] section");
	return expand_targets(p);
}

/* [budget] prices: the catalogue's entries of the providers kilovolt
 * routes to (openai, anthropic, and any upstream's name), merged under the
 * [price] sections. Without a file the index is built over the sections. */
static int
cfg_load_prices(struct cfg_parse *p)
{
	struct kv_config *cf = p->cf;
	const char *prov[KV_CATALOG_PROVIDERS_MAX];
	struct kv_catalog_stats st;
	struct kv_price *file = NULL;
	size_t n = 0;
	char why[512];

	cf->nprices_ini = cf->nprices;
	if (p->prices_instead != NULL &&
	    snprintf(cf->prices_file, sizeof(cf->prices_file), "%s", p->prices_instead) >=
	    (int)sizeof(cf->prices_file))
		return cfg_err(p, 0, "prices: path too long");
	if (cf->prices_file[0] == '\0')
		return kv_pricetab_index(cf) == -1 ? cfg_err(p, 0, "out of memory") : 0;
	kv_catalog_providers(cf, prov);
	if (kv_catalog_load(cf->prices_file, prov, &file, &n, &st, why, sizeof(why)) == -1) {
		free(file);
		return cfg_err(p, p->prices_line, "prices: %s", why);
	}
	kv_catalog_summary(&st, cf->prices_summary, sizeof(cf->prices_summary));
	kv_catalog_unknown(&st, cf->prices_unknown, sizeof(cf->prices_unknown));
	cf->prices_inexact = st.inexact;
	if (kv_pricetab_merge(cf, file, n) == -1)
		return cfg_err(p, 0, "out of memory");
	return 0;
}

int
kv_config_load(struct kv_config *cf, const char *file, char *err, size_t errlen)
{
	return kv_config_load_prices(cf, file, NULL, err, errlen);
}

int
kv_config_load_prices(struct kv_config *cf, const char *file, const char *prices,
    char *err, size_t errlen)
{
	struct cfg_parse p;

	memset(&p, 0, sizeof(p));
	p.prices_instead = prices;
	p.cf = cf;
	p.file = file;
	p.err = err;
	p.errlen = errlen;
	p.workers_auto = 1;
	cfg_defaults(cf);
	if (strlen(file) >= sizeof(cf->path)) {
		cfg_err(&p, 0, "path too long");
		return -1;
	}
	strcpy(cf->path, file);
	if (cfg_parse_file(&p) == -1 || env_overrides(&p) == -1 || cluster_defaults(&p) == -1 ||
	    cfg_load_prices(&p) == -1) {
		kv_config_free(cf);
		memset(cf, 0, sizeof(*cf));
		return -1;
	}
	if (p.workers_auto)
		cf->workers = cpu_count();
	if (cf->unknown_models_deny == -1)
		cf->unknown_models_deny = !cf->has_default_price;
	return 0;
}

const char *
kv_config_default_path(void)
{
	const char *env = getenv("KILOVOLT_CONFIG");

	if (env != NULL && *env != '\0')
		return env;
	if (access(CFG_DEFAULT_FILE, F_OK) == 0)
		return CFG_DEFAULT_FILE;
	return "./kilovolt.ini";
}

void
kv_config_free(struct kv_config *cf)
{
	size_t i;

	for (i = 0; i < cf->nupstreams; i++) {
		free_strs(cf->upstreams[i].paths, cf->upstreams[i].npaths);
		free_strs(cf->upstreams[i].models, cf->upstreams[i].nmodels);
		free_strs(cf->upstreams[i].free_paths, cf->upstreams[i].nfree_paths);
		free_strs(cf->upstreams[i].model_map, cf->upstreams[i].nmodel_map);
		if (cf->upstreams[i].extra_urls != NULL)
			free_strs(cf->upstreams[i].extra_urls, cf->upstreams[i].nextra);
		free_secret(cf->upstreams[i].api_key);
		free(cf->upstreams[i].ca_file);
	}
	free(cf->upstreams);
	cf->upstreams = NULL;
	cf->nupstreams = 0;
	kv_pricetab_free(cf);
	free(cf->prices);
	cf->prices = NULL;
	cf->nprices = 0;
	free(cf->keys);
	cf->keys = NULL;
	cf->nkeys = 0;
	free_secret(cf->admin_token);
	cf->admin_token = NULL;
	free_secret(cf->cluster.password);
	cf->cluster.password = NULL;
}

/* ---- lookups ------------------------------------------------------------- */

int
kv_glob_match(const char *pattern, const char *s)
{
	size_t len = strlen(pattern);

	if (len > 0 && pattern[len - 1] == '*')
		return strncmp(pattern, s, len - 1) == 0;
	return strcmp(pattern, s) == 0;
}

int
kv_path_match(const char *prefix, const char *path)
{
	size_t len = strlen(prefix);

	if (strncmp(prefix, path, len) != 0)
		return 0;
	return path[len] == '\0' || path[len] == '/' || path[len] == '?' ||
	    (len > 0 && prefix[len - 1] == '/');
}

const struct kv_upstream *
kv_config_route(const struct kv_config *cf, const char *path, const char *model)
{
	size_t i, j;

	for (i = 0; model != NULL && *model != '\0' && i < cf->nupstreams; i++)
		for (j = 0; j < cf->upstreams[i].nmodels; j++)
			if (kv_glob_match(cf->upstreams[i].models[j], model))
				return &cf->upstreams[i];
	/* free_paths first: an upstream that lists a path serves it, even
	 * when another upstream's paths (a /v1 catch-all) cover it too */
	for (i = 0; path != NULL && i < cf->nupstreams; i++)
		for (j = 0; j < cf->upstreams[i].nfree_paths; j++)
			if (kv_path_match(cf->upstreams[i].free_paths[j], path))
				return &cf->upstreams[i];
	for (i = 0; path != NULL && i < cf->nupstreams; i++)
		for (j = 0; j < cf->upstreams[i].npaths; j++)
			if (kv_path_match(cf->upstreams[i].paths[j], path))
				return &cf->upstreams[i];
	return NULL;
}

int
kv_config_shared_path(const char *path)
{
	static const char *const shared[] = { "/v1/models", "/v1/files" };
	size_t i, n;

	for (i = 0; path != NULL && i < sizeof(shared) / sizeof(shared[0]); i++) {
		n = strlen(shared[i]);
		if (strncmp(path, shared[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/' || path[n] == '?'))
			return 1;
	}
	return 0;
}

const struct kv_upstream *
kv_config_route_client(const struct kv_config *cf, const char *path,
    const char *model, int anthropic_client)
{
	const struct kv_upstream *up;

	if (anthropic_client && kv_config_shared_path(path) &&
	    (up = kv_config_route(cf, "/v1/messages", NULL)) != NULL)
		return up;
	return kv_config_route(cf, path, model);
}

const struct kv_price *
kv_config_price(const struct kv_config *cf, const char *model)
{
	return kv_price_lookup(cf, model, NULL, NULL);
}

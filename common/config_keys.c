/* Every key of kilovolt.ini, one row each (config_int.h): what it is, where
 * it goes, its bounds. The rows of plain keys are all there is to them;
 * below the helpers are the keys with a grammar of their own, each with
 * its setter and its -T printer side by side so the two cannot drift. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "common/config_units.h"

#define CFG_MAX_SIZE		(1LL << 40)
#define CFG_MAX_TOKENS		100000000LL

/* ---- word checks -------------------------------------------------------- */

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
	return cfg_valid_name(buf, sizeof(buf), 1);
}

static int
check_model_pair(const char *w, size_t len)
{
	const char *eq = memchr(w, '=', len);
	size_t i;

	/* model names go into request bodies: printable, no control bytes */
	for (i = 0; i < len; i++)
		if (!isgraph((unsigned char)w[i]))
			return 0;
	return eq != NULL && eq != w && eq != w + len - 1 &&
	    memchr(eq + 1, '=', len - (size_t)(eq + 1 - w)) == NULL && len < KV_NAME_MAX * 2;
}

/* "HOST:PORT" as the address parsers read it back: v6 in brackets. */
static void
show_hostport(FILE *f, const char *name, const char *host, const char *port)
{
	int v6 = strchr(host, ':') != NULL;

	fprintf(f, "%s = %s%s%s:%s\n", name, v6 ? "[" : "", host, v6 ? "]" : "", port);
}

/* ---- [server] ------------------------------------------------------------ */

static int
set_listen(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if (cfg_parse_hostport(v, p->cf->listen_host, p->cf->listen_port) == -1)
		return cfg_err(p, p->lineno, "listen: bad address '%s' "
		    "(want HOST:PORT, [IPV6]:PORT or PORT)", v);
	return 0;
}

static void
show_listen(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	(void)obj;
	show_hostport(f, k->name, cf->listen_host, cf->listen_port);
}

static int
set_workers(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	long long n;

	p->workers_auto = strcmp(v, "auto") == 0;
	if (p->workers_auto)
		return 0;
	if (cfg_int(p, k->name, v, k->min, k->max, &n) == -1)
		return -1;
	p->cf->workers = (int)n;
	return 0;
}

static int
set_status_listen(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if (*v == '\0' || strcmp(v, "off") == 0) {
		p->cf->status_host[0] = p->cf->status_port[0] = '\0';
		return 0;
	}
	if (cfg_parse_hostport(v, p->cf->status_host, p->cf->status_port) == -1)
		return cfg_err(p, p->lineno, "status_listen: bad address '%s' "
		    "(want HOST:PORT, [IPV6]:PORT, PORT or off)", v);
	/* It shows every key's spend and takes admin writes: a bare port
	 * stays on loopback; other interfaces must be named. */
	if (strchr(v, ':') == NULL)
		strcpy(p->cf->status_host, "127.0.0.1");
	return 0;
}

static void
show_status_listen(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	(void)obj;
	if (cf->status_port[0] == '\0')
		fprintf(f, "%s = off\n", k->name);
	else
		show_hostport(f, k->name, cf->status_host, cf->status_port);
}

/* auto: the limit of the memory cgroup the daemon runs in (read by each
 * worker at start); off; or a size. */
static int
set_memory_limit(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	uint64_t n;

	if (strcmp(v, "auto") == 0)
		p->cf->memory_limit = -1;
	else if (strcmp(v, "off") == 0)
		p->cf->memory_limit = 0;
	else if (kv_cfg_parse_size(v, &n) == 0 && n >= (uint64_t)k->min)
		p->cf->memory_limit = (int64_t)n;
	else
		return cfg_err(p, p->lineno, "memory_limit: '%s' is not auto, off or a size "
		    "of at least 1m (bytes with an optional k, m or g)", v);
	return 0;
}

static void
show_memory_limit(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	char buf[32];

	(void)obj;
	if (cf->memory_limit <= 0) {
		fprintf(f, "%s = %s\n", k->name, cf->memory_limit == 0 ? "off" : "auto");
		return;
	}
	kv_cfg_format_size((uint64_t)cf->memory_limit, buf, sizeof(buf));
	fprintf(f, "%s = %s\n", k->name, buf);
}

static int
set_memory_refuse(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	long long n;
	size_t len = strlen(v);
	char num[8];

	if (len == 0 || len >= sizeof(num) || v[len - 1] != '%')
		return cfg_err(p, p->lineno, "memory_refuse: '%s' is not a percentage "
		    "(50%%..99%%)", v);
	memcpy(num, v, len - 1);
	num[len - 1] = '\0';
	if (cfg_int(p, k->name, num, k->min, k->max, &n) == -1)
		return -1;
	p->cf->memory_refuse_pct = (int)n;
	return 0;
}

static void
show_memory_refuse(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	(void)obj;
	fprintf(f, "%s = %d%%\n", k->name, cf->memory_refuse_pct);
}

static int
set_request_log(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if (*v == '\0' || strlen(v) >= sizeof(p->cf->request_log))
		return cfg_err(p, p->lineno, "request_log: a file name or off");
	if (strcmp(v, "off") == 0)
		p->cf->request_log[0] = '\0';
	else if (cfg_path(p, v, p->cf->request_log, sizeof(p->cf->request_log)) == -1)
		return cfg_err(p, p->lineno, "request_log: too long");
	return 0;
}

/* audit_log: a file, or off; unset, audit.jsonl beside the ledger
 * (common/audit_log.h). "off" is kept as the word: a path is absolute. */
static int
set_audit_log(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if (*v == '\0')
		return cfg_err(p, p->lineno, "audit_log: a file name or off");
	if (strcmp(v, "off") == 0)
		strcpy(p->cf->audit_log, "off");
	else if (cfg_path(p, v, p->cf->audit_log, sizeof(p->cf->audit_log)) == -1)
		return cfg_err(p, p->lineno, "audit_log: too long");
	return 0;
}

static void
show_audit_log(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	(void)obj;
	if (cf->audit_log[0] == '\0')
		fprintf(f, "; %s: not set (audit.jsonl beside the ledger)\n", k->name);
	else if (strcmp(cf->audit_log, "off") == 0)
		fprintf(f, "%s = off\n", k->name);
	else
		cfg_show_path(f, k->name, cf->audit_log);
}

/* admin_name: the admin token's name in the audit log, a user name's
 * characters. */
static int
set_admin_name(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if (strlen(v) >= sizeof(p->cf->admin_name) ||
	    (*v != '\0' && !cfg_valid_name(v, sizeof(p->cf->admin_name), 0)))
		return cfg_err(p, p->lineno, "admin_name: bad name '%s' (printable, no "
		    "blanks, quotes or brackets)", v);
	strcpy(p->cf->admin_name, v);
	return 0;
}

/* Catalogue field names (issue 33): what a served model's entry may name
 * that kilovolt does not charge, by the operator's explicit choice. */
static int
set_prices_ignore(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	const char *s;

	(void)k;
	if (strlen(v) >= sizeof(p->cf->prices_ignore))
		return cfg_err(p, p->lineno, "prices_ignore: too long");
	for (s = v; *s != '\0'; s++)
		if (!(*s == ' ' || *s == '\t' || *s == '_' || *s == '.' ||
		    (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
			return cfg_err(p, p->lineno, "prices_ignore: want catalogue field "
			    "names (a-z, 0-9, '_', '.'), separated by blanks");
	snprintf(p->cf->prices_ignore, sizeof(p->cf->prices_ignore), "%s", v);
	return 0;
}

/* Origins as a browser sends them: scheme://host[:port], no path, or "*". */
static int
set_cors_origins(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	const char *s = v;
	size_t n, sl;

	(void)k;
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

static int
set_user(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if (strlen(v) >= sizeof(p->cf->user) || (*v != '\0' && !cfg_valid_name(v, 64, 0)))
		return cfg_err(p, p->lineno, "user: bad user name '%s'", v);
	strcpy(p->cf->user, v);
	return 0;
}

/* ---- [budget] ------------------------------------------------------------ */

/* [budget] prices = FILE.json: relative to the config file's directory,
 * so that the bundled kilovolt.ini finds its catalogue wherever it runs
 * from. Read once the whole ini is parsed (cfg_load_prices). */
static int
set_prices_file(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if (*v == '\0')
		return cfg_err(p, p->lineno, "prices: a file name is required");
	if (cfg_path(p, v, p->cf->prices_file, sizeof(p->cf->prices_file)) == -1)
		return cfg_err(p, p->lineno, "prices: path too long");
	p->prices_line = p->lineno;
	return 0;
}

/* ---- [key NAME] ---------------------------------------------------------- */

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
set_key(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_keydef *kd = cfg_base(p, k->base);
	unsigned int mdlen = 0;

	if (strncmp(v, "sha256:", 7) == 0) {
		if (unhex(v + 7, kd->hash, sizeof(kd->hash)) == -1)
			return cfg_err(p, p->lineno, "key: sha256: needs 64 hex digits");
		return 0;
	}
	if (*v == '\0')
		return cfg_err(p, p->lineno, "key: empty value");
	if (EVP_Digest(v, strlen(v), kd->hash, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != sizeof(kd->hash))
		return cfg_err(p, p->lineno, "key: SHA-256 failed");
	return 0;
}

/* The raw key is never kept, only its SHA-256, so that is what -T can
 * show: the form the config accepts, which works as the key does. */
static void
show_key(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	const struct kv_keydef *kd = obj;
	size_t i;

	(void)cf;
	fprintf(f, "%s = sha256:", k->name);
	for (i = 0; i < sizeof(kd->hash); i++)
		fprintf(f, "%02x", kd->hash[i]);
	fputc('\n', f);
}

/* ---- [cluster] ------------------------------------------------------------ */

/* A ca_file kept in a fixed buffer, relative to the config's directory
 * like every other path (kilovolt.ini(5)): readable now, so a typo fails
 * the config check, not the first handshake. */
static int
set_ca_path(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	char *dst = (char *)cfg_base(p, k->base) + k->off;
	char path[4096];

	if (cfg_path(p, v, path, sizeof(path)) == -1 || strlen(path) >= k->width)
		return cfg_err(p, p->lineno, "ca_file: at most %zu bytes", k->width - 1);
	if (access(path, R_OK) == -1)
		return cfg_err(p, p->lineno, "ca_file: %s: %s", path, strerror(errno));
	strcpy(dst, path);
	return 0;
}

static int
set_host_id(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	if (!cfg_valid_name(v, k->width, 0) || strchr(v, ':') != NULL)
		return cfg_err(p, p->lineno, "host_id: at most %zu printable characters, "
		    "no blanks or ':'", k->width - 1);
	strcpy(p->cf->cluster.host_id, v);
	return 0;
}

/* An ACL user: AUTH user password (Redis 6+). */
static int
set_redis_user(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	if (!cfg_valid_name(v, k->width, 0))
		return cfg_err(p, p->lineno, "user: at most %zu printable characters, "
		    "no blanks", k->width - 1);
	strcpy(p->cf->cluster.user, v);
	return 0;
}

/* ---- [alerts] --------------------------------------------------------------- */

static int
set_alert_webhook(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	(void)k;
	if ((strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) ||
	    strlen(v) >= sizeof(p->cf->alerts.webhook) || strchr(v, ' ') != NULL)
		return cfg_err(p, p->lineno, "webhook: want an http:// or https:// URL");
	strcpy(p->cf->alerts.webhook, v);
	return 0;
}

/* A Slack or Teams webhook's path is its secret: scheme and host only. */
static void
show_webhook(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	const char *w = cf->alerts.webhook, *host = strstr(w, "://");

	(void)obj;
	host = host != NULL ? host + 3 : w;
	fprintf(f, "%s = %.*s/***\n", k->name, (int)(strcspn(host, "/?#") + (host - w)), w);
}

static int
set_alert_thresholds(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_alerts *a = &p->cf->alerts;
	const char *s = v;
	char *end;
	long t;

	(void)k;
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

static void
show_thresholds(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	int i;

	(void)obj;
	fprintf(f, "%s =", k->name);
	for (i = 0; i < cf->alerts.nthresholds; i++)
		fprintf(f, " %d", cf->alerts.thresholds[i]);
	fputc('\n', f);
}

/* ---- the table ------------------------------------------------------------ */

#define FIELD(T, f)	.off = offsetof(T, f), .width = sizeof(((T *)0)->f)
#define CF(f)		.base = CFG_B_CONFIG, FIELD(struct kv_config, f)
#define UPS(f)		.base = CFG_B_UPSTREAM, FIELD(struct kv_upstream, f)
#define PRC(f)		.base = CFG_B_PRICE, FIELD(struct kv_price, f)
#define KEY(f)		.base = CFG_B_KEY, FIELD(struct kv_keydef, f)
#define WORDS(f, n)	.type = CFG_T_WORDS, UPS(f), .off_n = offsetof(struct kv_upstream, n)
#define SECS(lo, hi)	.type = CFG_T_SECS, .min = (lo), .max = (hi)
#define SIZE(lo)	.type = CFG_T_SIZE, .min = (lo), .max = CFG_MAX_SIZE
#define INT(lo, hi)	.type = CFG_T_INT, .min = (lo), .max = (hi)
#define MONEY		.type = CFG_T_MONEY
#define ENUM(w)		.type = CFG_T_ENUM, .words = (w)
#define SPECIAL(s, sh)	.type = CFG_T_SPECIAL, .set = (s), .show = (sh)
/* An optional price field: -1 (below its minimum) is unset. */
#define OPT_MONEY(f)	{ #f, MONEY, PRC(f), .flags = CFG_OPTIONAL }

static const struct cfg_word yes_no[] = { { "yes", 1 }, { "no", 0 }, { NULL, 0 } };
static const struct cfg_word periods[] = { { "none", KV_PERIOD_NONE },
	{ "daily", KV_PERIOD_DAILY }, { "weekly", KV_PERIOD_WEEKLY },
	{ "monthly", KV_PERIOD_MONTHLY }, { NULL, 0 } };
static const struct cfg_word allow_deny[] = { { "allow", 0 }, { "deny", 1 }, { NULL, 0 } };
static const struct cfg_word default_deny[] = { { "default", 0 }, { "deny", 1 }, { NULL, 0 } };
static const struct cfg_word on_cut[] = { { "charge_reserved", 0 }, { "drain", 1 },
	{ NULL, 0 } };
static const struct cfg_word record_layers[] = { { "own", KV_TLS_RECORDS_OWN },
	{ "openssl", KV_TLS_RECORDS_OPENSSL }, { "kernel", KV_TLS_RECORDS_KERNEL }, { NULL, 0 } };
static const struct cfg_word closed_open[] = { { "closed", 0 }, { "open", 1 }, { NULL, 0 } };
static const struct cfg_word providers[] = { { "auto", KV_PROVIDER_AUTO },
	{ "openai", KV_PROVIDER_OPENAI }, { "anthropic", KV_PROVIDER_ANTHROPIC },
	{ "bedrock", KV_PROVIDER_BEDROCK }, { "gemini", KV_PROVIDER_GEMINI },
	{ "vertex", KV_PROVIDER_VERTEX }, { "azure", KV_PROVIDER_AZURE }, { NULL, 0 } };
static const struct cfg_word formats[] = { { "json", 0 }, { "slack", 1 }, { NULL, 0 } };

static const struct cfg_key server_keys[] = {
	{ "listen", SPECIAL(set_listen, show_listen) },
	{ "workers", INT(1, CFG_MAX_WORKERS), CF(workers), .set = set_workers },
	{ "status_listen", SPECIAL(set_status_listen, show_status_listen) },
	{ "ledger", .type = CFG_T_PATH, CF(ledger) },
	{ "max_keys", INT(1, CFG_MAX_KEYS), CF(max_keys) },
	{ "client_timeout", SECS(1, CFG_MAX_SECONDS), CF(client_timeout) },
	{ "upstream_timeout", SECS(1, CFG_MAX_SECONDS), CF(upstream_timeout) },
	{ "connect_timeout", SECS(1, CFG_MAX_SECONDS), CF(connect_timeout) },
	{ "header_timeout", SECS(1, CFG_MAX_SECONDS), CF(header_timeout) },
	{ "shutdown_timeout", SECS(0, CFG_MAX_SECONDS), CF(shutdown_timeout) },
	{ "max_connections", INT(1, 1 << 20), CF(max_connections) },
	{ "max_body", SIZE(0), CF(max_body) },
	{ "spool_dir", .type = CFG_T_PATH, CF(spool_dir) },
	{ "spool_max", SIZE(1), CF(spool_max) },
	{ "memory_limit", SPECIAL(set_memory_limit, show_memory_limit), .min = 1 << 20 },
	{ "memory_refuse", SPECIAL(set_memory_refuse, show_memory_refuse), .min = 50,
	    .max = 99 },
	{ "worker_cpu_affinity", SPECIAL(cfg_set_cpu_affinity, cfg_show_cpu_affinity) },
	{ "admin_token", .type = CFG_T_SECRET, CF(admin_token),
	    .flags = CFG_SECRET | CFG_ENV_OPT },
	{ "admin_name", .type = CFG_T_STR, CF(admin_name), .set = set_admin_name },
	{ "audit_log", SPECIAL(set_audit_log, show_audit_log) },
	{ "user", .type = CFG_T_STR, CF(user), .set = set_user },
	{ "request_log", .type = CFG_T_PATH, CF(request_log), .set = set_request_log,
	    .flags = CFG_OFF },
	{ "cors_origins", .type = CFG_T_STR, CF(cors_origins), .set = set_cors_origins },
	{ NULL }
};

static const struct cfg_key budget_keys[] = {
	{ "default", MONEY, CF(default_budget_nusd) },
	{ "period", ENUM(periods), CF(period) },
	{ "unknown_keys", ENUM(allow_deny), CF(unknown_keys_deny) },
	{ "unknown_models", ENUM(default_deny), CF(unknown_models_deny) },
	{ "reserve_output_tokens", INT(0, 10000000), CF(reserve_output_tokens) },
	{ "prices", .type = CFG_T_PATH, CF(prices_file), .set = set_prices_file },
	{ "prices_ignore", .type = CFG_T_STR, CF(prices_ignore), .set = set_prices_ignore },
	/* Server-tool loops (issue 20): the calls a tool without max_uses
	 * may make, each an internal turn that bills up to a context window. */
	{ "max_tool_turns", INT(0, 1000), CF(max_tool_turns) },
	{ "rpm", INT(0, CFG_MAX_RATE), CF(default_rpm) },
	{ "tpm", INT(0, CFG_MAX_RATE), CF(default_tpm) },
	{ "on_cut", ENUM(on_cut), CF(on_cut_drain) },
	{ "drain_timeout", SECS(1, 3600), CF(drain_timeout) },
	{ "drain_max", SIZE(1), CF(drain_max) },
	{ "tags_header", .type = CFG_T_STR, CF(tags_header), .set = cfg_set_tags_header },
	{ "max_tags", INT(1, KV_TAGS_MAX), CF(max_tags) },
	{ NULL }
};

static const struct cfg_key upstream_keys[] = {
	{ "url", SPECIAL(cfg_set_url, cfg_show_url), .base = CFG_B_UPSTREAM, .flags = CFG_LIST },
	{ "paths", WORDS(paths, npaths), .check = check_path, .flags = CFG_LIST },
	{ "models", WORDS(models, nmodels), .check = check_glob, .flags = CFG_LIST },
	{ "api_key", .type = CFG_T_SECRET, UPS(api_key), .flags = CFG_SECRET | CFG_NONEMPTY },
	{ "ca_file", SPECIAL(cfg_set_ca_file, cfg_show_ca_file), .base = CFG_B_UPSTREAM },
	{ "tls_record_layer", ENUM(record_layers), UPS(tls_record_layer) },
	{ "free_paths", WORDS(free_paths, nfree_paths), .check = check_path,
	    .flags = CFG_LIST },
	{ "fallback", .type = CFG_T_STR, UPS(fallback), .set = cfg_set_fallback },
	{ "model_map", WORDS(model_map, nmodel_map), .check = check_model_pair,
	    .flags = CFG_LIST },
	{ "eject_after", INT(1, 1000), UPS(eject_after) },
	{ "eject_time", SECS(1, 3600), UPS(eject_secs) },
	{ "retry_budget", SECS(0, 600), UPS(retry_budget) },
	{ "health_check", .type = CFG_T_STR, UPS(health_path), .set = cfg_set_health_check },
	{ "health_interval", SECS(1, 3600), UPS(health_interval) },
	{ "shared_stored_objects", ENUM(yes_no), UPS(shared_stored_objects) },
	{ "region", SPECIAL(cfg_set_region, cfg_show_region), .base = CFG_B_UPSTREAM },
	{ "provider", ENUM(providers), UPS(provider) },
	{ "control_url", .type = CFG_T_STR, UPS(control_url), .set = cfg_set_control_url },
	{ "deployments", WORDS(deployments, ndeployments), .check = cfg_check_deployment,
	    .flags = CFG_LIST },
	{ "project", .type = CFG_T_STR, UPS(gcp_project), .set = cfg_set_gcp_project },
	{ "location", .type = CFG_T_STR, UPS(gcp_location), .set = cfg_set_gcp_location },
	{ "tenant", .type = CFG_T_STR, UPS(tenant), .set = cfg_set_azure_id },
	{ "client_id", .type = CFG_T_STR, UPS(client_id), .set = cfg_set_azure_id },
	{ "client_secret", .type = CFG_T_SECRET, UPS(client_secret),
	    .flags = CFG_SECRET | CFG_NONEMPTY },
	{ "entra_url", .type = CFG_T_STR, UPS(entra_url), .set = cfg_set_entra_url },
	{ NULL }
};

/* Token counts the reservation uses (issue 10): max_output is the most
 * output a request naming no limit can cost, context_window the most input
 * one that makes the provider fetch content can cost. web_search and
 * web_fetch are per 1,000 calls, kept per call. */
static const struct cfg_key price_keys[] = {
	{ "input", MONEY, PRC(input) },
	{ "output", MONEY, PRC(output) },
	OPT_MONEY(cached_input),
	OPT_MONEY(cache_write),
	{ "max_output", INT(1, CFG_MAX_TOKENS), PRC(max_output), .flags = CFG_OPTIONAL },
	{ "context_window", INT(1, CFG_MAX_TOKENS), PRC(context_window),
	    .flags = CFG_OPTIONAL },
	OPT_MONEY(cache_write_1h),
	OPT_MONEY(audio_input),		/* audio tokens (Realtime), per 1M */
	OPT_MONEY(audio_output),
	{ "long_context_threshold", INT(1, CFG_MAX_TOKENS), PRC(long_context_threshold),
	    .flags = CFG_OPTIONAL },
	OPT_MONEY(long_context_input),
	OPT_MONEY(long_context_output),
	OPT_MONEY(priority_input),
	OPT_MONEY(priority_output),
	OPT_MONEY(flex_input),
	OPT_MONEY(flex_output),
	{ "web_search", MONEY, PRC(web_search_call), .scale = 1000, .flags = CFG_OPTIONAL },
	{ "web_fetch", MONEY, PRC(web_fetch_call), .scale = 1000, .flags = CFG_OPTIONAL },
	{ "code_execution", MONEY, PRC(code_exec_hour), .flags = CFG_OPTIONAL },
	/* multipliers of every token price (issue 33), kept x 10^9 */
	{ "fast_multiplier", MONEY, PRC(fast_mult), .flags = CFG_OPTIONAL },
	{ "us_inference_multiplier", MONEY, PRC(geo_us_mult), .flags = CFG_OPTIONAL },
	{ "regional_us_multiplier", MONEY, PRC(region_us_mult), .flags = CFG_OPTIONAL },
	{ "regional_eu_multiplier", MONEY, PRC(region_eu_mult), .flags = CFG_OPTIONAL },
	{ NULL }
};

static const struct cfg_key key_keys[] = {
	{ "key", SPECIAL(set_key, show_key), .base = CFG_B_KEY, .flags = CFG_SECRET },
	{ "budget", MONEY, KEY(budget_nusd), .flags = CFG_OPTIONAL },
	{ "rpm", INT(0, CFG_MAX_RATE), KEY(rpm), .flags = CFG_OPTIONAL },
	{ "tpm", INT(0, CFG_MAX_RATE), KEY(tpm), .flags = CFG_OPTIONAL },
	{ "team", .type = CFG_T_STR, KEY(team), .set = cfg_set_key_team },
	{ "model_budget", SPECIAL(cfg_set_model_budget, cfg_show_model_budget),
	    .base = CFG_B_KEY },
	{ NULL }
};

static const struct cfg_key cluster_keys[] = {
	{ "redis", SPECIAL(cfg_set_redis, cfg_show_redis) },
	{ "ca_file", .type = CFG_T_PATH, CF(cluster.ca_file), .set = set_ca_path },
	{ "password", .type = CFG_T_SECRET, CF(cluster.password),
	    .flags = CFG_SECRET | CFG_ENV_OPT },
	{ "user", .type = CFG_T_STR, CF(cluster.user), .set = set_redis_user },
	{ "host_id", .type = CFG_T_STR, CF(cluster.host_id), .set = set_host_id },
	{ "lease_min", MONEY, CF(cluster.lease_min_nusd) },
	{ "lease_max", MONEY, CF(cluster.lease_max_nusd) },
	{ "lease_share", INT(1, 100), CF(cluster.lease_share) },
	{ "lease_ttl", SECS(2, CFG_MAX_SECONDS), CF(cluster.lease_ttl) },
	{ "departed_after", SECS(0, CFG_MAX_SECONDS), CF(cluster.departed_after) },
	{ "require_persistence", ENUM(yes_no), CF(cluster.require_persistence) },
	{ "on_redis_down", ENUM(closed_open), CF(cluster.open_when_down) },
	{ NULL }
};

static const struct cfg_key alerts_keys[] = {
	{ "webhook", SPECIAL(set_alert_webhook, show_webhook), .flags = CFG_SECRET },
	{ "thresholds", SPECIAL(set_alert_thresholds, show_thresholds) },
	{ "format", ENUM(formats), CF(alerts.slack) },
	{ "ca_file", .type = CFG_T_PATH, CF(alerts.ca_file), .set = set_ca_path },
	{ NULL }
};

const struct cfg_key *const kv_cfg_sect_keys[SECT_COUNT] = {
	[SECT_NONE] = NULL,
	[SECT_SERVER] = server_keys,
	[SECT_BUDGET] = budget_keys,
	[SECT_UPSTREAM] = upstream_keys,
	[SECT_PRICE] = price_keys,
	[SECT_KEY] = key_keys,
	[SECT_CLUSTER] = cluster_keys,
	[SECT_ALERTS] = alerts_keys,
	[SECT_AUTH_JWT] = kv_cfg_auth_jwt_keys,
	[SECT_TEAM] = kv_cfg_team_keys,
	[SECT_TAG] = kv_cfg_tag_keys,
};

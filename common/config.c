/* kilovolt.ini loader.
 *
 * libinih splits "name = value" lines, but its handler gets no line number
 * and Debian's build truncates lines past 200 bytes into a second "line".
 * So the file is fed through our own reader (cfg_read): it counts lines,
 * strips comments and indentation (which also disables inih's surprising
 * multi-line continuation), rejects over-long lines, and handles section
 * headers itself so that empty, unknown and duplicate sections are seen
 * with the line they are on. inih is left to split the key lines.
 *
 * What each key means and how its value is read is not here: the key
 * table (config_keys.c) names each key's type, field and bounds, and
 * config_value.c parses the values; this file finds the key's row and
 * keeps the checks that need a whole section or the whole file. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config.h"
#include "common/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "common/money.h"
#include "common/catalog.h"
#include "common/jwks.h"
#include "common/key_label.h"
#include "common/pricetab.h"
#include "common/ledger_sizes.h"

/* A price section is whole: output is never silently $0, and each tier
 * has both of its prices. An exact name may leave input and output unset
 * (-1): the catalogue's entry of that name gives them, else
 * kv_pricetab_merge refuses it as this would. */
static int
end_price(struct cfg_parse *p)
{
	const struct kv_price *pr = cfg_base(p, CFG_B_PRICE);
	int alone = p->price_default || strchr(pr->model, '*') != NULL;

	if (!(p->seen & 1u) && alone)
		return cfg_err(p, p->sect_line, "%s: input is required", p->sect_text);
	if (!(p->seen & 2u) && alone)
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

/* ---- the inih handler ---------------------------------------------------- */

/* Resolve env:NAME. Returns 1 with *v replaced, 0 when an optional variable
 * is unset (skip the key), -1 on error. */
static int
resolve_env(struct cfg_parse *p, const struct cfg_key *k, const char **v)
{
	const char *name = *v + 4, *val;

	if (strncmp(*v, "env:", 4) != 0)
		return 1;
	if (!cfg_valid_env_name(name))
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
	for (k = kv_cfg_sect_keys[p->sect]; k->name != NULL; k++)
		if (strcmp(k->name, name) == 0)
			break;
	if (k->name == NULL)
		return cfg_err(p, p->lineno, "unknown key '%s' in %s", name, p->sect_text);
	bit = 1u << (k - kv_cfg_sect_keys[p->sect]);
	if ((p->seen & bit) && !(k->flags & CFG_LIST))
		return cfg_err(p, p->lineno, "'%s' is set twice in %s", name, p->sect_text);
	p->seen |= bit;
	r = resolve_env(p, k, &value);
	if (r <= 0)
		return r;
	return cfg_set_value(p, k, value);
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
	const struct kv_keydef *key;
	struct kv_upstream *u;
	size_t i;

	switch (p->sect) {
	case SECT_UPSTREAM:
		u = cfg_base(p, CFG_B_UPSTREAM);
		if (cfg_end_bedrock(p, u) == -1 || cfg_end_azure(p, u) == -1 ||
		    cfg_end_vertex(p, u) == -1 || cfg_end_gemini(p, u) == -1)
			return -1;
		if (u->url[0] == '\0')
			return cfg_err(p, p->sect_line, "%s: url is required", p->sect_text);
		/* With neither, it must be another's fallback (expand_targets). */
		u->sect_line = p->sect_line;
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
	case SECT_AUTH_JWT:
		return cfg_end_auth_jwt(p);
	case SECT_KEY:
		if (!(p->seen & 1u))
			return cfg_err(p, p->sect_line, "%s: key is required", p->sect_text);
		key = cfg_base(p, CFG_B_KEY);
		for (i = 0; i + 1 < cf->nkeys; i++)
			if (memcmp(cf->keys[i].hash, key->hash, 32) == 0)
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

	if (!cfg_valid_name(name, sizeof(cf->upstreams->name), 0))
		return cfg_err(p, p->lineno, "bad upstream name '%s'", name);
	for (i = 0; i < cf->nupstreams; i++)
		if (strcmp(cf->upstreams[i].name, name) == 0)
			return dup_section(p);
	if (cfg_grow(&cf->upstreams, cf->nupstreams, sizeof(*cf->upstreams)) == -1)
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

	if (!cfg_valid_name(model, KV_NAME_MAX, 1))
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
		if (cfg_grow(&cf->prices, cf->nprices, sizeof(*cf->prices)) == -1)
			return cfg_err(p, p->lineno, "out of memory");
		pr = &cf->prices[cf->nprices++];
	}
	kv_price_unset(pr, model);	/* input, output -1: end_price, the merge */
	pr->line = p->lineno;
	return 0;
}

static int
begin_key(struct cfg_parse *p, const char *label)
{
	struct kv_config *cf = p->cf;
	char why[160];
	size_t i;

	/* One rule with issued keys: they share one namespace, and the
	 * admin API and kvctl find either by name or by id. */
	if (kv_key_label_check(label, KV_LABEL_MAX, why, sizeof(why)) == -1)
		return cfg_err(p, p->lineno, "bad key name '%s': %s", label, why);
	for (i = 0; i < cf->nkeys; i++)
		if (strcmp(cf->keys[i].label, label) == 0)
			return dup_section(p);
	if (cfg_grow(&cf->keys, cf->nkeys, sizeof(*cf->keys)) == -1)
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
	if (p->teams_only && strcmp(kind, "team") != 0)
		return cfg_err(p, p->lineno, "%s: only [team NAME] sections belong here",
		    p->sect_text);
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
	if (strcmp(kind, "auth") == 0 && strcmp(name, "jwt") == 0) {
		p->cf->auth_jwt.enabled = 1;
		return begin_plain(p, SECT_AUTH_JWT, &p->seen_auth_jwt);
	}
	if (*name == '\0')
		return cfg_err(p, p->lineno, "unknown section %s", p->sect_text);
	if (strcmp(kind, "upstream") == 0)
		p->sect = SECT_UPSTREAM;
	else if (strcmp(kind, "price") == 0)
		p->sect = SECT_PRICE;
	else if (strcmp(kind, "key") == 0)
		p->sect = SECT_KEY;
	else if (strcmp(kind, "team") == 0)
		return cfg_begin_team(p, name);
	else if (strcmp(kind, "tag") == 0)
		return cfg_begin_tag(p, name);
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
	if (v != NULL && *v != '\0' && cfg_parse_port(v, cf->listen_port) == -1)
		return cfg_err(p, -1, "KILOVOLT_PORT: not a port");
	v = getenv("KILOVOLT_WORKERS");
	if (v != NULL && *v != '\0') {
		p->workers_auto = strcmp(v, "auto") == 0;
		if (!p->workers_auto && cfg_parse_ll(v, 1, CFG_MAX_WORKERS, &n) == -1)
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
	cf->cpu_affinity = KV_CPUS_AUTO;
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
	cf->auth_jwt.algorithms = KV_JWT_ALGS_ALL;
	cf->auth_jwt.clock_skew = 60;
	strcpy(cf->auth_jwt.team_claim, "groups");
	cf->auth_jwt.user_budget_nusd = -1;
	strcpy(cf->tags_header, "x-kilovolt-tags");
	cf->tags_header_len = sizeof("x-kilovolt-tags") - 1;
	cf->max_tags = 4;
	cf->auth_jwt.user_rpm = cf->auth_jwt.user_tpm = -1;
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
	return cfg_expand_targets(p);
}

int
kv_config_teams_path(const struct kv_config *cf, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s.teams", cf->ledger);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The admin API's teams (kv_config_teams_path), read as if they were at
 * the end of the config; none when the file is missing. */
static int
cfg_parse_teams(struct cfg_parse *p)
{
	char path[sizeof(p->cf->ledger) + 8];
	const char *file = p->file;
	int r;

	if (p->teams_instead != NULL)
		snprintf(path, sizeof(path), "%s", p->teams_instead);
	else if (kv_config_teams_path(p->cf, path, sizeof(path)) == -1)
		return cfg_err(p, 0, "ledger: path too long");
	if ((p->fp = fopen(path, "re")) == NULL)
		return errno == ENOENT ? 0 : cfg_err(p, 0, "%s: %s", path, strerror(errno));
	p->file = path;
	p->lineno = 0;
	p->sect = SECT_NONE;
	p->teams_only = 1;
	r = ini_parse_stream(cfg_read, p, cfg_handler, p);
	free(p->buf);
	p->buf = NULL;
	if (fclose(p->fp) == EOF && !p->failed)
		cfg_err(p, 0, "%s", strerror(errno));
	else if (!p->failed && r != 0)
		cfg_err(p, r > 0 ? r : 0, r == -2 ? "out of memory" : "syntax error");
	p->file = file;
	p->teams_only = 0;
	return p->failed ? -1 : 0;
}

static int load(struct kv_config *cf, const char *file, const char *prices,
    const char *teams, char *err, size_t errlen);

int
kv_config_load(struct kv_config *cf, const char *file, char *err, size_t errlen)
{
	return load(cf, file, NULL, NULL, err, errlen);
}

int
kv_config_load_prices(struct kv_config *cf, const char *file, const char *prices,
    char *err, size_t errlen)
{
	return load(cf, file, prices, NULL, err, errlen);
}

int
kv_config_load_teams(struct kv_config *cf, const char *file, const char *teams,
    char *err, size_t errlen)
{
	return load(cf, file, NULL, teams, err, errlen);
}

static int
load(struct kv_config *cf, const char *file, const char *prices, const char *teams,
    char *err, size_t errlen)
{
	struct cfg_parse p;

	memset(&p, 0, sizeof(p));
	p.prices_instead = prices;
	p.teams_instead = teams;
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
	if (cfg_parse_file(&p) == -1 || env_overrides(&p) == -1 || cfg_parse_teams(&p) == -1 ||
	    cfg_tree_resolve(&p) == -1 || cfg_tags_resolve(&p) == -1 || cluster_defaults(&p) == -1 || cfg_load_prices(&p) == -1) {
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
		cfg_free_strs(cf->upstreams[i].paths, cf->upstreams[i].npaths);
		cfg_free_strs(cf->upstreams[i].models, cf->upstreams[i].nmodels);
		cfg_free_strs(cf->upstreams[i].free_paths, cf->upstreams[i].nfree_paths);
		cfg_free_strs(cf->upstreams[i].model_map, cf->upstreams[i].nmodel_map);
		if (cf->upstreams[i].extra_urls != NULL)
			cfg_free_strs(cf->upstreams[i].extra_urls, cf->upstreams[i].nextra);
		cfg_free_secret(cf->upstreams[i].api_key);
		cfg_free_strs(cf->upstreams[i].deployments, cf->upstreams[i].ndeployments);
		cfg_free_secret(cf->upstreams[i].client_secret);
		free(cf->upstreams[i].ca_file);
	}
	free(cf->upstreams);
	cf->upstreams = NULL;
	cf->nupstreams = 0;
	kv_pricetab_free(cf);
	free(cf->prices);
	cf->prices = NULL;
	cf->nprices = 0;
	free(cf->price_prov);
	cf->price_prov = NULL;
	cf->nprice_prov = 0;
	cfg_tree_free(cf);
	free(cf->keys);
	cf->keys = NULL;
	cf->nkeys = 0;
	cfg_free_secret(cf->admin_token);
	cf->admin_token = NULL;
	cfg_free_secret(cf->cluster.password);
	cf->cluster.password = NULL;
}

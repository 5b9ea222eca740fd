/* The config loader's own types, shared by its files and by nothing else:
 * config.c (the reader, sections, load), config_keys.c (the key table and
 * the keys that need a handler of their own; config_cpus.c and
 * config_redis.c hold the two longest), config_value.c (the value parsers
 * and the generic setters), config_dump.c (kilovoltd -T).
 *
 * Each key is one row of a table, as nginx's ngx_command_t: its name, its
 * type, where its value lives (an offset into the struct its section
 * fills), its bounds. A plain key needs nothing else: the type's setter
 * parses and checks it, the type's printer shows it for -T. Only keys
 * with a grammar of their own (addresses, URLs, Redis) carry set/show. */
#ifndef KV_CONFIG_INT_H
#define KV_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/config.h"
#include "common/ledger_sizes.h"

#define CFG_DEFAULT_FILE	"/etc/kilovolt/kilovolt.ini"
/* Two generations of workers must fit the ledger's slots during a reload. */
#define CFG_MAX_WORKERS		(KV_WORKER_SLOTS / 2)
#define CFG_MAX_SECONDS		86400
#define CFG_MAX_KEYS		(1u << 20)
#define CFG_MAX_RATE		4000000000LL	/* per key (or team, or user) and minute */

enum cfg_sect { SECT_NONE, SECT_SERVER, SECT_BUDGET, SECT_UPSTREAM, SECT_PRICE, SECT_KEY,
    SECT_CLUSTER, SECT_ALERTS, SECT_AUTH_JWT, SECT_TEAM, SECT_TAG, SECT_COUNT };

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
	int		 seen_auth_jwt;
	int		 workers_auto;
	int		 teams_only;	/* reading the admin API's teams file */
	const char	*teams_instead;	/* kv_config_load_teams: this teams file */
	int		 failed;
	char		*err;
	size_t		 errlen;
};

/* A key's type: how its value is parsed, stored and printed. */
enum cfg_type {
	CFG_T_INT,	/* decimal integer in [min, max]; int, uint32_t or int64_t */
	CFG_T_SECS,	/* a duration (config_units.h), whole seconds in [min, max]; int */
	CFG_T_SIZE,	/* bytes, optional k/m/g (config_units.h), in [min, max]; size_t */
	CFG_T_MONEY,	/* USD decimal into nano-dollars divided by scale (rounded up); int64_t */
	CFG_T_ENUM,	/* one of words[]: its value; int */
	CFG_T_PATH,	/* a file name relative to the config's directory; char[width] */
	CFG_T_STR,	/* char[width]; set checks it */
	CFG_T_SECRET,	/* strdup'd char *, NULL when empty; printed as *** */
	CFG_T_WORDS,	/* space-separated words, each passing check: char ** + size_t */
	CFG_T_SPECIAL,	/* set and show do everything */
};

/* What a key's offset is into. */
enum cfg_base { CFG_B_CONFIG, CFG_B_UPSTREAM, CFG_B_PRICE, CFG_B_KEY, CFG_B_TEAM,
    CFG_B_TAG };

#define CFG_SECRET	0x1	/* never echo the value */
#define CFG_LIST	0x2	/* may repeat; values accumulate */
#define CFG_ENV_OPT	0x4	/* env:NAME unset means "not set" */
#define CFG_OPTIONAL	0x8	/* a value below min means unset (not printed by -T) */
#define CFG_NONEMPTY	0x10	/* CFG_T_SECRET: an empty value is an error */
#define CFG_OFF		0x20	/* CFG_T_PATH: empty is written "off" */

struct cfg_word {
	const char	*word;
	int		 value;
};

struct cfg_key {
	const char	*name;
	enum cfg_type	 type;
	enum cfg_base	 base;
	int		 flags;
	size_t		 off;		/* of the field in its base struct */
	size_t		 width;		/* sizeof the field */
	size_t		 off_n;		/* CFG_T_WORDS: of the count */
	long long	 min, max;	/* INT, SECS (seconds), SIZE (bytes) */
	long long	 scale;		/* MONEY: the value is stored divided by it (0: 1) */
	const struct cfg_word *words;	/* ENUM: ended by { NULL, 0 } */
	int		(*check)(const char *, size_t);	/* WORDS: 0 rejects a word */
	/* A handler of its own, in place of the type's (NULL: the type's). */
	int		(*set)(struct cfg_parse *, const struct cfg_key *, const char *);
	/* -T: print "name = value" lines of OBJ (the base struct), or a
	 * "; name: not set" comment (NULL: the type's printer). */
	void		(*show)(FILE *, const struct kv_config *, const void *obj,
			    const struct cfg_key *);
};

/* The keys of each section, ended by a row with a NULL name (config_keys.c).
 * A key's index is its bit in cfg_parse.seen: end_section relies on the
 * first rows (price: input, output; cluster: redis; key: key). */
extern const struct cfg_key *const kv_cfg_sect_keys[SECT_COUNT];

/* Record the first error as "FILE:LINE: message"; LINE 0 gives
 * "FILE: message" and a negative LINE the bare message (environment errors
 * are not the file's). Returns -1 so callers can `return cfg_err(...)`. */
int	cfg_err(struct cfg_parse *p, int line, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/* The struct KEY's offset is into: the config, or the section being read. */
void   *cfg_base(struct cfg_parse *p, enum cfg_base base);

/* Parse V for K with its type's setter (K's own set when it has one).
 * 0, or -1 with the error recorded. */
int	cfg_set_value(struct cfg_parse *p, const struct cfg_key *k, const char *v);

/* [server] worker_cpu_affinity (config_cpus.c): auto, none, or CPU numbers
 * separated by blanks, one per worker in turn. */
int	cfg_set_cpu_affinity(struct cfg_parse *p, const struct cfg_key *k, const char *v);
void	cfg_show_cpu_affinity(FILE *f, const struct kv_config *cf, const void *obj,
	    const struct cfg_key *k);

/* [cluster] redis (config_redis.c): redis://HOST[:PORT], rediss://HOST[:PORT]
 * (TLS), redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER or unix:PATH. */
int	cfg_set_redis(struct cfg_parse *p, const struct cfg_key *k, const char *v);
void	cfg_show_redis(FILE *f, const struct kv_config *cf, const void *obj,
	    const struct cfg_key *k);

/* [auth jwt] (config_auth.c): its keys, and the checks of the whole
 * section (issuer, audience, one JWKS source that loads), at its end. */
extern const struct cfg_key kv_cfg_auth_jwt_keys[];
int	cfg_end_auth_jwt(struct cfg_parse *p);

/* The budget tree (config_team.c): [team NAME] begun, its keys' rows,
 * model_budget of a team or a key and its -T printer, and the whole-file
 * check (parents known, no cycle, depth at most KV_TREE_DEPTH, a key's
 * team known) that also names and hashes every node. 0 or -1. */
int	cfg_begin_team(struct cfg_parse *p, const char *name);
/* A [team] or [tag] section's kv_teamdef appended to *V (*N of them): NAME
 * not yet among them, no budget, period or parent yet. NULL with the
 * error recorded. */
struct kv_teamdef *cfg_begin_node(struct cfg_parse *p, struct kv_teamdef **v, size_t *n,
	    const char *name);
/* The periods a [team] or a [tag] may have. */
extern const struct cfg_word kv_cfg_node_periods[];
extern const struct cfg_key kv_cfg_team_keys[];
int	cfg_set_model_budget(struct cfg_parse *p, const struct cfg_key *k, const char *v);
void	cfg_show_model_budget(FILE *f, const struct kv_config *cf, const void *obj,
	    const struct cfg_key *k);
int	cfg_set_key_team(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_tree_resolve(struct cfg_parse *p);
void	cfg_tree_free(struct kv_config *cf);
/* A node's ledger hash: SHA-256 of "\001node:" and NODE. 0 or -1. */
int	cfg_node_hash(struct cfg_parse *p, const char *node, uint8_t hash[32]);
/* Each cap of CAPS given its slot, its node "model/OWNER/GLOB" and hash. */
int	cfg_name_caps(struct cfg_parse *p, struct kv_modelcaps *caps, const char *owner);

/* Tags (config_tag.c): [tag NAME] begun, its keys' rows, [budget]
 * tags_header, and each tag named, hashed and given its slot (after
 * cfg_tree_resolve). 0 or -1. */
int	cfg_begin_tag(struct cfg_parse *p, const char *name);
extern const struct cfg_key kv_cfg_tag_keys[];
int	cfg_set_tags_header(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_tags_resolve(struct cfg_parse *p);

/* ---- value parsers (config_value.c): 0 / -1, no messages -------------- */

/* Decimal digits only, in [min, max]. */
int	cfg_parse_ll(const char *s, long long min, long long max, long long *out);
/* 1..65535 into PORT as digits. */
int	cfg_parse_port(const char *s, char port[8]);
/* "[v6]" or a host name / IPv4 literal of LEN bytes into host (no brackets). */
int	cfg_parse_host(const char *s, size_t len, char host[256]);
/* HOST:PORT, [V6]:PORT, *:PORT or PORT (all addresses). */
int	cfg_parse_hostport(const char *s, char host[256], char port[8]);
/* A C identifier-like environment variable name. */
int	cfg_valid_env_name(const char *s);
/* Printable, no blanks or brackets or quotes, shorter than MAX; '*' only
 * at the end when GLOB. */
int	cfg_valid_name(const char *s, size_t max, int glob);
/* http[s]://HOST[:PORT][/BASE] (no user info, query or fragment) into
 * U's tls, host, port, base_path and host_header (the port only when not
 * the scheme's). */
int	cfg_parse_url(const char *url, struct kv_upstream *u);
/* V joined to the config file's directory ("./" dropped) into DST; -1
 * when it does not fit. */
int	cfg_path(const struct cfg_parse *p, const char *v, char *dst, size_t len);

/* Append an element of SIZE bytes to the array *ARRP of N, zeroed; 0 / -1. */
int	cfg_grow(void *arrp, size_t n, size_t size);
/* Space-separated words of V into *ARR (N of them); CHECK rejects a word
 * (the message names NAME). 0, or -1 with the error recorded. */
int	cfg_set_words(struct cfg_parse *p, const char *name, const char *v, char ***arr,
	    size_t *n, int (*check)(const char *, size_t));
void	cfg_free_strs(char **arr, size_t n);
/* Wiped before it is freed: it held a key or a password. */
void	cfg_free_secret(char *s);

/* An integer key's message: out of range, or not a number. */
int	cfg_int(struct cfg_parse *p, const char *name, const char *v, long long min,
	    long long max, long long *out);
/* A size key (config_units.h) at least MIN bytes. */
int	cfg_size(struct cfg_parse *p, const char *name, const char *v, long long min,
	    long long max, uint64_t *out);

/* ---- kilovoltd -T (config_dump.c) -------------------------------------- */

/* Print a key of the type's own way: "name = value", or "; name: not set". */
void	cfg_show_value(FILE *f, const struct kv_config *cf, const void *obj,
	    const struct cfg_key *k);
/* "name = value", in a form the reader gives back as VALUE. */
void	cfg_show_kv(FILE *f, const char *name, const char *value);
/* A path as the daemon opens it, absolute when the working directory is
 * known: -T output read from elsewhere names the same files. */
void	cfg_show_path(FILE *f, const char *name, const char *path);

/* The [upstream NAME] keys' setters and printers (config_upstream.c), as
 * struct cfg_key's set and show take them. */
int	cfg_set_url(struct cfg_parse *p, const struct cfg_key *k, const char *v);
void	cfg_show_url(FILE *f, const struct kv_config *cf, const void *obj,
	    const struct cfg_key *k);
int	cfg_set_fallback(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_set_health_check(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_set_control_url(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_set_region(struct cfg_parse *p, const struct cfg_key *k, const char *v);
void	cfg_show_region(FILE *f, const struct kv_config *cf, const void *obj,
	    const struct cfg_key *k);
int	cfg_set_ca_file(struct cfg_parse *p, const struct cfg_key *k, const char *v);
void	cfg_show_ca_file(FILE *f, const struct kv_config *cf, const void *obj,
	    const struct cfg_key *k);

/* At the end of an [upstream] section (config_targets.c): a bedrock
 * upstream's region required, its url and paths defaulted from it; an AWS
 * region elsewhere refused. -1 with the error set. */
int	cfg_end_bedrock(struct cfg_parse *p, struct kv_upstream *u);
/* config_vertex.c: project = and location = of a vertex upstream, and its
 * defaults (url, paths) at the end of its section. */
int	cfg_set_gcp_project(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_set_gcp_location(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_end_vertex(struct cfg_parse *p, struct kv_upstream *u);

/* provider = azure's keys (config_azure.c): a deployments word
 * (NAME:MODEL, azure_path.h), tenant and client_id (by the key's offset),
 * entra_url. */
int	cfg_check_deployment(const char *w, size_t len);
int	cfg_set_azure_id(struct cfg_parse *p, const struct cfg_key *k, const char *v);
int	cfg_set_entra_url(struct cfg_parse *p, const struct cfg_key *k, const char *v);

/* At the end of an [upstream] section (config_azure.c): an azure
 * upstream's deployments and credentials checked, its paths and Entra
 * token URL defaulted; Azure's keys elsewhere refused. -1 with the error
 * set. */
int	cfg_end_azure(struct cfg_parse *p, struct kv_upstream *u);

/* A gemini upstream's url and paths when not written (config_gemini.c). */
int	cfg_end_gemini(struct cfg_parse *p, struct kv_upstream *u);

/* After the whole file (config_targets.c): extra targets and each bedrock
 * upstream's control plane become hidden entries, fallbacks resolve, and
 * every upstream is reachable. -1 with the error set. */
int	cfg_expand_targets(struct cfg_parse *p);

/* [budget] prices: the catalogue's entries of every provider (those of
 * openai, anthropic and any upstream's name priced by their bare names,
 * the others by a provider kind's rules: pricetab.c), merged under the
 * [price] sections. Without a file the index is built over the sections.
 * 0, or -1 with the error set (config_prices.c). */
int	cfg_load_prices(struct cfg_parse *p);

#endif

/* kilovolt.ini: parsed with libinih into one immutable struct kv_config.
 * A reload parses into a fresh struct and swaps it in only when it is valid. */
#ifndef KV_CONFIG_H
#define KV_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KV_NAME_MAX 128

enum kv_period { KV_PERIOD_NONE, KV_PERIOD_DAILY, KV_PERIOD_WEEKLY, KV_PERIOD_MONTHLY };

#define KV_MAX_TARGETS	64	/* URLs in one upstream's url (a request's tried set is a 64-bit mask) */

enum { KV_TLS_RECORDS_OWN, KV_TLS_RECORDS_OPENSSL, KV_TLS_RECORDS_KERNEL };
enum { KV_CPUS_NONE, KV_CPUS_AUTO, KV_CPUS_LIST };
#define KV_MAX_CPU_LIST	32	/* CPUs worker_cpu_affinity may list (an ini line holds them) */

struct kv_upstream {
	char	  name[64];	/* [upstream NAME] */
	char	  url[512];	/* as written */
	int	  tls;		/* 1 for https:// */
	char	  host[256];	/* host name or IP literal, no brackets */
	char	  port[8];	/* explicit or 443/80 */
	char	  host_header[300];	/* Host: value for upstream requests */
	char	  base_path[256];	/* path in the URL without trailing '/', "" if none */
	char	**paths;	/* path prefixes routed here; NULL-free array */
	size_t	  npaths;
	char	**models;	/* model globs (trailing '*'); checked before paths */
	size_t	  nmodels;
	char	 *api_key;	/* NULL: pass the client's credential through */
	char	 *ca_file;	/* NULL: the system trust store */
	/* tls_record_layer: after the TLS 1.3 handshake, records by
	 * kilovolt's own layer (worker/tls13_io.c, the default), OpenSSL's,
	 * or the kernel's where it has TLS (worker/ktls.h) */
	int	  tls_record_layer;	/* KV_TLS_RECORDS_* */
	/* endpoint policy (worker/endpoints.c) */
	char	**free_paths;	/* path prefixes relayed unmetered ($0) */
	size_t	  nfree_paths;
	int	  shared_stored_objects;	/* virtual keys may reach stored objects */
	/* the provider's data-residency region its requests are processed in
	 * (OpenAI regional processing: us.api.openai.com, eu.api...), whose
	 * uplift the models' prices name: KV_REGION_* (auto: by the host) */
	int	  region;
	/* Which provider's wire and credentials it speaks: KV_PROVIDER_*
	 * (auto: by the request's path, OpenAI's or Anthropic's) */
	int	  provider;
	/* provider = bedrock: the AWS region (region = us-east-1), which names
	 * the default url and is part of every request's signature */
	char	  aws_region[32];
	/* provider = bedrock: Bedrock's control plane (control_url, default
	 * https://bedrock.REGION.amazonaws.com), where GET /inference-profiles
	 * and /foundation-models are relayed; served by a hidden entry of its
	 * own (expand_targets: 1 + its index, 0 none), signed as the runtime */
	char	  control_url[512];
	size_t	  control_idx;
	/* provider = azure (config_azure.c): deployments = NAME:MODEL words,
	 * the catalogue model a deployment's requests are priced at; with
	 * tenant set, Entra ID's client-credentials grant instead of api_key
	 * (client_id, client_secret, at entra_url: by default
	 * login.microsoftonline.com's token endpoint of the tenant) */
	char	**deployments;
	size_t	  ndeployments;
	char	  tenant[128];
	char	  client_id[128];
	char	 *client_secret;
	char	  entra_url[512];
	/* provider = vertex: the Google Cloud project and location
	 * (config_vertex.c), which name the default url and replace the ones
	 * in a client's path */
	char	  gcp_project[64];
	char	  gcp_location[32];
	/* Several targets and failover (worker/peer.c). `url = A B C`:
	 * this entry is target A; B and C become entries of their own appended
	 * after every section (own pool, TLS context and DNS), with no paths
	 * or models so that routing never picks them directly. */
	size_t	  target_of;	/* hidden target: 1 + index of its upstream; 0 */
	size_t	  first_extra;	/* index of this upstream's first extra target */
	size_t	  nextra;	/* extra targets (contiguous from first_extra) */
	char	**extra_urls;	/* while parsing only */
	char	  fallback[64];	/* [upstream NAME] to try when all targets fail; "" */
	size_t	  fallback_idx;	/* 1 + its index; 0 none */
	char	**model_map;	/* "from=to" words: model names for this upstream */
	size_t	  nmodel_map;
	int	  eject_after;	/* consecutive failures that eject a target (5) */
	int	  eject_secs;	/* first ejection's cool-down, grows with each (30) */
	int	  retry_budget;	/* seconds after which no new attempt starts (10) */
	/* Active health check (master/health_check.c): GET health_path on
	 * every target each health_interval seconds; "" = none. */
	char	  health_path[256];
	int	  health_interval;	/* seconds (10) */
	int	  sect_line;	/* line of its section header, for errors */
};

enum kv_provider { KV_PROVIDER_AUTO = 0, KV_PROVIDER_OPENAI, KV_PROVIDER_ANTHROPIC,
	KV_PROVIDER_BEDROCK, KV_PROVIDER_GEMINI, KV_PROVIDER_VERTEX, KV_PROVIDER_AZURE };

enum kv_region { KV_REGION_AUTO = 0, KV_REGION_NONE, KV_REGION_US, KV_REGION_EU };

/* Prices are nano-dollars per 1M tokens, parsed exactly from decimal text. */
struct kv_price {
	char	  model[KV_NAME_MAX];	/* exact, or prefix when it ends in '*' */
	int64_t	  input;
	int64_t	  output;
	int64_t	  cached_input;	/* -1 when unset: cached tokens cost `input` */
	int64_t	  cache_write;	/* -1 when unset: cache writes cost `input` */
	int64_t	  max_output;	/* tokens; -1 unset: reserve_output_tokens */
	int64_t	  context_window;	/* tokens; -1 unset: fetched content refused */
	/* what else changes the bill (money.c); -1 when unset */
	int64_t	  cache_write_1h;	/* Anthropic 1-hour cache writes; unset: 2 x input */
	int64_t	  long_context_threshold;	/* input tokens; 0 = no long-context tier */
	int64_t	  long_context_input;	/* past the threshold: every token at these */
	int64_t	  long_context_output;
	int64_t	  priority_input;	/* OpenAI service_tier "priority" */
	int64_t	  priority_output;
	int64_t	  flex_input;		/* OpenAI service_tier "flex" */
	int64_t	  flex_output;
	/* per-call fees of server tools (money.c kv_cost_fees); -1 unset.
	 * ini: web_search / web_fetch in USD per 1,000 calls, code_execution
	 * in USD per container-hour. */
	int64_t	  web_search_call;	/* nano-USD per web search call */
	int64_t	  web_fetch_call;	/* nano-USD per web fetch call */
	int64_t	  code_exec_hour;	/* nano-USD per container-hour */
	/* from LiteLLM's catalogue (common/catalog.c); -1 when unset */
	int64_t	  max_input;		/* tokens: the input bound (max_input_tokens) */
	int64_t	  audio_input;		/* per 1M audio tokens; unset: input */
	int64_t	  audio_output;		/* unset: output */
	int64_t	  reasoning_output;	/* reasoning tokens; unset: output */
	int64_t	  long_context_cached;	/* past the threshold; unset: scaled */
	int64_t	  long_context_write;
	int64_t	  long_context_write_1h;
	int64_t	  priority_cached;	/* tier cache prices; unset: scaled */
	int64_t	  priority_write;
	int64_t	  flex_cached;
	int64_t	  flex_write;
	/* multipliers of every token price, x 10^9 (6 is 6,000,000,000); -1
	 * unset: a request that asks for one is refused (issue 33) */
	int64_t	  fast_mult;		/* Anthropic "speed": "fast" */
	int64_t	  geo_us_mult;		/* Anthropic "inference_geo": "us" */
	int64_t	  region_us_mult;	/* OpenAI regional processing, US */
	int64_t	  region_eu_mult;	/* ... EU */
	int64_t	  batch_input;		/* shown, not charged: /v1/batches is refused */
	int64_t	  batch_output;
	/* only int64_t figures from input to batch_output: pricetab.c merges
	 * an override field by field over them, by offset */
	int	  src;			/* enum kv_price_src */
	int	  line;			/* the [price] section's ini line; 0: a file entry */
	uint64_t  set;			/* KV_PRICE_OVERRIDE: the figures its section
					 * sets (bit kv_price_bit), the rest are the file's */
	/* a catalogue entry's figures it leaves unset that the [price GLOB]
	 * sections matching it give (pricetab.c: the longest glob first),
	 * and 1 + the cf->prices index of the longest that gave any (0: none) */
	uint64_t  globbed;
	int	  glob_from;
	/* a catalogue entry's provider (catalog.c; all 0 for a [price]
	 * section alone, which prices its name for every provider): KIND,
	 * the enum kv_provider whose requests find it by its name as
	 * written (bedrock, bedrock_converse: KV_PROVIDER_BEDROCK; 0: none
	 * of them); BARE, whether a request to an upstream of no provider
	 * kind does (entries of openai, anthropic and providers named like
	 * an [upstream]); PROV, 1 + the index of its litellm_provider in
	 * kv_config.price_prov (0: none) */
	unsigned char	kind;
	unsigned char	bare;
	unsigned short	prov;
};

/* Where a price came from (kvctl prices): a [price] section alone, a
 * catalogue entry, or an entry with a [price] section of its name over it. */
enum kv_price_src { KV_PRICE_INI = 0, KV_PRICE_FILE, KV_PRICE_OVERRIDE };

/* The budget tree (issue 36, docs/ledger.md "Budget tree"): teams with
 * parents up to an org, per-model caps on a team or a key. Each node is an
 * account of the ledger whose hash is the SHA-256 of "\001node:" and its
 * node name ("team/payments", "model/team/payments/gpt-5*"). */
#define KV_TREE_DEPTH	8	/* teams from a key's team up to its org */
#define KV_MODEL_CAPS	8	/* model_budget entries of one team or key */
#define KV_NODE_NAME	(KV_NAME_MAX + 96)
#define KV_TAGS_MAX	8	/* [budget] max_tags' ceiling */

struct kv_modelcap {
	char	  glob[KV_NAME_MAX];	/* the model, exact or a prefix ending in '*' */
	int64_t	  budget_nusd;
	char	  node[KV_NODE_NAME];	/* "model/team/payments/gpt-5*" */
	uint8_t	  hash[32];
	int	  slot;		/* its number among the config's nodes */
};

struct kv_modelcaps {
	struct kv_modelcap cap[KV_MODEL_CAPS];
	int	  n;
};

struct kv_teamdef {
	char	  name[64];
	int64_t	  budget_nusd;	/* -1: none (unbounded) */
	int	  period;	/* enum kv_period; -1: the [budget] period */
	char	  parent[64];	/* "" for an org */
	int	  up;		/* the parent's index in teams, -1 for an org */
	char	  node[80];	/* "team/NAME" */
	uint8_t	  hash[32];
	int	  slot;		/* its number among the config's nodes */
	struct kv_modelcaps *caps;	/* NULL: none */
	int64_t	  rpm, tpm;	/* per minute, for the whole team; 0: none */
	int	  line;
	int	  from_file;	/* made by the admin API: in the teams file */
};

struct kv_keydef {
	char	  label[64];
	uint8_t	  hash[32];	/* SHA-256 of the raw key */
	int64_t	  budget_nusd;	/* -1: the [budget] default */
	int64_t	  rpm, tpm;	/* per minute; -1: the [budget] default, 0: none */
	char	  team[64];	/* "" for none */
	int	  team_idx;	/* its index in teams, -1 for none */
	struct kv_modelcaps *caps;	/* NULL: none */
};

/* [cluster]: several hosts share each key's budget through leases from
 * Redis (docs/cluster.md). Absent section: enabled == 0, no Redis. */
#define KV_SENTINELS_MAX	4
struct kv_cluster {
	int	  enabled;
	char	  redis_host[256];	/* redis://HOST:PORT; "" when redis_unix is set */
	char	  redis_port[8];
	char	  redis_unix[108];	/* unix:PATH */
	int	  redis_tls;		/* rediss://: TLS, the certificate verified */
	/* redis+sentinel://H:P[,H:P...]/NAME: the master named NAME is asked of
	 * these Sentinels at each connection (redis_host/port are set then) */
	int	  nsentinels;
	char	  sentinel_host[KV_SENTINELS_MAX][256];
	char	  sentinel_port[KV_SENTINELS_MAX][8];
	char	  sentinel_master[64];
	char	  ca_file[256];		/* trust anchors for rediss://; "": the system's */
	char	 *password;		/* NULL: no AUTH */
	char	  user[128];		/* ACL user for AUTH; "": default */
	char	  host_id[64];		/* default: the host name */
	int64_t	  lease_min_nusd;	/* smallest free lease a host asks for */
	int64_t	  lease_max_nusd;	/* largest free lease a host holds per key */
	int	  lease_share;		/* percent of the unleased budget one grant may take */
	int	  lease_ttl;		/* seconds a lease lives without renewal */
	int	  departed_after;	/* seconds after a lease expired that its unused
					   part returns to the pool; 0: never */
	int	  open_when_down;	/* on_redis_down = open */
	int	  require_persistence;	/* refuse a Redis without AOF or RDB */
};

/* [alerts]: spend alerts posted by the master (master/alerts.c).
 * Absent section: enabled == 0. */
#define KV_ALERT_THRESHOLDS_MAX 8
struct kv_alerts {
	int	  enabled;
	char	  webhook[1024];	/* http:// or https:// (verified) URL */
	int	  thresholds[KV_ALERT_THRESHOLDS_MAX];	/* percent of budget, ascending */
	int	  nthresholds;
	int	  slack;		/* format = slack: {"text": ...} */
	char	  ca_file[256];		/* trust anchors for an https:// webhook; "": the system's */
};

/* [auth jwt]: clients identified by the tokens of an OpenID provider,
 * verified by common/jwt.c (docs/identity.md). Absent section: enabled == 0. */
enum { KV_JWT_USER_SUB = 0, KV_JWT_USER_EMAIL };
struct kv_auth_jwt {
	int	  enabled;
	char	  issuer[512];		/* iss, exactly */
	char	  audience[256];	/* in aud */
	char	  jwks_url[1024];	/* fetched by the master; "" when jwks_file */
	char	  jwks_file[4096];	/* resolved path; "" when jwks_url */
	int	  algorithms;		/* KV_JWT_* (common/jwks.h) accepted */
	int	  clock_skew;		/* seconds, either way on exp, nbf, iat */
	int	  user_claim;		/* KV_JWT_USER_* */
	char	  team_claim[128];	/* "" none */
	int64_t	  user_budget_nusd;	/* a user first seen; -1: [budget] default */
	int64_t	  user_rpm, user_tpm;	/* each user's, per minute; 0: none, -1: [budget] */
	struct kv_modelcaps *user_caps;	/* each user's model_budget; NULL: none.
					   Their node, slot and hash are unset:
					   each user's own ("model/user/NAME/GLOB") */
	char	  header[64];		/* lower case; "": Authorization: Bearer */
};

/* A model's version after a glob's prefix (pricetab.c): up to 4 numeric
 * components of 1-3 digits ("-4-1" is 4.1; "-20250514" is a date, not one). */
struct kv_pver {
	unsigned char n;
	unsigned char known;	/* 0: the glob matches no exact entry */
	unsigned short v[4];
};

struct kv_config {
	char	  path[4096];	/* file it was read from */

	/* [server] */
	char	  listen_host[256];
	char	  listen_port[8];
	int	  workers;		/* resolved: "auto" becomes the CPU count */
	char	  status_host[256];	/* "" disables the status service */
	char	  status_port[8];
	char	  ledger[4096];
	uint32_t  max_keys;
	int	  client_timeout;	/* seconds */
	int	  upstream_timeout;
	int	  connect_timeout;	/* TCP connect + TLS handshake, a target failure past it */
	int	  header_timeout;	/* a request head must be whole within it (slow-loris) */
	int	  shutdown_timeout;
	int	  max_connections;	/* per worker */
	size_t	  max_body;		/* bytes; 0 = no limit (413 above it) */
	char	  spool_dir[4096];	/* request bodies past the window; "" = beside the ledger */
	size_t	  spool_max;		/* bytes of spooled bodies per worker (503 above it) */
	int64_t	  memory_limit;		/* bytes workers keep under; 0 off, -1 auto (the cgroup's) */
	int	  memory_refuse_pct;	/* new requests get 503 past this percent of it */
	/* worker_cpu_affinity: KV_CPUS_AUTO pins each worker to a CPU of the
	 * master's allowed set unless a CPU quota is on (master/cpu_pin.h);
	 * KV_CPUS_LIST to cpus[] in turn; KV_CPUS_NONE leaves it to the kernel. */
	int	  cpu_affinity;
	int	  ncpus;
	int16_t	  cpus[KV_MAX_CPU_LIST];
	char	 *admin_token;		/* NULL: status-service writes refused */
	char	  admin_name[64];	/* who the token is, in the audit log; "" none */
	char	  audit_log[4096];	/* admin writes' log; "" beside the ledger, "off" none */
	char	  user[64];		/* drop to this user when started as root; "" = stay */
	/* ux (issue 15) */
	char	  request_log[4096];	/* one JSON line per request; "" = off */
	char	  cors_origins[1024];	/* space-separated allowed origins, or *; "" = none */

	/* [budget] */
	int64_t	  default_budget_nusd;
	enum kv_period period;
	int	  unknown_keys_deny;
	int	  unknown_models_deny;	/* 400 for a model no [price] matches */
	int64_t	  reserve_output_tokens;
	int64_t	  max_tool_turns;	/* server-tool calls assumed for a tool
					   without max_uses (10); 0: refused */
	uint32_t  default_rpm;		/* requests per minute per key; 0 = none */
	uint32_t  default_tpm;		/* tokens per minute per key; 0 = none */
	/* A response cut before its final usage (README "What a request is
	 * charged"): charge_reserved charges the reservation's output; drain
	 * reads the upstream on, client gone, to its usage, for at most
	 * drain_timeout seconds and drain_max bytes (then charge_reserved). */
	int	  on_cut_drain;
	int	  drain_timeout;	/* seconds (60) */
	size_t	  drain_max;		/* bytes (4m) */

	struct kv_upstream *upstreams;
	size_t	  nupstreams;
	struct kv_price *prices;	/* without the default */
	size_t	  nprices;
	/* [budget] prices = FILE.json (common/catalog.c): its entries are in
	 * prices too (src KV_PRICE_FILE), [price] sections override them */
	char	  prices_file[4096];	/* resolved path; "" none */
	size_t	  nprices_file;		/* entries kept from it */
	size_t	  nprices_ini;		/* [price] sections (besides default) */
	size_t	  nprices_overridden;	/* file entries a [price] section overrides */
	char	  prices_summary[4096];	/* what the file gave, by provider */
	char	  prices_refused[1024];	/* entries not kept for fields not charged */
	char	(*price_prov)[40];	/* the file's litellm_provider names (kv_price.prov) */
	size_t	  nprice_prov;
	char	  prices_unknown[2048];	/* its fields kilovolt does not understand */
	size_t	  prices_inexact;	/* entries with prices below 1 nUSD/1M, rounded up */
	char	  prices_dead[1024];	/* [price GLOB]s matching no catalogue entry, "" none */
	/* [budget] prices_ignore: catalogue fields of served models the
	 * operator accepts not being charged (space-separated names) */
	char	  prices_ignore[1024];
	/* lookup index, built at load (catalog.c): exact names sorted, then
	 * the globs longest first */
	const struct kv_price **price_exact;
	size_t	  nprice_exact;
	const struct kv_price **price_glob;
	size_t	  nprice_glob;
	struct kv_pver *price_glob_ver;	/* per glob: its family's newest version */
	int	  has_default_price;
	struct kv_price default_price;
	struct kv_keydef *keys;
	size_t	  nkeys;
	struct kv_teamdef *teams;
	size_t	  nteams;
	/* [tag NAME] sections: nodes a request names in its tags header, each
	 * a kv_teamdef without a parent (up -1), node "tag/NAME" */
	struct kv_teamdef *tags;
	size_t	  ntags;
	char	  tags_header[64];	/* [budget] tags_header, lower case */
	size_t	  tags_header_len;	/* its length: most headers differ in it */
	int	  max_tags;		/* [budget] max_tags: tags one request may name */
	const struct kv_keydef **keys_by_hash;	/* keys sorted by hash, when a tree is */
	size_t	  nnodes;	/* teams, tags and model caps: slots 0..nnodes-1 */

	struct kv_cluster cluster;
	struct kv_alerts alerts;
	struct kv_auth_jwt auth_jwt;
};

/* The file of the teams made through the admin API (master/admin_teams.c):
 * the ledger's path and ".teams", [team NAME] sections only, which
 * kv_config_load reads after the config as if they were in it. Returns 0,
 * or -1 when the path is too long. */
int	kv_config_teams_path(const struct kv_config *cf, char *buf, size_t len);

/* kv_config_load with TEAMS in place of the teams file: what the config
 * would be with it (the admin API checks a change before making it). */
int	kv_config_load_teams(struct kv_config *cf, const char *file, const char *teams,
	    char *err, size_t errlen);

/* Read and validate FILE, apply KILOVOLT_* environment overrides and resolve
 * env:NAME values. Returns 0, or -1 with "FILE:LINE: message" in err
 * ("FILE: message" for whole-file errors, "KILOVOLT_X: message" for a bad
 * override). An empty KILOVOLT_* variable counts as unset; an unset env:NAME
 * is an error except for admin_token, where it means "no token". Lines may
 * hold at most 198 bytes besides comments (Debian's libinih line buffer).
 * On failure cf holds nothing that needs freeing. */
int	kv_config_load(struct kv_config *cf, const char *file, char *err, size_t errlen);

/* kv_config_load, with PRICES (a path as given; NULL: the ini's; "": none)
 * as the catalogue in place of [budget] prices: what the prices would be
 * after a refresh (kvctl prices --check), or a config read for its ledger
 * only. */
int	kv_config_load_prices(struct kv_config *cf, const char *file, const char *prices,
	    char *err, size_t errlen);

/* The file kilovoltd and kvctl read when no -c is given: $KILOVOLT_CONFIG,
 * else /etc/kilovolt/kilovolt.ini when it exists, else ./kilovolt.ini. */
const char *kv_config_default_path(void);

void	kv_config_free(struct kv_config *cf);

/* The [key] whose SHA-256 is HASH, when the config has a budget tree
 * ([team] sections or a key's model_budget); NULL otherwise. */
const struct kv_keydef *kv_config_key_by_hash(const struct kv_config *cf, const uint8_t hash[32]);

/* The index in cf->teams of the team NAME, or -1. */
int	kv_config_team_index(const struct kv_config *cf, const char *name);

/* The index in cf->tags of the [tag] named NAME (LEN bytes), or -1. */
int	kv_config_tag(const struct kv_config *cf, const char *name, size_t len);

/* kilovoltd -T: print CF as an ini (every key of every section, defaults
 * and overrides applied, relative paths made absolute, secrets as ***) that
 * kv_config_load reads back to the same config and output. 0, or -1 when
 * writing to F failed. */
int	kv_config_dump(const struct kv_config *cf, FILE *f);

/* ---- lookups on a loaded config (config_route.c) ---------------------- */

/* The upstream for a request: the first whose model globs match MODEL
 * (may be NULL), else the first whose free_paths prefixes match PATH, else
 * the first whose paths do. NULL if none. A Bedrock path (bedrock_path.h)
 * goes to a provider = bedrock upstream only (the control plane's reads:
 * the first one), and a bedrock upstream's models take only paths it
 * serves. */
const struct kv_upstream *kv_config_route(const struct kv_config *cf,
	    const char *path, const char *model);

/* Whether PATH is one both providers serve under the same name
 * (/v1/models, /v1/files and what is below them). */
int	kv_config_shared_path(const char *path);

/* kv_config_route, except that a shared path asked for by a client of the
 * Anthropic API (it sent anthropic-version, or its key in x-api-key) goes
 * to the upstream that serves /v1/messages: @anthropic-ai/sdk's
 * models.list() must not reach OpenAI with an Anthropic key. */
const struct kv_upstream *kv_config_route_client(const struct kv_config *cf,
	    const char *path, const char *model, int anthropic_client);

/* The price for MODEL: exact match first, then the longest matching
 * trailing-'*' prefix, then [price default] unless unknown_models = deny;
 * NULL when there is none. */
const struct kv_price *kv_config_price(const struct kv_config *cf, const char *model);

/* PATH (a request target) is PREFIX or below it at a segment boundary:
 * /v1/models matches /v1/models, /v1/models/x and /v1/models?x, not
 * /v1/modelsX. */
int	kv_path_match(const char *prefix, const char *path);

#endif

/* kvctl: the operator's CLI over the ledger. kvctl.c parses the command
 * line, finds the ledger and runs the commands; kvctl_output.c renders what
 * a person reads (tables, `show`, the live `keys --watch` view);
 * kvctl_common.c holds what the command files share (usage errors, finding
 * and naming a key) and calls none of them. The JSON forms come from
 * shm/report.h so they match /status.json exactly. */
#ifndef KV_KVCTL_H
#define KV_KVCTL_H

#include <stdint.h>
#include <stdio.h>

#include "common/audit_log.h"
#include "shm/audit_fields.h"
#include "shm/ledger.h"

/* Exit codes (SPEC "kvctl"). */
#define KVCTL_EXIT_OK		0
#define KVCTL_EXIT_NOTFOUND	1
#define KVCTL_EXIT_USAGE	2	/* bad usage, bad config, unusable ledger */

/* Replace control bytes in S with '?': model names come from API clients,
 * and an escape sequence must not reach the operator's terminal. */
void	kvctl_printable(char *s);

/* "$1.234567", or "-$0.000001" for a negative amount. */
void	kvctl_format_money(int64_t nusd, char *buf, size_t len);

/* "kvctl: CMD: " (or "kvctl: " for a NULL CMD), FMT with ARG and the
 * --help hint on stderr. Returns KVCTL_EXIT_USAGE. (cli/kvctl_common.c) */
int	kvctl_usage_error(const char *cmd, const char *fmt, const char *arg);

/* A TCP connection to HOST:PORT (numeric port), the first address that
 * takes it; blocking. Returns the socket or -1 (errno; EHOSTUNREACH when
 * the name does not resolve). (cli/kvctl_common.c) */
int	kvctl_tcp_connect(const char *host, const char *port);

/* A rate limit per minute in BUF: "60", or NONE ("none", "-") for 0. */
void	kvctl_format_limit(uint32_t v, const char *none, char *buf, size_t len);

/* "2026-11-30 07:23:54Z" in UTC, or "never" for 0. */
void	kvctl_format_time(int64_t t, char *buf, size_t len);

/* Master, workers and every global counter, for a person. */
void	kvctl_print_status(FILE *f, const struct kv_ledger *l, const char *path,
	    int64_t now);

/* The keys table (sorted by spend, column widths fitted to the data). */
void	kvctl_print_keys(FILE *f, const struct kv_ledger *l);

/* One key's fields as "name: value" lines. */
void	kvctl_print_account(FILE *f, const struct kv_account *a);

/* The per-model table (sorted by cost). */
void	kvctl_print_models(FILE *f, const struct kv_ledger *l);

/* Redraw the keys table every second on the terminal until the user types
 * q or Ctrl-C, or, when count > 0, after count frames. stdout must be a
 * TTY. Returns a KVCTL_EXIT_* code (messages already on stderr). */
int	kvctl_watch_keys(const struct kv_ledger *l, long count);

/* kvctl cluster: hosts, leases and the global figures of every key, read
 * from the Redis that CONFIG's [cluster] names; labels from ledger L.
 * Returns a KVCTL_EXIT_* code (messages already on stderr). */
int	kvctl_cluster(const char *config, const struct kv_ledger *l, int json);

/* kvctl reset on a host that leases from Redis (the ledger's cluster word
 * is set): a reset here alone would leave the key's spend in Redis, so ask
 * this host's master to reset the N accounts AS on every host, in one
 * atomic script call (KV_AF_RESET), and wait up to 5 s for it. Prints what
 * was done. Returns KVCTL_EXIT_OK, or KVCTL_EXIT_USAGE when the master did
 * not confirm (the request is withdrawn; nothing was reset). */
int	kvctl_cluster_reset(struct kv_ledger *l, struct kv_account **as, size_t n);

/* Parse --since: unix seconds, "30s"/"10m"/"2h"/"1d" before NOW (unix
 * seconds), or a UTC time "2026-12-01T21:00:00Z" / "2026-12-01 21:00:00" /
 * "2026-12-01". *ms: milliseconds since the epoch. Returns 0 or -1. */
int	kvctl_parse_since(const char *s, int64_t now, int64_t *ms);

/* Print the request log at PATH: lines of KEY (id prefix or label; NULL
 * all) from SINCE_MS on (0: all), as a table or {"requests":[...]} of the
 * log's own objects. Returns a KVCTL_EXIT_* code. */
int	kvctl_requests(FILE *out, const char *path, const char *key,
	    int64_t since_ms, int json);

/* "ID (LABEL)", "ID (LABEL, no longer in the config)" or "ID": how every
 * kvctl message names the account A (the label made printable). */
void	kvctl_describe_key(const struct kv_account *a, char *buf, size_t len);

/* Resolve KEY (a label or an id prefix, as kv_keys_lookup, shm/keys.h) to
 * exactly one account of L into *a, or say on stderr why not (no match:
 * KVCTL_EXIT_NOTFOUND; ambiguous, with the first matches listed:
 * KVCTL_EXIT_USAGE). Returns KVCTL_EXIT_OK when found. */
int	kvctl_resolve_key(const struct kv_ledger *l, const char *key, struct kv_account **a);

/* ---- the audit log of kvctl's writes (cli/kvctl_audit_rec.c) ---------- */

struct kvctl_audit {
	char			path[KV_AUDIT_PATH_MAX];	/* "": off */
	struct kv_audit_rec	rec;
};

/* Before a command changes the ledger: KA's record made (via kvctl, who
 * the Unix user, OP, the command line "kvctl [PREFIX] ARGV..."), and PATH
 * ("": off) checked to take a line. Returns 0, or -1 said on stderr
 * (KV0823): the command then changes nothing and exits 2. The caller adds
 * the key (kv_audit_key) and before/after (shm/audit_fields.h). */
int	kvctl_audit_start(struct kvctl_audit *ka, const char *path, const char *op,
	    const char *prefix, int argc, char **argv);

/* After the change: the line appended with RC as its status. Returns RC,
 * or KVCTL_EXIT_USAGE when it could not be (said, KV0824). */
int	kvctl_audit_finish(struct kvctl_audit *ka, int rc);

/* kvctl audit [--since T] [--json] | --verify [--anchor D] [--json] on
 * the log at PATH (""/NULL: the config has it off), ARGV[0] being "audit". Returns a
 * KVCTL_EXIT_* code: --verify 1 when the chain is broken (the first broken
 * line named), or when no line has the digest D (lines cut from the end).
 * (cli/kvctl_audit.c) */
int	kvctl_audit(const char *path, int argc, char **argv);

struct kv_config;

/* The config FILE, loaded (NULL: FILE is NULL, or it does not load);
 * free with kvctl_config_free. (cli/kvctl_common.c) */
struct kv_config *kvctl_config_load(const char *file);
void	kvctl_config_free(struct kv_config *cf);

/* With CF's [cluster] (CF not NULL), an issued key A that kvctl changed
 * (created, revoked, rotated) is written to Redis's kv:issued at once,
 * merged with what Redis holds, so that every host learns of it within its
 * next issued-key pass (about a second), whether this host's kilovoltd
 * runs or not; kvctl_issued_unpublish deletes it there (kvctl forget).
 * KVCTL_EXIT_OK (also without [cluster], and for a key of the config), or
 * KVCTL_EXIT_USAGE when Redis could not be written, said on stderr.
 * (cli/kvctl_issued.c) */
int	kvctl_issued_publish(const struct kv_config *cf, const struct kv_ledger *l,
	    const struct kv_account *a);
int	kvctl_issued_unpublish(const struct kv_config *cf, const struct kv_ledger *l,
	    const struct kv_account *a);

/* kvctl keys create | revoke | rotate (cli/kvctl_keys.c). */
int	kvctl_keys_is_sub(const char *name);

/* Run the keys subcommand ARGV[0] (create, revoke, rotate) with its flags
 * on ledger L at PATH, mapped read-write; CONFIG is the config file kvctl
 * found the ledger through (NULL with -l): its [key] names and [budget]
 * default; AUDIT the audit log ("": off). Returns a KVCTL_EXIT_* code (messages already on stderr). */
int	kvctl_keys_main(struct kv_ledger *l, const char *path, const char *config,
	    const char *audit, int argc, char **argv);

/* kvctl prices [MODEL...] [--json] | --check FILE [--json], ARGV[0] being
 * "prices": the prices CONFIG (NULL: the default path) puts in effect, each
 * with the rule that gives it; or FILE validated as the daemon reads a
 * catalogue ("FILE: line:col: what", exit 1) and, with a config, every
 * model it would price differently. LEDGER (-l) allows only --check.
 * Returns a KVCTL_EXIT_* code: 1 also when a named MODEL is refused. */
int	kvctl_prices(const char *config, const char *ledger, int argc, char **argv);

/* kvctl report --by BY (team, user, key, model or tag): one row per node
 * with its spent, budget, reserved and requests, as a table or
 * {"rows":[...]}. With SINCE or UNTIL (NULL: none; as kvctl_parse_since
 * reads them, or -7d), the spent of each node in that window of the
 * ledger's history, {"since","until","bucket_seconds","rows":[...]} with
 * reserved, requests and refusals null. (cli/kvctl_report.c) Returns a
 * KVCTL_EXIT_* code. */
int	kvctl_report(FILE *f, const struct kv_ledger *l, const char *by, const char *since,
	    const char *until, int json);

/* kvctl team NAME: the team's row, or KVCTL_EXIT_NOTFOUND. */
int	kvctl_team(FILE *f, const struct kv_ledger *l, const char *name, int json);

/* kvctl team create|move|set|show NAME [flags] (ARGV from the word after
 * "team") through the admin API of the daemon of CONFIG
 * (cli/kvctl_team_api.c): its JSON answer on standard output. Returns a
 * KVCTL_EXIT_* code: OK for 2xx, NOTFOUND for 404, USAGE otherwise. */
int	kvctl_team_api(const char *config, int argc, char **argv);

/* Is WORD a subcommand of kvctl team? */
int	kvctl_team_is_sub(const char *word);

#endif

/* kvctl: inspect and adjust the ledger, with or without a running daemon.
 * Read commands map the ledger read-only; reset and budget map it
 * read-write and change only the words they own, with atomics, so they are
 * safe while workers keep charging. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"
#include "cli/kvctl_int.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/money.h"
#include "shm/keys.h"
#include "shm/lock.h"
#include "shm/repair.h"
#include "shm/report.h"

struct command {
	const char	*name;
	int		 writes;	/* maps the ledger read-write */
	int		 min_args, max_args;
	const char	*flags;		/* accepted: j=--json w=--watch/--count a=--all
					   k=--key r=--key K/--since T/--file F
					   L=--rpm/--tpm b=--by KIND */
	int		(*run)(struct kvctl *);
};

static const char usage_text[] =
"usage: kvctl [-c CONFIG | -l LEDGER] COMMAND\n"
"\n"
"  status [--json]              uptime, workers, requests, bytes, streams, spend\n"
"  keys [--json]                every key: budget, spent, reserved, tokens, last use\n"
"  keys --watch [--count N]     live view, redrawn every second (q quits)\n"
"  keys create NAME [--budget USD] [--rpm N] [--tpm N] [--period P]\n"
"               [--expires DATE] [--json]\n"
"                               issue a key: printed once, only its hash kept\n"
"  keys revoke KEY              refuse KEY from its next request on (401)\n"
"  keys rotate KEY [--json]     a new secret for KEY's account; the old refused\n"
"  show KEY [--json]            one key; KEY is a label, an id or an id prefix\n"
"  show --key [--json]          the key whose raw value is on standard input\n"
"  reset KEY | --all            set spent to 0\n"
"  budget KEY AMOUNT            override a key's budget in USD (e.g. 25.00)\n"
"  budget KEY --config          drop the override: the config's budget again\n"
"  forget KEY                   delete a key's account and its history\n"
"  limits KEY [--rpm N] [--tpm N] [--json]\n"
"                               show or set a key's requests and tokens\n"
"                               per minute (0 = no limit)\n"
"  models [--json]              per-model requests, tokens and cost\n"
"  report --by team|user|key|model|tag [--since T] [--until T] [--json]\n"
"                               the budget tree's spend, budget and requests\n"
"                               per node (teams, keys, models, caps, tags);\n"
"                               with a window, its spend in the last 24 h\n"
"  team NAME [--json]           one team of the budget tree\n"
"  team create NAME [--parent T] [--budget USD] [--period P] [--rpm N] [--tpm N]\n"
"       [--model-budget 'GLOB:USD ...']   a team, through the daemon's admin API\n"
"  team set NAME [--budget USD|none] [--period P] [--rpm N] [--tpm N]\n"
"       [--model-budget ...|none]  change it; team move NAME PARENT|--org;\n"
"  team show NAME [--json]      its settings and figures\n"
"  cluster [--json]             hosts, leases and shared spend, from Redis\n"
"  prices [MODEL...] [--json]   the prices in effect and the rule giving each\n"
"    [--provider KIND [--region R]]  ... for an upstream of that kind (bedrock, ...)\n"
"  prices --check FILE [--json] validate a catalogue; list what it would change\n"
"  requests [--key KEY] [--since T] [--file LOG] [--json]\n"
"                               the request log ([server] request_log); T is\n"
"                               10m, 2h, 1d, unix seconds or 2026-12-01T21:00Z\n"
"  audit [--since T] [--json]   the audit log of admin writes ([server] audit_log)\n"
"  audit --verify [--anchor DIGEST] [--json]\n"
"                               check its hash chain: exit 1 naming the first\n"
"                               broken line (or, with --anchor, when no line\n"
"                               has that digest any more)\n"
"\n"
"  -c CONFIG   read the ledger path from CONFIG (default: $KILOVOLT_CONFIG,\n"
"              /etc/kilovolt/kilovolt.ini, ./kilovolt.ini)\n"
"  -l LEDGER   use this ledger file directly\n"
"  -h, --help  show this help\n"
"  -V, --version  print kvctl's version\n"
"\n"
"Exit status: 0 ok, 1 key not found, 2 usage or ledger error.\n";

static int
usage_error(const char *fmt, const char *arg)
{
	return kvctl_usage_error(NULL, fmt, arg);
}

static int
resolve_key(struct kvctl *k, const char *key, struct kv_account **a)
{
	return kvctl_resolve_key(&k->l, key, a);
}

/* ---- commands ----------------------------------------------------------- */

/* A listing of the ledger on stdout: JSON with --json, else the table. */
static int
print_listing(struct kvctl *k, void (*json)(FILE *, const struct kv_ledger *),
    void (*table)(FILE *, const struct kv_ledger *))
{
	(k->json ? json : table)(stdout, &k->l);
	return KVCTL_EXIT_OK;
}

static int
cmd_status(struct kvctl *k)
{
	if (k->json)
		kv_report_status_json(stdout, &k->l, (int64_t)time(NULL));
	else
		kvctl_print_status(stdout, &k->l, k->path, (int64_t)time(NULL));
	return KVCTL_EXIT_OK;
}

static int
cmd_keys(struct kvctl *k)
{
	if (k->watch && k->json)
		return usage_error("%s", "keys: --watch and --json do not mix");
	if (k->count != 0 && !k->watch)
		return usage_error("%s", "keys: --count only goes with --watch");
	if (k->watch)
		return kvctl_watch_keys(&k->l, k->count);
	return print_listing(k, kv_report_keys_json, kvctl_print_keys);
}

/* The raw key a client holds, as one line on stdin (never on the command
 * line, where ps and the shell's history would see it): its SHA-256 names
 * the account. */
static int
resolve_stdin_key(struct kvctl *k, struct kv_account **a)
{
	char buf[4096];
	uint8_t hash[32];
	size_t n;
	uint32_t i;

	if (isatty(STDIN_FILENO))
		fputs("kvctl: type or paste the key, then Enter\n", stderr);
	n = fread(buf, 1, sizeof(buf) - 1, stdin);
	if (ferror(stdin)) {
		perror("kvctl: reading the key from stdin");
		return KVCTL_EXIT_USAGE;
	}
	buf[n] = '\0';
	n = strcspn(buf, "\r\n");
	if (n == 0)
		return usage_error("%s", "show --key: no key on standard input");
	kv_key_hash(buf, n, hash);
	explicit_bzero(buf, sizeof(buf));
	KV_FOR_EACH_SLOT(&k->l, i) {
		*a = &k->l.accounts[i];
		if (kv_slot_ready(&(*a)->state) &&
		    memcmp((*a)->hash, hash, sizeof(hash)) == 0)
			return KVCTL_EXIT_OK;
	}
	fputs("kvctl: no account holds that key (it has not been used yet, "
	    "or the ledger is another one)\n", stderr);
	return KVCTL_EXIT_NOTFOUND;
}

static int
cmd_show(struct kvctl *k)
{
	struct kv_account *a;
	int rc;

	if (k->stdin_key && k->nargs > 0)
		return usage_error("%s", "show: give a KEY or --key, not both");
	if (!k->stdin_key && k->nargs == 0)
		return usage_error("%s", "show: which key? (KEY or --key)");
	rc = k->stdin_key ? resolve_stdin_key(k, &a) : resolve_key(k, k->args[0], &a);
	if (rc != KVCTL_EXIT_OK)
		return rc;
	if (k->json) {
		kv_report_account_json(stdout, a);
		fputc('\n', stdout);
	} else {
		kvctl_print_account(stdout, a);
	}
	return KVCTL_EXIT_OK;
}

/* budget KEY --config: drop the override, back to the budget the daemon
 * last applied from the config (named keys only). */
static int
budget_from_config(struct kvctl *k, struct kv_account *a, struct kvctl_audit *ka)
{
	char desc[128], now[32];
	int64_t v;

	kvctl_describe_key(a, desc, sizeof(desc));
	if (!(atomic_load(&a->aflags) & KV_AF_CONFIG)) {
		fprintf(stderr, "kvctl: %s is not a key of the config: it has no config "
		    "budget to go back to (set one with `kvctl budget KEY AMOUNT`)\n", desc);
		return KVCTL_EXIT_USAGE;
	}
	kv_audit_obj_int(&ka->rec.before, "budget_nusd", atomic_load(&a->budget_nusd));
	kv_audit_obj_bool(&ka->rec.before, "override", 1);
	v = kv_account_budget_from_config(a);
	kv_audit_obj_int(&ka->rec.after, "budget_nusd", v);
	kv_audit_obj_bool(&ka->rec.after, "override", 0);
	kvctl_format_money(v, now, sizeof(now));
	printf("budget of %s: %s (the config's; override dropped)\n", desc, now);
	(void)k;
	return KVCTL_EXIT_OK;
}

/* An override: it stands across reloads and restarts until the config's
 * own value for the key changes, or `budget KEY --config`. */
static int
cmd_budget(struct kvctl *k)
{
	const char *amount = k->args[1];
	struct kvctl_audit ka;
	struct kv_account *a;
	char desc[128], was[32], now[32];
	int64_t v, old;
	int rc;

	if (k->use_config != (k->nargs == 1))
		return usage_error("%s", "budget: give KEY AMOUNT, or KEY --config");
	if (!k->use_config) {
		if (amount[0] == '$')
			amount++;
		if (kv_parse_nano(amount, &v) == -1)
			return usage_error("budget: '%s' is not an amount in USD "
			    "(e.g. 25.00)", k->args[1]);
	}
	rc = kvctl_cmd_audit_key(k, &ka, k->use_config ? "key.budget_config" : "key.budget", &a);
	if (rc != KVCTL_EXIT_OK)
		return rc;
	if (k->use_config)
		return kvctl_audit_finish(&ka, budget_from_config(k, a, &ka));
	kv_audit_obj_int(&ka.rec.args, "budget_nusd", v);
	old = kv_account_set_budget(a, v);
	kv_audit_obj_int(&ka.rec.before, "budget_nusd", old);
	kv_audit_obj_int(&ka.rec.after, "budget_nusd", v);
	kvctl_format_money(old, was, sizeof(was));
	kvctl_format_money(v, now, sizeof(now));
	kvctl_describe_key(a, desc, sizeof(desc));
	printf("budget of %s: %s (was %s); an override: kept across reloads and "
	    "restarts until the config's value for this key changes\n", desc, now, was);
	return kvctl_audit_finish(&ka, KVCTL_EXIT_OK);
}


/* limits KEY --rpm N --tpm N: set A's limits (a full bucket, as a new
 * key's), in the audit log. */
static int
set_limits(struct kvctl *k, struct kv_account *a)
{
	struct kvctl_audit ka;

	if (kvctl_cmd_audit(k, &ka, "key.limits") == -1)
		return KVCTL_EXIT_USAGE;
	kv_audit_key(&ka.rec, a);
	kv_audit_obj_int(&ka.rec.before, "rpm", atomic_load(&a->rpm));
	kv_audit_obj_int(&ka.rec.before, "tpm", atomic_load(&a->tpm));
	kv_account_set_limits(a, k->rpm, k->tpm);
	kv_audit_obj_int(&ka.rec.after, "rpm", atomic_load(&a->rpm));
	kv_audit_obj_int(&ka.rec.after, "tpm", atomic_load(&a->tpm));
	return kvctl_audit_finish(&ka, KVCTL_EXIT_OK);
}

static int
cmd_limits(struct kvctl *k)
{
	struct kv_account *a;
	char desc[128], r[16], t[16], rw[16], tw[16];
	uint32_t was_r, was_t;
	int rc;

	rc = resolve_key(k, k->args[0], &a);
	if (rc != KVCTL_EXIT_OK)
		return rc;
	was_r = atomic_load(&a->rpm);
	was_t = atomic_load(&a->tpm);
	if ((k->rpm >= 0 || k->tpm >= 0) && (rc = set_limits(k, a)) != KVCTL_EXIT_OK)
		return rc;
	kvctl_describe_key(a, desc, sizeof(desc));
	kvctl_format_limit(atomic_load(&a->rpm), "none", r, sizeof(r));
	kvctl_format_limit(atomic_load(&a->tpm), "none", t, sizeof(t));
	kvctl_format_limit(was_r, "none", rw, sizeof(rw));
	kvctl_format_limit(was_t, "none", tw, sizeof(tw));
	if (k->json) {	/* 0 = no limit, as the admin API and kvctl keys --json */
		char id[13];

		kv_key_id(a->hash, id);
		printf("{\"id\":\"%s\",\"rpm\":%u,\"tpm\":%u,\"was_rpm\":%u,"
		    "\"was_tpm\":%u}\n", id, atomic_load(&a->rpm), atomic_load(&a->tpm),
		    was_r, was_t);
	} else if (k->rpm < 0 && k->tpm < 0)
		printf("limits of %s: rpm %s, tpm %s\n", desc, r, t);
	else
		printf("limits of %s: rpm %s, tpm %s (was rpm %s, tpm %s)\n", desc, r, t,
		    rw, tw);
	return KVCTL_EXIT_OK;
}

static int
cmd_models(struct kvctl *k)
{
	return print_listing(k, kv_report_models_json, kvctl_print_models);
}

/* Needs the config (Redis is named there), not only a ledger. */
static int
cmd_cluster(struct kvctl *k)
{
	if (k->config == NULL && k->ledger != NULL) {
		fputs("kvctl: cluster: needs -c CONFIG (Redis is named in its [cluster])\n",
		    stderr);
		return KVCTL_EXIT_USAGE;
	}
	return kvctl_cluster(k->config ? k->config : kv_config_default_path(), &k->l,
	    k->json);
}

static int
cmd_requests(struct kvctl *k)
{
	const char *path = k->req_file != NULL ? k->req_file : k->reqlog;
	int64_t since = 0;

	if (path[0] == '\0')
		return usage_error("%s", "requests: no request log: the config has "
		    "no [server] request_log (or give --file LOG)");
	if (k->req_since != NULL &&
	    kvctl_parse_since(k->req_since, (int64_t)time(NULL), &since) == -1)
		return usage_error("requests: --since '%s': give 10m, 2h, 1d, unix "
		    "seconds or a UTC time like 2026-12-01T21:00:00Z", k->req_since);
	return kvctl_requests(stdout, path, k->req_key, since, k->json);
}

static int
cmd_report(struct kvctl *k)
{
	if (k->by == NULL)
		return usage_error("%s", "report: --by team, user, key, model or tag is required");
	return kvctl_report(stdout, &k->l, k->by, k->req_since, k->rep_until, k->json);
}

static int
cmd_team(struct kvctl *k)
{
	return kvctl_team(stdout, &k->l, k->args[0], k->json);
}

static const struct command commands[] = {
	{ "status",	0, 0, 0, "j",	cmd_status },
	{ "keys",	0, 0, 0, "jw",	cmd_keys },
	{ "show",	0, 0, 1, "jk",	cmd_show },
	{ "reset",	1, 0, 1, "a",	kvctl_cmd_reset },
	{ "budget",	1, 1, 2, "C",	cmd_budget },
	{ "forget",	1, 1, 1, "",	kvctl_cmd_forget },
	{ "limits",	1, 1, 1, "Lj",	cmd_limits },
	{ "models",	0, 0, 0, "j",	cmd_models },
	{ "cluster",	0, 0, 0, "j",	cmd_cluster },
	{ "requests",	0, 0, 0, "jr",	cmd_requests },
	{ "report",	0, 0, 0, "jb",	cmd_report },
	{ "team",	0, 1, 1, "j",	cmd_team },
};

/* ---- command line ------------------------------------------------------- */

/* --rpm N / --tpm N: a limit per minute, 0 for none. */
static int
parse_limit(const char *flag, const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = s != NULL ? strtoll(s, &end, 10) : -1;
	if (s == NULL || errno != 0 || end == s || *end != '\0' || *out < 0 ||
	    *out > 4000000000LL) {
		fprintf(stderr, "kvctl: %s wants a number 0..4000000000 (0 = no limit), "
		    "not '%s'\n(kvctl --help for usage)\n", flag, s != NULL ? s : "");
		return KVCTL_EXIT_USAGE;
	}
	return 0;
}

static int
parse_count(struct kvctl *k, const char *s)
{
	char *end;

	errno = 0;
	k->count = s != NULL ? strtol(s, &end, 10) : 0;
	if (s == NULL || errno != 0 || end == s || *end != '\0' || k->count <= 0)
		return usage_error("--count wants a positive number, not '%s'",
		    s != NULL ? s : "");
	return 0;
}

/* One flag of a command; *i advances past a flag's value. */
static int
parse_flag(struct kvctl *k, const struct command *c, char **argv, int argc,
    int *i)
{
	const char *a = argv[*i];

	if (strcmp(a, "--json") == 0 && strchr(c->flags, 'j'))
		k->json = 1;
	else if (strcmp(a, "--watch") == 0 && strchr(c->flags, 'w'))
		k->watch = 1;
	else if (strcmp(a, "--all") == 0 && strchr(c->flags, 'a'))
		k->all = 1;
	else if (strcmp(a, "--config") == 0 && strchr(c->flags, 'C'))
		k->use_config = 1;
	else if (strcmp(a, "--key") == 0 && strchr(c->flags, 'k'))
		k->stdin_key = 1;
	else if (strchr(c->flags, 'r') && (strcmp(a, "--key") == 0 ||
	    strcmp(a, "--since") == 0 || strcmp(a, "--file") == 0)) {
		if (++*i >= argc)
			return usage_error("%s needs a value", a);
		if (a[2] == 'k')
			k->req_key = argv[*i];
		else if (a[2] == 's')
			k->req_since = argv[*i];
		else
			k->req_file = argv[*i];
	}
	else if (strchr(c->flags, 'b') && (strcmp(a, "--by") == 0 ||
	    strcmp(a, "--since") == 0 || strcmp(a, "--until") == 0)) {
		if (++*i >= argc)
			return usage_error("%s needs a value", a);
		if (a[2] == 'b')
			k->by = argv[*i];
		else if (a[2] == 's')
			k->req_since = argv[*i];
		else
			k->rep_until = argv[*i];
	} else if (strcmp(a, "--count") == 0 && strchr(c->flags, 'w')) {
		(*i)++;
		return parse_count(k, *i < argc ? argv[*i] : NULL);
	} else if ((strcmp(a, "--rpm") == 0 || strcmp(a, "--tpm") == 0) &&
	    strchr(c->flags, 'L')) {
		(*i)++;
		return parse_limit(a, *i < argc ? argv[*i] : NULL, a[2] == 'r' ? &k->rpm : &k->tpm);
	} else {
		fprintf(stderr, "kvctl: %s: unknown option '%s'\n(kvctl --help "
		    "for usage)\n", c->name, a);
		return KVCTL_EXIT_USAGE;
	}
	return 0;
}

static int
parse_command_args(struct kvctl *k, const struct command *c, int argc,
    char **argv)
{
	int i, rc;

	/* "--" ends the flags, so a label that starts with "--" can be named. */
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			for (i++; i < argc; i++)
				if (k->nargs++ < 2)
					k->args[k->nargs - 1] = argv[i];
			break;
		}
		if (strncmp(argv[i], "--", 2) == 0) {
			if ((rc = parse_flag(k, c, argv, argc, &i)) != 0)
				return rc;
		} else if (k->nargs++ < 2) {
			k->args[k->nargs - 1] = argv[i];
		}
	}
	if (k->nargs < c->min_args || k->nargs > c->max_args) {
		fprintf(stderr, "kvctl: %s: wrong number of arguments\n"
		    "(kvctl --help for usage)\n", c->name);
		return KVCTL_EXIT_USAGE;
	}
	return 0;
}

static const struct command *
find_command(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* Returns -1 to go on, or an exit code. */
static int
parse_global(struct kvctl *k, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+c:l:hV", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			k->config = optarg;
			break;
		case 'l':
			k->ledger = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return KVCTL_EXIT_OK;
		case 'V':
			printf("kvctl %s\n", PACKAGE_VERSION);
			return KVCTL_EXIT_OK;
		default:
			if (optopt == 'c' || optopt == 'l')
				return usage_error("-%s needs a file name",
				    optopt == 'c' ? "c" : "l");
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (k->config != NULL && k->ledger != NULL)
		return usage_error("%s", "give -c CONFIG or -l LEDGER, not both");
	if (optind >= argc) {
		fputs(usage_text, stderr);
		return KVCTL_EXIT_USAGE;
	}
	return -1;
}

/* ---- the ledger --------------------------------------------------------- */

/* No config: the audit log is audit.jsonl beside the ledger. */
static int
audit_beside(struct kvctl *k)
{
	if (kv_audit_path_beside(k->path, k->audit, sizeof(k->audit)) == -1) {
		fprintf(stderr, "kvctl: the audit log's path is too long\n");
		return -1;
	}
	return 0;
}

/* -l, else the config's ledger (which KILOVOLT_LEDGER overrides), else
 * KILOVOLT_LEDGER alone when there is no config file at all. */
static int
resolve_ledger(struct kvctl *k)
{
	struct kv_config *cf;
	const char *file;
	char err[1024];
	int rc;

	if (k->ledger != NULL) {
		snprintf(k->path, sizeof(k->path), "%s", k->ledger);
		return audit_beside(k);
	}
	file = k->config != NULL ? k->config : kv_config_default_path();
	/* A container may set only KILOVOLT_LEDGER and ship no config. */
	if (k->config == NULL && getenv("KILOVOLT_LEDGER") != NULL &&
	    access(file, F_OK) == -1 && errno == ENOENT) {
		snprintf(k->path, sizeof(k->path), "%s", getenv("KILOVOLT_LEDGER"));
		return audit_beside(k);
	}
	cf = calloc(1, sizeof(*cf));
	if (cf == NULL) {
		perror("kvctl");
		return -1;
	}
	/* "": without the price catalogue, which the ledger does not need; a
	 * bad one (kvctl prices --check says what) must not hide the spend */
	if (kv_config_load_prices(cf, file, "", err, sizeof(err)) == -1) {
		fprintf(stderr, "kvctl: %s\n(kvctl reads the ledger path from the "
		    "config; -l LEDGER names the file directly)\n", err);
		free(cf);
		return -1;
	}
	snprintf(k->path, sizeof(k->path), "%s", cf->ledger);
	snprintf(k->reqlog, sizeof(k->reqlog), "%s", cf->request_log);
	rc = kv_audit_path(cf, k->audit, sizeof(k->audit));
	kv_config_free(cf);
	free(cf);
	if (rc == -1)
		fprintf(stderr, "kvctl: the audit log's path is too long\n");
	return rc == -1 ? -1 : 0;
}

static int
open_ledger(struct kvctl *k, int writes)
{
	char err[1024];
	int flags = writes ? 0 : KV_LEDGER_READONLY;

	if (kv_ledger_open(&k->l, k->path, 0, flags, err, sizeof(err)) == 0)
		return 0;
	if (errno == ENOENT)
		fprintf(stderr, "kvctl: no ledger at %s (is kilovoltd configured "
		    "with this ledger?)\n", k->path);
	else
		fprintf(stderr, "kvctl: %s\n", err);
	return -1;
}

/* A failed write to stdout (full disk, closed pipe) is an error too. */
static int
finish_output(int rc)
{
	if (fflush(stdout) == EOF || ferror(stdout)) {
		perror("kvctl: writing output");
		return KVCTL_EXIT_USAGE;
	}
	return rc;
}

int
main(int argc, char **argv)
{
	struct kvctl k;
	const struct command *c;
	int rc, keys_sub;

	memset(&k, 0, sizeof(k));
	k.rpm = k.tpm = -1;
	k.l.fd = -1;
	if ((rc = parse_global(&k, argc, argv)) != -1)
		return rc;
	if (strcmp(argv[optind], "prices") == 0)	/* the config, not the ledger */
		return finish_output(kvctl_prices(k.config, k.ledger, argc - optind, argv + optind));
	if (strcmp(argv[optind], "audit") == 0)		/* the config's log, no ledger */
		return resolve_ledger(&k) == -1 ? KVCTL_EXIT_USAGE :
		    finish_output(kvctl_audit(k.audit, argc - optind, argv + optind));
	if (strcmp(argv[optind], "team") == 0 && optind + 1 < argc &&
	    kvctl_team_is_sub(argv[optind + 1]))	/* through the admin API */
		return finish_output(kvctl_team_api(k.config != NULL ? k.config :
		    kv_config_default_path(), argc - optind - 1, argv + optind + 1));
	k.cargc = argc - optind;
	k.cargv = argv + optind;
	c = find_command(argv[optind]);
	if (c == NULL)
		return usage_error("unknown command '%s'", argv[optind]);
	keys_sub = c->run == cmd_keys && optind + 1 < argc && kvctl_keys_is_sub(argv[optind + 1]);
	rc = keys_sub ? 0 : parse_command_args(&k, c, argc - optind, argv + optind);
	if (rc != 0)
		return rc;
	/* requests reads only the log; --file needs no config at all. */
	if (c->run == cmd_requests && (k.req_file != NULL || k.ledger != NULL))
		return finish_output(c->run(&k));
	if (resolve_ledger(&k) == -1)
		return KVCTL_EXIT_USAGE;
	if (c->run == cmd_requests)
		return finish_output(c->run(&k));
	if (open_ledger(&k, c->writes || keys_sub) == -1)
		return KVCTL_EXIT_USAGE;
	rc = keys_sub ? kvctl_keys_main(&k.l, k.path, k.ledger != NULL ? NULL :
	    k.config != NULL ? k.config : kv_config_default_path(), k.audit,
	    argc - optind - 1, argv + optind + 1) :
	    c->run(&k);
	kv_ledger_close(&k.l);
	return finish_output(rc);
}

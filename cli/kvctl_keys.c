/* kvctl keys create | revoke | rotate: kilovolt keys issued without
 * editing a file. The ledger holds them (shm/keys.h), so workers admit a
 * new key at once and a revoked one is refused from the next request on,
 * whether or not a daemon runs while kvctl writes. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"

#include <errno.h>
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

struct keys_cmd {
	struct kv_ledger	*l;
	const char		*path;		/* of the ledger */
	struct kv_config	*cf;		/* NULL with -l LEDGER */
	const char		*audit;		/* the audit log, "" off */
	int			 argc;		/* the subcommand's words, for it */
	char			**argv;
	const char		*name;		/* the positional argument */
	const char		*budget;	/* --budget USD */
	const char		*period;	/* --period P */
	const char		*expires;	/* --expires DATE */
	long long		 rpm, tpm;	/* -1 unset */
	int			 json;
};

static int
keys_usage(const char *fmt, const char *arg)
{
	return kvctl_usage_error("keys", fmt, arg);
}

int
kvctl_keys_is_sub(const char *name)
{
	return strcmp(name, "create") == 0 || strcmp(name, "revoke") == 0 ||
	    strcmp(name, "rotate") == 0;
}

/* ---- arguments ---------------------------------------------------------- */

static int
parse_count_flag(const char *flag, const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *out < 0 || *out > 4000000000LL) {
		fprintf(stderr, "kvctl: keys: %s wants a number 0..4000000000 (0 = no "
		    "limit), not '%s'\n", flag, s);
		return -1;
	}
	return 0;
}

/* One flag and its value; CREATE: the limits are allowed. */
static int
parse_flag(struct keys_cmd *k, int create, const char *a, const char *v)
{
	if (create && strcmp(a, "--budget") == 0)
		k->budget = v;
	else if (create && strcmp(a, "--period") == 0)
		k->period = v;
	else if (create && strcmp(a, "--expires") == 0)
		k->expires = v;
	else if (create && (strcmp(a, "--rpm") == 0 || strcmp(a, "--tpm") == 0))
		return parse_count_flag(a, v, a[2] == 'r' ? &k->rpm : &k->tpm);
	else
		return keys_usage("unknown option '%s'", a), -1;
	return 0;
}

static int
parse_args(struct keys_cmd *k, int create, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			k->json = 1;
		} else if (strcmp(argv[i], "--") == 0 && i + 1 < argc && k->name == NULL) {
			k->name = argv[++i];
		} else if (strncmp(argv[i], "--", 2) == 0) {
			if (i + 1 >= argc)
				return keys_usage("%s needs a value", argv[i]);
			if (parse_flag(k, create, argv[i], argv[i + 1]) == -1)
				return KVCTL_EXIT_USAGE;
			i++;
		} else if (k->name == NULL) {
			k->name = argv[i];
		} else {
			return keys_usage("%s", "one key at a time");
		}
	}
	if (k->name == NULL)
		return keys_usage("%s: which key? (a name, or an id prefix)", argv[0]);
	return KVCTL_EXIT_OK;
}

/* --expires: a UTC date or time, unix seconds, or a span from now
 * ("90d", "12h"). */
static int
parse_expires(const char *s, int64_t now, int64_t *out)
{
	size_t n = strlen(s);
	int64_t ms;

	if (n >= 2 && strchr("smhd", s[n - 1]) != NULL && strspn(s, "0123456789") == n - 1) {
		/* A span: kvctl_parse_since reads it as before NOW. */
		if (kvctl_parse_since(s, now, &ms) == -1)
			return -1;
		*out = now + (now - ms / 1000);
		return 0;
	}
	if (kvctl_parse_since(s, now, &ms) == -1)
		return -1;
	*out = ms / 1000;
	return *out > now ? 0 : -1;
}

/* The secret once, on stdout alone (K=$(kvctl keys create x) keeps it),
 * or in a JSON object with the key's fields. */
static void
print_secret(const struct keys_cmd *k, const struct kv_account *a, const char *key,
    const char *what)
{
	char name[128], money[32];

	if (k->json) {
		kv_report_issued_json(stdout, a, key);
		return;
	}
	kvctl_describe_key(a, name, sizeof(name));
	kvctl_format_money(atomic_load(&a->budget_nusd), money, sizeof(money));
	fprintf(stderr, "%s %s, budget %s; the key, shown this once (kilovolt keeps "
	    "only its SHA-256):\n", what, name, money);
	printf("%s\n", key);
}

/* ---- the commands ------------------------------------------------------- */

static int
fill_spec(struct keys_cmd *k, struct kv_key_spec *s)
{
	const char *b = k->budget;

	s->label = k->name;
	s->rpm = k->rpm;
	s->tpm = k->tpm;
	s->period = -1;
	s->expires = 0;
	if (b == NULL && k->cf == NULL)
		return keys_usage("%s", "create: --budget USD is needed with -l LEDGER "
		    "(with -c CONFIG the [budget] default applies)");
	if (b == NULL)
		s->budget_nusd = k->cf->default_budget_nusd;
	else if (kv_parse_nano(b[0] == '$' ? b + 1 : b, &s->budget_nusd) == -1 ||
	    s->budget_nusd < 0)
		return keys_usage("create: --budget '%s' is not an amount in USD (e.g. "
		    "25.00)", b);
	if (k->period != NULL && kv_keys_parse_period(k->period, &s->period) == -1)
		return keys_usage("create: --period '%s': give none, daily, weekly or "
		    "monthly", k->period);
	if (k->expires != NULL &&
	    parse_expires(k->expires, (int64_t)time(NULL), &s->expires) == -1)
		return keys_usage("create: --expires '%s': give a future UTC date "
		    "(2027-01-31, 2027-01-31T12:00:00Z) or a span (90d, 12h)", k->expires);
	return KVCTL_EXIT_OK;
}

/* The table was full of rotated-out secrets (EAGAIN from shm/keys.c),
 * which a running master frees at once. With no daemon, free them here,
 * as kvctl forget retires an account itself then. Returns 1 when slots
 * came back (try again), else 0. */
static int
reclaim_offline(struct keys_cmd *k)
{
	struct kv_reclaim_report rep;

	if (errno != EAGAIN || kv_ledger_locked(k->path) != 0)
		return 0;
	kv_ledger_reclaim(k->l, (int64_t)time(NULL), -1, 0, &rep);
	atomic_store(&k->l->hdr->reclaim_wanted, 0);
	return rep.links > 0;
}

/* The audit record of subcommand OP on K's words; -1: the log cannot
 * take it (said), change nothing. */
static int
audit_start(struct keys_cmd *k, struct kvctl_audit *ka, const char *op)
{
	return kvctl_audit_start(ka, k->audit, op, "keys", k->argc, k->argv);
}

static int
cmd_create(struct keys_cmd *k)
{
	struct kvctl_audit ka;
	struct kv_key_spec spec;
	struct kv_account *a;
	char key[KV_KEY_TEXT], err[512];
	int rc;

	if ((rc = fill_spec(k, &spec)) != KVCTL_EXIT_OK)
		return rc;
	if (audit_start(k, &ka, "key.create") == -1)
		return KVCTL_EXIT_USAGE;
	kv_audit_spec(&ka.rec.args, &spec);
	a = kv_keys_create(k->l, k->cf, &spec, key, err, sizeof(err));
	if (a == NULL && reclaim_offline(k))
		a = kv_keys_create(k->l, k->cf, &spec, key, err, sizeof(err));
	if (a == NULL) {
		fprintf(stderr, "kvctl: keys create: %s\n", err);
		return kvctl_audit_finish(&ka, KVCTL_EXIT_USAGE);
	}
	print_secret(k, a, key, "created");
	explicit_bzero(key, sizeof(key));
	kv_audit_key(&ka.rec, a);
	kv_audit_account(&ka.rec.after, a);
	return kvctl_audit_finish(&ka, kvctl_issued_publish(k->cf, k->l, a));
}

static int
cmd_revoke(struct keys_cmd *k)
{
	struct kvctl_audit ka;
	struct kv_account *a;
	char name[128];
	int rc;

	if ((rc = kvctl_resolve_key(k->l, k->name, &a)) != KVCTL_EXIT_OK)
		return rc;
	kvctl_describe_key(a, name, sizeof(name));
	if (atomic_load(&a->aflags) & KV_AF_CONFIG) {
		fprintf(stderr, "kvctl: keys revoke: %s is a [key] of the config: remove "
		    "its section (or change its key =) and reload\n", name);
		return KVCTL_EXIT_USAGE;
	}
	if (audit_start(k, &ka, "key.revoke") == -1)
		return KVCTL_EXIT_USAGE;
	kv_audit_key(&ka.rec, a);
	kv_audit_obj_bool(&ka.rec.before, "revoked", (atomic_load(&a->aflags) &
	    KV_AF_REVOKED) != 0);
	/* a revocation already made is written to Redis again: running the
	 * command again is how one that could not be written is retried */
	if (kv_keys_revoke(a) == -1)
		printf("%s was revoked already\n", name);
	else
		printf("revoked %s: its next request gets 401 (requests in flight "
		    "finish and are charged)\n", name);
	kv_audit_obj_bool(&ka.rec.after, "revoked", 1);
	return kvctl_audit_finish(&ka, kvctl_issued_publish(k->cf, k->l, a));
}

static int
cmd_rotate(struct keys_cmd *k)
{
	struct kvctl_audit ka;
	struct kv_account *a;
	char key[KV_KEY_TEXT], err[512], name[128], was[13];
	int rc;

	if ((rc = kvctl_resolve_key(k->l, k->name, &a)) != KVCTL_EXIT_OK)
		return rc;
	kvctl_describe_key(a, name, sizeof(name));
	if (audit_start(k, &ka, "key.rotate") == -1)
		return KVCTL_EXIT_USAGE;
	kv_audit_key(&ka.rec, a);
	kv_keys_live_secret_id(k->l, a, was);
	kv_audit_obj_str(&ka.rec.before, "secret_id", was);
	rc = kv_keys_new_secret(k->l, a, key, err, sizeof(err));
	if (rc == -1 && reclaim_offline(k))
		rc = kv_keys_new_secret(k->l, a, key, err, sizeof(err));
	if (rc == -1) {
		fprintf(stderr, "kvctl: keys rotate: %s: %s\n", name, err);
		return kvctl_audit_finish(&ka, KVCTL_EXIT_USAGE);
	}
	print_secret(k, a, key, "rotated; the old key is refused from now on;");
	explicit_bzero(key, sizeof(key));
	kv_keys_live_secret_id(k->l, a, was);
	kv_audit_obj_str(&ka.rec.after, "secret_id", was);
	return kvctl_audit_finish(&ka, kvctl_issued_publish(k->cf, k->l, a));
}

int
kvctl_keys_main(struct kv_ledger *l, const char *path, const char *config,
    const char *audit, int argc, char **argv)
{
	struct keys_cmd k;
	int rc, create = strcmp(argv[0], "create") == 0;

	memset(&k, 0, sizeof(k));
	k.l = l;
	k.path = path;
	k.audit = audit;
	k.argc = argc;
	k.argv = argv;
	k.rpm = k.tpm = -1;
	if ((rc = parse_args(&k, create, argc, argv)) != KVCTL_EXIT_OK)
		return rc;
	/* kvctl found the ledger through this config, so it loads. */
	k.cf = kvctl_config_load(config);
	if (create)
		rc = cmd_create(&k);
	else if (strcmp(argv[0], "revoke") == 0)
		rc = cmd_revoke(&k);
	else
		rc = cmd_rotate(&k);
	kvctl_config_free(k.cf);
	return rc;
}

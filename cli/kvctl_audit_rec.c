/* The audit log's line for each kvctl command that writes the ledger
 * (kvctl.h kvctl_audit_start): who ran it (the Unix user), the command
 * line, what changed. kvctl checks that it can append before it changes
 * anything, and appends once the change is made; it does not hold the
 * log's lock in between, because forget and a cluster reset wait for the
 * master, which needs the lock for the admin API's writes. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"

#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The user kvctl runs as, and who ran sudo for it. */
static void
who_user(struct kv_audit_obj *o)
{
	struct passwd *pw = getpwuid(geteuid());
	const char *sudo = getenv("SUDO_USER");

	kv_audit_obj_str(o, "user", pw != NULL ? pw->pw_name : NULL);
	kv_audit_obj_int(o, "uid", (int64_t)geteuid());
	if (sudo != NULL && sudo[0] != '\0')
		kv_audit_obj_str(o, "sudo_user", sudo);
	kv_audit_obj_int(o, "pid", (int64_t)getpid());
}

/* "kvctl", PREFIX (a word, or "") and ARGV, joined by blanks (cut at the
 * record's size). */
static void
command_line(char *out, size_t len, const char *prefix, int argc, char **argv)
{
	size_t n;
	int i;

	snprintf(out, len, "kvctl%s%s", prefix[0] != '\0' ? " " : "", prefix);
	for (i = 0; i < argc; i++) {
		n = strlen(out);
		snprintf(out + n, len - n, " %s", argv[i]);
	}
}

int
kvctl_audit_start(struct kvctl_audit *ka, const char *path, const char *op,
    const char *prefix, int argc, char **argv)
{
	struct kv_audit_log lg;
	char err[512];

	memset(&ka->rec, 0, sizeof(ka->rec));
	snprintf(ka->path, sizeof(ka->path), "%s", path != NULL ? path : "");
	ka->rec.via = "kvctl";
	snprintf(ka->rec.op, sizeof(ka->rec.op), "%s", op);
	command_line(ka->rec.request, sizeof(ka->rec.request), prefix, argc, argv);
	who_user(&ka->rec.who);
	if (kv_audit_begin(&lg, ka->path, err, sizeof(err)) == -1) {
		fprintf(stderr, "kvctl: KV0823: audit log unavailable: %s; nothing was "
		    "changed\n", err);
		return -1;
	}
	kv_audit_end(&lg);
	return 0;
}

int
kvctl_audit_finish(struct kvctl_audit *ka, int rc)
{
	struct kv_audit_log lg;
	char err[512];

	ka->rec.status = rc;
	if (kv_audit_begin(&lg, ka->path, err, sizeof(err)) == 0 &&
	    kv_audit_commit(&lg, &ka->rec, err, sizeof(err)) == 0)
		return rc;
	fprintf(stderr, "kvctl: KV0824: audit line not written: %s; the change (%s) "
	    "was made\n", err, ka->rec.op);
	return KVCTL_EXIT_USAGE;
}

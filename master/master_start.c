/* The master's start-up: the ledger opened (made if missing), checked to
 * be ours, locked, repaired and grown; the listener, the cluster, the
 * status service and the health probes started; library pages only the
 * start used unmapped; then the privileges dropped. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/master_start.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/audit_log.h"
#include "common/log.h"
#include "master/aws_refresh.h"
#include "master/entra_refresh.h"
#include "master/gcp_refresh.h"
#include "master/jwks_refresh.h"
#include "master/cluster.h"
#include "master/key_sync.h"
#include "master/master_ledger.h"
#include "master/master_reload.h"
#include "master/status.h"
#include "master/trim.h"
#include "shm/guard.h"
#include "shm/keys.h"
#include "shm/lock.h"
#include "shm/targets.h"
#include "worker/spool.h"

static int
mkdir_parent(const char *path)
{
	char dir[4096], *p;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((p = strrchr(dir, '/')) == NULL || p == dir)
		return 0;
	*p = '\0';
	for (p = dir + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0750) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(dir, 0750) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/* Started as root with a `user` to run as: its entry into *PW, and 1;
 * 0 when not (not root, or no user); -1 when there is no such user
 * (logged). */
static int
run_as(const struct kv_config *cf, struct passwd **pw)
{
	if (geteuid() != 0 || cf->user[0] == '\0')
		return 0;
	if ((*pw = getpwnam(cf->user)) == NULL) {
		kv_log_warnx("KV0106", "user %s: no such user", cf->user);
		return -1;
	}
	return 1;
}

/* Started as root for `user`: the ledger must be root's (an earlier root
 * start, chowned below) or that user's. Anyone else's file is not ours to
 * take over, so refuse before writing a byte of it. */
static int
check_ledger_owner(struct master *m)
{
	const struct kv_config *cf = m->cf;
	struct passwd *pw;
	struct stat st;
	int r;

	if ((r = run_as(cf, &pw)) <= 0)
		return r;
	if (fstat(m->ledger.fd, &st) == -1) {
		kv_log_warn("KV0123", "fstat %s", cf->ledger);
		return -1;
	}
	if (st.st_uid != 0 && st.st_uid != pw->pw_uid) {
		kv_log_warnx("KV0124", "ledger %s is owned by uid %u, not by root or %s: "
		    "refusing to take it over (chown it to %s if it is this daemon's)",
		    cf->ledger, (unsigned)st.st_uid, cf->user, cf->user);
		return -1;
	}
	return 0;
}

/* The audit log made now, as root, and given to the user the master
 * drops to, who appends to it from then on (kvctl as root keeps it so). */
static void
audit_log_owner(const struct kv_config *cf, const struct passwd *pw)
{
	char path[KV_AUDIT_PATH_MAX];
	int fd;

	if (kv_audit_path(cf, path, sizeof(path)) != 0)
		return;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd == -1 || fchown(fd, pw->pw_uid, pw->pw_gid) == -1)
		kv_log_warn("KV0822", "audit log %s: cannot make it %s's", path, cf->user);
	if (fd != -1)
		(void)close(fd);
}

static int
drop_privileges(struct master *m)
{
	const struct kv_config *cf = m->cf;
	struct passwd *pw;
	int r;

	if ((r = run_as(cf, &pw)) <= 0)
		return r;
	/* The ledger stays writable for the next start as that user. */
	if (fchown(m->ledger.fd, pw->pw_uid, pw->pw_gid) == -1)
		kv_log_warn("KV0107", "chown %s", cf->ledger);
	audit_log_owner(cf, pw);
	if (setgroups(0, NULL) == -1 || setgid(pw->pw_gid) == -1 || setuid(pw->pw_uid) == -1) {
		kv_log_warn("KV0108", "cannot drop privileges to %s", cf->user);
		return -1;
	}
	if (prctl(PR_SET_DUMPABLE, 0) == -1)
		kv_log_warn("KV0109", "prctl(PR_SET_DUMPABLE)");
	kv_log_info("running as user %s", cf->user);
	return 0;
}

static int
loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
	    strcmp(host, "localhost") == 0;
}

/* Said once at start-up: a gateway on a public address with no key of
 * its own admits whoever reaches the port (each client's provider key is
 * passed through, or, on an upstream with api_key, nobody gets in). */
static void
warn_open_listener(struct master *m)
{
	const struct kv_config *cf = m->cf;
	uint32_t i;

	if (loopback(cf->listen_host) || cf->nkeys > 0 || cf->unknown_keys_deny)
		return;
	KV_FOR_EACH_SLOT(&m->ledger, i)
		if (kv_slot_ready(&m->ledger.accounts[i].state) &&
		    (atomic_load(&m->ledger.accounts[i].aflags) & KV_AF_ISSUED))
			return;
	kv_log_warnx("KV0131", "listening on %s:%s (not loopback) with no kilovolt keys: "
	    "pass-through mode, anyone who reaches the port spends through it with their "
	    "own provider key; issue keys (kvctl keys create NAME) with [budget] "
	    "unknown_keys = deny, or listen on 127.0.0.1", cf->listen_host, cf->listen_port);
}

/* After the status service's libraries initialised; before dropping
 * privileges, which makes /proc/self/smaps unreadable to us. (Workers map
 * only the library pages they touch: fork copies no page table entries of
 * such mappings.) */
static void
trim_startup_pages(void)
{
	long kb = kv_trim_file_mappings();

	if (kb == -1)
		kv_log_warn("KV0125", "/proc/self/smaps");
	else
		kv_log_info("unmapped %ld kB of library pages only start-up used", kb);
}

int
kv_master_start(struct master *m)
{
	char err[1024];

	if (prctl(PR_SET_DUMPABLE, 0) == -1)	/* no core dump holds provider keys */
		kv_log_warn("KV0120", "prctl(PR_SET_DUMPABLE)");
	if (mkdir_parent(m->cf->ledger) == -1)
		kv_log_warn("KV0121", "mkdir for %s", m->cf->ledger);
	/* Any size first: a smaller one is grown below, once locked. */
	if (kv_ledger_open(&m->ledger, m->cf->ledger, 0, 0, err, sizeof(err)) == -1 &&
	    (errno != ENOENT || kv_ledger_open(&m->ledger, m->cf->ledger, m->cf->max_keys,
	    KV_LEDGER_CREATE, err, sizeof(err)) == -1)) {
		kv_log_warnx("KV0122", "%s", err);
		return 2;
	}
	/* Before the lock, which writes its holder into the header. */
	if (check_ledger_owner(m) == -1)
		return 2;
	if (kv_ledger_lock(&m->ledger, m->cf->ledger, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0602", "%s", err);
		return 2;
	}
	kv_master_startup_repair(m);
	kv_targets_reset(&m->ledger);
	if (kv_master_resize_ledger(m) == -1)
		return 2;
	kv_ledger_watch_init(&m->watch, &m->ledger, m->cf->ledger);
	if (kv_ledger_guard(&m->ledger) == -1)
		kv_log_warn("KV0610", "sigaction(SIGBUS)");
	if (kv_master_keys_clash(m, m->cf) == -1)
		return 2;
	kv_key_sync(&m->ledger, m->cf);
	if ((m->lp = kv_mloop_new()) == NULL) {
		kv_log_warn("KV0127", "epoll_create1 for the master's loop");
		return 1;
	}
	m->cluster = kv_cluster_start(m->cf, &m->ledger, m->lp);
	if ((m->lfd = kv_master_open_listener(m->cf)) == -1)
		return 1;
	warn_open_listener(m);
	if (m->cf->status_port[0] != '\0')
		m->status = kv_status_start(m->cf, &m->ledger, m->lp);
	kv_master_sync_health(m);	/* before dropping privileges: CA files are read now */
	trim_startup_pages();
	if (drop_privileges(m) == -1)
		return 2;
	kv_spool_prepare(m->cf);	/* as the user the workers run as */
	/* As that user too, as its refreshes will be; before any worker,
	 * which inherits the credentials' shared slot. */
	if (kv_aws_refresh_start(m->lp, m->cf, &m->ledger) == -1 ||
	    kv_gcp_refresh_start(m->lp, m->cf, &m->ledger) == -1 ||
	    kv_entra_refresh_start(m->lp, m->cf, &m->ledger) == -1)
		return 2;
	/* as that user too: it writes the key set beside the ledger */
	kv_jwks_refresh_start(m->lp, m->cf, &m->ledger);
	return 0;
}

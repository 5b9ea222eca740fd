/* A reload (SIGHUP) and its handover: a new generation of workers on the
 * config parsed again, the serving one drained once it runs, a failing
 * one dropped; with what a start and a reload both apply to a config (its
 * listener, its [key] sections checked against the issued keys, the
 * health probes). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/master_reload.h"

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "master/cpu_pin.h"
#include "master/health_check.h"
#include "master/key_sync.h"
#include "master/master_procs.h"
#include "master/notify.h"
#include "master/price_changes.h"
#include "master/status.h"
#include "shm/keys.h"

int
kv_master_open_listener(const struct kv_config *cf)
{
	struct addrinfo hints, *ai = NULL, *a;
	int fd = -1, one = 1, r;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	r = getaddrinfo(cf->listen_host[0] ? cf->listen_host : NULL, cf->listen_port, &hints, &ai);
	if (r != 0) {
		kv_log_warnx("KV0103", "listen %s:%s: %s", cf->listen_host, cf->listen_port,
		    gai_strerror(r));
		return -1;
	}
	for (a = ai; a != NULL; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd == -1)
			continue;
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 4096) == 0)
			break;
		kv_log_warn("KV0104", "listen %s:%s", cf->listen_host, cf->listen_port);
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd != -1)
		kv_log_info("listening on %s:%s", cf->listen_host, cf->listen_port);
	return fd;
}

void
kv_master_maybe_handover(struct master *m)
{
	int i, running = 0;

	if (m->serving == m->generation || m->stopping)
		return;
	for (i = 0; i < KV_WORKER_SLOTS; i++)
		if (m->procs[i].pid != 0 && !m->procs[i].exiting &&
		    m->procs[i].generation == m->generation &&
		    atomic_load(&m->ledger.workers[i].state) == KV_WORKER_RUNNING)
			running++;
	if (running < m->wanted)
		return;
	kv_master_signal_workers(m, SIGTERM, 1);
	m->serving = m->generation;
	if (m->prev_cf != NULL) {
		kv_config_free(m->prev_cf);
		free(m->prev_cf);
		m->prev_cf = NULL;
	}
	if (m->prev_lfd != -1 && close(m->prev_lfd) == -1)
		kv_log_warn("KV0613", "close the previous listener");
	m->prev_lfd = -1;
	kv_log_info("reloaded %s: generation %u serving, %d worker%s", m->cf->path,
	    m->generation, m->wanted, m->wanted == 1 ? "" : "s");
	kv_notify("READY=1");
}

void
kv_master_reload_failed(struct master *m)
{
	uint32_t failed = m->generation;

	kv_log_warnx("KV0614", "reload failed: generation %u cannot serve the new config "
	    "(the worker said why above); generation %u keeps serving the previous one",
	    failed, m->serving);
	m->generation = m->serving;
	kv_master_signal_workers(m, SIGTERM, 1);	/* everything not of m->generation */
	kv_config_free(m->cf);
	free(m->cf);
	m->cf = m->prev_cf;
	m->prev_cf = NULL;
	if (m->prev_lfd != -1) {
		if (close(m->lfd) == -1)
			kv_log_warn("KV0613", "close the new listener");
		m->lfd = m->prev_lfd;
		m->prev_lfd = -1;
	}
	m->wanted = m->cf->workers;
	kv_key_sync(&m->ledger, m->cf);
	if (m->status != NULL)
		kv_status_set_config(m->status, m->cf);
	kv_notify("READY=1");
}

int
kv_master_keys_clash(struct master *m, const struct kv_config *cf)
{
	const char *name = kv_keys_config_clash(&m->ledger, cf);

	if (name == NULL)
		return 0;
	kv_log_warnx("KV0130", "%s: [key %s] has the name of an issued key (kvctl keys "
	    "create): rename the section, or `kvctl keys revoke %s` and `kvctl forget %s`%s",
	    cf->path, name, name, name, m->last_gen > 0 ? "; reload refused, keeping the "
	    "running config" : "");
	return -1;
}

/* A reload refused once NCF was loaded: the running config goes on. */
static void
refuse(struct kv_config *ncf)
{
	kv_config_free(ncf);
	free(ncf);
	kv_notify("READY=1");
}

/* Replace the pending reload: its workers never took over. They drain,
 * its config goes, and so does the listener it opened unless NFD, the
 * new reload's, is that one. */
static void
drop_pending(struct master *m, int nfd)
{
	uint32_t pending = m->generation;

	m->generation = m->serving;
	for (int i = 0; i < KV_WORKER_SLOTS; i++)
		if (m->procs[i].pid != 0 && m->procs[i].generation == pending) {
			m->procs[i].exiting = 1;
			if (kill(m->procs[i].pid, SIGTERM) == -1 && errno != ESRCH)
				kv_log_warn("KV0114", "kill %d", (int)m->procs[i].pid);
		}
	kv_config_free(m->cf);
	free(m->cf);
	if (m->prev_lfd != -1 && nfd != m->lfd) {
		if (close(m->lfd) == -1)
			kv_log_warn("KV0613", "close the pending listener");
		m->lfd = m->prev_lfd;
		m->prev_lfd = -1;
	}
}

void
kv_master_reload(struct master *m)
{
	struct kv_config *ncf;
	char err[1024];
	int nfd = m->lfd;

	kv_notify("RELOADING=1");
	if ((ncf = calloc(1, sizeof(*ncf))) == NULL ||
	    kv_config_load(ncf, m->cf->path, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0115", "reload failed, keeping the running config: %s",
		    ncf ? err : "out of memory");
		free(ncf);
		kv_notify("READY=1");
		return;
	}
	if (kv_master_keys_clash(m, ncf) == -1) {
		refuse(ncf);
		return;
	}
	kv_price_changes_log(m->cf, ncf);
	if (strcmp(ncf->ledger, m->cf->ledger) != 0 || ncf->max_keys != m->cf->max_keys)
		kv_log_warnx("KV0116", "reload: ledger and max_keys changes need a restart");
	if (strcmp(ncf->listen_host, m->cf->listen_host) != 0 ||
	    strcmp(ncf->listen_port, m->cf->listen_port) != 0) {
		if ((nfd = kv_master_open_listener(ncf)) == -1) {
			kv_log_warnx("KV0117", "reload failed, keeping the running config");
			refuse(ncf);
			return;
		}
	}
	if (m->serving != m->generation)
		drop_pending(m, nfd);
	else
		m->prev_cf = m->cf;
	m->cf = ncf;
	if (nfd != m->lfd) {
		m->prev_lfd = m->lfd;
		m->lfd = nfd;
	}
	m->generation = ++m->last_gen;
	m->wanted = ncf->workers;
	m->crashes = 0;
	m->respawn_at_ms = 0;
	kv_key_sync(&m->ledger, m->cf);
	kv_cpu_plan_make(&m->cpus, m->cf);
	kv_master_top_up(m);
	if (m->status != NULL)
		kv_status_set_config(m->status, ncf);
	kv_log_info("reloading %s: generation %u starting %d worker%s; generation %u serves "
	    "until they run", ncf->path, m->generation, m->wanted, m->wanted == 1 ? "" : "s",
	    m->serving);
}

void
kv_master_sync_health(struct master *m)
{
	if (m->health_cf == m->cf)
		return;
	kv_health_free(m->health);
	m->health = kv_health_start(m->cf, &m->ledger, m->lp);
	m->health_cf = m->cf;
}

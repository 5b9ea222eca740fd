/* The master: owns the ledger mapping, the listener and the process table;
 * forks and respawns workers, reloads on SIGHUP, drains on SIGTERM, syncs
 * the ledger, and drives the status service from its own poll loop. This
 * file is that loop: signals, reaping, the tick and the stop; the start
 * (master_start.c), the reload (master_reload.c), the process table
 * (master_procs.c) and the ledger's upkeep (master_ledger.c) sit below it. */
#include "master/alerts.h"
#include "master/aws_refresh.h"
#include "master/entra_refresh.h"
#include "master/gcp_refresh.h"
#include "master/jwks_refresh.h"
#include "master/master.h"
#include "master/master_ledger.h"
#include "master/master_procs.h"
#include "master/master_reload.h"
#include "master/master_start.h"
#include "master/master_state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "master/cluster.h"
#include "master/cpu_pin.h"
#include "master/health_check.h"
#include "master/loop.h"
#include "master/ledger_watch.h"
#include "master/notify.h"
#include "master/status.h"
#include "shm/ratelimit.h"
#include "shm/history.h"
#include "shm/guard.h"
#include "shm/ledger.h"
#include "worker/worker.h"

#define SYNC_SECS	5
#define CRASH_WINDOW_S	2	/* a worker dying this soon after start crashed */
#define MAX_BACKOFF_MS	30000
static volatile sig_atomic_t sig_term, sig_hup, sig_chld, sig_usr1;
static int sigpipe_fds[2] = { -1, -1 };

static void
on_signal(int sig)
{
	int saved = errno;
	char b = 0;

	if (sig == SIGTERM || sig == SIGINT)
		sig_term = 1;
	else if (sig == SIGHUP)
		sig_hup = 1;
	else if (sig == SIGCHLD)
		sig_chld = 1;
	else if (sig == SIGUSR1)
		sig_usr1 = 1;
	/* Wake the loop; a full pipe already has a wake-up queued. */
	if (write(sigpipe_fds[1], &b, 1) == -1)
		(void)0;
	errno = saved;
}

static int
master_signals(struct master *m)
{
	struct sigaction sa;

	if (pipe2(sigpipe_fds, O_NONBLOCK | O_CLOEXEC) == -1) {
		kv_log_warn("KV0101", "pipe2");
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGTERM, &sa, NULL) == -1 || sigaction(SIGINT, &sa, NULL) == -1 ||
	    sigaction(SIGHUP, &sa, NULL) == -1 || sigaction(SIGCHLD, &sa, NULL) == -1 ||
	    sigaction(SIGUSR1, &sa, NULL) == -1) {
		kv_log_warn("KV0102", "sigaction");
		return -1;
	}
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	m->sigpipe[0] = sigpipe_fds[0];
	m->sigpipe[1] = sigpipe_fds[1];
	return 0;
}

static void
describe_exit(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, len, "stopped");
}

static void begin_stop(struct master *m);

/* Truncated, deleted or replaced under us: logged once, then stop. */
static void
check_ledger_file(struct master *m)
{
	if (kv_ledger_watch_check(&m->watch, &m->ledger) == KV_LF_NONE)
		return;
	m->exit_code = 1;
	begin_stop(m);
}

/* A dead worker's gauges and reservations die with it. */
static void
reaped(struct master *m, int slot, int st)
{
	struct proc *p = &m->procs[slot];
	struct kv_worker_slot *ws = &m->ledger.workers[slot];
	char how[64];
	int released;


	describe_exit(st, how, sizeof(how));
	/* Before this process touches a page the file may no longer back. */
	if (WIFEXITED(st) && WEXITSTATUS(st) == KV_EXIT_LEDGER)
		check_ledger_file(m);
	/* Its reservations go in the repair after this round of reaping; the
	 * slot stays taken (pid set) until then. */
	m->dead_mask |= UINT64_C(1) << slot;
	released = 0;
	for (uint32_t i = 0; i < kv_ledger_resv_end(ws); i++)
		released += atomic_load(&ws->resv[i].account) != 0;
	if (p->exiting || m->stopping)
		kv_log_info("worker %d (pid %d) %s", slot, (int)p->pid, how);
	else
		kv_log_warnx("KV0112", "worker %d (pid %d) %s; released %d reservations",
		    slot, (int)p->pid, how, released);
	if (!p->exiting && !m->stopping && WIFEXITED(st) && WEXITSTATUS(st) == KV_EXIT_CONFIG &&
	    p->generation == m->generation && m->serving != m->generation) {
		kv_master_reload_failed(m);
	} else if (!p->exiting && !m->stopping && WIFEXITED(st) && WEXITSTATUS(st) == KV_EXIT_CONFIG) {
		kv_log_warnx("KV0113", "worker cannot serve this config; not respawning");
		m->wanted = 0;
		m->exit_code = 2;
		m->stopping = 1;
		m->stop_deadline_ms = kv_now_ms();
	} else if (!p->exiting && !m->stopping && p->generation == m->generation) {
		if (kv_now_ms() - p->started_ms < CRASH_WINDOW_S * 1000) {
			int64_t delay = 100LL << (m->crashes < 9 ? m->crashes : 9);
			m->crashes++;
			m->respawn_at_ms = kv_now_ms() + (delay < MAX_BACKOFF_MS ? delay : MAX_BACKOFF_MS);
		} else
			m->crashes = 0;
	}
	memset(p, 0, sizeof(*p));
}

static void
reap(struct master *m)
{
	pid_t pid;
	int st, i;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (i = 0; i < KV_WORKER_SLOTS; i++)
			if (m->procs[i].pid == pid) {
				reaped(m, i, st);
				break;
			}
	}
	if (m->dead_mask != 0 || m->recount)
		kv_master_repair_now(m);
}

static void
begin_stop(struct master *m)
{
	if (m->stopping)
		return;
	kv_notify("STOPPING=1");
	kv_log_info("stopping: draining streams for up to %d s", m->cf->shutdown_timeout);
	m->stopping = 1;
	m->stop_deadline_ms = kv_now_ms() + (int64_t)m->cf->shutdown_timeout * 1000 + 2000;
	kv_master_signal_workers(m, SIGTERM, 0);
	if (m->lfd != -1)
		close(m->lfd);
	m->lfd = -1;
}

static void
tick(struct master *m, int64_t *last_sync)
{
	int64_t now = kv_now_ms();

	check_ledger_file(m);
	if (m->recount)
		kv_master_repair_now(m);
	kv_master_roll_periods(m);
	kv_master_reclaim_accounts(m);
	kv_master_top_up(m);
	kv_history_sample_all(&m->ledger, (int64_t)time(NULL));	/* the status page's charts */
	kv_history_sample_totals(&m->ledger, (int64_t)time(NULL));
	if (m->cf->alerts.enabled && m->alerts == NULL)
		m->alerts = kv_alerts_new(&m->ledger);
	kv_alerts_tick(m->alerts, m->cf, &m->ledger, (int64_t)time(NULL));
	if (now - *last_sync >= SYNC_SECS * 1000) {
		*last_sync = now;
		if (kv_ledger_sync(&m->ledger) == -1)
			kv_log_warn("KV0118", "msync %s", m->cf->ledger);
	}
	kv_notify_status("%d worker%s, %llu active streams", kv_master_live_procs(m),
	    kv_master_live_procs(m) == 1 ? "" : "s",
	    (unsigned long long)kv_ledger_sum_active_streams(&m->ledger));
}

static void
on_sigpipe(void *arg, uint32_t events)
{
	char drain[64];

	(void)arg;
	(void)events;
	while (read(sigpipe_fds[0], drain, sizeof(drain)) > 0)
		;
}

static void
on_tick(void *arg)
{
	struct master *m = arg;

	kv_mloop_timer_at(m->lp, &m->tick_timer, kv_now_ms() + 1000);
	tick(m, &m->last_sync);
}

/* Signals are flags the handlers set (the self-pipe only wakes the wait);
 * everything else runs from the loop's watches and timers. A turn waits a
 * second at most, for the stop deadline. */
static void
master_loop(struct master *m)
{
	kv_mloop_io_init(&m->sig_io, on_sigpipe, m);
	kv_mloop_timer_init(&m->tick_timer, on_tick, m);
	if (kv_mloop_io_set(m->lp, &m->sig_io, sigpipe_fds[0], EPOLLIN) == -1)
		kv_log_warn("KV0126", "epoll_ctl on the signal pipe: signals wait up to a second");
	m->last_sync = kv_now_ms();
	kv_mloop_timer_at(m->lp, &m->tick_timer, m->last_sync);
	for (;;) {
		if (sig_chld) {
			sig_chld = 0;
			reap(m);
		}
		if (sig_hup) {
			sig_hup = 0;
			if (!m->stopping)
				kv_master_reload(m);
		}
		if (sig_term) {
			sig_term = 0;
			begin_stop(m);
		}
		if (sig_usr1) {
			sig_usr1 = 0;
			kv_master_forward_reopen(m);
		}
		kv_master_maybe_handover(m);
		if (m->stopping && kv_master_live_procs(m) == 0)
			return;
		if (m->stopping && kv_now_ms() >= m->stop_deadline_ms) {
			kv_master_signal_workers(m, SIGKILL, 0);
			m->stop_deadline_ms = kv_now_ms() + 5000;
		}
		kv_master_sync_health(m);
		kv_aws_refresh_config(m->cf);
		kv_gcp_refresh_config(m->cf);
		kv_entra_refresh_config(m->cf);
		kv_jwks_refresh_config(m->cf);
		if (kv_mloop_turn(m->lp, 1000) == -1)
			kv_log_warn("KV0119", "master loop: epoll_wait");
	}
}

/* Signals caught, then the first generation's workers: 0, or the exit
 * code. */
static int
first_generation(struct master *m)
{
	if (master_signals(m) == -1)
		return 1;
	m->wanted = m->cf->workers;
	m->generation = m->serving = m->last_gen = 1;
	kv_cpu_plan_make(&m->cpus, m->cf);
	kv_master_top_up(m);
	kv_notify("READY=1");
	kv_log_info("kilovoltd started: %d worker%s, ledger %s", m->wanted,
	    m->wanted == 1 ? "" : "s", m->cf->ledger);
	return 0;
}

int
kv_master_run(struct kv_config *cf)
{
	static struct master m;	/* the process owns exactly one */
	int r;

	m.cf = cf;
	m.lfd = -1;
	m.prev_lfd = -1;
	m.sigpipe[0] = m.sigpipe[1] = -1;
	kv_rl_clock_anchor();	/* the rate limits' clock, inherited by every worker */
	if ((r = kv_master_start(&m)) != 0 || (r = first_generation(&m)) != 0)
		return r;
	master_loop(&m);
	reap(&m);
	kv_cluster_stop(m.cluster);
	kv_health_free(m.health);
	if (m.status != NULL)
		kv_status_stop(m.status);
	kv_alerts_free(m.alerts);
	kv_mloop_free(m.lp);
	if (kv_ledger_sync(&m.ledger) == -1)
		kv_log_warn("KV0118", "msync %s", m.cf->ledger);
	atomic_store(&m.ledger.hdr->master_pid, 0);
	kv_ledger_watch_finish(&m.watch, &m.ledger);
	kv_ledger_close(&m.ledger);
	kv_log_info("stopped");
	if (m.prev_cf != NULL) {
		kv_config_free(m.prev_cf);
		free(m.prev_cf);
	}
	kv_config_free(m.cf);
	free(m.cf);
	return m.exit_code;
}

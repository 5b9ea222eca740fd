/* The master's process table: workers forked into free ledger slots (each
 * pinned to its CPU), topped up to the generation's count, signalled by
 * pid, and counted. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/master_procs.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "master/aws_refresh.h"
#include "master/entra_refresh.h"
#include "master/gcp_refresh.h"
#include "master/jwks_refresh.h"
#include "master/cluster.h"
#include "master/health_check.h"
#include "worker/worker.h"

static int
free_slot(struct master *m)
{
	int i;

	for (i = 0; i < KV_WORKER_SLOTS; i++)
		if (m->procs[i].pid == 0 && atomic_load(&m->ledger.workers[i].pid) == 0)
			return i;
	return -1;
}

/* The CPU for a new worker of the current generation (cpu_pin.h). */
static int
pick_cpu(const struct master *m)
{
	int used[KV_MAX_CPU_LIST] = { 0 };
	int i, j;

	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		if (m->procs[i].pid == 0 || m->procs[i].exiting ||
		    m->procs[i].generation != m->generation)
			continue;
		for (j = 0; j < m->cpus.n; j++)
			used[j] += m->cpus.cpu[j] == m->procs[i].cpu;
	}
	return kv_cpu_plan_pick(&m->cpus, used);
}

static int
spawn(struct master *m)
{
	struct kv_worker_slot *ws;
	pid_t pid;
	int slot, cpu;

	if ((slot = free_slot(m)) == -1) {
		kv_log_warnx("KV0110", "no free worker slot (%d in use)", KV_WORKER_SLOTS);
		return -1;
	}
	ws = &m->ledger.workers[slot];
	atomic_store(&ws->state, KV_WORKER_STARTING);
	atomic_store(&ws->generation, m->generation);
	atomic_store(&ws->started, (int64_t)time(NULL));
	atomic_store(&ws->instance, atomic_load(&m->ledger.hdr->instance));
	cpu = pick_cpu(m);
	if ((pid = fork()) == -1) {
		kv_log_warn("KV0111", "fork");
		atomic_store(&ws->state, KV_WORKER_FREE);
		return -1;
	}
	if (pid == 0) {
		close(m->sigpipe[0]);
		close(m->sigpipe[1]);
		kv_cluster_forget(m->cluster);
		kv_health_forget(m->health);
		kv_aws_refresh_forget();
		kv_gcp_refresh_forget();
		kv_entra_refresh_forget();
		kv_jwks_refresh_forget();
		kv_mloop_forget(m->lp);
		kv_worker_main(m->cf, &m->ledger, slot, m->generation, m->lfd);
	}
	atomic_store(&ws->pid, (int32_t)pid);
	kv_cpu_pin(pid, slot, cpu);
	m->procs[slot] = (struct proc){ pid, m->generation, kv_now_ms(), 0, cpu };
	return 0;
}

static int
current_workers(const struct master *m)
{
	int i, n = 0;

	for (i = 0; i < KV_WORKER_SLOTS; i++)
		if (m->procs[i].pid != 0 && !m->procs[i].exiting &&
		    m->procs[i].generation == m->generation)
			n++;
	return n;
}

void
kv_master_top_up(struct master *m)
{
	if (m->stopping || kv_now_ms() < m->respawn_at_ms)
		return;
	while (current_workers(m) < m->wanted)
		if (spawn(m) == -1)
			break;
}

uint64_t
kv_master_live_mask(const struct master *m)
{
	uint64_t mask = 0;
	int i;

	for (i = 0; i < KV_WORKER_SLOTS; i++)
		if (m->procs[i].pid != 0)
			mask |= UINT64_C(1) << i;
	return mask;
}

void
kv_master_signal_workers(struct master *m, int sig, int old_only)
{
	int i;

	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		struct proc *p = &m->procs[i];
		if (p->pid == 0 || (old_only && p->generation == m->generation))
			continue;
		p->exiting = 1;
		/* By pid, never a process group: the master must not signal itself. */
		if (kill(p->pid, sig) == -1 && errno != ESRCH)
			kv_log_warn("KV0114", "kill %d", (int)p->pid);
	}
}

void
kv_master_forward_reopen(struct master *m)
{
	int i;

	for (i = 0; i < KV_WORKER_SLOTS; i++)
		if (m->procs[i].pid != 0 && kill(m->procs[i].pid, SIGUSR1) == -1 &&
		    errno != ESRCH)
			kv_log_warn("KV0803", "kill %d", (int)m->procs[i].pid);
}

int
kv_master_live_procs(const struct master *m)
{
	int i, n = 0;

	for (i = 0; i < KV_WORKER_SLOTS; i++)
		n += m->procs[i].pid != 0;
	return n;
}

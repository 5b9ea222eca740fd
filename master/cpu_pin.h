/* Where the workers run: [server] worker_cpu_affinity.
 *
 * Two workers left to the scheduler on a busy 2-CPU host were measured
 * (bench scenario 7) to end up on one CPU for stretches of ~100 ms, taking
 * turns of ~4 ms: each worker's connections then wait a turn, and the
 * latency p99 went from 1.4 ms to 4.6 ms. One CPU per worker, as nginx's
 * worker_cpu_affinity auto and HAProxy's cpu-map do, keeps them apart.
 *
 * auto pins within the CPUs the master may use (sched_getaffinity: a
 * cpuset, systemd's CPUAffinity=, taskset), and only when there is a
 * worker for each of them: with fewer, kilovoltd does not own the CPUs,
 * and two containers of 2 workers on a 16-CPU host would both be pinned to
 * CPUs 0 and 1. Nor under a CPU quota (cgroup cpu.max, cpu.cfs_quota_us):
 * such a container shares its host's CPUs with others' work, and the
 * kernel is better placed to run its workers wherever a CPU is idle. */
#ifndef KV_CPU_PIN_H
#define KV_CPU_PIN_H

#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"

struct kv_cpu_plan {
	int	n;			/* CPUs in cpu[]; 0: workers not pinned */
	int16_t	cpu[KV_MAX_CPU_LIST];
	char	said[256];		/* what was last logged about it */
};

/* Make PLAN from CF's worker_cpu_affinity and this process's allowed CPUs
 * and cgroup; log what it is when it is not what PLAN said before (at
 * start, and at a reload that changes it). */
void	kv_cpu_plan_make(struct kv_cpu_plan *plan, const struct kv_config *cf);

/* The CPU a new worker takes: of PLAN's, the one the fewest live workers of
 * its generation hold (USED[i] of them hold PLAN's cpu[i]), the first of
 * those on a tie. -1 when the plan pins nothing. */
int	kv_cpu_plan_pick(const struct kv_cpu_plan *plan, const int *used);

/* From the master, right after the fork: worker SLOT, process PID, runs on
 * CPU only (-1: leave it). The worker is single-threaded, so pinning its
 * one thread pins all it will ever run. Logged on failure (a seccomp
 * filter without sched_setaffinity, say); the worker serves unpinned. */
void	kv_cpu_pin(pid_t pid, int slot, int cpu);

#endif

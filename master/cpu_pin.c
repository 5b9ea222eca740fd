/* Workers on CPUs: the plan, the pick, the pin; see cpu_pin.h. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/cpu_pin.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

/* The first line of FILE into BUF, without its newline; -1 if unreadable. */
static int
read_line(const char *file, char *buf, size_t size)
{
	FILE *f = fopen(file, "re");
	int rc = -1;

	if (f == NULL)
		return -1;
	if (fgets(buf, (int)size, f) != NULL) {
		buf[strcspn(buf, "\n")] = '\0';
		rc = 0;
	}
	(void)fclose(f);	/* read only: nothing a close can lose */
	return rc;
}

/* Whether a quota is set in FILE of cgroup PATH, under the hierarchy
 * mounted at ROOT, or of a parent of it (cpu.max reads "max PERIOD" and
 * cpu.cfs_quota_us -1 when none is). What was read goes to WHAT. */
static int
quota_along(const char *root, const char *path, const char *file, char *what,
    size_t size)
{
	char dir[4096], name[4200], line[64];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	for (;;) {
		snprintf(name, sizeof(name), "%s%s/%s", root, strcmp(dir, "/") == 0 ? "" : dir,
		    file);
		if (read_line(name, line, sizeof(line)) == 0 && strncmp(line, "max", 3) != 0 &&
		    strcmp(line, "-1") != 0) {
			snprintf(what, size, "%s is %s", name, line);
			return 1;
		}
		if (strcmp(dir, "/") == 0 || (slash = strrchr(dir, '/')) == NULL)
			return 0;
		slash[slash == dir] = '\0';	/* "/a" goes to "/" */
	}
}

/* Whether the comma-separated controller list CTL names "cpu". */
static int
names_cpu(const char *ctl)
{
	size_t n;

	for (; *ctl != '\0'; ctl += n + (ctl[n] == ',')) {
		n = strcspn(ctl, ",");
		if (n == 3 && strncmp(ctl, "cpu", 3) == 0)
			return 1;
	}
	return 0;
}

/* Whether a cgroup of this process limits its CPU time: v2's cpu.max, or
 * v1's cpu controller (mounted alone or with cpuacct). */
static int
cpu_quota(char *what, size_t size)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[4200], *ctl, *path;
	int found = 0;

	if (f == NULL)
		return 0;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((ctl = strchr(line, ':')) == NULL || (path = strchr(++ctl, ':')) == NULL)
			continue;
		*path++ = '\0';
		if (ctl[0] == '\0')
			found = quota_along("/sys/fs/cgroup", path, "cpu.max", what, size);
		else if (names_cpu(ctl))
			found = quota_along("/sys/fs/cgroup/cpu", path, "cpu.cfs_quota_us",
			    what, size) || quota_along("/sys/fs/cgroup/cpu,cpuacct", path,
			    "cpu.cfs_quota_us", what, size);
	}
	(void)fclose(f);	/* read only: nothing a close can lose */
	return found;
}

/* PLAN from CF, with WHY saying what it is. */
static void
plan_fill(struct kv_cpu_plan *plan, const struct kv_config *cf, char *why, size_t size)
{
	char quota[4400];
	cpu_set_t allowed;
	int i, cpu;

	plan->n = 0;
	if (cf->cpu_affinity == KV_CPUS_NONE) {
		snprintf(why, size, "workers not pinned to CPUs (worker_cpu_affinity = none)");
		return;
	}
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == -1) {
		kv_log_warn("KV0132", "sched_getaffinity: workers not pinned to CPUs");
		snprintf(why, size, "workers not pinned to CPUs");
		return;
	}
	if (cf->cpu_affinity == KV_CPUS_LIST) {
		for (i = 0; i < cf->ncpus; i++) {
			if (!CPU_ISSET(cf->cpus[i], &allowed)) {
				kv_log_warnx("KV0133", "worker_cpu_affinity: CPU %d is not one "
				    "kilovoltd may run on (see taskset -p %d); workers not pinned",
				    cf->cpus[i], (int)getpid());
				snprintf(why, size, "workers not pinned to CPUs");
				plan->n = 0;
				return;
			}
			plan->cpu[plan->n++] = cf->cpus[i];
		}
	} else {
		if (cpu_quota(quota, sizeof(quota))) {
			snprintf(why, size, "workers not pinned to CPUs: a CPU quota is set "
			    "(%.160s) (worker_cpu_affinity = auto)", quota);
			return;
		}
		if (CPU_COUNT(&allowed) < 2) {
			snprintf(why, size, "workers not pinned to CPUs: one CPU to run on "
			    "(worker_cpu_affinity = auto)");
			return;
		}
		if (CPU_COUNT(&allowed) > cf->workers) {
			snprintf(why, size, "workers not pinned to CPUs: %d for %d CPUs "
			    "(worker_cpu_affinity = auto pins when every CPU has one)",
			    cf->workers, CPU_COUNT(&allowed));
			return;
		}
		for (cpu = 0; cpu < CPU_SETSIZE && plan->n < KV_MAX_CPU_LIST; cpu++)
			if (CPU_ISSET(cpu, &allowed))
				plan->cpu[plan->n++] = (int16_t)cpu;
	}
	i = snprintf(why, size, "workers pinned to CPUs");
	for (cpu = 0; cpu < plan->n && i > 0 && (size_t)i < size; cpu++)
		i += snprintf(why + i, size - (size_t)i, " %d", plan->cpu[cpu]);
	if (i > 0 && (size_t)i < size)
		snprintf(why + i, size - (size_t)i, " (worker_cpu_affinity = %s)",
		    cf->cpu_affinity == KV_CPUS_AUTO ? "auto" : "listed");
}

void
kv_cpu_plan_make(struct kv_cpu_plan *plan, const struct kv_config *cf)
{
	char why[sizeof(plan->said)];

	plan_fill(plan, cf, why, sizeof(why));
	if (strcmp(why, plan->said) == 0)
		return;
	snprintf(plan->said, sizeof(plan->said), "%s", why);
	kv_log_info("%s", why);
}

int
kv_cpu_plan_pick(const struct kv_cpu_plan *plan, const int *used)
{
	int i, best = 0;

	if (plan->n == 0)
		return -1;
	for (i = 1; i < plan->n; i++)
		if (used[i] < used[best])
			best = i;
	return plan->cpu[best];
}

void
kv_cpu_pin(pid_t pid, int slot, int cpu)
{
	cpu_set_t one;

	if (cpu < 0)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(pid, sizeof(one), &one) == -1)
		kv_log_warn("KV0134", "sched_setaffinity of worker %d (pid %d) to CPU %d: "
		    "it runs unpinned", slot, (int)pid, cpu);
}

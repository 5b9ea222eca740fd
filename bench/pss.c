/* pss: the benchmark's memory and CPU sampler for one process tree.
 *
 * Every -i milliseconds (100) it sums Pss from /proc/P/smaps_rollup over
 * PID and all its descendants (a proxy's master and workers). PSS splits
 * the pages the processes share (the binary, copy-on-write heap after
 * fork, kilovolt's ledger mapping) among them, so the sum is what the tree
 * costs the machine, where an RSS sum would count shared pages per process.
 *
 * CPU seconds are utime + stime of every process in the tree, plus the
 * root's cutime + cstime (children it has already reaped), in clock ticks.
 * Context switches, voluntary (the thread slept: epoll_wait with nothing
 * to do) and involuntary (the scheduler took the CPU away), are summed over
 * every thread of every process in the tree (/proc/P/task/T/status); those
 * of threads that exited between two samples are lost.
 *
 * The caller marks the moment load begins with SIGUSR1: the sample taken
 * then is "idle" and the CPU count restarts from it. SIGTERM or SIGINT
 * takes a last sample ("end") and prints one JSON line:
 *   {"pid":P,"samples":N,"idle_kb":..,"peak_kb":..,"end_kb":..,
 *    "cpu_s":..,"vcsw":..,"ivcsw":..,"procs":..,"alive":true|false}
 * peak_kb is the largest sample from the mark on (from the start without a
 * mark); procs the most processes seen in the tree. The sampler also stops,
 * and reports, when PID is gone (alive false) or after -m seconds (600).
 *
 * Usage: pss [-i MS] [-m SECS] PID
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS	4096
#define FILE_BUF	8192

struct proc {
	pid_t	pid;
	pid_t	ppid;
};

struct sample {
	long long	pss_kb;
	long long	cpu_ticks;
	long long	vcsw;		/* voluntary context switches */
	long long	ivcsw;		/* involuntary */
	int		procs;
};

struct sampler {
	pid_t		root;
	struct proc	all[MAX_PROCS];
	int		nall;
	long		samples;
	int		marked;
	long long	idle_kb;
	long long	peak_kb;
	long long	cpu0;
	long long	vcsw0, ivcsw0;
	int		max_procs;
};

static volatile sig_atomic_t got_mark, got_stop;

static void
on_signal(int sig)
{
	if (sig == SIGUSR1)
		got_mark = 1;
	else
		got_stop = 1;
}

/* Read a small /proc file into buf (NUL-terminated); -1 when it is gone. */
static int
read_small(const char *path, char *buf, size_t cap)
{
	ssize_t n;
	size_t off = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1)
		return -1;
	while (off < cap - 1 && (n = read(fd, buf + off, cap - 1 - off)) > 0)
		off += (size_t)n;
	close(fd);
	buf[off] = '\0';
	return off > 0 ? 0 : -1;
}

/* Fields of /proc/PID/stat after the command name (which may hold spaces
 * and parentheses, so parsing starts after the last ')'): ppid, and the
 * CPU ticks (utime+stime, plus cutime+cstime when with_children). */
static int
read_stat(pid_t pid, pid_t *ppid, long long *ticks, int with_children)
{
	char path[64], buf[1024], *p;
	long long ut, st, cut, cst;
	int pp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_small(path, buf, sizeof(buf)) == -1 || (p = strrchr(buf, ')')) == NULL)
		return -1;
	if (sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld %lld %lld",
	    &pp, &ut, &st, &cut, &cst) != 5)
		return -1;
	*ppid = pp;
	*ticks = ut + st + (with_children ? cut + cst : 0);
	return 0;
}

static long long
read_pss(pid_t pid)
{
	char path[64], buf[FILE_BUF], *p;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if (read_small(path, buf, sizeof(buf)) == -1 || (p = strstr(buf, "\nPss:")) == NULL)
		return 0;	/* gone between the scan and now: it costs nothing */
	return strtoll(p + 5, NULL, 10);
}

/* Add the context switches of every thread of PID to out. */
static void
read_switches(pid_t pid, struct sample *out)
{
	char path[320], buf[FILE_BUF], *p;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return;	/* gone: its switches are lost */
	while ((e = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, e->d_name);
		if (read_small(path, buf, sizeof(buf)) == -1)
			continue;
		if ((p = strstr(buf, "\nvoluntary_ctxt_switches:")) != NULL)
			out->vcsw += strtoll(p + 26, NULL, 10);
		if ((p = strstr(buf, "\nnonvoluntary_ctxt_switches:")) != NULL)
			out->ivcsw += strtoll(p + 29, NULL, 10);
	}
	closedir(d);
}

/* Every process's parent, from one scan of /proc. */
static int
scan_procs(struct sampler *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long long ticks;
	pid_t ppid;

	if (d == NULL)
		return -1;
	s->nall = 0;
	while ((e = readdir(d)) != NULL && s->nall < MAX_PROCS) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		s->all[s->nall].pid = (pid_t)atoi(e->d_name);
		if (read_stat(s->all[s->nall].pid, &ppid, &ticks, 0) == -1)
			continue;
		s->all[s->nall++].ppid = ppid;
	}
	closedir(d);
	return 0;
}

/* Sum PSS and CPU over the root and its descendants (breadth first over
 * the scan; a tree is far smaller than MAX_PROCS). */
static int
take_sample(struct sampler *s, struct sample *out)
{
	pid_t tree[MAX_PROCS], ppid;
	int n = 1, i, j;
	long long ticks;

	memset(out, 0, sizeof(*out));
	if (read_stat(s->root, &ppid, &ticks, 1) == -1 || scan_procs(s) == -1)
		return -1;
	out->cpu_ticks = ticks;
	tree[0] = s->root;
	for (i = 0; i < n; i++)
		for (j = 0; j < s->nall && n < MAX_PROCS; j++)
			if (s->all[j].ppid == tree[i])
				tree[n++] = s->all[j].pid;
	for (i = 0; i < n; i++) {
		out->pss_kb += read_pss(tree[i]);
		read_switches(tree[i], out);
		if (i > 0 && read_stat(tree[i], &ppid, &ticks, 0) == 0)
			out->cpu_ticks += ticks;
	}
	out->procs = n;
	return 0;
}

static void
record(struct sampler *s, const struct sample *x)
{
	s->samples++;
	if (x->pss_kb > s->peak_kb)
		s->peak_kb = x->pss_kb;
	if (x->procs > s->max_procs)
		s->max_procs = x->procs;
}

static void
mark(struct sampler *s, const struct sample *x)
{
	s->marked = 1;
	s->idle_kb = x->pss_kb;
	s->peak_kb = x->pss_kb;
	s->cpu0 = x->cpu_ticks;
	s->vcsw0 = x->vcsw;
	s->ivcsw0 = x->ivcsw;
}

static void
print_report(const struct sampler *s, const struct sample *last, int alive)
{
	long hz = sysconf(_SC_CLK_TCK);

	printf("{\"pid\":%d,\"samples\":%ld,\"idle_kb\":%lld,\"peak_kb\":%lld,"
	    "\"end_kb\":%lld,\"cpu_s\":%.2f,\"vcsw\":%lld,\"ivcsw\":%lld,\"procs\":%d,"
	    "\"alive\":%s}\n",
	    (int)s->root, s->samples, s->idle_kb, s->peak_kb, last->pss_kb,
	    (double)(last->cpu_ticks - s->cpu0) / (double)(hz > 0 ? hz : 100),
	    last->vcsw - s->vcsw0, last->ivcsw - s->ivcsw0, s->max_procs,
	    alive ? "true" : "false");
	fflush(stdout);
}

static void
setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) == -1 || sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1) {
		perror("pss: sigaction");
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	static struct sampler s;
	struct sample x, last;
	struct timespec tick;
	long ms = 100, max_s = 600, i, rounds;
	int ch;

	while ((ch = getopt(argc, argv, "i:m:")) != -1) {
		if (ch == 'i')
			ms = atol(optarg);
		else if (ch == 'm')
			max_s = atol(optarg);
		else
			goto usage;
	}
	if (optind != argc - 1 || ms < 1 || max_s < 1 || (s.root = atoi(argv[optind])) <= 0)
		goto usage;
	setup_signals();
	if (take_sample(&s, &last) == -1) {
		fprintf(stderr, "pss: no process %d\n", (int)s.root);
		return 1;
	}
	record(&s, &last);
	s.cpu0 = last.cpu_ticks;
	s.vcsw0 = last.vcsw;
	s.ivcsw0 = last.ivcsw;
	s.idle_kb = last.pss_kb;	/* until a mark says otherwise */
	tick.tv_sec = ms / 1000;
	tick.tv_nsec = ms % 1000 * 1000000;
	rounds = max_s * 1000 / ms;
	for (i = 0; i < rounds && !got_stop; i++) {
		/* A signal cuts the sleep short; the flags are read right after. */
		(void)nanosleep(&tick, NULL);
		if (take_sample(&s, &x) == -1) {
			print_report(&s, &last, 0);
			return 0;
		}
		if (got_mark && !s.marked)
			mark(&s, &x);
		record(&s, &x);
		last = x;
	}
	print_report(&s, &last, 1);
	return 0;
usage:
	fprintf(stderr, "usage: pss [-i MS] [-m SECS] PID\n");
	return 2;
}

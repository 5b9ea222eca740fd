/* The worker's memory guard: 503 with Retry-After for new requests past
 * its share of the memory budget, streams carried on; see memguard.h. */

#include "worker/memguard.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/upstream.h"

#define CG1_ROOT	"/sys/fs/cgroup/memory"
#define CG2_ROOT	"/sys/fs/cgroup"
#define CG1_NO_LIMIT	(1LL << 62)	/* v1 shows "no limit" as a page-rounded LLONG_MAX */

/* The directory of this process's memory cgroup (v1 memory controller
 * first: hybrid hosts list both), and whether it is v2. A container sees
 * its own cgroup at the root of the mount, where the path in
 * /proc/self/cgroup names the host's: fall back to the root. */
static int
has_memory(char *ctrl)
{
	char *tok, *save = NULL;

	for (tok = strtok_r(ctrl, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
		if (strcmp(tok, "memory") == 0)
			return 1;
	return 0;
}

static int
cgroup_dir(char *dir, size_t len, int *v2)
{
	char line[4096], *path, *ctrl;
	FILE *f;
	int have = 0;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return -1;
	while (have != 1 && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if ((ctrl = strchr(line, ':')) == NULL || (path = strchr(ctrl + 1, ':')) == NULL)
			continue;
		*path++ = '\0';
		*ctrl++ = '\0';
		if (*ctrl == '\0' && strcmp(line, "0") == 0) {
			*v2 = 1;	/* the unified hierarchy: used if no v1 memory line */
			snprintf(dir, len, "%s%s", CG2_ROOT, path);
			have = 2;
		} else if (has_memory(ctrl)) {
			*v2 = 0;
			snprintf(dir, len, "%s%s", CG1_ROOT, path);
			have = 1;
		}
	}
	fclose(f);
	if (have == 0)
		return -1;
	snprintf(line, sizeof(line), "%s/%s", dir, *v2 ? "memory.current" : "memory.usage_in_bytes");
	if (access(line, R_OK) == 0)
		return 0;
	snprintf(dir, len, "%s", *v2 ? CG2_ROOT : CG1_ROOT);
	snprintf(line, sizeof(line), "%s/%s", dir, *v2 ? "memory.current" : "memory.usage_in_bytes");
	return access(line, R_OK) == 0 ? 0 : -1;
}

/* A number at the start of the file at fd (re-read from offset 0); "max"
 * reads as -1. Returns 0, or -1. */
static int
read_num(int fd, int64_t *out)
{
	char buf[64];
	ssize_t n;

	if ((n = pread(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return -1;
	buf[n] = '\0';
	if (strncmp(buf, "max", 3) == 0) {
		*out = -1;
		return 0;
	}
	errno = 0;
	*out = strtoll(buf, NULL, 10);
	return errno == 0 ? 0 : -1;
}

static int
open_cg_file(const char *dir, const char *name)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

int64_t
kv_memguard_cgroup_limit(void)
{
	char dir[4096] = "";
	int64_t v = 0;
	int fd, v2 = 0;

	if (cgroup_dir(dir, sizeof(dir), &v2) == -1)
		return 0;
	if ((fd = open_cg_file(dir, v2 ? "memory.max" : "memory.limit_in_bytes")) == -1)
		return 0;
	if (read_num(fd, &v) == -1 || v < 0 || v >= CG1_NO_LIMIT)
		v = 0;
	close(fd);
	return v;
}

/* The cgroup's page cache that is not in use (inactive_file) counts in
 * its usage, yet the kernel reclaims it before it kills: subtract it (a
 * container's idle usage is half image files read at start). */
static int64_t
reclaimable(const struct kv_memguard *g)
{
	char buf[8192], *p;
	ssize_t n;

	if (g->stat_fd == -1 || (n = pread(g->stat_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	/* v1: total_inactive_file (hierarchical); v2: inactive_file */
	if ((p = strstr(buf, g->v2 ? "\ninactive_file " : "\ntotal_inactive_file ")) == NULL)
		return 0;
	return strtoll(strchr(p + 1, ' ') + 1, NULL, 10);
}

static int
read_used(struct kv_memguard *g)
{
	int64_t v, pages[3];
	char buf[128];
	ssize_t n;

	if (g->cg) {
		if (read_num(g->usage_fd, &v) == -1)
			return -1;
		g->used = v - reclaimable(g);
		return 0;
	}
	/* /proc/self/statm: size resident shared, in pages */
	if ((n = pread(g->usage_fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf(buf, "%lld %lld %lld", (long long *)&pages[0], (long long *)&pages[1],
	    (long long *)&pages[2]) != 3)
		return -1;
	g->used = (pages[1] - pages[2]) * sysconf(_SC_PAGESIZE) * g->nworkers;
	return 0;
}

/* A TLS stream left on OpenSSL's record layer keeps its SSL object (about
 * 15 KB); one handed off keeps about 240 bytes (tests/t_tls13.sh, bench
 * scenario 5): a worker whose TLS upstreams all hand off starts from the
 * lower figure. */
static int64_t
stream_estimate(const struct kv_upstream_rt *ups, size_t nups)
{
	size_t i;

	for (i = 0; i < nups; i++)
		if (ups[i].cf->tls && ups[i].cf->tls_openssl_records)
			return KV_MEMGUARD_STREAM_EST;
	return KV_MEMGUARD_STREAM_EST_OWN;
}

void
kv_memguard_init(struct kv_memguard *g, const struct kv_config *cf, int nworkers,
    const struct kv_upstream_rt *ups, size_t nups, const size_t *nconns)
{
	char dir[4096] = "";
	int v2 = 0;

	memset(g, 0, sizeof(*g));
	g->usage_fd = -1;
	g->stat_fd = -1;
	g->idle = -1;
	g->nconns = nconns;
	g->nworkers = nworkers > 0 ? nworkers : 1;
	g->ups = ups;
	g->nups = nups;
	g->stream_est = stream_estimate(ups, nups);
	g->limit = cf->memory_limit == -1 ? kv_memguard_cgroup_limit() : cf->memory_limit;
	if (g->limit <= 0) {
		g->limit = 0;
		return;
	}
	g->refuse_at = g->limit / 100 * cf->memory_refuse_pct;
	g->held_max = g->limit / 100 * KV_MEMGUARD_CONN_PCT / g->nworkers;
	if (cgroup_dir(dir, sizeof(dir), &v2) == 0 &&
	    (g->usage_fd = open_cg_file(dir, v2 ? "memory.current" : "memory.usage_in_bytes")) != -1) {
		g->cg = 1;
		g->v2 = v2;
		g->stat_fd = open_cg_file(dir, "memory.stat");
	} else if ((g->usage_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)) == -1) {
		kv_log_warn("KV0652", "memory guard off: /proc/self/statm");
		g->limit = 0;
		return;
	}
	kv_log_info("memory guard: new requests get 503 past %lld kB of %lld kB%s, %s",
	    (long long)(g->refuse_at >> 10), (long long)(g->limit >> 10),
	    cf->memory_limit == -1 ? " (the cgroup's limit)" : "",
	    g->cg ? "measured on the cgroup" : "measured as this worker's memory times the workers");
}

int
kv_memguard_full(struct kv_memguard *g, int64_t now_ms)
{
	int64_t predicted, est;
	int pending, hs;

	if (g->limit == 0)
		return 0;
	if (now_ms - g->read_ms >= KV_MEMGUARD_READ_MS) {
		if (read_used(g) == -1)
			return 0;	/* unreadable for once: never refuse on no data */
		g->read_ms = now_ms;
		g->since_read = 0;
	}
	/* A request's memory comes after its admission: count what is still
	 * to come. An admitted request goes straight to the gate, and one
	 * parked there for a handshake slot may wait seconds; one in the
	 * handshake holds its SSL object and sockets already, about half. A
	 * stream costs what the carried ones cost now, when that is more (a
	 * worker that is behind holds bytes for slow clients). */
	pending = kv_upstreams_pending(g->ups, g->nups, &hs);
	est = g->stream_est;
	if (g->idle < 0)
		g->idle = g->used;
	if (*g->nconns > 16 && (g->used - g->idle) / ((int64_t)*g->nconns * g->nworkers) > est)
		est = (g->used - g->idle) / ((int64_t)*g->nconns * g->nworkers);
	if (est > KV_MEMGUARD_STREAM_MAX)
		est = KV_MEMGUARD_STREAM_MAX;
	/* Requests admitted since the reading are not in it yet (a burst
	 * admits hundreds within one KV_MEMGUARD_READ_MS): count them as
	 * still to come too. Without it the 1,200-stream test peaked within
	 * 1 % of its 24 MiB and was OOM-killed on a slower machine. */
	predicted = g->used + ((int64_t)(pending + g->since_read) * 2 + hs) * g->nworkers * est / 2;
	pending += hs;
	/* Back under by 2 % of the limit before accepting again: no flapping. */
	if (predicted >= g->refuse_at || (g->full && predicted >= g->refuse_at - g->limit / 50)) {
		if (!g->full)
			kv_log_warnx("KV0650", "memory %lld kB (and %d requests still to set up) of "
			    "%lld kB: refusing new requests with 503 until it falls",
			    (long long)(g->used >> 10), pending, (long long)(g->limit >> 10));
		g->full = 1;
		g->refused++;
		return 1;
	}
	if (g->full)
		kv_log_warnx("KV0651", "memory %lld kB of %lld kB: accepting new requests again "
		    "(%llu refused)", (long long)(g->used >> 10), (long long)(g->limit >> 10),
		    (unsigned long long)g->refused);
	g->full = 0;
	g->refused = 0;
	g->since_read++;
	return 0;
}

void
kv_memguard_close(struct kv_memguard *g)
{
	if (g->usage_fd != -1)
		close(g->usage_fd);
	if (g->stat_fd != -1)
		close(g->stat_fd);
	g->usage_fd = g->stat_fd = -1;
	g->limit = 0;
}

int
kv_memguard_full_accept(struct kv_memguard *g, int64_t now_ms)
{
	int r = kv_memguard_full(g, now_ms);

	if (!r && g->limit > 0)
		g->since_read--;	/* a connection is not a request admitted */
	return r;
}

void
kv_memguard_hold(struct kv_memguard *g, int64_t delta)
{
	g->held += delta;
}

int
kv_memguard_conns_over(const struct kv_memguard *g, int64_t more)
{
	return g->held_max > 0 && g->held + more > g->held_max;
}

void
kv_memguard_shed(struct kv_memguard *g, int n, int64_t now_ms)
{
	if (n == 0) {
		if (g->shedding)
			kv_log_warnx("KV0654", "connections' memory %lld kB of %lld kB again: "
			    "%llu unfinished request heads were dropped",
			    (long long)(g->held >> 10), (long long)(g->held_max >> 10),
			    (unsigned long long)g->shed);
		g->shedding = 0;
		g->shed = 0;
		return;
	}
	if (!g->shedding)
		kv_log_warnx("KV0653", "connections hold %lld kB, past their %lld kB share of "
		    "the memory limit: dropping the slowest unfinished request heads",
		    (long long)(g->held >> 10), (long long)(g->held_max >> 10));
	g->shedding = 1;
	g->shed += (uint64_t)n;
	/* free() keeps the heap's pages, and the refusals read the cgroup;
	 * a trim walks the heap: at most every KV_MEMGUARD_READ_MS */
	if (now_ms - g->trim_ms >= KV_MEMGUARD_READ_MS) {
		(void)malloc_trim(0);
		g->trim_ms = now_ms;
	}
}

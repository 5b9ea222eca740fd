/* The worker's memory guard: 503 with Retry-After for new requests past
 * its share of the memory budget, streams carried on; see memguard.h. */

#include "worker/memguard.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "shm/ledger.h"
#include "worker/conn-t.h"
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

/* The kind an upstream's streams are by its config: TLS hands off to the
 * own record layer unless tls_record_layer = openssl (a server that
 * chooses TLS 1.2 or CCM keeps OpenSSL's; the count of carried streams
 * finds that out, count_streams). */
static int
config_kind(const struct kv_upstream *up)
{
	if (!up->tls)
		return KV_COST_PLAIN;
	return up->tls_record_layer == KV_TLS_RECORDS_OPENSSL ? KV_COST_TLS_OPENSSL :
	    KV_COST_TLS_OWN;
}

/* A carried stream's kind: its response is being relayed, so the first
 * read after the handshake -- the hand-off -- is behind it. */
static int
stream_kind(const struct kv_conn *c)
{
	/* kernel TLS (untested, worker/ktls.h) is priced with the own layer */
	if (c->att.uc->s.t13 != NULL || c->att.uc->s.ktls != 0)
		return KV_COST_TLS_OWN;
	return c->att.uc->s.ssl != NULL ? KV_COST_TLS_OPENSSL : KV_COST_PLAIN;
}

/* Count the streams this worker carries, by kind, and set each
 * upstream's cost_kind to the dearest kind it carries (its config's when
 * it carries none). Returns the total. */
static int
count_streams(struct kv_memguard *g, int live[KV_COST_KINDS])
{
	const struct kv_conn *c;
	size_t i;
	int k, n = 0;

	for (k = 0; k < KV_COST_KINDS; k++)
		live[k] = 0;
	for (i = 0; i < g->nups; i++)
		g->ups[i].cost_kind = config_kind(g->ups[i].cf);
	for (c = *g->conns; c != NULL; c = c->next) {
		if (c->closed || (c->state != CS_RELAY && c->state != CS_WS) || c->att.uc == NULL)
			continue;
		k = stream_kind(c);
		live[k]++;
		n++;
		if (c->rt != NULL && k > c->rt->cost_kind)
			c->rt->cost_kind = k;
	}
	return n;
}

/* This worker's part of the cgroup's growth: its share of all workers'
 * connections (the ledger's count), but never less than 1/nworkers --
 * either way the larger, so that a worker carrying fewer streams than its
 * peers overrates its streams rather than underrates them. */
static int64_t
own_growth(const struct kv_memguard *g, int64_t growth)
{
	uint64_t total = g->ledger != NULL ? kv_ledger_sum_connections(g->ledger) : 0;

	if (total > 0 && (uint64_t)*g->nconns * (uint64_t)g->nworkers > total)
		return (int64_t)((double)growth * (double)*g->nconns / (double)total);
	return growth / g->nworkers;
}

/* Say an estimate when it has moved by an eighth since it was last said:
 * a few lines an episode, not one a reading. */
static void
say_cost(struct kv_memguard *g, int k, int n, int64_t growth)
{
	int64_t e = kv_memcost_of(&g->cost, k);

	if (e * 8 >= g->said[k] * 7 && e * 8 <= g->said[k] * 9)
		return;
	kv_log_info("memory guard: a stream over %s adds %lld B (learned from %d more streams, "
	    "%lld kB more)", kv_memcost_name(k), (long long)e, n, (long long)(growth >> 10));
	g->said[k] = e;
}

/* The worker carries more streams than at its last sample: when the rise
 * is large enough, the growth since then divided by it is what one more
 * stream adds. Taken only above the most it carried before, so that the
 * memory streams that ended left in the heap (reused by the next ones,
 * not grown again) cannot make a stream look cheap. A rise from the first
 * streams also holds what the first streams set up once (the worker's
 * record buffer, sessions): that one may lower an estimate, not raise it.
 * The requests counted as still to come hold their connection already,
 * like those the rise was made of: priced at this, they are not counted
 * twice. */
static void
learn_rise(struct kv_memguard *g, const int live[KV_COST_KINDS])
{
	int64_t growth = g->used - g->rise_used, others, mine;
	int d[KV_COST_KINDS], k, i, n = 0;

	for (k = 0; k < KV_COST_KINDS; k++) {
		d[k] = live[k] > g->rise_live[k] ? live[k] - g->rise_live[k] : 0;
		n += d[k];
	}
	if (n < KV_MEMGUARD_RISE || growth <= 0)
		return;
	/* Connections that came in during the rise and carry no stream yet
	 * are in the growth too: take out what each surely holds, its
	 * struct kv_conn (its socket and buffers stay in: the safe side). */
	others = (int64_t)*g->nconns - g->live;
	mine = own_growth(g, growth);
	if (others > g->rise_others)
		mine -= (others - g->rise_others) * (int64_t)sizeof(struct kv_conn);
	k = kv_memcost_learn(&g->cost, mine, d, g->rise_n == 0);
	g->rise_others = others;
	for (i = 0; i < KV_COST_KINDS; i++)
		g->rise_live[i] = live[i];
	if (k != -1)
		say_cost(g, k, d[k], growth);
	g->rise_n = g->live;
	g->rise_used = g->used;
}

/* At most every KV_MEMGUARD_LEARN_MS: count the streams and learn what
 * one more adds. Besides the rise (learn_rise), the whole growth since
 * the idle reading, divided among the carried streams, is at most what
 * one costs (it holds every connection's memory, those still being set
 * up too, what ended streams left, and what the first streams set up
 * once): it may lower an estimate, never raise one. */
static void
learn(struct kv_memguard *g, int64_t now_ms)
{
	int live[KV_COST_KINDS], k;

	if (now_ms - g->learn_ms < KV_MEMGUARD_LEARN_MS)
		return;
	g->learn_ms = now_ms;
	g->live = count_streams(g, live);
	if (g->idle < 0)
		return;
	if ((k = kv_memcost_learn(&g->cost, own_growth(g, g->used - g->idle), live, 1)) != -1)
		say_cost(g, k, live[k], g->used - g->idle);
	if (g->live > g->rise_n)
		learn_rise(g, live);
}

/* What each of a request still to come adds: its upstream's kind's
 * estimate, or what the carried streams cost now if that is more (a
 * worker that is behind holds bytes for slow clients). */
static int64_t
cost_of(const struct kv_memguard *g, int kind)
{
	int64_t est = kv_memcost_of(&g->cost, kind), carried;

	if (*g->nconns > 16) {
		carried = (g->used - g->idle) / ((int64_t)*g->nconns * g->nworkers);
		if (carried > est)
			est = carried > KV_COST_MAX ? KV_COST_MAX : carried;
	}
	return est;
}

/* What a request still to come lacks of a stream of cost EST: it holds
 * its connection already (its state and client socket, in the usage). */
static int64_t
lacks(int64_t est)
{
	return est > CONN_BASE_COST ? est - CONN_BASE_COST : 0;
}

/* The memory the requests still to come will add, in this worker, each
 * priced at what it still lacks: those parked or woken at the gate a
 * whole stream less their connection, those in the handshake half of that
 * (their SSL object and sockets are there already), those admitted since
 * the reading (not in it yet; their upstream is not known here) at the
 * dearest kind of the worker's upstreams. *pending: their number. */
static int64_t
still_to_come(const struct kv_memguard *g, int *pending)
{
	int64_t sum = 0, est, dearest = 0;
	size_t i;
	int n = 0;

	for (i = 0; i < g->nups; i++) {
		const struct kv_upstream_rt *rt = &g->ups[i];

		est = lacks(cost_of(g, rt->cost_kind));
		if (est > dearest)
			dearest = est;
		sum += (int64_t)(rt->nwaiting + rt->granted) * est + (int64_t)rt->handshaking * est / 2;
		n += rt->nwaiting + rt->granted + rt->handshaking;
	}
	if (g->nups == 0)
		dearest = lacks(cost_of(g, KV_COST_PLAIN));
	*pending = n + g->since_read;
	return sum + (int64_t)g->since_read * dearest;
}

/* Publish this worker's requests still to come (MORE) in its ledger
 * slot, for the other workers' guards. Returns what it holds now. */
static uint64_t
publish(const struct kv_memguard *g, int64_t more)
{
	struct kv_worker_slot *self = g->ledger->self;
	uint64_t was = atomic_load_explicit(&self->mem_pending, memory_order_relaxed);

	if (was != (uint64_t)more)
		atomic_store_explicit(&self->mem_pending, (uint64_t)more, memory_order_relaxed);
	return (uint64_t)more;
}

/* This worker's requests still to come (MORE, its own, fresh) and every
 * other worker's, as each last published it in its ledger slot; without
 * a ledger, the others are taken to have as many as this one. */
static int64_t
all_to_come(const struct kv_memguard *g, int64_t more)
{
	uint64_t mine, sum;

	if (g->ledger == NULL || g->ledger->self == NULL)
		return more * g->nworkers;
	mine = publish(g, more);
	sum = kv_ledger_sum_mem_pending(g->ledger);
	return (int64_t)(sum > mine ? sum - mine : 0) + more;
}

void
kv_memguard_init(struct kv_memguard *g, const struct kv_config *cf, int nworkers,
    struct kv_upstream_rt *ups, size_t nups, const size_t *nconns,
    struct kv_conn *const *conns, const struct kv_ledger *ledger)
{
	char dir[4096] = "";
	size_t i;
	int v2 = 0;

	memset(g, 0, sizeof(*g));
	g->usage_fd = -1;
	g->stat_fd = -1;
	g->idle = -1;
	g->rise_used = -1;
	g->nconns = nconns;
	g->conns = conns;
	g->ledger = ledger;
	g->nworkers = nworkers > 0 ? nworkers : 1;
	g->ups = ups;
	g->nups = nups;
	kv_memcost_init(&g->cost);
	for (i = 0; i < KV_COST_KINDS; i++)
		g->said[i] = kv_memcost_start((int)i);
	for (i = 0; i < nups; i++)
		ups[i].cost_kind = config_kind(ups[i].cf);
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

/* "9216 B (TLS (own record layer)), ...": the estimates of the kinds of
 * the upstreams with requests still to come (of all of them when only
 * requests admitted since the reading are), for the refusal's log line. */
static const char *
costs_text(const struct kv_memguard *g)
{
	static char buf[160];
	size_t i, len = 0;
	int k, any = 0, used[KV_COST_KINDS] = { 0 };

	for (i = 0; i < g->nups; i++)
		if (g->ups[i].nwaiting + g->ups[i].granted + g->ups[i].handshaking > 0)
			any = used[g->ups[i].cost_kind] = 1;
	for (i = 0; !any && i < g->nups; i++)	/* only requests since the reading */
		used[g->ups[i].cost_kind] = 1;
	buf[0] = '\0';
	for (k = 0; k < KV_COST_KINDS; k++)
		if (used[k] && len < sizeof(buf))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%lld B (%s)",
			    len ? ", " : "", (long long)cost_of(g, k), kv_memcost_name(k));
	return buf;
}

/* Read the usage if it is older than KV_MEMGUARD_READ_MS, and learn from
 * it. Returns -1 when it could not be read. */
static int
observe(struct kv_memguard *g, int64_t now_ms)
{
	if (now_ms - g->read_ms < KV_MEMGUARD_READ_MS)
		return 0;
	if (read_used(g) == -1)
		return -1;
	g->read_ms = now_ms;
	g->since_read = 0;
	if (g->idle < 0)
		g->idle = g->rise_used = g->used;
	learn(g, now_ms);
	return 0;
}

void
kv_memguard_observe(struct kv_memguard *g, int64_t now_ms)
{
	/* Only while learning can change something: streams carried, and
	 * no more often than a rise can be seen. */
	int pending;

	if (g->limit == 0)
		return;
	if (g->idle >= 0 && now_ms - g->learn_ms >= KV_MEMGUARD_LEARN_MS && *g->nconns > 0)
		(void)observe(g, now_ms);
	/* what the others judge this worker by: fresh once a turn */
	if (g->ledger != NULL && g->ledger->self != NULL)
		(void)publish(g, still_to_come(g, &pending));
}

int
kv_memguard_full(struct kv_memguard *g, int64_t now_ms)
{
	int64_t predicted, more;
	int pending;

	if (g->limit == 0)
		return 0;
	if (observe(g, now_ms) == -1)
		return 0;	/* unreadable for once: never refuse on no data */
	/* A request's memory comes after its admission: count what is still
	 * to come. An admitted request goes straight to the gate, and one
	 * parked there for a handshake slot may wait seconds. Requests
	 * admitted since the reading are not in it yet (a burst admits
	 * hundreds within one KV_MEMGUARD_READ_MS): without them the
	 * 1,200-stream test peaked within 1 % of its 24 MiB and was
	 * OOM-killed on a slower machine. The other workers' are theirs,
	 * from the ledger: judging them by this worker's own count was
	 * wrong both ways when their loads differ. */
	more = all_to_come(g, still_to_come(g, &pending));
	predicted = g->used + more;
	/* Back under by 2 % of the limit before accepting again: no flapping. */
	if (predicted >= g->refuse_at || (g->full && predicted >= g->refuse_at - g->limit / 50)) {
		if (!g->full)
			kv_log_warnx("KV0650", "memory %lld kB (and %d requests still to set up "
			    "here, %lld kB with the other workers') of %lld kB: refusing new "
			    "requests with 503 until it falls (a stream adds %s)", (long long)(g->used >> 10), pending,
			    (long long)(more >> 10), (long long)(g->limit >> 10), costs_text(g));
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
kv_memguard_at_limit(struct kv_memguard *g, int64_t now_ms)
{
	if (g->limit == 0 || observe(g, now_ms) == -1)
		return 0;
	return g->used >= g->refuse_at;
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
			    "%llu connections (silent ones, then unfinished heads) were closed",
			    (long long)(g->held >> 10), (long long)(g->held_max >> 10),
			    (unsigned long long)g->shed);
		g->shedding = 0;
		g->shed = 0;
		return;
	}
	if (!g->shedding)
		kv_log_warnx("KV0653", "connections hold %lld kB, past their %lld kB share of "
		    "the memory limit: closing those that sent nothing (oldest first), then "
		    "the slowest unfinished request heads",
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

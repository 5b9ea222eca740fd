/* The request log: see reqlog.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "worker/reqlog.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/fmt.h"
#include "common/jsonline.h"
#include "common/log.h"

/* Longest part of each client-chosen field kept: even fully escaped (6
 * bytes a byte) they fit in one KV_REQLOG_LINE. */
#define PATH_KEEP	512
#define MODEL_KEEP	128
#define NAME_KEEP	64

static int log_fd = -1;
static char log_path[4096];
static int write_failed;	/* KV0802 logged since the last (re)open */

/* Lines of this loop turn, written by kv_reqlog_flush in one write(2) (one
 * a request was a sixth of a worker's syscalls on small requests). A line
 * is formatted in place, so room for the longest is kept. Pages past the
 * first few are touched only when a turn logs that much. */
#define BATCH_SIZE	(64 * 1024)
static char batch[BATCH_SIZE];
static size_t batch_len;

int
kv_reqlog_open(const char *path)
{
	int fd;

	if (path == NULL || *path == '\0') {
		log_path[0] = '\0';
		return 0;
	}
	snprintf(log_path, sizeof(log_path), "%s", path);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd == -1) {
		kv_log_warn("KV0800", "request_log %s: open", path);
		return -1;
	}
	kv_reqlog_flush();	/* the lines made so far go to the file they were made for */
	if (log_fd != -1 && close(log_fd) == -1)
		kv_log_warn("KV0801", "request_log: close");
	log_fd = fd;
	write_failed = 0;
	return 0;
}

void
kv_reqlog_reopen(void)
{
	char path[sizeof(log_path)];

	/* A copy: kv_reqlog_open writes log_path. */
	memcpy(path, log_path, sizeof(path));
	if (path[0] != '\0')
		(void)kv_reqlog_open(path);
}

int
kv_reqlog_enabled(void)
{
	return log_fd != -1;
}

static void
put_str(char *buf, size_t len, size_t *p, const char *name, const char *v,
    size_t keep)
{
	size_t n = v != NULL ? strlen(v) : 0;

	*p += (size_t)snprintf(buf + *p, len - *p, ",\"%s\":", name);
	if (n == 0) {
		*p += (size_t)snprintf(buf + *p, len - *p, "null");
		return;
	}
	(void)kv_jsonline_string(buf, len, p, v, n < keep ? n : keep);
}

static void
put_int(char *buf, size_t len, size_t *p, const char *name, int64_t v)
{
	*p += (size_t)snprintf(buf + *p, len - *p, ",\"%s\":%" PRId64, name, v);
}

size_t
kv_reqlog_format(const struct kv_reqlog_rec *r, char *buf, size_t len)
{
	time_t secs = (time_t)(r->time_ms / 1000);
	struct tm tm;
	char when[32] = "1970-01-01T00:00:00";
	size_t p;

	if (len < KV_REQLOG_LINE)
		return 0;
	if (gmtime_r(&secs, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	p = (size_t)snprintf(buf, len, "{\"time\":\"%s.%03dZ\",\"request_id\":\"%s\"",
	    when, (int)(r->time_ms % 1000), r->request_id);
	put_str(buf, len, &p, "key_id", r->key_id, NAME_KEEP);
	put_str(buf, len, &p, "label", r->label, NAME_KEEP);
	put_str(buf, len, &p, "method", r->method, NAME_KEEP);
	put_str(buf, len, &p, "path", r->path, PATH_KEEP);
	put_str(buf, len, &p, "model", r->model, MODEL_KEEP);
	put_str(buf, len, &p, "upstream", r->upstream, NAME_KEEP);
	put_int(buf, len, &p, "status", r->status);
	put_int(buf, len, &p, "input_tokens", r->input_tokens);
	put_int(buf, len, &p, "output_tokens", r->output_tokens);
	put_int(buf, len, &p, "cached_input_tokens", r->cached_input_tokens);
	put_int(buf, len, &p, "cost_nusd", r->cost_nusd);
	p += (size_t)snprintf(buf + p, len - p, ",\"estimated\":%s,\"cut\":%s",
	    r->estimated ? "true" : "false", r->cut ? "true" : "false");
	if (r->price_default)
		p += (size_t)snprintf(buf + p, len - p, ",\"price_default\":true");
	if (r->ttfb_ms >= 0)
		put_int(buf, len, &p, "ttfb_ms", r->ttfb_ms);
	else
		p += (size_t)snprintf(buf + p, len - p, ",\"ttfb_ms\":null");
	put_int(buf, len, &p, "duration_ms", r->duration_ms);
	put_int(buf, len, &p, "bytes_in", (int64_t)r->bytes_in);
	put_int(buf, len, &p, "bytes_out", (int64_t)r->bytes_out);
	p += (size_t)snprintf(buf + p, len - p, "}\n");
	return p;
}

void
kv_reqlog_flush(void)
{
	size_t n = batch_len;
	ssize_t w;

	if (n == 0)
		return;
	batch_len = 0;
	if (log_fd == -1)
		return;
	/* One write on O_APPEND: the lines land whole, after every other
	 * worker's. A short write (disk full) is not retried: the rest would
	 * land after someone else's line. */
	w = write(log_fd, batch, n);
	if (w == (ssize_t)n)
		return;
	if (!write_failed) {
		if (w == -1)
			kv_log_warn("KV0802", "request_log %s: write", log_path);
		else
			kv_log_warnx("KV0802", "request_log %s: short write (%zd of %zu bytes)",
			    log_path, w, n);
	}
	write_failed = 1;
}

void
kv_reqlog_write(const struct kv_reqlog_rec *r)
{
	if (log_fd == -1)
		return;
	if (BATCH_SIZE - batch_len < KV_REQLOG_LINE)
		kv_reqlog_flush();
	batch_len += kv_reqlog_format(r, batch + batch_len, BATCH_SIZE - batch_len);
}

static uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A fork copies the state: the child must seed its own. pthread_atfork
 * says so once, where a getpid(2) per request used to (strace: one of the
 * worker's eight syscalls a request). */
static int reqid_seeded;

static void
reqid_forked(void)
{
	reqid_seeded = 0;
}

void
kv_reqlog_new_id(char out[KV_REQID_LEN + 1])
{
	static uint64_t state;
	static int hooked;
	uint64_t v;

	/* Seeded in each process: ids of two workers must not repeat each other. */
	if (!reqid_seeded) {
		if (!hooked && pthread_atfork(NULL, NULL, reqid_forked) == 0)
			hooked = 1;
		if (getrandom(&state, sizeof(state), GRND_NONBLOCK) != sizeof(state))
			state = (uint64_t)time(NULL) << 20 ^ (uint64_t)getpid();
		/* without the hook, every call reseeds: slower, never repeated */
		reqid_seeded = hooked;
	}
	v = splitmix64(&state);
	/* the last digit v's lowest nibble: "%016llx" (two digits a load) */
	_Static_assert(KV_REQID_LEN == 16, "a request id is one 64-bit value in hex");
	kv_fmt_hex64(out, v);
	out[KV_REQID_LEN] = '\0';
}

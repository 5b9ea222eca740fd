/* The JWKS fetch and its cache beside the ledger: see jwks_refresh.h. The
 * helper does the fetch, the check and the write, and answers with what it
 * found; the master only logs and arms the next time. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/jwks_refresh.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/jwks.h"
#include "common/log.h"
#include "master/helper_proc.h"
#include "master/http_fetch.h"

#define REFRESH_S	900	/* a provider rotates its keys in days */
#define RETRY_MAX_S	300
#define HELPER_MAX_S	30
#define FETCH_MS	10000

struct answer {
	int	 ok;
	int	 nkeys;
	int	 skipped;
	char	 err[512];
};

static struct {
	struct kv_mloop		*lp;
	const struct kv_config	*cf;		/* the config seen last */
	char			 url[sizeof(((struct kv_auth_jwt *)0)->jwks_url)];
	char			 path[4200];
	struct kv_mloop_timer	 timer;
	struct kv_helper	 helper;
	struct answer		 ans;
	struct kv_backoff	 bo;
	int			 retry_s;
	int			 again;		/* the URL changed during a fetch */
} J;

int
kv_jwks_cache_path(const struct kv_config *cf, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s.jwks", cf->ledger);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* BUF[0..LEN) into PATH, whole or not at all: a temporary file, synced,
 * renamed over it. */
static int
write_cache(const char *path, const char *buf, size_t len, char *err, size_t errlen)
{
	char tmp[4300];
	ssize_t n;
	size_t off = 0;
	int fd, ok;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1) {
		snprintf(err, errlen, "%.400s: %s", tmp, strerror(errno));
		return -1;
	}
	while (off < len && ((n = write(fd, buf + off, len - off)) > 0 || errno == EINTR))
		off += n > 0 ? (size_t)n : 0;
	ok = off == len && fsync(fd) == 0;
	if (close(fd) == -1 || !ok || rename(tmp, path) == -1) {
		snprintf(err, errlen, "%.400s: %s", tmp, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	return 0;
}

/* In the helper: GET the set, read it as the verifier will, keep it. */
static void
fetch(void *arg, void *ansp, size_t size)
{
	struct answer *a = ansp;
	struct kv_fetch_url u;
	struct kv_fetch_req r = { &u, "GET", NULL, "Accept: application/json\r\n", NULL, 0,
		NULL, FETCH_MS };
	struct kv_jwks ks;
	size_t cap = KV_JWKS_MAX_BYTES + 16384, blen;
	const char *body;
	char *buf = malloc(cap);
	int st;

	(void)arg;
	(void)size;
	if (buf == NULL || kv_fetch_parse_url(J.url, &u) == -1) {
		snprintf(a->err, sizeof(a->err), "%s", buf ? "not a URL it can fetch" : "no memory");
		return;
	}
	st = kv_fetch(&r, buf, cap, &body, &blen, a->err, sizeof(a->err));
	if (st != -1 && st != 200)
		snprintf(a->err, sizeof(a->err), "HTTP status %d", st);
	if (st == 200 && kv_jwks_parse(&ks, body, blen, a->err, sizeof(a->err)) == 0) {
		a->nkeys = (int)ks.nkeys;
		a->skipped = (int)ks.skipped;
		kv_jwks_free(&ks);
		if (a->nkeys == 0)
			snprintf(a->err, sizeof(a->err), "no RS256, ES256 or EdDSA signing key");
		else
			a->ok = write_cache(J.path, body, blen, a->err, sizeof(a->err)) == 0;
	}
	free(buf);
}

static void
done(void *arg, int whole, const char *why)
{
	int64_t now = (int64_t)time(NULL);
	char more[96];

	(void)arg;
	if (J.again) {	/* the answer is of the URL before a reload */
		J.again = 0;
		J.retry_s = 0;
		kv_mloop_timer_at(J.lp, &J.timer, kv_now_ms());
		return;
	}
	if (whole && J.ans.ok) {
		kv_log_info("jwks: %d keys from %s (%d of other kinds skipped), kept in %s; "
		    "fetched again in %d s%s", J.ans.nkeys, J.url, J.ans.skipped, J.path,
		    REFRESH_S, kv_backoff_ok(&J.bo) ? " (after failed tries)" : "");
		J.retry_s = 0;
		kv_mloop_timer_at(J.lp, &J.timer, kv_now_ms() + (int64_t)REFRESH_S * 1000);
		return;
	}
	J.retry_s = J.retry_s == 0 ? 1 : J.retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : J.retry_s * 2;
	if (kv_backoff_fail(&J.bo, now)) {
		kv_backoff_describe(&J.bo, now, more, sizeof(more));
		kv_log_warnx("KV0960", "jwks: fetching %s failed: %s; the keys kept are used, "
		    "trying again in %d s%s", J.url, whole ? J.ans.err : why, J.retry_s, more);
	}
	kv_mloop_timer_at(J.lp, &J.timer, kv_now_ms() + (int64_t)J.retry_s * 1000);
}

static void
run(void *arg)
{
	(void)arg;
	if (J.url[0] != '\0')
		(void)kv_helper_start(&J.helper);
}

/* What the cache holds now, said once at start. */
static void
note_cache(void)
{
	struct kv_jwks ks;
	char err[512];

	if (access(J.path, F_OK) == -1)
		return;
	if (kv_jwks_load(&ks, J.path, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0961", "jwks: the cached set is not usable (fetched anew): %s",
		    err);
		return;
	}
	kv_log_info("jwks: %zu keys in the cache %s, until the fetch of %s", ks.nkeys, J.path,
	    J.url);
	kv_jwks_free(&ks);
}

/* Note CF's jwks_url; 1 when it changed. */
static int
note_config(const struct kv_config *cf)
{
	const char *url = cf->auth_jwt.enabled ? cf->auth_jwt.jwks_url : "";
	int changed = strcmp(url, J.url) != 0;

	J.cf = cf;
	snprintf(J.url, sizeof(J.url), "%s", url);
	if (kv_jwks_cache_path(cf, J.path, sizeof(J.path)) == -1)
		J.url[0] = '\0';
	return changed;
}

void
kv_jwks_refresh_start(struct kv_mloop *lp, const struct kv_config *cf, const struct kv_ledger *l)
{
	J.lp = lp;
	kv_mloop_timer_init(&J.timer, run, NULL);
	kv_helper_init(&J.helper, lp, l, &J.ans, sizeof(J.ans), HELPER_MAX_S, fetch, done, NULL);
	note_config(cf);
	if (J.url[0] == '\0')
		return;
	note_cache();
	run(NULL);
}

void
kv_jwks_refresh_config(const struct kv_config *cf)
{
	if (J.lp == NULL || cf == J.cf || !note_config(cf))
		return;
	kv_mloop_timer_stop(J.lp, &J.timer);
	J.retry_s = 0;
	J.again = kv_helper_running(&J.helper);
	run(NULL);
}

void
kv_jwks_refresh_forget(void)
{
	kv_helper_forget(&J.helper);
}

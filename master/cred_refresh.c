/* An expiring upstream credential, refreshed by the master: see
 * cred_refresh.h. A helper process rather than non-blocking I/O in the
 * master's loop: a fetch is a few HTTP exchanges, once an hour at most,
 * and a forked child with one deadline each does them in a screen of code
 * where a state machine in the loop would take several; the loop only
 * watches the pipe the answer comes back on. The secret crosses the pipe,
 * never a file. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/cred_refresh.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "common/clock.h"
#include "common/log.h"

#define EARLY_S		300	/* refresh this long before expiry */
#define SOON_S		5	/* at the earliest, after a fetch */
#define RETRY_MAX_S	60	/* the longest wait between failed tries */
#define HELPER_MAX_S	30	/* a helper is killed (alarm) after this */

/* What a helper writes on its pipe: this, then the credentials, which
 * must start aligned for any type (their int64_t expiry: UBSan caught
 * them at offset 516). */
struct answer {
	_Alignas(max_align_t) int	ok;
	char				err[512];
};

#define CREDS(a)	((char *)(a) + sizeof(struct answer))

void
kv_credref_publish(struct kv_credref *r, const void *creds)
{
	int64_t now = (int64_t)time(NULL), wait, exp = r->ops->expires(creds);
	uint64_t failed = kv_backoff_ok(&r->bo);

	r->ops->publish(creds);
	r->retry_s = 0;
	if (exp == 0) {
		kv_log_info("%s from %s (no expiry)", r->ops->what, r->ops->source(creds));
		return;
	}
	wait = exp - EARLY_S - now;
	if (wait < SOON_S)	/* short-lived: half their life, at least SOON_S */
		wait = (exp - now) / 2 > SOON_S ? (exp - now) / 2 : SOON_S;
	kv_log_info("%s from %s, expiring in %lld s, refreshed in %lld s%s", r->ops->what,
	    r->ops->source(creds), (long long)(exp - now), (long long)wait,
	    failed ? " (after failed tries)" : "");
	kv_mloop_timer_at(r->lp, &r->timer, kv_now_ms() + wait * 1000);
}

static void
failed(struct kv_credref *r, const char *why)
{
	char more[96];
	int64_t now = (int64_t)time(NULL);

	r->retry_s = r->retry_s == 0 ? 1 : r->retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S :
	    r->retry_s * 2;
	if (kv_backoff_fail(&r->bo, now)) {
		kv_backoff_describe(&r->bo, now, more, sizeof(more));
		r->ops->log_failed(why, r->retry_s, more);
	}
	kv_mloop_timer_at(r->lp, &r->timer, kv_now_ms() + (int64_t)r->retry_s * 1000);
}

/* In the helper process: the fetch, its answer into ANS. */
static void
fetch(void *arg, void *ans, size_t size)
{
	struct kv_credref *r = arg;
	struct answer *a = ans;

	(void)size;
	a->ok = r->ops->fetch(CREDS(a), a->err, sizeof(a->err)) == 0;
}

/* In the master: the helper's answer, whole or not. */
static void
fetched(void *arg, int whole, const char *why)
{
	struct kv_credref *r = arg;
	struct answer *a = r->ans;

	if (!whole)
		failed(r, why);
	else if (!a->ok)
		failed(r, a->err);
	else
		kv_credref_publish(r, CREDS(a));
	OPENSSL_cleanse(r->ans, sizeof(*a) + r->ops->size);
}

static void
on_timer(void *arg)
{
	kv_credref_run(arg);
}

int
kv_credref_init(struct kv_credref *r, const struct kv_credref_ops *ops,
    struct kv_mloop *lp, const struct kv_ledger *l)
{
	memset(r, 0, sizeof(*r));
	r->ops = ops;
	r->lp = lp;
	r->helper.fd = -1;
	if ((r->ans = calloc(1, sizeof(struct answer) + ops->size)) == NULL)
		return -1;
	kv_mloop_timer_init(&r->timer, on_timer, r);
	kv_helper_init(&r->helper, lp, l, r->ans, sizeof(struct answer) + ops->size,
	    HELPER_MAX_S, fetch, fetched, r);
	return 0;
}

void
kv_credref_run(struct kv_credref *r)
{
	if (r->needed && r->ops != NULL)
		(void)kv_helper_start(&r->helper);	/* a failure to start is handed to fetched */
}

void
kv_credref_forget(struct kv_credref *r)
{
	kv_helper_forget(&r->helper);
}

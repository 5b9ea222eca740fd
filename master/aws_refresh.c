/* The master's AWS credential refresh: see aws_refresh.h. A helper process
 * rather than non-blocking I/O in the master's loop: the chain is up to
 * four HTTP exchanges (IMDS's token, role and credentials; or STS over
 * TLS), once an hour at most, and a forked child with one deadline each
 * does them in a screen of code where a state machine in the loop would
 * take four; the loop only watches the pipe the answer comes back on
 * (master/helper_proc.c). The secret crosses the pipe, never a file. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/aws_refresh.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/aws_creds.h"
#include "common/backoff.h"
#include "common/clock.h"
#include "common/log.h"
#include "master/aws_chain.h"
#include "master/helper_proc.h"

#define EARLY_S		300	/* refresh this long before expiry */
#define SOON_S		5	/* at the earliest, after a fetch */
#define RETRY_MAX_S	60	/* the longest wait between failed tries */
#define HELPER_MAX_S	30	/* a helper is killed (alarm) after this */

/* What a helper writes on its pipe. */
struct answer {
	int			ok;
	char			err[512];
	struct kv_aws_creds	creds;
};

static struct {
	struct kv_aws_slot	*slot;
	struct kv_mloop		*lp;
	const struct kv_config	*cf;		/* the config seen last */
	char			 region[64];
	int			 needed;
	struct kv_mloop_timer	 timer;
	struct kv_helper	 helper;
	struct answer		 ans;
	struct kv_backoff	 bo;
	int			 retry_s;
} R = { .helper = { .fd = -1 } };	/* no helper before kv_aws_refresh_start */

int
kv_aws_needed(const struct kv_config *cf, size_t *idx)
{
	size_t i;

	for (i = 0; i < cf->nupstreams; i++)
		if (cf->upstreams[i].provider == KV_PROVIDER_BEDROCK &&
		    cf->upstreams[i].api_key == NULL) {
			*idx = i;
			return 1;
		}
	return 0;
}

/* Publish C and arm the next refresh from its expiry. */
static void
publish(const struct kv_aws_creds *c)
{
	int64_t now = (int64_t)time(NULL), wait;
	uint64_t failed = kv_backoff_ok(&R.bo);

	kv_aws_slot_publish(R.slot, c);
	R.retry_s = 0;
	if (c->expires == 0) {
		kv_log_info("AWS credentials from %s (no expiry)", kv_aws_source_name(c->source));
		return;
	}
	wait = c->expires - EARLY_S - now;
	if (wait < SOON_S)	/* short-lived: half their life, at least SOON_S */
		wait = (c->expires - now) / 2 > SOON_S ? (c->expires - now) / 2 : SOON_S;
	kv_log_info("AWS credentials from %s, expiring in %lld s, refreshed in %lld s%s",
	    kv_aws_source_name(c->source), (long long)(c->expires - now), (long long)wait,
	    failed ? " (after failed tries)" : "");
	kv_mloop_timer_at(R.lp, &R.timer, kv_now_ms() + wait * 1000);
}

static void
failed(const char *why)
{
	char more[96];
	int64_t now = (int64_t)time(NULL);

	R.retry_s = R.retry_s == 0 ? 1 : R.retry_s * 2 > RETRY_MAX_S ? RETRY_MAX_S : R.retry_s * 2;
	if (kv_backoff_fail(&R.bo, now)) {
		kv_backoff_describe(&R.bo, now, more, sizeof(more));
		kv_log_warnx("KV0472", "AWS credentials refresh failed: %s; trying again in %d s%s",
		    why, R.retry_s, more);
	}
	kv_mloop_timer_at(R.lp, &R.timer, kv_now_ms() + (int64_t)R.retry_s * 1000);
}

/* In the helper process: the chain, its answer into ANS. */
static void
fetch(void *arg, void *ans, size_t size)
{
	struct answer *a = ans;

	(void)arg;
	(void)size;
	a->ok = kv_aws_chain_fetch(R.region, &a->creds, a->err, sizeof(a->err)) == 0;
}

/* In the master: the helper's answer, whole or not. */
static void
fetched(void *arg, int whole, const char *why)
{
	(void)arg;
	if (!whole)
		failed(why);
	else if (!R.ans.ok)
		failed(R.ans.err);
	else
		publish(&R.ans.creds);
	kv_aws_wipe(&R.ans, sizeof(R.ans));
}

static void
run_helper(void *arg)
{
	(void)arg;
	if (R.needed)
		(void)kv_helper_start(&R.helper);	/* a failure to start is handed to fetched */
}

/* Note CF's needs: whether credentials are needed, and STS's region. */
static void
note_config(const struct kv_config *cf)
{
	size_t i;

	R.cf = cf;
	R.needed = kv_aws_needed(cf, &i);
	if (R.needed)
		snprintf(R.region, sizeof(R.region), "%s", cf->upstreams[i].aws_region);
}

int
kv_aws_refresh_start(struct kv_mloop *lp, const struct kv_config *cf, const struct kv_ledger *l)
{
	struct kv_aws_creds c;
	char err[1024];
	size_t i = 0;

	R.lp = lp;
	kv_mloop_timer_init(&R.timer, run_helper, NULL);
	kv_helper_init(&R.helper, lp, l, &R.ans, sizeof(R.ans), HELPER_MAX_S, fetch, fetched, NULL);
	if ((R.slot = kv_aws_slot_map()) == NULL) {
		kv_log_warn("KV0470", "AWS credentials: mmap of the shared slot");
		return -1;
	}
	note_config(cf);
	if (!kv_aws_needed(cf, &i))
		return 0;
	if (kv_aws_chain_fetch(R.region, &c, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0471", "upstream %s: provider bedrock without api_key signs with "
		    "AWS credentials, and none were found: %s", cf->upstreams[i].name, err);
		return -1;
	}
	publish(&c);
	kv_aws_wipe(&c, sizeof(c));
	return 0;
}

void
kv_aws_refresh_config(const struct kv_config *cf)
{
	if (R.slot == NULL || cf == R.cf)
		return;
	note_config(cf);
	if (R.needed && kv_aws_slot_generation(R.slot) == 0)
		run_helper(NULL);
}

void
kv_aws_refresh_forget(void)
{
	kv_helper_forget(&R.helper);
}

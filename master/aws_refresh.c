/* The master's AWS credential refresh: see aws_refresh.h. The scheduling
 * (the helper process, the timer, the back-off) is master/cred_refresh.c's;
 * this says what AWS's chain needs and where its answer goes. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/aws_refresh.h"

#include <stdio.h>
#include <string.h>

#include "common/aws_creds.h"
#include "common/log.h"
#include "master/aws_chain.h"
#include "master/cred_refresh.h"

static struct {
	struct kv_aws_slot	*slot;
	const struct kv_config	*cf;		/* the config seen last */
	char			 region[64];
	struct kv_credref	 cr;
} R = { .cr = { .helper = { .fd = -1 } } };	/* no helper before kv_aws_refresh_start */

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

static int
fetch(void *creds, char *err, size_t errlen)
{
	return kv_aws_chain_fetch(R.region, creds, err, errlen);
}

static void
publish(const void *creds)
{
	kv_aws_slot_publish(R.slot, creds);
}

static int64_t
expires(const void *creds)
{
	return ((const struct kv_aws_creds *)creds)->expires;
}

static const char *
source(const void *creds)
{
	return kv_aws_source_name(((const struct kv_aws_creds *)creds)->source);
}

static void
log_failed(const char *why, int retry_s, const char *more)
{
	kv_log_warnx("KV0472", "AWS credentials refresh failed: %s; trying again in %d s%s",
	    why, retry_s, more);
}

static const struct kv_credref_ops ops = { "AWS credentials", sizeof(struct kv_aws_creds),
	fetch, publish, expires, source, log_failed };

/* Note CF's needs: whether credentials are needed, and STS's region. */
static void
note_config(const struct kv_config *cf)
{
	size_t i;

	R.cf = cf;
	R.cr.needed = kv_aws_needed(cf, &i);
	if (R.cr.needed)
		snprintf(R.region, sizeof(R.region), "%s", cf->upstreams[i].aws_region);
}

int
kv_aws_refresh_start(struct kv_mloop *lp, const struct kv_config *cf, const struct kv_ledger *l)
{
	struct kv_aws_creds c;
	char err[1024];
	size_t i = 0;

	if (kv_credref_init(&R.cr, &ops, lp, l) == -1 || (R.slot = kv_aws_slot_map()) == NULL) {
		kv_log_warn("KV0470", "AWS credentials: mmap of the shared slot");
		return -1;
	}
	note_config(cf);
	if (!kv_aws_needed(cf, &i))
		return 0;
	memset(&c, 0, sizeof(c));
	if (kv_aws_chain_fetch(R.region, &c, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0471", "upstream %s: provider bedrock without api_key signs with "
		    "AWS credentials, and none were found: %s", cf->upstreams[i].name, err);
		return -1;
	}
	kv_credref_publish(&R.cr, &c);
	kv_aws_wipe(&c, sizeof(c));
	return 0;
}

void
kv_aws_refresh_config(const struct kv_config *cf)
{
	if (R.slot == NULL || cf == R.cf)
		return;
	note_config(cf);
	if (R.cr.needed && kv_aws_slot_generation(R.slot) == 0)
		kv_credref_run(&R.cr);
}

void
kv_aws_refresh_forget(void)
{
	kv_credref_forget(&R.cr);
}

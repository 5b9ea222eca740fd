/* The master's Google access token refresh: see gcp_refresh.h. The
 * scheduling is master/cred_refresh.c's; this says where the token comes
 * from (master/gcp_chain.h) and where it goes. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/gcp_refresh.h"

#include <string.h>

#include <openssl/crypto.h>

#include "common/gcp_token.h"
#include "common/log.h"
#include "master/cred_refresh.h"
#include "master/gcp_chain.h"

static struct {
	struct kv_gcp_slot	*slot;
	const struct kv_config	*cf;		/* the config seen last */
	struct kv_credref	 cr;
} R = { .cr = { .helper = { .fd = -1 } } };	/* no helper before kv_gcp_refresh_start */

int
kv_gcp_needed(const struct kv_config *cf, size_t *idx)
{
	size_t i;

	for (i = 0; i < cf->nupstreams; i++)
		if (cf->upstreams[i].provider == KV_PROVIDER_VERTEX &&
		    cf->upstreams[i].api_key == NULL) {
			*idx = i;
			return 1;
		}
	return 0;
}

static int
fetch(void *tok, char *err, size_t errlen)
{
	return kv_gcp_chain_fetch(tok, err, errlen);
}

static void
publish(const void *tok)
{
	kv_gcp_slot_publish(R.slot, tok);
}

static const char *
source(const void *tok)
{
	return kv_gcp_source_name(((const struct kv_gcp_token *)tok)->source);
}

static void
log_failed(const char *why, int retry_s, const char *more)
{
	kv_log_warnx("KV0492", "Google access token refresh failed: %s; trying again in %d s%s",
	    why, retry_s, more);
}

static const struct kv_credref_ops ops = { "Google access token",
	sizeof(struct kv_gcp_token), fetch, publish, kv_gcp_token_expires, source, log_failed };

int
kv_gcp_refresh_start(struct kv_mloop *lp, const struct kv_config *cf, const struct kv_ledger *l)
{
	struct kv_gcp_token t;
	char err[1024];
	size_t i = 0;

	if (kv_credref_init(&R.cr, &ops, lp, l) == -1 || (R.slot = kv_gcp_slot_map()) == NULL) {
		kv_log_warn("KV0490", "Google access token: mmap of the shared slot");
		return -1;
	}
	R.cf = cf;
	if (!(R.cr.needed = kv_gcp_needed(cf, &i)))
		return 0;
	memset(&t, 0, sizeof(t));
	if (kv_gcp_chain_fetch(&t, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0491", "upstream %s: provider vertex without api_key sends a "
		    "Google access token, and none was had: %s", cf->upstreams[i].name, err);
		return -1;
	}
	kv_credref_publish(&R.cr, &t);
	OPENSSL_cleanse(&t, sizeof(t));
	return 0;
}

void
kv_gcp_refresh_config(const struct kv_config *cf)
{
	size_t i;

	if (R.slot == NULL || cf == R.cf)
		return;
	R.cf = cf;
	R.cr.needed = kv_gcp_needed(cf, &i);
	if (R.cr.needed && kv_gcp_slot_generation(R.slot) == 0)
		kv_credref_run(&R.cr);
}

void
kv_gcp_refresh_forget(void)
{
	kv_credref_forget(&R.cr);
}

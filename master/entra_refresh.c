/* The master's Entra ID token refresh: see entra_refresh.h. The
 * scheduling is master/cred_refresh.c's; this says where the token comes
 * from (master/entra_fetch.h) and where it goes. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/entra_refresh.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "common/entra_token.h"
#include "common/log.h"
#include "master/cred_refresh.h"
#include "master/entra_fetch.h"

static struct {
	struct kv_gcp_slot	*slot;
	const struct kv_config	*cf;		/* the config seen last (may be freed since) */
	uint8_t			 who[32];	/* its identity's hash (identity()) */
	struct kv_credref	 cr;
} R = { .cr = { .helper = { .fd = -1 } } };	/* no helper before kv_entra_refresh_start */

const struct kv_upstream *
kv_entra_needed(const struct kv_config *cf)
{
	size_t i;

	for (i = 0; i < cf->nupstreams; i++)
		if (cf->upstreams[i].provider == KV_PROVIDER_AZURE &&
		    cf->upstreams[i].tenant[0] != '\0')
			return &cf->upstreams[i];
	return NULL;
}

/* In the helper, a fork of the master: R.cf is the config it runs. */
static int
fetch(void *tok, char *err, size_t errlen)
{
	const struct kv_upstream *u = kv_entra_needed(R.cf);

	if (u == NULL) {
		snprintf(err, errlen, "no upstream needs an Entra ID token");
		return -1;
	}
	return kv_entra_fetch(u, tok, err, errlen);
}

static void
publish(const void *tok)
{
	kv_gcp_slot_publish(R.slot, tok);
}

static const char *
source(const void *tok)
{
	(void)tok;
	return "client secret";
}

static void
log_failed(const char *why, int retry_s, const char *more)
{
	kv_log_warnx("KV0487", "Entra ID token refresh failed: %s; trying again in %d s%s",
	    why, retry_s, more);
}

static const struct kv_credref_ops ops = { "Entra ID token",
	sizeof(struct kv_gcp_token), fetch, publish, kv_gcp_token_expires, source, log_failed };

/* SHA-256 of the identity CF's token is for (zeros for none): a reload
 * that names another gets a new token at once. The old config may be
 * freed by then, so it is compared by this, never read. */
static void
identity(const struct kv_config *cf, uint8_t out[32])
{
	const struct kv_upstream *u = kv_entra_needed(cf);
	char buf[4096];
	unsigned mdlen;
	int n;

	memset(out, 0, 32);
	if (u == NULL)
		return;
	n = snprintf(buf, sizeof(buf), "%s\n%s\n%s\n%s", u->tenant, u->client_id,
	    u->entra_url, u->client_secret);
	/* too long to tell apart, or no digest: a token fetched anyway */
	if (n < 0 || (size_t)n >= sizeof(buf) ||
	    EVP_Digest(buf, (size_t)n, out, &mdlen, EVP_sha256(), NULL) != 1)
		memset(out, 0xff, 32);
	OPENSSL_cleanse(buf, sizeof(buf));
}

int
kv_entra_refresh_start(struct kv_mloop *lp, const struct kv_config *cf,
    const struct kv_ledger *l)
{
	const struct kv_upstream *u;
	struct kv_gcp_token t;
	char err[1024];

	if (kv_credref_init(&R.cr, &ops, lp, l) == -1 || (R.slot = kv_entra_slot_map()) == NULL) {
		kv_log_warn("KV0485", "Entra ID token: mmap of the shared slot");
		return -1;
	}
	R.cf = cf;
	identity(cf, R.who);
	if (!(R.cr.needed = (u = kv_entra_needed(cf)) != NULL))
		return 0;
	if (kv_entra_fetch(u, &t, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0486", "upstream %s: provider azure with tenant sends an Entra "
		    "ID token, and none was had: %s", u->name, err);
		return -1;
	}
	kv_credref_publish(&R.cr, &t);
	OPENSSL_cleanse(&t, sizeof(t));
	return 0;
}

void
kv_entra_refresh_config(const struct kv_config *cf)
{
	uint8_t who[32];
	int same;

	if (R.slot == NULL || cf == R.cf)
		return;
	identity(cf, who);
	same = memcmp(who, R.who, sizeof(who)) == 0;
	memcpy(R.who, who, sizeof(who));
	R.cf = cf;
	R.cr.needed = kv_entra_needed(cf) != NULL;
	if (R.cr.needed && (kv_gcp_slot_generation(R.slot) == 0 || !same))
		kv_credref_run(&R.cr);
}

void
kv_entra_refresh_forget(void)
{
	kv_credref_forget(&R.cr);
}

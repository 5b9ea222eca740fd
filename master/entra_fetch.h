/* Entra ID's client-credentials grant (master/entra_fetch.c): blocking,
 * for the master's start-up and its refresh helper, never its loop. */
#ifndef KV_ENTRA_FETCH_H
#define KV_ENTRA_FETCH_H

#include <stddef.h>

#include "common/config.h"
#include "common/gcp_token.h"

/* POST U's client_id and client_secret to U's entra_url for a token of
 * Azure OpenAI's scope (KV_ENTRA_SCOPE) into *T. 0, or -1 with the reason
 * in ERR[0..ERRLEN) (Entra's own error and AADSTS description when it
 * answered one), never holding the secret. */
int	kv_entra_fetch(const struct kv_upstream *u, struct kv_gcp_token *t, char *err,
	    size_t errlen);

#endif

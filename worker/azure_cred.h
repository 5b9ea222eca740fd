/* The credential an azure upstream with Entra ID sends (azure_cred.c). */
#ifndef KV_AZURE_CRED_H
#define KV_AZURE_CRED_H

#include <stddef.h>

#include "common/config.h"

/* Whether UP sends the master's Entra ID token (provider = azure with
 * tenant set) rather than an api_key. */
int	kv_azure_entra(const struct kv_upstream *up);

/* The Entra ID token the master published last (common/entra_token.h),
 * copied when it changes, its length in *LEN; NULL when none was yet. */
const char *kv_azure_bearer(size_t *len);

#endif

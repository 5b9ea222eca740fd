/* Google's OAuth access token for Vertex AI upstreams, handed from the
 * master to the workers through a shared slot (common/seqslot.h) as AWS's
 * credentials are: the master fetches and refreshes it
 * (master/gcp_refresh.h), a worker sends it as Authorization: Bearer. */
#ifndef KV_GCP_TOKEN_H
#define KV_GCP_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "common/seqslot.h"

#define KV_GCP_TOKEN_MAX	4096	/* an access token, at most (Google's: ~250 B; Entra
					 * ID's, a signed JWT, ~1.5-2.5 KB) */

/* Where the token came from. */
enum kv_gcp_source { KV_GCP_NONE = 0, KV_GCP_SA_FILE, KV_GCP_METADATA };

/* One token, NUL-terminated; expires in Unix seconds. */
struct kv_gcp_token {
	char		token[KV_GCP_TOKEN_MAX + 1];
	int64_t		expires;
	int		source;		/* enum kv_gcp_source */
};

struct kv_gcp_slot {
	struct kv_seqslot	head;
	struct kv_gcp_token	tok;
};

/* Map the process's slot, zeroed (idempotent). Called by the master before
 * it forks; children inherit it. NULL with errno set when mmap fails. */
struct kv_gcp_slot *kv_gcp_slot_map(void);

/* The mapping kv_gcp_slot_map made in this process or a parent, or NULL. */
struct kv_gcp_slot *kv_gcp_slot_get(void);

/* Publish T (the master only) and bump the generation. */
void	kv_gcp_slot_publish(struct kv_gcp_slot *s, const struct kv_gcp_token *t);

/* The generation published last, 0 for none. */
uint64_t kv_gcp_slot_generation(const struct kv_gcp_slot *s);

/* Copy the published token into *OUT and its generation into *GEN,
 * consistently. 0, or -1 when nothing was published yet. */
int	kv_gcp_slot_read(const struct kv_gcp_slot *s, struct kv_gcp_token *out, uint64_t *gen);

/* A worker's copy of a slot's token, taken again only when the slot's
 * generation moved (one atomic load a request). */
struct kv_gcp_copy {
	uint64_t		gen;
	size_t			len;
	struct kv_gcp_token	tok;
};

/* The token in S as W holds it (refreshed first when S has a newer one),
 * its length in *LEN; NULL when S (may be NULL) has none yet. */
const char *kv_gcp_slot_copy(const struct kv_gcp_slot *s, struct kv_gcp_copy *w, size_t *len);

/* TOK's (a struct kv_gcp_token) expiry, as cred_refresh.h's expires wants. */
int64_t	kv_gcp_token_expires(const void *tok);

/* "service account file", "metadata server" or "none", for logs. */
const char *kv_gcp_source_name(int source);

#endif

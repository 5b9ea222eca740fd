/* Google's access token slot shared by the master and its workers: see
 * gcp_token.h; the seqlock is common/seqslot.c's. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/gcp_token.h"

#include <string.h>

static struct kv_gcp_slot *the_slot;

struct kv_gcp_slot *
kv_gcp_slot_map(void)
{
	if (the_slot == NULL)
		the_slot = kv_seqslot_map(sizeof(struct kv_gcp_slot));
	return the_slot;
}

struct kv_gcp_slot *
kv_gcp_slot_get(void)
{
	return the_slot;
}

void
kv_gcp_slot_publish(struct kv_gcp_slot *s, const struct kv_gcp_token *t)
{
	kv_seqslot_publish(&s->head, &s->tok, t, sizeof(*t));
}

uint64_t
kv_gcp_slot_generation(const struct kv_gcp_slot *s)
{
	return kv_seqslot_generation(&s->head);
}

int
kv_gcp_slot_read(const struct kv_gcp_slot *s, struct kv_gcp_token *out, uint64_t *gen)
{
	if (kv_seqslot_read(&s->head, &s->tok, out, sizeof(*out), gen) == -1)
		return -1;
	out->token[KV_GCP_TOKEN_MAX] = '\0';	/* shared memory is not trusted to */
	return 0;
}

const char *
kv_gcp_source_name(int source)
{
	switch (source) {
	case KV_GCP_SA_FILE:
		return "service account file";
	case KV_GCP_METADATA:
		return "metadata server";
	default:
		return "none";
	}
}

const char *
kv_gcp_slot_copy(const struct kv_gcp_slot *s, struct kv_gcp_copy *w, size_t *len)
{
	uint64_t g;

	if (s == NULL || (g = kv_gcp_slot_generation(s)) == 0)
		return NULL;
	if (g != w->gen) {
		if (kv_gcp_slot_read(s, &w->tok, &w->gen) == -1)
			return NULL;
		w->len = strlen(w->tok.token);
	}
	*len = w->len;
	return w->tok.token;
}

int64_t
kv_gcp_token_expires(const void *tok)
{
	return ((const struct kv_gcp_token *)tok)->expires;
}

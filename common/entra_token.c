/* Entra ID's token slot (see entra_token.h): a second slot of gcp_token.h's
 * kind; the seqlock is common/seqslot.c's. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/entra_token.h"

static struct kv_gcp_slot *the_slot;

struct kv_gcp_slot *
kv_entra_slot_map(void)
{
	if (the_slot == NULL)
		the_slot = kv_seqslot_map(sizeof(struct kv_gcp_slot));
	return the_slot;
}

struct kv_gcp_slot *
kv_entra_slot_get(void)
{
	return the_slot;
}

/* An account's fields in the audit log (audit_fields.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/audit_fields.h"

#include <stdatomic.h>
#include <string.h>

_Static_assert(KV_LABEL_MAX <= sizeof(((struct kv_audit_rec *)0)->label),
    "an audit record holds any label");

void
kv_audit_key(struct kv_audit_rec *r, const struct kv_account *a)
{
	kv_key_id(a->hash, r->key_id);
	/* a copy re-terminated: the label is read while others may write it */
	memcpy(r->label, a->label, KV_LABEL_MAX);
	r->label[KV_LABEL_MAX - 1] = '\0';
}

void
kv_audit_account(struct kv_audit_obj *o, const struct kv_account *a)
{
	kv_audit_obj_int(o, "budget_nusd", atomic_load(&a->budget_nusd));
	kv_audit_obj_int(o, "rpm", atomic_load(&a->rpm));
	kv_audit_obj_int(o, "tpm", atomic_load(&a->tpm));
	kv_audit_obj_int(o, "expires", atomic_load(&a->expires));
	kv_audit_obj_bool(o, "revoked", (atomic_load(&a->aflags) & KV_AF_REVOKED) != 0);
}

void
kv_audit_spec(struct kv_audit_obj *o, const struct kv_key_spec *s)
{
	kv_audit_obj_str(o, "label", s->label);
	kv_audit_obj_int(o, "budget_nusd", s->budget_nusd);
	if (s->rpm >= 0)
		kv_audit_obj_int(o, "rpm", s->rpm);
	if (s->tpm >= 0)
		kv_audit_obj_int(o, "tpm", s->tpm);
	if (s->period >= 0)
		kv_audit_obj_int(o, "period", s->period);
	if (s->expires > 0)
		kv_audit_obj_int(o, "expires", s->expires);
}

/* An account's fields as the audit log records them (common/audit.h): the
 * account a write was made on, and the fields a new key starts with. Shared
 * by the admin API (master/) and kvctl, so both write the same names. */
#ifndef KV_AUDIT_FIELDS_H
#define KV_AUDIT_FIELDS_H

#include "common/audit.h"
#include "shm/keys.h"
#include "shm/ledger.h"

/* R's key: A's id (never its hash or secret) and label. */
void	kv_audit_key(struct kv_audit_rec *r, const struct kv_account *a);

/* A's settings into O: budget_nusd, rpm, tpm (0 = none), expires (unix
 * seconds, 0 = never), revoked. */
void	kv_audit_account(struct kv_audit_obj *o, const struct kv_account *a);

/* What a new key is issued with (kvctl keys create, POST /keys) into O:
 * label, budget_nusd, and rpm, tpm, period, expires when given. */
void	kv_audit_spec(struct kv_audit_obj *o, const struct kv_key_spec *s);

#endif

/* POST /keys, DELETE /keys/{id}, POST /keys/{id}/rotate (admin_keys.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/admin_keys.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/jsonline.h"
#include "common/log.h"
#include "master/admin_keys_parse.h"
#include "shm/audit_fields.h"
#include "shm/keys.h"
#include "shm/report.h"

enum keys_op { OP_NONE, OP_CREATE, OP_REVOKE, OP_ROTATE };

static const char rotate_suffix[] = "/rotate";

/* The {id} of /keys/{id}[/rotate] (N bytes at P) into ID. */
static int
take_id(const char *p, size_t n, char id[KV_ADMIN_ID_MAX + 1])
{
	if (n == 0 || n > KV_ADMIN_ID_MAX)
		return -1;
	memcpy(id, p, n);
	id[n] = '\0';
	return 0;
}

/* The operation METHOD asks of URL, with its {id} into ID. A name may
 * hold '/' (kv_key_label_check), so a DELETE takes all of the path after
 * /keys/ as the name, and a POST only its last part as the action:
 * DELETE /keys/team/rotate revokes "team/rotate", POST /keys/team/rotate
 * rotates "team". */
static enum keys_op
op_of(const char *url, const char *method, char id[KV_ADMIN_ID_MAX + 1])
{
	size_t n, sl = sizeof(rotate_suffix) - 1;

	if (strcmp(url, "/keys") == 0 || strcmp(url, "/keys/") == 0)
		return strcmp(method, "POST") == 0 ? OP_CREATE : OP_NONE;
	if (strncmp(url, "/keys/", 6) != 0)
		return OP_NONE;
	url += 6;
	n = strlen(url);
	if (strcmp(method, "DELETE") == 0)
		return take_id(url, n, id) == 0 ? OP_REVOKE : OP_NONE;
	if (strcmp(method, "POST") == 0 && n > sl && strcmp(url + n - sl, rotate_suffix) == 0)
		return take_id(url, n - sl, id) == 0 ? OP_ROTATE : OP_NONE;
	return OP_NONE;
}

int
kv_admin_keys_route(const char *url)
{
	char id[KV_ADMIN_ID_MAX + 1];

	return op_of(url, "POST", id) != OP_NONE || op_of(url, "DELETE", id) != OP_NONE;
}

int
kv_admin_keys_takes(const char *url, const char *method)
{
	char id[KV_ADMIN_ID_MAX + 1];

	return op_of(url, method, id) != OP_NONE;
}

const char *
kv_admin_keys_allow(const char *url)
{
	int post = kv_admin_keys_takes(url, "POST"), del = kv_admin_keys_takes(url, "DELETE");

	return post && del ? "POST, DELETE" : del ? "DELETE" : "POST";
}


unsigned int
kv_admin_fail(FILE *out, unsigned int status, const char *code, const char *msg)
{
	fputs("{\"error\":", out);
	kv_json_write_string(out, msg);
	fprintf(out, ",\"code\":\"%s\"}\n", code);
	return status;
}

/* A refusal of the ledger's (errno from shm/keys.c) as its status. */
static unsigned int
fail_errno(FILE *out, int e, const char *msg)
{
	switch (e) {
	case EEXIST:
		return kv_admin_fail(out, 409, "label_taken", msg);
	case ENOSPC:
		return kv_admin_fail(out, 409, "table_full", msg);
	case EINVAL:
		return kv_admin_fail(out, 400, "bad_request", msg);
	case EPERM:
		return kv_admin_fail(out, 409, "not_issued", msg);
	case EKEYREVOKED:
		return kv_admin_fail(out, 409, "revoked", msg);
	default:	/* EAGAIN: a slot being claimed; EIO: no entropy */
		return kv_admin_fail(out, 503, "busy", msg);
	}
}

static unsigned int
keys_create(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
    const char *body, size_t len, struct kv_audit_rec *rec)
{
	struct kv_admin_create r;
	struct kv_key_spec spec;
	struct kv_account *a;
	char key[KV_KEY_TEXT], err[512], id[13];

	if (kv_admin_parse_create(body, len, (int64_t)time(NULL), &r, err,
	    sizeof(err)) == -1)
		return kv_admin_fail(out, 400, "bad_request", err);
	spec.label = r.label;
	spec.budget_nusd = r.budget_nusd >= 0 ? r.budget_nusd : cf->default_budget_nusd;
	spec.rpm = r.rpm;
	spec.tpm = r.tpm;
	spec.period = r.period;
	spec.expires = r.expires;
	kv_audit_spec(&rec->args, &spec);
	if ((a = kv_keys_create(l, cf, &spec, key, err, sizeof(err))) == NULL)
		return fail_errno(out, errno, err);
	/* The secret goes into the response buffer only, which MHD frees
	 * once sent; the ledger and the log never see it. */
	kv_report_issued_json(out, a, key);
	explicit_bzero(key, sizeof(key));
	kv_audit_key(rec, a);
	kv_audit_account(&rec->after, a);
	kv_key_id(a->hash, id);
	kv_log_info("status: key %s (%s) issued by admin", id, r.label);
	return 201;
}

/* The one account ID names, or NULL with the refusal written to OUT and
 * its status in *status. */
static struct kv_account *
find(FILE *out, const struct kv_ledger *l, const char *id, unsigned int *status)
{
	struct kv_account *a;
	char why[160];

	switch (kv_admin_find_key(l, id, &a, why, sizeof(why))) {
	case 200:
		return a;
	case 404:
		*status = kv_admin_fail(out, 404, "not_found", why);
		return NULL;
	default:
		*status = kv_admin_fail(out, 409, "ambiguous", why);
		return NULL;
	}
}

static unsigned int
keys_revoke(FILE *out, struct kv_ledger *l, const char *name, struct kv_audit_rec *rec)
{
	struct kv_account *a;
	unsigned int status;
	char id[13];

	if ((a = find(out, l, name, &status)) == NULL)
		return status;
	kv_audit_key(rec, a);
	if (atomic_load(&a->aflags) & KV_AF_CONFIG)
		return kv_admin_fail(out, 409, "config_key", "a [key] of the config: remove "
		    "its section (or change its key =) and reload");
	kv_key_id(a->hash, id);
	/* Revoking twice answers the same: the key is revoked either way. */
	kv_audit_obj_bool(&rec->before, "revoked", (atomic_load(&a->aflags) &
	    KV_AF_REVOKED) != 0);
	if (kv_keys_revoke(a) == 0)
		kv_log_info("status: key %s revoked by admin", id);
	kv_audit_obj_bool(&rec->after, "revoked", 1);
	kv_report_account_json(out, a);
	fputc('\n', out);
	return 200;
}

/* A rotation's before and after: the live secret's id (its SHA-256's
 * first 12 hex digits, never the secret). */
static void
rotate_record(struct kv_audit_rec *rec, const char *was, const char *key)
{
	uint8_t h[32];
	char now[13];

	kv_key_hash(key, strlen(key), h);
	kv_key_id(h, now);
	kv_audit_obj_str(&rec->before, "secret_id", was);
	kv_audit_obj_str(&rec->after, "secret_id", now);
}

static unsigned int
keys_rotate(FILE *out, struct kv_ledger *l, const char *name, struct kv_audit_rec *rec)
{
	struct kv_account *a;
	unsigned int status;
	char key[KV_KEY_TEXT], err[512], id[13], was[13];

	if ((a = find(out, l, name, &status)) == NULL)
		return status;
	kv_audit_key(rec, a);
	kv_keys_live_secret_id(l, a, was);
	if (kv_keys_new_secret(l, a, key, err, sizeof(err)) == -1)
		return fail_errno(out, errno, err);
	rotate_record(rec, was, key);
	kv_report_issued_json(out, a, key);
	explicit_bzero(key, sizeof(key));
	kv_key_id(a->hash, id);
	kv_log_info("status: key %s rotated by admin", id);
	return 200;
}

unsigned int
kv_admin_find_key(const struct kv_ledger *l, const char *name, struct kv_account **a,
    char *why, size_t whylen)
{
	struct kv_account *found[2];
	char id0[13], id1[13];
	int clash;
	size_t n = kv_keys_lookup(l, name, found, 2, &clash);

	if (n == 1) {
		*a = found[0];
		return 200;
	}
	if (n == 0) {
		snprintf(why, whylen, "no such key (a label, an id or an id prefix)");
		return 404;
	}
	if (!clash) {
		snprintf(why, whylen, "the id prefix matches several keys: give more "
		    "digits, or the label");
		return 409;
	}
	/* A name an older build let in reads as another key's id prefix:
	 * never pick one of them for the operator. */
	kv_key_id(found[0]->hash, id0);
	kv_key_id(found[1]->hash, id1);
	snprintf(why, whylen, "'%s' is the label of key %s and a prefix of the id of "
	    "key %s: give a whole 12-digit id", name, id0, id1);
	return 409;
}

unsigned int
kv_admin_keys_serve(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
    const char *method, const char *url, const char *body, size_t len,
    struct kv_audit_rec *rec)
{
	static const char *const ops[] = { "", "key.create", "key.revoke", "key.rotate" };
	char id[KV_ADMIN_ID_MAX + 1], err[256];
	enum keys_op op = op_of(url, method, id);

	snprintf(rec->op, sizeof(rec->op), "%s", ops[op]);
	if (op == OP_CREATE)
		return keys_create(out, l, cf, body, len, rec);
	if (op == OP_NONE)
		return kv_admin_fail(out, 404, "not_found", "not found");
	if (kv_admin_parse_empty(body, len, err, sizeof(err)) == -1)
		return kv_admin_fail(out, 400, "bad_request", err);
	return op == OP_REVOKE ? keys_revoke(out, l, id, rec) : keys_rotate(out, l, id, rec);
}

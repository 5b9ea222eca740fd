/* POST /keys, DELETE /keys/{id}, POST /keys/{id}/rotate (admin_keys.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/admin_keys.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "common/jsonline.h"
#include "common/log.h"
#include "master/admin_keys_parse.h"
#include "shm/keys.h"
#include "shm/report.h"

#define ADMIN_ID_MAX	64	/* a whole hash in hex, or a label */

enum keys_op { OP_NONE, OP_CREATE, OP_REVOKE, OP_ROTATE };

static const char rotate_suffix[] = "/rotate";

/* The operation of URL, with its {id} into ID (ADMIN_ID_MAX + 1 bytes). A
 * label may hold '/', so only a trailing "/rotate" splits the path. */
static enum keys_op
op_of(const char *url, char id[ADMIN_ID_MAX + 1])
{
	size_t n, sl = sizeof(rotate_suffix) - 1;
	enum keys_op op = OP_REVOKE;

	if (strcmp(url, "/keys") == 0 || strcmp(url, "/keys/") == 0)
		return OP_CREATE;
	if (strncmp(url, "/keys/", 6) != 0)
		return OP_NONE;
	url += 6;
	n = strlen(url);
	if (n > sl && strcmp(url + n - sl, rotate_suffix) == 0) {
		op = OP_ROTATE;
		n -= sl;
	}
	if (n == 0 || n > ADMIN_ID_MAX)
		return OP_NONE;
	memcpy(id, url, n);
	id[n] = '\0';
	return op;
}

int
kv_admin_keys_route(const char *url)
{
	char id[ADMIN_ID_MAX + 1];

	return op_of(url, id) != OP_NONE;
}

const char *
kv_admin_keys_allow(const char *url)
{
	char id[ADMIN_ID_MAX + 1];

	return op_of(url, id) == OP_REVOKE ? "DELETE" : "POST";
}

/* {"error": MSG, "code": CODE}; returns STATUS. */
static unsigned int
fail(FILE *out, unsigned int status, const char *code, const char *msg)
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
		return fail(out, 409, "label_taken", msg);
	case ENOSPC:
		return fail(out, 409, "table_full", msg);
	case EINVAL:
		return fail(out, 400, "bad_request", msg);
	case EPERM:
		return fail(out, 409, "not_issued", msg);
	case EKEYREVOKED:
		return fail(out, 409, "revoked", msg);
	default:	/* EAGAIN: a slot being claimed; EIO: no entropy */
		return fail(out, 503, "busy", msg);
	}
}

static unsigned int
keys_create(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
    const char *body, size_t len)
{
	struct kv_admin_create r;
	struct kv_key_spec spec;
	struct kv_account *a;
	char key[KV_KEY_TEXT], err[512], id[13];

	if (kv_admin_parse_create(body, len, (int64_t)time(NULL), &r, err,
	    sizeof(err)) == -1)
		return fail(out, 400, "bad_request", err);
	spec.label = r.label;
	spec.budget_nusd = r.budget_nusd >= 0 ? r.budget_nusd : cf->default_budget_nusd;
	spec.rpm = r.rpm;
	spec.tpm = r.tpm;
	spec.period = r.period;
	spec.expires = r.expires;
	if ((a = kv_keys_create(l, cf, &spec, key, err, sizeof(err))) == NULL)
		return fail_errno(out, errno, err);
	/* The secret goes into the response buffer only, which MHD frees
	 * once sent; the ledger and the log never see it. */
	kv_report_issued_json(out, a, key);
	explicit_bzero(key, sizeof(key));
	kv_key_id(a->hash, id);
	kv_log_info("status: key %s (%s) issued by admin", id, r.label);
	return 201;
}

/* The one account ID names, or NULL with the refusal written to OUT and
 * its status in *status. */
static struct kv_account *
find(FILE *out, const struct kv_ledger *l, const char *id, unsigned int *status)
{
	struct kv_account *found[2];
	size_t n = kv_keys_lookup(l, id, found, 2);

	if (n == 1)
		return found[0];
	*status = n == 0 ? fail(out, 404, "not_found", "no such key (an id prefix or "
	    "a label)") : fail(out, 409, "ambiguous", "the id prefix matches several "
	    "keys: give more digits, or the label");
	return NULL;
}

static unsigned int
keys_revoke(FILE *out, struct kv_ledger *l, const char *name)
{
	struct kv_account *a;
	unsigned int status;
	char id[13];

	if ((a = find(out, l, name, &status)) == NULL)
		return status;
	if (atomic_load(&a->aflags) & KV_AF_CONFIG)
		return fail(out, 409, "config_key", "a [key] of the config: remove its "
		    "section (or change its key =) and reload");
	kv_key_id(a->hash, id);
	/* Revoking twice answers the same: the key is revoked either way. */
	if (kv_keys_revoke(a) == 0)
		kv_log_info("status: key %s revoked by admin", id);
	kv_report_account_json(out, a);
	fputc('\n', out);
	return 200;
}

static unsigned int
keys_rotate(FILE *out, struct kv_ledger *l, const char *name)
{
	struct kv_account *a;
	unsigned int status;
	char key[KV_KEY_TEXT], err[512], id[13];

	if ((a = find(out, l, name, &status)) == NULL)
		return status;
	if (kv_keys_new_secret(l, a, key, err, sizeof(err)) == -1)
		return fail_errno(out, errno, err);
	kv_report_issued_json(out, a, key);
	explicit_bzero(key, sizeof(key));
	kv_key_id(a->hash, id);
	kv_log_info("status: key %s rotated by admin", id);
	return 200;
}

unsigned int
kv_admin_keys_serve(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
    const char *url, const char *body, size_t len)
{
	char id[ADMIN_ID_MAX + 1], err[256];
	enum keys_op op = op_of(url, id);

	if (op == OP_CREATE)
		return keys_create(out, l, cf, body, len);
	if (op == OP_NONE)
		return fail(out, 404, "not_found", "not found");
	if (kv_admin_parse_empty(body, len, err, sizeof(err)) == -1)
		return fail(out, 400, "bad_request", err);
	return op == OP_REVOKE ? keys_revoke(out, l, id) : keys_rotate(out, l, id);
}

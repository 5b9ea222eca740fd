/* The admin API's issued keys, served by the status service (status.c
 * dispatches here once the admin token is checked and the body read):
 *   POST   /keys              issue a key: 201 {"key","id","account"}, the
 *                             raw key shown this once
 *   DELETE /keys/{id}         revoke it: every worker refuses it with 401
 *                             from its next request on
 *   POST   /keys/{id}/rotate  a new secret for the same account
 * {id} is an id prefix or a label, as kvctl takes it (kv_keys_lookup). The
 * ledger work is shm/keys.c's, shared with kvctl keys; the bodies are
 * admin_keys_parse.c's. A refused call changes nothing in the ledger. */
#ifndef KV_ADMIN_KEYS_H
#define KV_ADMIN_KEYS_H

#include <stddef.h>
#include <stdio.h>

#include "common/config.h"
#include "shm/ledger.h"

/* 1 when URL is one of the three paths above, else 0. */
int	kv_admin_keys_route(const char *url);

/* The one method URL (a kv_admin_keys_route path) takes: "POST" or
 * "DELETE" (the Allow header of a 405). */
const char *kv_admin_keys_allow(const char *url);

/* Serve METHOD (the one kv_admin_keys_allow names) on URL with BODY (LEN
 * bytes) against ledger L and the running config CF ([key] names, [budget]
 * defaults). Writes the JSON answer, or {"error","code"}, to OUT and
 * returns the HTTP status. Logs each write (never a secret). */
unsigned int kv_admin_keys_serve(FILE *out, struct kv_ledger *l,
	    const struct kv_config *cf, const char *url, const char *body, size_t len);

#endif

/* A client identified by a JSON Web Token ([auth jwt], docs/identity.md):
 * the token found, verified with the worker's copy of the key set, and
 * the user node it names. */
#ifndef KV_JWT_AUTH_H
#define KV_JWT_AUTH_H

#include <stddef.h>

struct kv_conn;
struct kv_http_request;

/* With [auth jwt] on: the token of C's request REQ (the configured header,
 * else the bearer credential KEY of KLEN bytes, NULL none) when it has
 * the shape of a JWT (three base64url parts). Verified (a cache of tokens
 * already verified first, then the key set, re-read when its file
 * changes), c->req.jwt is set with the user node's name, hash and team.
 * Returns 0 not a JWT (or [auth jwt] off), 1 verified, -1 refused with
 * the verifier's reason in *WHY (static). */
int	kv_jwt_auth(struct kv_conn *c, const struct kv_http_request *req, const char *key,
	    size_t klen, const char **why);

/* Whether header NAME (LEN bytes) carries the token: never forwarded. */
int	kv_jwt_auth_header(const struct kv_conn *c, const char *name, size_t len);

#endif

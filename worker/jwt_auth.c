/* A request's JSON Web Token on the request path: found (the configured
 * header or the bearer credential), verified against this worker's copy
 * of the key set (jwks_file, or the master's LEDGER.jwks; re-read when its
 * file changes, stat at most once a second, never fetched here), cached
 * by its SHA-256 until exp (a verify costs 17 to 135 us), and turned into
 * the user node the request is charged to (docs/identity.md). */
#include "worker/jwt_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/evp.h>

#include "common/jwt.h"
#include "common/log.h"
#include "worker/conn-t.h"
#include "worker/worker.h"

#define CACHE_SLOTS	64

struct cached {
	uint8_t		 hash[32];
	int64_t		 exp;		/* 0: empty */
	int		 team;
	char		 user[KV_JWT_USER_MAX];
};

struct kv_jwt_keys {
	struct kv_jwks	 ks;
	int		 loaded;
	time_t		 checked;	/* when the file was last stat'ed */
	struct timespec	 mtime;
	off_t		 size;
	struct cached	 cache[CACHE_SLOTS];
};

static int
b64url_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
	    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
}

/* Three base64url parts, the first two non-empty (alg none leaves the
 * third empty: the verifier refuses it by name). */
static int
looks_like_jwt(const char *t, size_t n)
{
	size_t i, dots = 0, part = 0;

	for (i = 0; i < n; i++) {
		if (t[i] == '.') {
			if (part == 0 || ++dots > 2)
				return 0;
			part = 0;
		} else if (!b64url_char(t[i]))
			return 0;
		else
			part++;
	}
	return dots == 2;
}

/* The key set's file, re-read when its mtime or size moved; the cache
 * goes with the keys that filled it. */
static void
keys_fresh(struct kv_worker *w, struct kv_jwt_keys *jk)
{
	const struct kv_auth_jwt *a = &w->cf->auth_jwt;
	char path[4200], err[256];
	struct kv_jwks ks;
	struct stat st;
	time_t now = time(NULL);

	if (jk->loaded && now == jk->checked)
		return;
	jk->checked = now;
	if (a->jwks_file[0] != '\0')
		snprintf(path, sizeof(path), "%s", a->jwks_file);
	else
		snprintf(path, sizeof(path), "%s.jwks", w->cf->ledger);
	if (stat(path, &st) == -1)
		return;		/* none yet: the master has not fetched it */
	if (jk->loaded && st.st_mtim.tv_sec == jk->mtime.tv_sec &&
	    st.st_mtim.tv_nsec == jk->mtime.tv_nsec && st.st_size == jk->size)
		return;
	if (kv_jwks_load(&ks, path, err, sizeof(err)) == -1) {
		kv_log_warnx("KV0962", "jwks: %s unreadable (%s): the keys read before are kept",
		    path, err);
		jk->mtime = st.st_mtim;
		jk->size = st.st_size;
		return;
	}
	if (jk->loaded)
		kv_jwks_free(&jk->ks);
	jk->ks = ks;
	jk->loaded = 1;
	jk->mtime = st.st_mtim;
	jk->size = st.st_size;
	memset(jk->cache, 0, sizeof(jk->cache));
}

/* The first of ID's teams that is a configured [team], -1 none. */
static int
team_of(const struct kv_config *cf, const struct kv_jwt_identity *id)
{
	size_t i, t;

	for (i = 0; i < id->nteams; i++)
		for (t = 0; t < cf->nteams; t++)
			if (strcmp(cf->teams[t].name, id->teams[i]) == 0)
				return (int)t;
	return -1;
}

static int
verify(struct kv_conn *c, struct kv_jwt_keys *jk, const char *tok, size_t len,
    struct cached *e, const char **why)
{
	static char whybuf[256];
	static struct kv_jwt_identity id;	/* 16 KB: not on the stack */
	struct kv_jwt_policy pol;
	enum kv_jwt_status st;

	if (!jk->loaded) {
		*why = "invalid token: the identity provider's key set is not loaded yet";
		return -1;
	}
	kv_jwt_policy_of(&c->w->cf->auth_jwt, &pol);
	st = kv_jwt_verify(tok, len, &jk->ks, &pol, (int64_t)time(NULL), &id, whybuf,
	    sizeof(whybuf));
	if (st != KV_JWT_OK) {
		snprintf(whybuf, sizeof(whybuf), "invalid token: %s", kv_jwt_reason(st));
		*why = whybuf;
		return -1;
	}
	e->exp = id.exp;
	e->team = team_of(c->w->cf, &id);
	snprintf(e->user, sizeof(e->user), "%s", id.user);
	return 0;
}

/* The cache's entry for HASH: the verified one still in date, else the
 * slot to fill (the empty, expired or soonest to expire of the four
 * slots from HASH's first byte). */
static struct cached *
cache_slot(struct kv_jwt_keys *jk, const uint8_t hash[32], int64_t now, int *hit)
{
	struct cached *fill = NULL;
	int i;

	*hit = 0;
	for (i = 0; i < 4; i++) {
		struct cached *x = &jk->cache[(hash[0] + i) % CACHE_SLOTS];

		if (x->exp > now && memcmp(x->hash, hash, 32) == 0) {
			*hit = 1;
			return x;
		}
		if (fill == NULL || x->exp < fill->exp)
			fill = x;
	}
	return fill;
}

static const char *
token_of(const struct kv_conn *c, const struct kv_http_request *req, const char *key,
    size_t klen, size_t *len)
{
	const char *hn = c->w->cf->auth_jwt.header;
	size_t i, hl = strlen(hn);

	*len = klen;
	if (hl == 0)
		return key;
	for (i = 0; i < req->nheaders; i++) {
		const struct kv_http_header *h = &req->headers[i];

		if (h->name_len != hl || strncasecmp(h->name, hn, hl) != 0)
			continue;
		*len = h->value_len;
		if (*len > 7 && strncasecmp(h->value, "Bearer ", 7) == 0) {
			*len -= 7;
			return h->value + 7;
		}
		return h->value;
	}
	return NULL;
}

/* c->req.keyhash is the user node's, never the token's: a token renewed
 * by the provider is the same user, the same account. */
int
kv_jwt_auth(struct kv_conn *c, const struct kv_http_request *req, const char *key,
    size_t klen, const char **why)
{
	struct kv_worker *w = c->w;
	const char *tok;
	struct cached *e;
	uint8_t hash[32];
	unsigned int mdlen = 32;
	int64_t now = (int64_t)time(NULL);
	size_t len;
	char node[KV_JWT_USER_MAX + 16];
	int hit, n;

	if (!w->cf->auth_jwt.enabled || (tok = token_of(c, req, key, klen, &len)) == NULL ||
	    len > KV_JWT_MAX_TOKEN || !looks_like_jwt(tok, len))
		return 0;
	if (w->jwt == NULL && (w->jwt = calloc(1, sizeof(*w->jwt))) == NULL) {
		*why = "out of memory";
		return -1;
	}
	keys_fresh(w, w->jwt);
	if (EVP_Digest(tok, len, hash, &mdlen, EVP_sha256(), NULL) != 1) {
		*why = "SHA-256 failed";
		return -1;
	}
	e = cache_slot(w->jwt, hash, now, &hit);
	if (!hit) {
		if (verify(c, w->jwt, tok, len, e, why) == -1)
			return -1;
		memcpy(e->hash, hash, 32);
	}
	c->req.jwt = 1;
	c->req.jwt_team = e->team;
	snprintf(c->req.user_node, sizeof(c->req.user_node), "user/%s", e->user);
	/* the account's hash is the node's, as for the config's nodes
	 * (common/config_team.c): "\001node:" and its name */
	n = snprintf(node, sizeof(node), "\001node:%s", c->req.user_node);
	if (EVP_Digest(node, (size_t)n, c->req.keyhash, &mdlen, EVP_sha256(), NULL) != 1) {
		*why = "SHA-256 failed";
		return -1;
	}
	return 1;
}

int
kv_jwt_auth_header(const struct kv_conn *c, const char *name, size_t len)
{
	const char *hn = c->w->cf->auth_jwt.header;

	return c->req.jwt && hn[0] != '\0' && strlen(hn) == len && strncasecmp(name, hn, len) == 0;
}

/* Issued keys in the ledger: generate, issue, revoke, rotate, and the
 * workers' admission of them (see keys.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/keys.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/key_label.h"

void
kv_keys_base62(const uint8_t in[32], char out[KV_KEY_DIGITS + 1])
{
	static const char digits[] =
	    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	uint8_t n[32];
	unsigned rem, cur;
	int d, i;

	memcpy(n, in, sizeof(n));
	/* Long division of the 256-bit big-endian number by 62, once per
	 * digit, least significant digit first into the end of OUT. */
	for (d = KV_KEY_DIGITS - 1; d >= 0; d--) {
		rem = 0;
		for (i = 0; i < 32; i++) {
			cur = rem << 8 | n[i];
			n[i] = (uint8_t)(cur / 62);
			rem = cur % 62;
		}
		out[d] = digits[rem];
	}
	out[KV_KEY_DIGITS] = '\0';
	explicit_bzero(n, sizeof(n));
}

int
kv_keys_generate(char key[KV_KEY_TEXT], uint8_t hash[32])
{
	uint8_t raw[32];
	size_t got = 0;
	ssize_t r;

	while (got < sizeof(raw)) {
		r = getrandom(raw + got, sizeof(raw) - got, 0);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			explicit_bzero(raw, sizeof(raw));
			return -1;
		}
		got += (size_t)r;
	}
	memcpy(key, KV_KEY_PREFIX, 3);
	kv_keys_base62(raw, key + 3);
	explicit_bzero(raw, sizeof(raw));
	kv_key_hash(key, strlen(key), hash);
	return 0;
}

static int
label_of(const struct kv_account *a, const char *label)
{
	char copy[KV_LABEL_MAX];

	/* A torn label while the master renames one: copy, re-terminate. */
	memcpy(copy, a->label, sizeof(copy));
	copy[sizeof(copy) - 1] = '\0';
	return (a->flags & KV_ACCOUNT_NAMED) && strcmp(copy, label) == 0;
}

struct kv_account *
kv_keys_find_label(const struct kv_ledger *l, const char *label)
{
	uint32_t i;

	KV_FOR_EACH_SLOT(l, i) {
		struct kv_account *a = &l->accounts[i];

		if (kv_slot_ready(&a->state) && !kv_account_label_retired(a) &&
		    label_of(a, label))
			return a;
	}
	return NULL;
}

static int
spec_check(const struct kv_key_spec *s, char *err, size_t errlen)
{
	char why[160];

	if (s->label == NULL || kv_key_label_check(s->label, KV_LABEL_MAX, why,
	    sizeof(why)) == -1) {
		snprintf(err, errlen, "a key's name: %s", s->label == NULL ?
		    "required" : why);
		return -1;
	}
	if (s->budget_nusd < 0) {
		snprintf(err, errlen, "a budget cannot be negative");
		return -1;
	}
	return 0;
}

/* The table has no free slot for a new secret: ask the master for a
 * reclaim, and say whether one can help (rotated-out secrets it frees at
 * once on a full table: errno EAGAIN) or not (ENOSPC). */
static void
table_full(struct kv_ledger *l, const char *what, char *err, size_t errlen)
{
	int n = kv_keys_links_reclaimable(l, (int64_t)time(NULL), 0);

	atomic_store(&l->hdr->reclaim_wanted, 1);
	if (n > 0) {
		snprintf(err, errlen, "the ledger's key table is full; kilovoltd is "
		    "reclaiming the slots of %d rotated-out secret%s: try again in a "
		    "second", n, n == 1 ? "" : "s");
		errno = EAGAIN;
		return;
	}
	snprintf(err, errlen, "the ledger's key table is full (raise [server] "
	    "max_keys%s)", what);
	errno = ENOSPC;
}

struct kv_account *
kv_keys_issue(struct kv_ledger *l, const uint8_t hash[32], const struct kv_key_spec *s,
    char *err, size_t errlen)
{
	struct kv_account *a;

	if (spec_check(s, err, errlen) == -1) {
		errno = EINVAL;
		return NULL;
	}
	if ((a = kv_keys_find_label(l, s->label)) != NULL) {
		snprintf(err, errlen, "a key named '%s' exists already (%s)", s->label,
		    (atomic_load(&a->aflags) & KV_AF_CONFIG) ? "a [key] section of the "
		    "config: pick another name" :
		    (atomic_load(&a->aflags) & KV_AF_REVOKED) ? "revoked: `kvctl forget "
		    "NAME` frees the name" : "`kvctl keys rotate NAME` gives it a new secret");
		errno = EEXIST;
		return NULL;
	}
	a = kv_ledger_account(l, hash, 1, s->label, s->budget_nusd);
	if (a == NULL && errno == ENOSPC) {
		table_full(l, ", or kvctl forget unused keys", err, errlen);
		return NULL;
	}
	if (a == NULL) {
		snprintf(err, errlen, "the key's slot is busy: try again");
		errno = EAGAIN;
		return NULL;
	}
	/* Before the flag that admits it: its limits are in place first. */
	kv_account_set_limits(a, s->rpm, s->tpm);
	atomic_store(&a->period, s->period >= 0 ? (uint32_t)s->period + 1 : 0);
	atomic_store(&a->expires, s->expires);
	atomic_fetch_or(&a->aflags, KV_AF_ISSUED | KV_AF_KEPT);
	return a;
}

int
kv_keys_revoke(struct kv_account *a)
{
	uint32_t was = atomic_fetch_or(&a->aflags, KV_AF_REVOKED);

	return (was & KV_AF_REVOKED) ? -1 : 0;
}

void
kv_keys_rotated_out(struct kv_account *s, int64_t now)
{
	/* The time first: a reclaim that sees the flag sees the time. */
	if (atomic_load(&s->state) == KV_SLOT_LINK &&
	    !(atomic_load(&s->aflags) & KV_AF_ROTATED))
		atomic_store(&s->period_start, now);
	atomic_fetch_or(&s->aflags, KV_AF_ROTATED);
}

/* The slots whose own secret is live for account A (index AI + 1 in
 * links): A itself unless rotated, and its links not rotated. */
static void
rotate_out(struct kv_ledger *l, struct kv_account *a, const struct kv_account *keep)
{
	uint32_t ai = kv_ledger_account_index(l, a) + 1, i;
	int64_t now = (int64_t)time(NULL);

	kv_keys_rotated_out(a, now);
	KV_FOR_EACH_SLOT(l, i) {
		struct kv_account *s = &l->accounts[i];

		if (s != keep && atomic_load(&s->state) == KV_SLOT_LINK &&
		    atomic_load(&s->link) == ai)
			kv_keys_rotated_out(s, now);
	}
}

void
kv_keys_live_secret_id(const struct kv_ledger *l, const struct kv_account *a,
    char id[13])
{
	uint32_t ai = kv_ledger_account_index(l, a) + 1, i;

	id[0] = '\0';
	if (!(atomic_load(&a->aflags) & KV_AF_ROTATED)) {
		kv_key_id(a->hash, id);
		return;
	}
	KV_FOR_EACH_SLOT(l, i) {
		const struct kv_account *s = &l->accounts[i];

		if (atomic_load(&s->state) == KV_SLOT_LINK && atomic_load(&s->link) == ai &&
		    !(atomic_load(&s->aflags) & KV_AF_ROTATED))
			kv_key_id(s->hash, id);
	}
}

int
kv_keys_rotate(struct kv_ledger *l, struct kv_account *a, const uint8_t newhash[32],
    char *err, size_t errlen)
{
	struct kv_account *link;
	int tries;

	if (!(atomic_load(&a->aflags) & KV_AF_ISSUED)) {
		snprintf(err, errlen, "%s", (atomic_load(&a->aflags) & KV_AF_CONFIG) ?
		    "a key of the config: change its key = in the [key] section and "
		    "reload" : "not an issued key (only keys made by kvctl keys create "
		    "rotate)");
		errno = EPERM;
		return -1;
	}
	if (atomic_load(&a->aflags) & KV_AF_REVOKED) {
		snprintf(err, errlen, "the key is revoked");
		errno = EKEYREVOKED;
		return -1;
	}
	for (tries = 0; tries < 8; tries++) {
		if ((link = kv_ledger_link(l, newhash, a)) != NULL)
			break;
		if (errno != EAGAIN)
			break;
	}
	if (link == NULL && errno == ENOSPC) {
		table_full(l, "", err, errlen);
		return -1;
	}
	if (link == NULL) {
		int saved = errno;

		snprintf(err, errlen, "%s", saved == EEXIST ? "the new secret has a slot "
		    "already (try again)" : "the key table is busy: try again");
		errno = saved;
		return -1;
	}
	rotate_out(l, a, link);
	return 0;
}

enum kv_key_verdict
kv_keys_admit(const struct kv_ledger *l, struct kv_account **a, int64_t now)
{
	struct kv_account *s = *a, *to = s;
	uint32_t idx;
	int64_t end;

	if (atomic_load(&s->aflags) & KV_AF_ROTATED)
		return KV_KEY_ROTATED;
	if (atomic_load_explicit(&s->state, memory_order_acquire) == KV_SLOT_LINK) {
		idx = atomic_load(&s->link);
		if (idx == 0 || idx > l->hdr->max_keys)
			return KV_KEY_REVOKED;
		to = &l->accounts[idx - 1];
		/* Forgotten, and perhaps reused for another key since. */
		if (!kv_slot_ready(&to->state) ||
		    atomic_load(&to->tag) != atomic_load(&s->link_tag))
			return KV_KEY_REVOKED;
	}
	if (atomic_load(&to->aflags) & KV_AF_REVOKED)
		return KV_KEY_REVOKED;
	end = atomic_load(&to->expires);
	if (end != 0 && now >= end)
		return KV_KEY_EXPIRED;
	*a = to;
	return KV_KEY_OK;
}

const char *
kv_keys_refusal(enum kv_key_verdict v)
{
	switch (v) {
	case KV_KEY_REVOKED:
		return "this API key was revoked: ask the gateway's operator for a new one";
	case KV_KEY_ROTATED:
		return "this API key was replaced by a new one (kvctl keys rotate): "
		    "use the new key";
	case KV_KEY_EXPIRED:
		return "this API key has expired: ask the gateway's operator for a new one";
	case KV_KEY_OK:
	default:
		return "ok";
	}
}

enum kv_period
kv_keys_period(const struct kv_account *a, enum kv_period configured)
{
	uint32_t p = atomic_load(&a->period);

	return p >= 1 && p <= KV_PERIOD_MONTHLY + 1 ? (enum kv_period)(p - 1) : configured;
}

int
kv_keys_parse_period(const char *s, int *period)
{
	static const char *const names[] = { "none", "daily", "weekly", "monthly" };
	int i;

	for (i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0) {
			*period = i;
			return 0;
		}
	return -1;
}

const char *
kv_keys_config_clash(const struct kv_ledger *l, const struct kv_config *cf)
{
	const struct kv_account *a;
	size_t i;

	for (i = 0; i < cf->nkeys; i++) {
		a = kv_keys_find_label(l, cf->keys[i].label);
		if (a != NULL && (atomic_load(&a->aflags) & KV_AF_ISSUED) &&
		    memcmp(a->hash, cf->keys[i].hash, 32) != 0)
			return cf->keys[i].label;
	}
	return NULL;
}

/* A [key NAME] of the config, whether or not a daemon applied it yet. */
static int
config_has(const struct kv_config *cf, const char *name)
{
	size_t i;

	for (i = 0; cf != NULL && i < cf->nkeys; i++)
		if (strcmp(cf->keys[i].label, name) == 0)
			return 1;
	return 0;
}

struct kv_account *
kv_keys_create(struct kv_ledger *l, const struct kv_config *cf,
    const struct kv_key_spec *spec, char key[KV_KEY_TEXT], char *err, size_t errlen)
{
	struct kv_account *a;
	uint8_t hash[32];

	memset(key, 0, KV_KEY_TEXT);
	if (spec->label != NULL && config_has(cf, spec->label)) {
		snprintf(err, errlen, "'%s' is a [key %s] section of %s: pick another "
		    "name (config keys and issued keys share one namespace)",
		    spec->label, spec->label, cf->path);
		errno = EEXIST;
		return NULL;
	}
	if (kv_keys_generate(key, hash) == -1) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		errno = EIO;
		return NULL;
	}
	if ((a = kv_keys_issue(l, hash, spec, err, errlen)) == NULL) {
		int saved = errno;

		explicit_bzero(key, KV_KEY_TEXT);
		errno = saved;
	}
	explicit_bzero(hash, sizeof(hash));
	return a;
}

int
kv_keys_new_secret(struct kv_ledger *l, struct kv_account *a, char key[KV_KEY_TEXT],
    char *err, size_t errlen)
{
	uint8_t hash[32];
	int rc;

	memset(key, 0, KV_KEY_TEXT);
	if (kv_keys_generate(key, hash) == -1) {
		snprintf(err, errlen, "getrandom: %s", strerror(errno));
		errno = EIO;
		return -1;
	}
	rc = kv_keys_rotate(l, a, hash, err, errlen);
	if (rc == -1) {
		int saved = errno;

		explicit_bzero(key, KV_KEY_TEXT);
		errno = saved;
	}
	explicit_bzero(hash, sizeof(hash));
	return rc;
}

/* A's label is NAME, whatever its flags (a retired label too). */
static int
label_is(const struct kv_account *a, const char *name)
{
	char label[KV_LABEL_MAX];

	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	return label[0] != '\0' && strcmp(label, name) == 0;
}

static int
is_hex_prefix(const char *s)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

static int
hash_has_prefix(const uint8_t hash[32], const char *hex)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; hex[i] != '\0'; i++) {
		unsigned v = i % 2 == 0 ? hash[i / 2] >> 4 : hash[i / 2] & 0xf;

		if (digits[v] != tolower((unsigned char)hex[i]))
			return 0;
	}
	return 1;
}

/* The accounts whose label is NAME: a live one (a key of the running
 * config, a live issued key), else one the config no longer has. */
static size_t
by_label(const struct kv_ledger *l, const char *name, struct kv_account **out, size_t max)
{
	size_t n = 0;
	uint32_t i;
	int retired;

	for (retired = 0; retired < 2 && n == 0; retired++)
		KV_FOR_EACH_SLOT(l, i) {
			struct kv_account *a = &l->accounts[i];

			if (!kv_slot_ready(&a->state) || !label_is(a, name) ||
			    kv_account_label_retired(a) != retired)
				continue;
			if (n < max)
				out[n] = a;
			n++;
		}
	return n;
}

/* The accounts whose hash starts with the hex digits NAME. */
static size_t
by_id(const struct kv_ledger *l, const char *name, struct kv_account **out, size_t max)
{
	size_t n = 0;
	uint32_t i;

	KV_FOR_EACH_SLOT(l, i) {
		struct kv_account *a = &l->accounts[i];

		if (!kv_slot_ready(&a->state) || !hash_has_prefix(a->hash, name))
			continue;
		if (n < max)
			out[n] = a;
		n++;
	}
	return n;
}

size_t
kv_keys_lookup(const struct kv_ledger *l, const char *name, struct kv_account **out,
    size_t max, int *clash)
{
	size_t nl, ni, got;

	*clash = 0;
	if (!is_hex_prefix(name))
		return by_label(l, name, out, max);
	if (strlen(name) >= 12) {
		/* A whole id (or more of the hash) is that key's, whatever name
		 * an older build let another key have. */
		ni = by_id(l, name, out, max);
		return ni > 0 ? ni : by_label(l, name, out, max);
	}
	if (!kv_key_label_idlike(name)) {
		/* A few hex digits ("cafe", "a") are a name first, as always. */
		nl = by_label(l, name, out, max);
		return nl > 0 ? nl : by_id(l, name, out, max);
	}
	/* 6 to 11 hex digits: an id prefix, and perhaps a name an older build
	 * let in. Both, on different keys: the caller must not pick one. */
	nl = by_label(l, name, out, max);
	got = nl < max ? nl : max;
	ni = by_id(l, name, out + got, max - got);
	if (nl == 1 && ni == 1 && max >= 2 && out[0] == out[1])
		return 1;
	*clash = nl > 0 && ni > 0;
	return nl + ni;
}

int
kv_keys_link_reclaimable(const struct kv_ledger *l, const struct kv_account *s,
    int64_t now, int64_t grace_s)
{
	const struct kv_account *to;
	uint32_t idx;

	if (atomic_load_explicit(&s->state, memory_order_acquire) != KV_SLOT_LINK)
		return 0;
	idx = atomic_load(&s->link);
	if (idx == 0 || idx > l->hdr->max_keys)
		return 1;
	to = &l->accounts[idx - 1];
	/* Its account was forgotten (by a build that left its links), and
	 * perhaps its slot reused since: the link admits nothing. */
	if (!kv_slot_ready(&to->state) || atomic_load(&to->tag) != atomic_load(&s->link_tag))
		return 1;
	/* The live secret answers for its account, revoked or not: freed, it
	 * would be a stranger's key, which unknown_keys = allow admits. */
	if (!(atomic_load(&s->aflags) & KV_AF_ROTATED))
		return 0;
	if (atomic_load(&to->aflags) & KV_AF_REVOKED)
		return 1;
	return now - atomic_load(&s->period_start) >= grace_s;
}

int
kv_keys_links_reclaimable(const struct kv_ledger *l, int64_t now, int64_t grace_s)
{
	uint32_t i;
	int n = 0;

	KV_FOR_EACH_SLOT(l, i)
		n += kv_keys_link_reclaimable(l, &l->accounts[i], now, grace_s);
	return n;
}

/* Issued keys: kilovolt keys made without editing a file (kvctl keys
 * create/revoke/rotate, POST/DELETE /keys). An issued key is an ordinary
 * account slot of the ledger (its SHA-256, label, budget, spend), marked
 * KV_AF_ISSUED, so every worker admits it the moment its slot is READY: no
 * restart, no SIGHUP, and the ledger file keeps it across restarts.
 *
 * Rotation gives the same account a new secret. The account stays where
 * its first hash put it (its id, spend and history go on); the new
 * secret's hash claims a KV_SLOT_LINK slot naming the account, and the old
 * secret's slot is marked KV_AF_ROTATED. A revoked account (KV_AF_REVOKED)
 * refuses every secret; requests in flight settle as usual. Link slots come
 * back: the master reclaims a rotated-out secret's after a grace period (at
 * once when the table is full or the account is revoked), and forgetting
 * an account retires its links with it (shm/repair.h).
 *
 * Every function here changes only words it owns, with atomics, so kvctl
 * may call them while workers charge, with or without a daemon. */
#ifndef KV_KEYS_H
#define KV_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "shm/ledger.h"

#define KV_KEY_PREFIX	"kv-"
#define KV_KEY_DIGITS	43	/* 32 random bytes in base62 */
#define KV_KEY_TEXT	(3 + KV_KEY_DIGITS + 1)	/* with the prefix and the NUL */

/* What an issued key starts with. */
struct kv_key_spec {
	const char	*label;		/* required, 1..KV_LABEL_MAX-1 bytes */
	int64_t		 budget_nusd;	/* >= 0 */
	int64_t		 rpm, tpm;	/* per minute; -1: the [budget] default, 0: none */
	int		 period;	/* enum kv_period, or -1: the config's */
	int64_t		 expires;	/* unix seconds; 0: never */
};

/* Why kv_keys_admit refuses a secret. */
enum kv_key_verdict {
	KV_KEY_OK = 0,
	KV_KEY_REVOKED,		/* the account was revoked (or forgotten) */
	KV_KEY_ROTATED,		/* this secret was replaced by kvctl keys rotate */
	KV_KEY_EXPIRED,		/* past the key's --expires */
};

/* A new secret: "kv-" and 43 base62 digits of 32 bytes from getrandom(2),
 * NUL-terminated, in KEY (KV_KEY_TEXT bytes); its SHA-256 in HASH.
 * Returns 0, or -1 with errno set (the entropy pool failed). */
int	kv_keys_generate(char key[KV_KEY_TEXT], uint8_t hash[32]);

/* Base62 digits of the 32 bytes IN, most significant first, exactly
 * KV_KEY_DIGITS of them, NUL-terminated in OUT (KV_KEY_DIGITS + 1). */
void	kv_keys_base62(const uint8_t in[32], char out[KV_KEY_DIGITS + 1]);

/* The live account (READY, not retired by a rotation of the label) whose
 * label is LABEL, or NULL. Links and forgotten slots are not accounts. */
struct kv_account *kv_keys_find_label(const struct kv_ledger *l, const char *label);

/* Issue the key HASH with SPEC: claim its account, set its limits, period
 * and end, then mark it KV_AF_ISSUED | KV_AF_KEPT (never reclaimed). The
 * label must pass kv_key_label_check and be free in the ledger: taken by a
 * live account (a [key] of the config, or an issued key) is an error.
 * Returns the account, or NULL with a message for a person in err (and
 * errno EEXIST, ENOSPC, EINVAL or EAGAIN). A full table asks the master
 * for a reclaim (reclaim_wanted); errno is EAGAIN when rotated-out secrets
 * hold slots it will free (try again), ENOSPC when nothing will. */
struct kv_account *kv_keys_issue(struct kv_ledger *l, const uint8_t hash[32],
	    const struct kv_key_spec *spec, char *err, size_t errlen);

/* Revoke A: its every secret gets 401 from the next request on, on every
 * worker (they read the flag on each admission). Returns 0, or -1 when A
 * was revoked already. */
int	kv_keys_revoke(struct kv_account *a);

/* Give issued account A the new secret NEWHASH: a link for it first, then
 * the secret that was live (A's own, or the newest link's) is marked
 * KV_AF_ROTATED, so at no instant is neither accepted. Budget, spend,
 * limits and history stay A's. Returns 0, or -1 with a message in err and
 * errno EPERM (not issued), EKEYREVOKED, ENOSPC (table full, as
 * kv_keys_issue) or EAGAIN. One rotation of a key at a time. */
int	kv_keys_rotate(struct kv_ledger *l, struct kv_account *a,
	    const uint8_t newhash[32], char *err, size_t errlen);

/* The id (the first 12 hex digits of its SHA-256) of the secret of
 * account A that is live now into ID: A's own, or the link a rotation
 * gave it; "" when none is (every secret rotated out). What the audit log
 * records of a rotation, never a secret. */
void	kv_keys_live_secret_id(const struct kv_ledger *l, const struct kv_account *a,
	    char id[13]);

/* A worker's admission of the slot *A that kv_ledger_account found for the
 * presented secret: follows a link to its account (*A is then the
 * account to charge) and refuses revoked, rotated and expired secrets.
 * NOW in unix seconds. Returns KV_KEY_OK, or why not (*A unchanged). */
enum kv_key_verdict kv_keys_admit(const struct kv_ledger *l, struct kv_account **a,
	    int64_t now);

/* The error message a client gets for a refusal V (the 401's body). */
const char *kv_keys_refusal(enum kv_key_verdict v);

/* The period A's spend resets on: its own (issued with --period), else
 * CONFIGURED ([budget] period). */
enum kv_period kv_keys_period(const struct kv_account *a, enum kv_period configured);

/* The label of a [key] section of CF that an issued key of L holds
 * already (with another secret), or NULL: the two must not clash, so the
 * master refuses such a config at start-up and on reload. */
const char *kv_keys_config_clash(const struct kv_ledger *l, const struct kv_config *cf);

/* The issuing of a key, shared by kvctl keys create and POST /keys: SPEC's
 * label checked against the [key] sections of CF (NULL: none; they share
 * one namespace with issued keys, even before a daemon applied them), a
 * new secret generated into KEY and issued (kv_keys_issue). Returns the
 * account, or NULL with a message in err, errno EEXIST (label taken),
 * ENOSPC (table full), EINVAL (bad spec), EAGAIN or EIO, KEY zeroed and
 * the ledger unchanged. The caller shows KEY once and zeroes it. */
struct kv_account *kv_keys_create(struct kv_ledger *l, const struct kv_config *cf,
	    const struct kv_key_spec *spec, char key[KV_KEY_TEXT], char *err, size_t errlen);

/* A new secret for A (kvctl keys rotate, POST /keys/ID/rotate): generated
 * into KEY, then kv_keys_rotate. Returns 0, or -1 with a message in err,
 * errno EPERM (not an issued key), EKEYREVOKED, ENOSPC, EAGAIN or EIO, and
 * KEY zeroed. */
int	kv_keys_new_secret(struct kv_ledger *l, struct kv_account *a,
	    char key[KV_KEY_TEXT], char *err, size_t errlen);

/* The accounts NAME names, up to MAX of them into OUT, as kvctl and the
 * admin API resolve a KEY argument. An id is the first 12 hex digits of a
 * key's hash, and no name may read as one (common/key_label.h), but an
 * older build let such names in, so:
 *   - 12 or more hex digits: the keys whose hash starts so (an exact id
 *     before any name); a name only when no hash does;
 *   - 6 to 11 hex digits: the keys named NAME and those whose id starts
 *     so; when both kinds match different keys, *CLASH is set (the caller
 *     refuses to pick: 409), OUT holding the named ones first;
 *   - anything else: a name (of a key in the running config or a live
 *     issued key first, then one the config no longer has
 *     (kv_account_label_retired)); failing that, when NAME is hex, an id
 *     prefix.
 * Returns the total number of matches (more than MAX when so many match);
 * *CLASH is 0 unless set above. */
size_t	kv_keys_lookup(const struct kv_ledger *l, const char *name,
	    struct kv_account **out, size_t max, int *clash);

/* How long a rotated-out secret keeps its own refusal ("replaced by a new
 * one") before the master reclaims its link slot (at once when the table
 * is full): then it is a key kilovolt never saw. */
#define KV_KEYS_ROTATED_GRACE_S	(24 * 3600)

/* Mark the secret of slot S (an account or a link) rotated out at NOW (a
 * link keeps NOW in its period_start, which a link has no other use for:
 * the start of its grace). */
void	kv_keys_rotated_out(struct kv_account *s, int64_t now);

/* Whether the master may retire slot S at NOW: S is a link (a later
 * secret of an issued account) whose account is gone, or whose secret was
 * rotated out GRACE_S seconds ago or more (0: whatever its age), or at
 * once when the account is revoked. The live secret of an account stays
 * while the account does (kv_account_retire takes it along). */
int	kv_keys_link_reclaimable(const struct kv_ledger *l, const struct kv_account *s,
	    int64_t now, int64_t grace_s);

/* How many slots kv_keys_link_reclaimable finds reclaimable. */
int	kv_keys_links_reclaimable(const struct kv_ledger *l, int64_t now, int64_t grace_s);

/* Parse "none", "daily", "weekly" or "monthly". Returns 0 or -1. */
int	kv_keys_parse_period(const char *s, int *period);

#endif

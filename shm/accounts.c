/* Accounts in the ledger: a key's id and hash, the claim of its slot
 * (lock-free: a tag CAS, then READY), its lookup, label and index, the
 * bitmap of claimed slots, and the account API kvctl and the admin API
 * write through, with the reset of the spent word (read and charged in
 * reserve.c). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/ledger.h"
#include "common/fmt.h"
#include "shm/ledger-int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

/* A claimer fills its slot between the tag CAS and the store of READY:
 * nanoseconds unless it is preempted. A lookup of the same key polls this
 * many times, then answers "busy" (errno EAGAIN) rather than wait on
 * another process; the master repairs a claim whose claimer died. */
#define CLAIM_POLLS	2000

void
kv_key_id(const uint8_t hash[32], char id[13])
{
	/* two digits a byte from one table: every request names its key */
	kv_fmt_hex_bytes(id, hash, 6);
	id[12] = '\0';
}

void
kv_key_hash(const char *key, size_t len, uint8_t hash[32])
{
	/* Fetched once per process: EVP_sha256() makes EVP_Digest look the
	 * algorithm up again on every call, half the hash's cost. */
	static EVP_MD *sha256;
	unsigned int n = 0;

	if (sha256 == NULL)
		sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	/* Only an allocation failure inside OpenSSL can fail a SHA-256; an
	 * all-zero hash would merge every key into one account, so stop. */
	if (sha256 == NULL || EVP_Digest(key, len, hash, &n, sha256, NULL) != 1 || n != 32) {
		fprintf(stderr, "kilovolt: SHA-256 failed\n");
		abort();
	}
}

/* A slot whose tag is ours but not READY yet: poll a moment. Returns
 * the state seen last. */
static uint32_t
slot_poll_ready(_Atomic uint32_t *state)
{
	uint32_t st = KV_SLOT_FREE;
	int i;

	for (i = 0; i < CLAIM_POLLS; i++) {
		st = atomic_load_explicit(state, memory_order_acquire);
		if (st != KV_SLOT_FREE && st != KV_SLOT_CLAIMING)
			break;
	}
	return st;
}

void
kv_ledger_op_begin(struct kv_ledger *l)
{
	op_enter(l);
}

void
kv_ledger_op_end(struct kv_ledger *l)
{
	op_leave(l);
}

static uint64_t
hash_start(const uint8_t h[32])
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | h[i];
	return v;
}

uint64_t
kv_account_tag(const uint8_t hash[32])
{
	uint64_t t = hash_start(hash) | 1;

	/* Never 0 (free) nor KV_TAG_DEAD (a retired slot). */
	return t == KV_TAG_DEAD ? 3 : t;
}

static void
account_fill(struct kv_account *a, const uint8_t hash[32], const char *label,
    int64_t budget_nusd)
{
	memcpy(a->hash, hash, 32);
	memset(a->label, 0, sizeof(a->label));
	a->flags = 0;
	if (label != NULL && label[0] != '\0') {
		snprintf(a->label, sizeof(a->label), "%s", label);
		a->flags = KV_ACCOUNT_NAMED;
	}
	atomic_store(&a->budget_nusd, budget_nusd);
	/* "Spent since now": a period roll happens only at the next boundary. */
	atomic_store(&a->period_start, (int64_t)time(NULL));
	atomic_store_explicit(&a->state, KV_SLOT_READY, memory_order_release);
}

/* Claim slot A (its tag was EXPECT: free or retired) for HASH. */
static struct kv_account *
account_claim(struct kv_ledger *l, struct kv_account *a, uint64_t expect,
    uint64_t tag, const uint8_t hash[32], const char *label, int64_t budget_nusd)
{
	/* The bit first: a claimer killed after its tag CAS leaves a slot the
	 * repair's scan must still find. */
	kv_ledger_mark_slot(l, (uint32_t)(a - l->accounts));
	if (!atomic_compare_exchange_strong(&a->tag, &expect, tag))
		return NULL;
	/* before account_fill() publishes the slot */
	atomic_store(&a->rpm, atomic_load(&l->hdr->default_rpm));
	atomic_store(&a->tpm, atomic_load(&l->hdr->default_tpm));
	account_fill(a, hash, label, budget_nusd);
	atomic_fetch_add(&l->hdr->accounts_used, 1);
	return a;
}

/* One pass over HASH's chain: the account when found (or EAGAIN when
 * someone is filling it); else the first free or retired slot in *avail.
 * Retired slots are made only by the master while every worker is outside
 * a ledger operation (kv_ledger_reclaim), and a probe and its claim run in
 * one operation, so all claimers of one key see the same first slot and
 * its tag CAS picks one of them: never two accounts for one key. */
static struct kv_account *
account_find(struct kv_ledger *l, const uint8_t hash[32], struct kv_account **avail,
    int *busy)
{
	uint32_t n = l->hdr->max_keys, i, st;
	uint64_t start = hash_start(hash) % n, tag = kv_account_tag(hash), t;
	struct kv_account *a;

	*avail = NULL;
	*busy = 0;
	for (i = 0; i < n; i++) {
		a = &l->accounts[(start + i) % n];
		t = atomic_load_explicit(&a->tag, memory_order_acquire);
		if (t == 0 || t == KV_TAG_DEAD) {
			if (*avail == NULL)
				*avail = a;
			if (t == 0)	/* the end of the chain */
				return NULL;
			continue;
		}
		if (t != tag)
			continue;
		st = atomic_load_explicit(&a->state, memory_order_acquire);
		if (st != KV_SLOT_READY)
			st = slot_poll_ready(&a->state);
		if ((st == KV_SLOT_READY || st == KV_SLOT_LINK) &&
		    memcmp(a->hash, hash, 32) == 0)
			return a;
		/* Ours, still being filled by someone else: never claim a second
		 * slot for the key behind it. */
		if (st != KV_SLOT_READY && st != KV_SLOT_LINK)
			*busy = 1;
	}
	return NULL;
}

#define CLAIM_TRIES	8

/* See kv_ledger_account. */
static struct kv_account *
account_probe(struct kv_ledger *l, const uint8_t hash[32], int create,
    const char *label, int64_t budget_nusd)
{
	struct kv_account *a, *avail;
	uint64_t expect;
	int busy, tries;

	for (tries = 0; tries < CLAIM_TRIES; tries++) {
		if ((a = account_find(l, hash, &avail, &busy)) != NULL)
			return a;
		if (busy) {
			errno = EAGAIN;
			return NULL;
		}
		if (!create || avail == NULL) {
			errno = create ? ENOSPC : ENOENT;
			return NULL;
		}
		expect = atomic_load(&avail->tag);
		if (expect != 0 && expect != KV_TAG_DEAD)
			continue;	/* taken since: look again */
		if ((a = account_claim(l, avail, expect, kv_account_tag(hash), hash, label,
		    budget_nusd)) != NULL)
			return a;
	}
	errno = EAGAIN;
	return NULL;
}

/* See kv_ledger_link. */
static struct kv_account *
link_claim(struct kv_ledger *l, const uint8_t hash[32], const struct kv_account *to)
{
	struct kv_account *a, *avail;
	uint64_t expect;
	int busy;

	if ((a = account_find(l, hash, &avail, &busy)) != NULL || busy) {
		errno = EEXIST;
		return NULL;
	}
	if (avail == NULL) {
		errno = ENOSPC;
		return NULL;
	}
	expect = atomic_load(&avail->tag);
	kv_ledger_mark_slot(l, (uint32_t)(avail - l->accounts));
	if ((expect != 0 && expect != KV_TAG_DEAD) ||
	    !atomic_compare_exchange_strong(&avail->tag, &expect, kv_account_tag(hash))) {
		errno = EAGAIN;
		return NULL;
	}
	memcpy(avail->hash, hash, 32);
	memset(avail->label, 0, sizeof(avail->label));
	avail->flags = 0;
	atomic_store(&avail->link, kv_ledger_account_index(l, to) + 1);
	atomic_store(&avail->link_tag, atomic_load(&to->tag));
	atomic_store(&avail->period_start, (int64_t)time(NULL));
	atomic_store_explicit(&avail->state, KV_SLOT_LINK, memory_order_release);
	atomic_fetch_add(&l->hdr->accounts_used, 1);	/* a slot in use, as an account */
	return avail;
}

struct kv_account *
kv_ledger_link(struct kv_ledger *l, const uint8_t hash[32], const struct kv_account *to)
{
	struct kv_account *a;
	int saved;

	op_enter(l);
	a = link_claim(l, hash, to);
	saved = errno;
	op_leave(l);
	errno = saved;
	return a;
}

/* The slot found last, when account_find would return it: ready or a
 * link, with this key's tag and hash (a slot is retired to
 * KV_TAG_DEAD before it is reused, and a key has one live slot). */
static struct kv_account *
account_memo(struct kv_ledger *l, const uint8_t hash[32])
{
	struct kv_account *a;
	uint32_t st;

	if (l->account_memo == 0 || l->account_memo > l->hdr->max_keys)
		return NULL;
	a = &l->accounts[l->account_memo - 1];
	if (atomic_load_explicit(&a->tag, memory_order_acquire) != kv_account_tag(hash))
		return NULL;
	st = atomic_load_explicit(&a->state, memory_order_acquire);
	if ((st != KV_SLOT_READY && st != KV_SLOT_LINK) || memcmp(a->hash, hash, 32) != 0)
		return NULL;
	return a;
}

struct kv_account *
kv_ledger_account(struct kv_ledger *l, const uint8_t hash[32], int create,
    const char *label, int64_t budget_nusd)
{
	struct kv_account *a;
	int saved;

	op_enter(l);
	if ((a = account_memo(l, hash)) != NULL) {
		op_leave(l);
		return a;
	}
	a = account_probe(l, hash, create, label, budget_nusd);
	saved = errno;
	if (a != NULL)
		l->account_memo = kv_ledger_account_index(l, a) + 1;
	op_leave(l);
	errno = saved;
	return a;
}

int
kv_account_label_retired(const struct kv_account *a)
{
	return (a->flags & KV_ACCOUNT_NAMED) && a->label[0] != '\0' &&
	    (atomic_load(&a->aflags) & KV_AF_FORMER);
}

void
kv_account_set_label(struct kv_account *a, const char *label)
{
	if (strncmp(a->label, label, sizeof(a->label) - 1) == 0 &&
	    (a->flags & KV_ACCOUNT_NAMED))
		return;
	memset(a->label, 0, sizeof(a->label));
	snprintf(a->label, sizeof(a->label), "%s", label);
	a->flags |= KV_ACCOUNT_NAMED;
}

uint32_t
kv_ledger_account_index(const struct kv_ledger *l, const struct kv_account *a)
{
	return (uint32_t)(a - l->accounts);
}

void
kv_ledger_mark_slot(struct kv_ledger *l, uint32_t i)
{
	atomic_fetch_or(&l->used[i / 64], (uint64_t)1 << (i % 64));
}

uint32_t
kv_ledger_next_slot(const struct kv_ledger *l, uint32_t i)
{
	uint32_t n = l->hdr->max_keys, w;
	uint64_t bits;

	if (i >= n)
		return n;
	w = i / 64;
	bits = atomic_load_explicit(&l->used[w], memory_order_acquire) &
	    (~(uint64_t)0 << (i % 64));
	while (bits == 0) {
		if (++w >= (n + 63) / 64)
			return n;
		bits = atomic_load_explicit(&l->used[w], memory_order_acquire);
	}
	i = w * 64 + (uint32_t)__builtin_ctzll(bits);
	return i < n ? i : n;
}

int64_t
kv_account_spent_reset(struct kv_account *a)
{
	int64_t cur = atomic_load(&a->spent_nusd);

	while (!atomic_compare_exchange_weak(&a->spent_nusd, &cur, cur & KV_SPENT_ROLLED))
		;
	return spent_value(cur);
}

/* ---- the account API (kvctl, the admin API) -------------------------- */

int64_t
kv_account_reset(struct kv_account *a)
{
	atomic_store(&a->lease_cap_nusd, 0);
	return kv_account_spent_reset(a);
}

int64_t
kv_account_set_budget(struct kv_account *a, int64_t v)
{
	atomic_fetch_or(&a->aflags, KV_AF_OVERRIDE);
	return atomic_exchange(&a->budget_nusd, v);
}

void
kv_account_set_limits(struct kv_account *a, int64_t rpm, int64_t tpm)
{
	if (rpm >= 0) {
		atomic_store(&a->rpm, (uint32_t)rpm);
		atomic_store(&a->rpm_tat, 0);
	}
	if (tpm >= 0) {
		atomic_store(&a->tpm, (uint32_t)tpm);
		atomic_store(&a->tpm_tat, 0);
	}
}


int64_t
kv_account_config_budget(struct kv_account *a, int64_t budget)
{
	int64_t dropped = -1;

	if (atomic_load(&a->aflags) & KV_AF_OVERRIDE) {
		if (atomic_load(&a->config_budget_nusd) == budget)
			return -1;
		atomic_fetch_and(&a->aflags, ~KV_AF_OVERRIDE);
		dropped = atomic_load(&a->budget_nusd);
	}
	atomic_store(&a->config_budget_nusd, budget);
	atomic_store(&a->budget_nusd, budget);
	return dropped;
}

void
kv_account_config_key(struct kv_account *a, uint32_t rpm, uint32_t tpm)
{
	atomic_store(&a->rpm, rpm);
	atomic_store(&a->tpm, tpm);
	atomic_fetch_or(&a->aflags, KV_AF_CONFIG | KV_AF_KEPT);
	atomic_fetch_and(&a->aflags, ~KV_AF_FORMER);
}

void
kv_account_config_gone(struct kv_account *a, int label_taken)
{
	uint32_t fl = atomic_load(&a->aflags);

	if (!(fl & KV_AF_FORMER) && ((fl & KV_AF_CONFIG) || label_taken))
		atomic_fetch_or(&a->aflags, KV_AF_FORMER);
	if (fl & KV_AF_CONFIG)
		atomic_fetch_and(&a->aflags, ~KV_AF_CONFIG);
}

int64_t
kv_account_budget_from_config(struct kv_account *a)
{
	int64_t v = atomic_load(&a->config_budget_nusd);

	atomic_fetch_and(&a->aflags, ~KV_AF_OVERRIDE);
	atomic_store(&a->budget_nusd, v);
	return v;
}

void
kv_account_mark_forget(struct kv_account *a)
{
	atomic_fetch_or(&a->aflags, KV_AF_FORGET);
}

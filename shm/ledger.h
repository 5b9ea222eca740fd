/* The ledger: open/create/validate the mapped segment, accounts,
 * reservations, settlement and per-model totals. Safe to call from many
 * processes at once; everything shared is updated with C11 atomics. */
#ifndef KV_LEDGER_H
#define KV_LEDGER_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"
#include "common/money.h"
#include "shm/ledger-t.h"

struct kv_ledger {
	int			 fd;
	size_t			 size;
	void			*base;
	struct kv_ledger_header	*hdr;
	struct kv_worker_slot	*workers;
	struct kv_model_slot	*models;
	struct kv_target_slot	*targets;	/* [KV_TARGET_SLOTS] */
	struct kv_account	*accounts;
	_Atomic uint64_t	*used;		/* bit i: account slot i was ever claimed */
	struct kv_hist_slot	*history;	/* [max_keys], beside accounts[i] */
	/* Process-local: set by a worker to its own slot, so its ledger
	 * operations announce themselves to the master's repair. */
	struct kv_worker_slot	*self;
	int			 op_depth;
	/* Process-local: the master's eventfd that a worker writes to when
	 * it parks a request for want of cluster lease (-1: none). */
	int			 lease_kick_fd;
	/* Process-local: the ledger's lock holder before this process took
	 * it (kv_ledger_lock), 0 for none: the cluster tells its own last run
	 * from another live instance under the same host id. */
	uint64_t		 prev_instance;
	/* Process-local: 1 + the model row kv_ledger_model found last (0:
	 * none): a worker settles the same model request after request, and
	 * a row once ready keeps its name for the ledger's life. */
	uint32_t		 model_memo;
	/* Process-local: 1 + the account slot kv_ledger_account found last
	 * (0: none), taken again only while it is ready (or a link) with
	 * the same tag and hash: a keep-alive client sends one key. */
	uint32_t		 account_memo;
};

#define KV_LEDGER_CREATE	0x1	/* create the file (mode 0600) when missing */
#define KV_LEDGER_READONLY	0x2	/* map read-only (kvctl's read commands) */

/* Map the ledger at PATH. With KV_LEDGER_CREATE a missing file is created
 * with room for max_keys accounts; an existing file must pass every check
 * (magic, version, sizes, carved layout ends at the file size) and, when
 * max_keys is non-zero, have that many slots. A failing file is never reset.
 * Returns 0, or -1 with a message for a person in err. */
int	kv_ledger_open(struct kv_ledger *l, const char *path, uint32_t max_keys,
	    int flags, char *err, size_t errlen);

void	kv_ledger_close(struct kv_ledger *l);

/* msync the whole segment. Returns 0 or -1 (errno set). */
int	kv_ledger_sync(struct kv_ledger *l);

/* Key id: the first 12 hex digits of the hash, NUL-terminated (13 bytes). */
void	kv_key_id(const uint8_t hash[32], char id[13]);

/* SHA-256 of a raw credential. */
void	kv_key_hash(const char *key, size_t len, uint8_t hash[32]);

/* Find the account for HASH. When absent and create is set, claim a slot
 * with the given label ("" or NULL for none) and budget. Never waits on
 * another process. Returns the account, or NULL with errno ENOENT (absent,
 * create == 0), ENOSPC (table full) or EAGAIN (another process is creating
 * this very account right now, or died doing it: retry shortly). The slot
 * found may be a KV_SLOT_LINK (a rotated issued key): resolve it with
 * kv_keys_admit (shm/keys.h) before charging. */
struct kv_account *kv_ledger_account(struct kv_ledger *l, const uint8_t hash[32],
	    int create, const char *label, int64_t budget_nusd);

/* Claim a KV_SLOT_LINK slot for HASH naming account TO (a rotated
 * secret, shm/keys.h): kv_ledger_account finds it like an account, and
 * every listing skips it (it is not READY). Returns the slot, or NULL with
 * errno EEXIST (HASH already has a slot), ENOSPC (table full) or EAGAIN
 * (raced another claim: retry). */
struct kv_account *kv_ledger_link(struct kv_ledger *l, const uint8_t hash[32],
	    const struct kv_account *to);

/* The claim tag of a hash: never 0. */
uint64_t kv_account_tag(const uint8_t hash[32]);

/* a + b, saturating at INT64_MAX / INT64_MIN instead of wrapping. */
int64_t	kv_sat_add(int64_t a, int64_t b);

/* A named account whose key is no longer in the running config (rotated
 * or removed): its label is the one it had there, kept for the record but
 * no longer the name of a key. kvctl and the admin API resolve a label to
 * the account in the config first, and show these marked. */
int	kv_account_label_retired(const struct kv_account *a);

/* Give A the config's label for its key (a [key] renamed). Only the
 * master; a reader may see a torn label for that instant (they copy and
 * re-terminate). */
void	kv_account_set_label(struct kv_account *a, const char *label);

/* Index of an account in the table (for kv_resv.account). */
uint32_t kv_ledger_account_index(const struct kv_ledger *l, const struct kv_account *a);

/* Reset spent to 0 at the start of a new UTC period (lazily, on use):
 * daily, weekly (Monday) or monthly. Ordered so that a kill -9 at any
 * point leaves a state the master's repair finishes exactly (no spend of
 * the old period left in the new one, none of the new one cleared):
 *   1. CAS period_start from the old start to -start (negative: a roll is
 *      under way; its winner alone goes on; others see "current");
 *   2. close a cluster lease (lease_cap_nusd := 0);
 *   3. atomic_exchange spent with KV_SPENT_ROLLED (the old spend goes,
 *      the bit says it went; settlements add beside the bit);
 *   4. period_start := start;
 *   5. clear KV_SPENT_ROLLED.
 * kv_ledger_roll_finish completes a roll stopped anywhere in there. Inside
 * the worker's ledger-op bracket, so the repair never races a live roller. */
void	kv_ledger_period_roll(struct kv_ledger *l, struct kv_account *a,
	    enum kv_period period, int64_t now);

/* With the ledger quiesced (or no other writer alive): finish a roll its
 * worker stopped in (see kv_ledger_period_roll). Returns 1 when there was
 * one, else 0. */
int	kv_ledger_roll_finish(struct kv_account *a);

/* In spent_nusd: set by a period roll between clearing spent and its end
 * (kv_ledger_period_roll). Readers use kv_account_spent, never the word. */
#define KV_SPENT_ROLLED	(INT64_C(1) << 62)
#define KV_SPENT_MAX	(KV_SPENT_ROLLED - 1)	/* spent saturates here */

/* The account's spent: the word without KV_SPENT_ROLLED, and INT64_MAX
 * once saturated (an overflow sentinel), so every budget refuses it. */
int64_t	kv_account_spent(const struct kv_account *a);

/* spent += COST (COST >= 0), saturating, keeping KV_SPENT_ROLLED. */
void	kv_account_charge(struct kv_account *a, int64_t cost);

/* spent := 0 (kvctl reset, the admin API), keeping KV_SPENT_ROLLED;
 * returns what it was (as kv_account_spent). */
int64_t	kv_account_spent_reset(struct kv_account *a);

/* The account API: kvctl and the admin API (master/status.c) change an
 * account only through these, so money words have one writer module.
 * kv_account_reset: close A's cluster lease (capped in spent units, the
 * master re-leases: docs/cluster.md), then spent := 0 as
 * kv_account_spent_reset; returns what spent was. */
int64_t	kv_account_reset(struct kv_account *a);

/* budget := V as an override (KV_AF_OVERRIDE: kept across reloads until the
 * config's own value changes); returns the budget it replaced. */
int64_t	kv_account_set_budget(struct kv_account *a, int64_t v);

/* rpm := RPM and tpm := TPM where >= 0 (a negative one is left alone); a
 * limit set starts from a full bucket (its TAT := 0), as a new key does. */
void	kv_account_set_limits(struct kv_account *a, int64_t rpm, int64_t tpm);

/* The config's budget BUDGET for a key of the config: config_budget :=
 * BUDGET and budget := BUDGET, unless an override (kv_account_set_budget)
 * is kept because the config's value did not change. Returns the override
 * dropped (its budget, nusd), or -1 when none was. */
int64_t	kv_account_config_budget(struct kv_account *a, int64_t budget);

/* A key of the config: rpm := RPM and tpm := TPM (the running buckets
 * kept), marked KV_AF_CONFIG and kept, no longer a former name. */
void	kv_account_config_key(struct kv_account *a, uint32_t rpm, uint32_t tpm);

/* A key gone from the config: no longer KV_AF_CONFIG; its label marked as
 * the one it had (KV_AF_FORMER) when it was a key of the config or when
 * LABEL_TAKEN (a key of the config now has that name). Each flag is written
 * only when it changes: this runs over every claimed slot at each reload. */
void	kv_account_config_gone(struct kv_account *a, int label_taken);

/* budget := the config's budget, the override dropped (kvctl budget KEY
 * --config); returns that budget. */
int64_t	kv_account_budget_from_config(struct kv_account *a);

/* Ask the master to forget A (KV_AF_FORGET): it retires the account once
 * no request holds it, and clears the flag when done. */
void	kv_account_mark_forget(struct kv_account *a);

/* True when the slot whose `state` word is STATE (an account, model or
 * target slot) is KV_SLOT_READY: filled, safe to read (acquire). */
static inline int
kv_slot_ready(const _Atomic uint32_t *state)
{
	return atomic_load_explicit(state, memory_order_acquire) == KV_SLOT_READY;
}

/* The account's period start, also while a roll is under way. */
int64_t	kv_account_period(const struct kv_account *a);

/* Start of the UTC period containing NOW (0 for KV_PERIOD_NONE). */
int64_t	kv_period_start(enum kv_period period, int64_t now);

/* Bracket a worker's own ledger operation made of several steps outside
 * this file (the rate limits' admission, send and settle): the master's
 * repair then never sees it half-way (kv_ledger_quiesce). Nests; nothing
 * outside a worker (l->self NULL). */
void	kv_ledger_op_begin(struct kv_ledger *l);
void	kv_ledger_op_end(struct kv_ledger *l);

/* Reserve AMOUNT on account A for worker slot W: admitted only when
 * spent + reserved + amount <= budget (checked and applied in one CAS).
 * On success returns the reservation index (>= 0) recorded in W and sets
 * *remaining to budget - spent - reserved after it. Returns -1 when the
 * budget refuses (*remaining set too), -2 when W has no free
 * reservation slot, -3 when the budget would admit but this host's cluster
 * lease is short (the master leases more within a second; the amount is
 * recorded in lease_need_nusd so that it asks for at least that), -4 when
 * the master retired the account since it was looked up (look it up
 * again: kv_ledger_reclaim). */
int	kv_ledger_reserve(struct kv_ledger *l, struct kv_worker_slot *w,
	    struct kv_account *a, int64_t amount, int64_t *remaining);

/* kv_ledger_reserve never bounded by a cluster lease: a node of the
 * budget tree without a budget of its own (shm/tree.h), which Redis
 * leases nothing of. */
int	kv_ledger_reserve_node(struct kv_ledger *l, struct kv_worker_slot *w,
	    struct kv_account *a, int64_t amount, int64_t *remaining);

/* A reservation of nothing on A for W that no budget refuses: for a charge
 * kilovolt cannot refuse (what the provider bills for work it started by
 * itself and was told to stop), settled with its cost as any other.
 * Returns its index, -2 when W has no free record, -4 when A was retired. */
int	kv_ledger_hold(struct kv_ledger *l, struct kv_worker_slot *w, struct kv_account *a);

/* Settle a node's reservation RESV: COST charged, the rest released, and
 * when COUNTED the node's request count and last use. */
void	kv_ledger_settle_node(struct kv_ledger *l, struct kv_worker_slot *w, int resv,
	    int64_t cost, int counted);

/* Make COST what the master charges for RESV if the worker dies before
 * settling it (what kv_ledger_settle records for its own window), so a
 * request settling several records is charged COST at each, whichever
 * it reached. */
void	kv_ledger_resv_final(struct kv_worker_slot *w, int resv, int64_t cost);

/* Replace reservation RESV of worker W with the real COST on its account,
 * and add USAGE's tokens to the account and to MODEL's totals (model may be
 * NULL or "" when unknown). cost == 0 with usage NULL just releases. */
void	kv_ledger_settle(struct kv_ledger *l, struct kv_worker_slot *w, int resv,
	    int64_t cost, const struct kv_usage *usage, const char *model);

/* The request behind reservation RESV of W reached the provider: should
 * the worker die before settling, the master charges MIN_NUSD (at most the
 * amount reserved) instead of releasing it all (0: releasing it all
 * again, for a request the provider provably did not get). Written only by
 * the owning worker. */
void	kv_ledger_resv_sent(struct kv_worker_slot *w, int resv, int64_t min_nusd);

/* In kv_worker_slot.resv_sent_nusd: the value is the settlement's real
 * cost, charged as it is if the worker dies (kv_ledger_settle). */
#define KV_RESV_COST	(INT64_C(1) << 62)

/* Release every reservation recorded in worker slot W and clear its gauges;
 * the master calls it after reaping the worker, after
 * kv_ratelimit_release_worker() (shm/ratelimit.h), which reads the same
 * records to refund their tokens. A reservation marked by
 * kv_ledger_resv_sent leaves its minimum spent, one whose worker died inside
 * kv_ledger_settle its real cost. Returns the number released. */
int	kv_ledger_release_worker(struct kv_ledger *l, struct kv_worker_slot *w);

/* Per-model slot, claimed on first use; NULL when the table is full. */
struct kv_model_slot *kv_ledger_model(struct kv_ledger *l, const char *model);

/* Remaining budget: budget - spent - reserved (may be negative). */
int64_t	kv_account_remaining(const struct kv_account *a);

/* Sum a counter-like field over all worker slots (gauges, requests). */
uint64_t kv_ledger_sum_active_streams(const struct kv_ledger *l);
uint64_t kv_ledger_sum_connections(const struct kv_ledger *l);
uint64_t kv_ledger_sum_mem_pending(const struct kv_ledger *l);

/* Record a finished request's time to first byte and duration. */
void	kv_histogram_observe(struct kv_histogram *h, uint64_t us);

/* Scans of the account table go through the claimed-slot bitmap, so they
 * map only the pages of slots that were ever claimed: checking every
 * slot's state made an idle master with 4096 slots hold 6.4 MB of its
 * 7.4 MB ledger (page cache a container's memory limit is charged for).
 * kv_ledger_next_slot: the first index >= I whose slot was ever claimed
 * (free again only when its claimer died before its tag CAS; retired
 * slots stay marked until a rebuild), or max_keys. kv_ledger_mark_slot:
 * set I's bit, before the slot's tag CAS (the ledger's own claims do). */
uint32_t	kv_ledger_next_slot(const struct kv_ledger *l, uint32_t i);
void		kv_ledger_mark_slot(struct kv_ledger *l, uint32_t i);

#define KV_FOR_EACH_SLOT(l, i) \
	for ((i) = kv_ledger_next_slot((l), 0); (i) < (l)->hdr->max_keys; \
	    (i) = kv_ledger_next_slot((l), (i) + 1))

/* One past the highest reservation index W ever recorded: scans of its
 * records stop there (a worker reuses the lowest free ones). */
uint32_t	kv_ledger_resv_end(const struct kv_worker_slot *w);

#endif

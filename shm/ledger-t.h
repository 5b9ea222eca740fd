/* The ledger segment's layout, and nothing else. Included by kilovoltd,
 * kvctl and the tests. Every shared word is a naturally aligned C11 atomic;
 * no lock lives in the segment, so no dead process can hold one.
 *
 * File layout (offsets in the header, checked on every open):
 *   struct kv_ledger_header
 *   struct kv_worker_slot   [KV_WORKER_SLOTS]
 *   struct kv_model_slot    [KV_MODEL_SLOTS]
 *   struct kv_target_slot   [KV_TARGET_SLOTS]	(version 11; at the end of the models)
 *   uint64_t                [(max_keys + 63) / 64], rounded to 64 bytes:
 *                           the claimed-slot bitmap (kv_ledger_next_slot;
 *                           its place follows from max_keys)
 *   struct kv_account       [max_keys]
 *   struct kv_hist_slot     [max_keys]	(version 14; its place follows from max_keys)
 */
#ifndef KV_LEDGER_T_H
#define KV_LEDGER_T_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/ledger_sizes.h"	/* KV_WORKER_SLOTS, KV_LABEL_MAX */

#define KV_LEDGER_MAGIC		0x5245474445564b31ULL	/* "1KVLEDGER" */
#define KV_LEDGER_VERSION	19u	/* 2: claim tags, repair and lock identity; 3: cluster leases;
					   4: per-key estimated and free counts;
					   5: rate limits (account, kv_resv.tokens);
					   6: key policy, reclaim request;
					   7: upstream targets (header, worker in-flight);
					   8: per-key spend history;
					   9: kv_worker_slot.resv_sent_nusd;
					   10: target health (active checks);
					   11: the target table after the models, in-flight counts in it;
					   12: the claimed-slot bitmap before the accounts,
					       kv_worker_slot.resv_hi;
					   13: cluster leases of rpm/tpm (account);
					   14: history rings apart from the accounts;
					   15: upstream TLS handshake and hand-off counters;
					   16: issued keys (shm/keys.h): link slots,
					       kv_account.link/link_tag/expires/period;
					   17: the cluster incarnation (header);
					   18: relayed 5xx and cut counters, the
					       requests/errors history (header);
					   19: connections refused and shed (counters),
					       kv_worker_slot.mem_pending */
#define KV_RESV_PER_WORKER	2048	/* in-flight reservations one worker may hold */
#define KV_MODEL_SLOTS		256
#define KV_MODEL_NAME		96
#define KV_TARGET_SLOTS		256	/* upstream targets (shm/targets.h), a table of
					   their own: the header stays under 4 KB */
#define KV_TARGET_NAME		64
#define KV_HIST_BUCKETS		12	/* + the implicit +Inf bucket */
#define KV_HIST_MINUTES		60	/* spend history: the last hour by minute */
#define KV_HIST_HOURS		24	/* ... and the last day by hour */
#define KV_HIST_PAD		7	/* keeps struct kv_account a multiple of 64 bytes */

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");

/* Histogram bucket upper bounds, in milliseconds; shared by ttfb and duration. */
#define KV_HIST_BOUNDS_MS { 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000 }

/* Global counters, declared once: X(name, help). Each becomes an
 * _Atomic uint64_t field in struct kv_counters, a status row, a metric
 * (kilovolt_<name>) and a kvctl status line. */
#define KV_COUNTERS(X) \
	X(requests_total,		"requests proxied (all outcomes)") \
	X(responses_2xx_total,		"upstream responses with a 2xx status") \
	X(responses_4xx_total,		"responses with a 4xx status") \
	X(responses_5xx_total,		"responses with a 5xx status") \
	X(budget_refusals_total,	"requests refused with 402 for budget") \
	X(upstream_errors_total,	"upstream connect, TLS or protocol failures") \
	X(client_aborts_total,		"streams cut short by the client") \
	X(received_bytes_total,		"bytes received from clients") \
	X(sent_bytes_total,		"bytes sent to clients") \
	X(input_tokens_total,		"input tokens billed") \
	X(output_tokens_total,		"output tokens billed") \
	X(cached_input_tokens_total,	"cached input tokens billed") \
	X(cost_nusd_total,		"cost charged, nano-dollars") \
	X(estimated_requests_total,	"requests whose usage was estimated") \
	X(cluster_lease_refusals_total,	"requests refused with 503 while this host's lease was short") \
	X(cluster_syncs_total,		"lease syncs with Redis that succeeded") \
	X(cluster_redis_errors_total,	"Redis connection failures and error replies") \
	X(cluster_overdraft_nusd_total,	"spent past this host's lease while Redis was down (open)") \
	X(free_requests_total,		"requests relayed unmetered (free endpoints, free_paths)") \
	X(rate_limited_total,		"requests refused with 429 by a key's rpm or tpm") \
	X(upstream_tls_handshakes_total, "upstream TLS handshakes completed (full or resumed)") \
	X(upstream_tls_handoffs_total,	"upstream TLS connections moved from OpenSSL to kilovolt's own record layer") \
	X(responses_5xx_relayed_total,	"upstream responses with a 5xx status relayed to the client") \
	X(responses_cut_total,		"responses cut short after their head, not by the client") \
	X(accept_refusals_total,	"connections answered 503 at accept (memory at the refusal point, or max_connections)") \
	X(idle_shed_total,		"connections that had sent nothing, closed to make room for others") \
	X(heads_shed_total,		"connections with an unfinished request head, closed to make room for others")

struct kv_counters {
#define KV_X_FIELD(name, help) _Atomic uint64_t name;
	KV_COUNTERS(KV_X_FIELD)
#undef KV_X_FIELD
};

/* Version 18: requests and errors (relayed 5xx, upstream failures, cuts)
 * per minute over the last hour and per hour over the last day, for the
 * status page's chart; rings indexed by time as struct kv_hist_slot's,
 * written by the master only (kv_history_sample_totals). */
struct kv_rate_hist {
	_Atomic int64_t	  minute;		/* unix minute of the newest minute bucket */
	_Atomic int64_t	  hour;
	_Atomic uint64_t  sampled_requests;	/* the counters at the last sample */
	_Atomic uint64_t  sampled_errors;
	_Atomic int64_t	  minute_req[KV_HIST_MINUTES];
	_Atomic int64_t	  minute_err[KV_HIST_MINUTES];
	_Atomic int64_t	  hour_req[KV_HIST_HOURS];
	_Atomic int64_t	  hour_err[KV_HIST_HOURS];
};

struct kv_histogram {
	_Atomic uint64_t bucket[KV_HIST_BUCKETS + 1];	/* non-cumulative; last is +Inf */
	_Atomic uint64_t sum_us;
	_Atomic uint64_t count;
};

/* One upstream target ("NAME/HOST:PORT"), claimed by CAS on `state` and
 * shared by every worker: passive health and per-target counters. Its
 * in-flight requests are counted per worker slot, so that a dead worker's
 * die with it. */
struct kv_target_slot {
	_Alignas(64) _Atomic uint32_t state;	/* 0 free, 1 claiming, 2 ready */
	_Atomic uint32_t  health;		/* version 10: KV_HEALTH_*, set by the master */
	char		  name[KV_TARGET_NAME];
	_Atomic uint32_t  fails;		/* consecutive failures */
	_Atomic uint32_t  ejections;		/* in a row: the cool-down grows */
	_Atomic int64_t	  down_until_ms;	/* ejected or cooling until, CLOCK_MONOTONIC ms */
	_Atomic uint64_t  requests;		/* attempts sent to it */
	_Atomic uint64_t  failures;
	_Atomic uint64_t  retries;		/* attempts moved away from it */
	_Atomic uint64_t  ejections_total;
	/* Version 10: the master's active check (master/health_check.h). */
	_Atomic int64_t	  health_checked_ms;	/* last check's end, CLOCK_MONOTONIC ms; 0 never */
	/* Version 11 (was kv_worker_slot.target_inflight): requests in flight
	 * to this target, [worker slot index], each written by its worker only. */
	_Atomic uint16_t  inflight[KV_WORKER_SLOTS];
};

#define KV_HEALTH_UNCHECKED	0u	/* no active check: usable */
#define KV_HEALTH_UP		1u	/* passed its last check */
#define KV_HEALTH_DOWN		2u	/* failed its last check: skipped */

struct kv_ledger_header {
	uint64_t	  magic;
	uint32_t	  version;
	uint32_t	  header_size;		/* sizeof(struct kv_ledger_header) */
	uint32_t	  worker_slot_size;
	uint32_t	  worker_slots;
	uint32_t	  model_slot_size;
	uint32_t	  model_slots;
	uint32_t	  account_size;
	uint32_t	  max_keys;
	uint64_t	  workers_off;
	uint64_t	  models_off;
	uint64_t	  accounts_off;
	uint64_t	  total_size;		/* file size; the layout must end here */
	_Atomic int32_t	  master_pid;
	uint32_t	  pad0;
	_Atomic int64_t	  master_start;		/* unix seconds */
	_Atomic int64_t	  created;		/* unix seconds */
	_Atomic uint32_t  accounts_used;	/* slots READY or LINK (links since issue 33;
						   the repair recounts an older ledger's) */
	_Atomic uint32_t  models_used;
	_Alignas(64) struct kv_counters counters;
	struct kv_histogram ttfb;		/* time to first response byte */
	struct kv_histogram duration;		/* whole request */
	/* Version 2: who holds the ledger, and the master's repair. */
	_Atomic uint64_t  instance;		/* random id of the lock holder; 0 = none */
	_Atomic uint32_t  quiesce;		/* non-zero while the master repairs */
	uint32_t	  pad1;
	_Atomic uint64_t  repairs;		/* counters and slots the repair corrected */
	char		  master_host[64];	/* hostname of the lock holder */
	/* Version 3. Cluster leases (master/cluster.c): 1 while admission is bounded by
	 * each account's lease_cap_nusd; 0 without [cluster]. */
	_Atomic uint32_t  cluster;
	_Atomic uint32_t  cluster_up;		/* 1 while Redis answers */
	_Atomic int64_t	  cluster_synced_ms;	/* last successful sync, unix ms */
	/* Version 5: the [budget] rpm/tpm a new account starts with; set by the master. */
	_Atomic uint32_t  default_rpm;
	_Atomic uint32_t  default_tpm;
	/* Version 6: the running config's key policy, set by the master and
	 * read by every generation's workers, so a reload's unknown_keys
	 * applies at once; and a worker's "table full" call for a reclaim. */
	_Atomic uint32_t  policy;		/* KV_POLICY_* bits */
	_Atomic uint32_t  reclaim_wanted;	/* set by workers, cleared by the master */
	/* Version 11: the target table follows the model slots (version 7 to
	 * 10 kept 16 targets here). Its place and size are implied by
	 * models_off and accounts_off, which the layout words already hold
	 * and every open checks. */
	/* Version 17: this ledger's cluster incarnation (shm/incarnation.h):
	 * a random id, and what identified the ledger when it was drawn, so
	 * that a copy of the file draws its own. */
	_Atomic uint64_t  incarnation;		/* 0 until first drawn */
	uint64_t	  inc_dev;		/* the file's st_dev and st_ino then */
	uint64_t	  inc_ino;
	char		  inc_host_id[64];	/* the [cluster] host_id then */
	/* Version 18. */
	_Alignas(64) struct kv_rate_hist rates;
};

#define KV_POLICY_DENY	0x1u	/* unknown_keys = deny */

/* One in-flight reservation, written only by the owning worker and released
 * by the master when that worker dies. */
struct kv_resv {
	_Atomic uint32_t  account;		/* account index + 1; 0 = free */
	_Atomic uint32_t  tokens;		/* TPM reservation (shm/ratelimit.h) */
	_Atomic int64_t	  amount_nusd;
};

enum kv_worker_state {
	KV_WORKER_FREE = 0,
	KV_WORKER_STARTING,
	KV_WORKER_RUNNING,
	KV_WORKER_DRAINING,	/* old generation after a reload, or shutting down */
};

struct kv_worker_slot {
	_Alignas(64) _Atomic int32_t pid;
	_Atomic uint32_t  state;		/* enum kv_worker_state */
	_Atomic uint32_t  generation;
	_Atomic uint32_t  resv_hint;		/* next free reservation to try */
	_Atomic int64_t	  started;		/* unix seconds */
	_Atomic int64_t	  heartbeat;		/* unix seconds, updated by the worker */
	_Atomic uint64_t  connections;		/* open client connections (gauge) */
	_Atomic uint64_t  active_streams;	/* requests in flight (gauge) */
	_Atomic uint64_t  requests;		/* requests served by this process */
	/* Version 19: bytes the worker's requests still to be set up will
	 * add (its memory guard's estimate), summed by every worker's guard. */
	_Atomic uint64_t  mem_pending;
	/* Version 11: one past the highest reservation index ever recorded
	 * (kv_ledger_resv_end), so scans of a slot's 2048 records map only
	 * the pages a worker used. */
	_Atomic uint32_t  resv_hi;
	struct kv_resv	  resv[KV_RESV_PER_WORKER];
	/* Version 2. in_ledger is 1 while the worker is inside a ledger
	 * operation; the master's repair waits for 0 (see kv_ledger_quiesce). */
	_Alignas(64) _Atomic uint32_t in_ledger;
	_Atomic uint32_t  quiesce_timeouts;	/* ops that stopped waiting for a repair */
	_Atomic uint64_t  instance;		/* header instance of the spawning master */
	_Atomic uint64_t  pid_start;		/* the worker's start time, clock ticks */
	/* Version 9. Per reservation, once its request reached the provider:
	 * what the master charges if the worker dies (kv_ledger_resv_sent);
	 * 0 = nothing sent. */
	_Atomic int64_t	  resv_sent_nusd[KV_RESV_PER_WORKER];
};

/* Slot states of accounts and models. A slot is claimed by a CAS of its
 * `tag` from 0 to the key's tag (never 0), then filled, then made READY:
 * a lookup that meets a tag not its own skips the slot without waiting. */
#define KV_SLOT_FREE	 0u
#define KV_SLOT_CLAIMING 1u
#define KV_SLOT_READY	 2u
#define KV_SLOT_DEAD	 3u	/* tombstone: skipped by lookups, chain goes on */
#define KV_SLOT_LINK	 4u	/* version 16, accounts only: a rotated secret of the
				   account `link` names (shm/keys.h); found by
				   lookups, skipped by every listing (not READY) */
#define KV_TAG_DEAD	 1u	/* the tag of a retired slot; a claim may reuse it */

/* Per-model totals; slot claimed by CAS on `tag`. */
struct kv_model_slot {
	_Alignas(64) _Atomic uint32_t state;	/* KV_SLOT_* */
	char		  name[KV_MODEL_NAME];
	_Atomic uint64_t  requests;
	_Atomic uint64_t  input_tokens;
	_Atomic uint64_t  output_tokens;
	_Atomic uint64_t  cached_input_tokens;
	_Atomic uint64_t  cost_nusd;
	_Atomic uint64_t  tag;			/* version 2: claim word, hash of name */
};

/* One account: a credential's SHA-256, never the credential itself.
 * Claimed by CAS on `tag`; found by open addressing on the hash. */
struct kv_account {
	_Alignas(64) _Atomic uint32_t state;	/* KV_SLOT_* */
	uint32_t	  flags;		/* KV_ACCOUNT_NAMED */
	uint8_t		  hash[32];
	char		  label[KV_LABEL_MAX];	/* "" when unnamed */
	_Atomic int64_t	  budget_nusd;
	_Atomic int64_t	  spent_nusd;
	_Atomic int64_t	  reserved_nusd;
	_Atomic int64_t	  period_start;		/* unix seconds of the current period; in a
						   KV_SLOT_LINK, when it was made, then when
						   its secret was rotated out (shm/keys.h) */
	_Atomic int64_t	  last_used;		/* unix seconds */
	_Atomic uint64_t  requests;
	_Atomic uint64_t  input_tokens;
	_Atomic uint64_t  output_tokens;
	_Atomic uint64_t  cached_input_tokens;
	_Atomic uint64_t  refusals;
	/* Version 2. */
	_Atomic uint64_t  tag;			/* claim word: first 8 bytes of hash | 1 */
	_Atomic uint32_t  aflags;		/* KV_AF_* */
	_Atomic uint32_t  link;			/* version 16, KV_SLOT_LINK only: the
						   account's index + 1 */
	_Atomic int64_t	  config_budget_nusd;	/* the config's budget when overridden */
	/* Version 3. Cluster leases, written by the master (docs/cluster.md). In local
	 * spent units: this host admits while spent + reserved + amount <=
	 * lease_cap_nusd, and refuses for the budget (402) when the other
	 * hosts' commitment plus that passes the budget. */
	_Atomic int64_t	  lease_cap_nusd;
	_Atomic int64_t	  cluster_other_nusd;	/* committed by the other hosts */
	_Atomic int64_t	  cluster_spent_nusd;	/* settled spend of all hosts (display) */
	_Atomic int64_t	  lease_need_nusd;	/* largest amount refused for the lease */
	_Atomic int64_t	  lease_expires_ms;	/* unix ms this host's lease lasts to */
	_Atomic int64_t	  cluster_base_nusd;	/* spend cleared here by a reset, still in Redis */
	/* Version 16 (were padding): an issued key's end, unix seconds (0 =
	 * none); and in a KV_SLOT_LINK, the tag its account had when linked,
	 * so a link to a slot retired and reused since admits nothing. */
	_Atomic int64_t	  expires;
	_Atomic uint64_t  link_tag;
	/* Version 4. */
	_Atomic uint64_t  estimated_requests;	/* charged by estimate, not usage */
	_Atomic uint64_t  free_requests;	/* relayed unmetered */
	/* Version 5. Rate limits (shm/ratelimit.h): per minute, 0 = none; each limit's
	 * GCRA theoretical arrival time in unix nanoseconds, CAS-updated. */
	_Atomic uint32_t  rpm;
	_Atomic uint32_t  tpm;
	_Atomic int64_t	  rpm_tat;
	_Atomic int64_t	  tpm_tat;
	_Atomic uint64_t  rate_refusals;	/* 429s for rpm or tpm */
	/* Version 8: spent_nusd at the master's last history sample; the rings
	 * themselves are apart (struct kv_hist_slot, version 14), so the
	 * master's per-tick scans read one word here and touch a ring's page
	 * only for a key whose spend moved. */
	_Atomic int64_t	  hist_sampled_nusd;
	int64_t		  hist_pad[KV_HIST_PAD];
	/* Version 13. Cluster leases of the rate limits (docs/cluster.md), used
	 * only with [cluster]: this host admits a request while rl_req_used + 1
	 * <= rl_req_cap, and TOKENS while rl_tok_used + rl_tok_reserved + TOKENS
	 * <= rl_tok_cap. The *_used words are cumulative (never reset) and are
	 * what Redis charges to the key's cluster-wide buckets; the caps are
	 * written by the master only, from what Redis granted. */
	_Atomic int64_t	  rl_req_used;
	_Atomic int64_t	  rl_req_cap;
	_Atomic int64_t	  rl_tok_used;		/* settled tokens */
	_Atomic int64_t	  rl_tok_reserved;	/* tokens of requests in flight */
	_Atomic int64_t	  rl_tok_cap;
	_Atomic int64_t	  rl_need;		/* refused for want of lease: tokens + 1 */
	/* Version 16: an issued key's own budget period, enum kv_period + 1;
	 * 0 = the config's [budget] period. */
	_Atomic uint32_t  period;
	uint32_t	  pad2;
	int64_t		  rl_pad;
};

/* Spend history of account slot i, for the status page's chart and
 * /status.json (shm/history.h), written by the master only: rings indexed
 * by time, spend per minute over the last hour and per hour over the last
 * day. Version 14: apart from the accounts, in the same order. */
struct kv_hist_slot {
	_Alignas(64) _Atomic int64_t minute;	/* unix minute of the newest minute bucket; 0 = never */
	_Atomic int64_t	  hour;			/* unix hour of the newest hour bucket */
	_Atomic int64_t	  minute_nusd[KV_HIST_MINUTES];	/* [minute % 60] */
	_Atomic int64_t	  hour_nusd[KV_HIST_HOURS];	/* [hour % 24] */
};

#define KV_ACCOUNT_NAMED 0x1u

/* aflags bits, each set and cleared with atomic or/and. */
#define KV_AF_CONFIG	0x1u	/* the key is in the running config */
#define KV_AF_OVERRIDE	0x2u	/* budget set by kvctl/admin API, not the config */
#define KV_AF_KEPT	0x4u	/* charged or answered 2xx once: never reclaimed */
#define KV_AF_FORGET	0x8u	/* kvctl forget: the master retires it when idle */
#define KV_AF_FORMER	0x10u	/* named, and its key left the config (rotated or
				   removed): the label is the one it had there */
#define KV_AF_RESET	0x20u	/* with [cluster]: kvctl reset or the admin API asked the
				   master to reset the key's spend on every host */
#define KV_AF_ISSUED	0x40u	/* version 16: made by kvctl keys create or POST /keys,
				   not by the config; admitted under unknown_keys = deny */
#define KV_AF_REVOKED	0x80u	/* version 16: every secret of the account is refused */
#define KV_AF_NODE	0x200u	/* a node of the budget tree (shm/tree.h): a team or a
				   per-model cap, its label the node's name, its
				   hash that of "\001node:" and the name; never a key */
#define KV_AF_ROTATED	0x100u	/* version 16: this slot's own secret was rotated out
				   (the account lives on through a newer link) */

_Static_assert(sizeof(struct kv_resv) == 16, "kv_resv layout");
_Static_assert(sizeof(struct kv_target_slot) == 256, "target slots are four cache lines");
_Static_assert(sizeof(struct kv_ledger_header) <= 4096, "the header fits in 4 KB");
_Static_assert(sizeof(struct kv_account) % 64 == 0, "accounts are cache-line sized");
_Static_assert(sizeof(struct kv_hist_slot) % 64 == 0, "history slots are cache-line sized");
_Static_assert(sizeof(struct kv_model_slot) % 64 == 0, "model slots are cache-line sized");
_Static_assert(sizeof(struct kv_worker_slot) % 64 == 0, "worker slots are cache-line sized");

#endif

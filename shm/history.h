/* Per-key spend history: rings of spend per minute over the last hour and
 * per hour over the last day, in a kv_hist_slot beside each account slot
 * (ledger version 14; they were inside the account before, and the
 * master's scans touched every account's whole kilobyte). The master
 * samples every account's spent_nusd (kv_history_sample) and is the only
 * writer; a key whose spend did not move is not written (the rings read
 * 0 past their newest bucket); readers (the status page, /status.json)
 * take a consistent-enough copy with kv_history_read. */
#ifndef KV_HISTORY_H
#define KV_HISTORY_H

#include <stdint.h>
#include <stdio.h>

#include "shm/ledger.h"

/* Add what A spent since the last sample to the buckets of minute
 * NOW / 60 and hour NOW / 3600, clearing buckets the clock skipped. The
 * rings came with the ledger (version 5) and the master samples every
 * second, so a first sample's spend is at most that old; a spend that went
 * down (reset, new period) counts from 0. */
void	kv_history_sample(struct kv_ledger *l, struct kv_account *a, int64_t now);

/* kv_history_sample for every ready account of L. */
void	kv_history_sample_all(struct kv_ledger *l, int64_t now);

/* What an operator calls errors, from L's counters: upstream 5xx relayed,
 * upstream failures the gateway answered 502/504 for, and responses cut
 * short other than by their client. */
uint64_t kv_history_errors(const struct kv_ledger *l);

/* Add the requests and errors (kv_history_errors) counted since the last
 * call to the header's rings (struct kv_rate_hist), as kv_history_sample
 * does for a key's spend. The master's tick calls it. */
void	kv_history_sample_totals(struct kv_ledger *l, int64_t now);

/* The header's rings as of NOW, oldest first, laid out as
 * kv_history_read's. */
void	kv_history_totals_read(const struct kv_ledger *l, int64_t now,
	    int64_t req_min[KV_HIST_MINUTES], int64_t err_min[KV_HIST_MINUTES],
	    int64_t req_hour[KV_HIST_HOURS], int64_t err_hour[KV_HIST_HOURS]);

/* A's history as of NOW, oldest first: minutes[i] is the spend in minute
 * (NOW/60 - 59 + i), hours[i] in hour (NOW/3600 - 23 + i); buckets the
 * master has not reached yet (it samples every few seconds) read 0. */
void	kv_history_read(const struct kv_ledger *l, const struct kv_account *a, int64_t now,
	    int64_t minutes[KV_HIST_MINUTES], int64_t hours[KV_HIST_HOURS]);

/* ,"history":[{"id","label","minute_nusd":[60],"hour_nusd":[24]}] for
 * every ready account, sorted by spend (appended to /status.json). */
void	kv_history_json(FILE *f, const struct kv_ledger *l, int64_t now);

#endif

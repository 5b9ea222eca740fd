/* JSON documents about the ledger, shared by `kvctl --json` and the status
 * service's /status.json so the two always agree. Money is integer
 * nano-dollars in fields ending in _nusd; keys have "id" and "label". */
#ifndef KV_REPORT_H
#define KV_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "shm/ledger.h"
#include "shm/report_sort.h"	/* kv_report_sorted_accounts */

/* One account object: {"id","label","budget_nusd","spent_nusd",
 * "reserved_nusd","remaining_nusd","requests","input_tokens",
 * "output_tokens","cached_input_tokens","refusals","estimated_requests",
 * "free_requests","last_used","rpm","tpm","requests_remaining",
 * "tokens_remaining","rate_refusals"}: estimated_requests counts the requests
 * charged by an estimate (cut, timed out, or without usage), free_requests
 * those relayed unmetered; rpm/tpm 0 is no limit, and its remaining is then
 * null. */
void	kv_report_account_json(FILE *f, const struct kv_account *a);

/* {"key":KEY,"id":ID,"account":{...}} and a newline: a key just issued or
 * rotated, its raw secret KEY shown this once (kvctl keys create --json and
 * POST /keys answer the same object). */
void	kv_report_issued_json(FILE *f, const struct kv_account *a, const char *key);

/* {"keys":[...]}, accounts sorted by spend, highest first. */
void	kv_report_keys_json(FILE *f, const struct kv_ledger *l);

/* {"models":[{"model","requests","input_tokens","output_tokens",
 * "cached_input_tokens","cost_nusd"}]} sorted by cost. */
void	kv_report_models_json(FILE *f, const struct kv_ledger *l);

/* Totals (every KV_COUNTERS field, uptime_seconds, master_pid,
 * active_streams, connections) plus "workers", "keys" and "models" arrays. */
void	kv_report_status_json(FILE *f, const struct kv_ledger *l, int64_t now);

/* A worker slot's state as a word: "free", "starting", "running",
 * "draining" ("unknown" for a value this build does not know). JSON and
 * the tables both use it. */
const char *kv_report_worker_state(uint32_t state);

#endif

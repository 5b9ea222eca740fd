/* Settlement (settle.c): a request's charge, ledger, counters and logs. */
#ifndef KV_SETTLE_H
#define KV_SETTLE_H

#include "worker/conn-t.h"

/* The whole request reached the provider, which may bill it from now on:
 * sets c->req_sent, records the input estimate (body bytes / 4 and the
 * reserved output at the asked model's price) in the reservation, which
 * the master charges should this worker die, and counts the input against
 * tpm (traffic_sent). */
void	settle_mark_sent(struct kv_conn *c);

/* Once per request (c->logged): charge what it used (the provider's final
 * usage, else an estimate marked so), settle its tokens and reservation,
 * mark and count its key, count it in the ledger's counters and
 * histograms, write its access log line and its request log record. */
void	settle_request(struct kv_conn *c);

#endif

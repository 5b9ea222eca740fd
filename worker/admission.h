/* Admission (admission.c): what stands between a whole request body and
 * the upstream. */
#ifndef KV_ADMISSION_H
#define KV_ADMISSION_H

#include "worker/conn-t.h"

/* The body is whole: finish its scan, route it (404 without an upstream),
 * apply the endpoint policy, refuse past the memory budget, resolve the
 * account, price the request and reserve its worst case (401, 402, 503),
 * take its rate limits (429), pick a target, build the upstream request
 * and connect (request_connect). A refusal is answered with conn_fail:
 * its STEP_CONT is told apart by c->state == CS_ERRWRITE. */
enum step request_admit(struct kv_conn *c);

/* CS_LEASEWAIT's step: the reservation again; parked on, admitted, or
 * refused. */
enum step request_lease_retry(struct kv_conn *c);

#endif

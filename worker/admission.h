/* The admission phase (admission.c): what stands between a whole request
 * body and the upstream. */
#ifndef KV_ADMISSION_H
#define KV_ADMISSION_H

#include "worker/conn-t.h"

/* CS_ADMIT: finish the body's scan, route it (404 without an upstream),
 * apply the endpoint policy, refuse past the memory budget, resolve the
 * account, price the request and reserve its worst case (401, 402, 503),
 * take its rate limits (429), then pick the first target: KV_NEXT. A
 * refusal is KV_REPLY. A key this host holds too little cluster lease for
 * is parked (KV_AGAIN, leasewait.h): run again, it reserves again. */
enum kv_rc request_admit(struct kv_conn *c);

#endif

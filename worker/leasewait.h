/* Requests parked for want of cluster lease (docs/cluster.md, "A cold
 * key"). A key this host holds no lease for -- one it never saw, or one
 * whose request reserves more than its free lease -- is not refused: the
 * request waits, bounded, while the master asks Redis for more. The worker
 * never waits on Redis itself: it kicks the master (an eventfd) and looks
 * again at the account's lease every KV_LEASE_POLL_MS, on its own timer.
 *
 * A new key's (or user's) account that another process is creating this
 * instant waits the same way: its claimer fills the slot in nanoseconds
 * unless the scheduler takes its CPU away, and then only that process's
 * next time slice ends the wait -- too long to spin for, too short to
 * refuse a request over (shm/accounts.c answers EAGAIN). */
#ifndef KV_LEASEWAIT_H
#define KV_LEASEWAIT_H

#include <stdint.h>

#define KV_LEASE_PARK_MS	2000	/* most a request waits for lease */
#define KV_LEASE_POLL_MS	5	/* parked requests look again this often */
#define KV_LEASE_PARK_MAX	256	/* parked per worker; past it, 503 at once */
#define KV_ACCOUNT_PARK_MS	1000	/* most a request waits for an account */

/* Why a request is parked (c->adm.lease_parked; 0: it is not). */
enum kv_park { KV_PARK_LEASE = 1, KV_PARK_ACCOUNT };

#include "worker/conn-t.h"

/* C's reservation was refused for want of this host's lease only
 * (kv_ledger_reserve -3). The first time, C is parked (c->adm.lease_parked)
 * and the master kicked: returns KV_AGAIN. Again while parked: KV_AGAIN
 * until KV_LEASE_PARK_MS have passed, then the 503 with retry-after: 1
 * (reply_error's KV_REPLY). Also the 503 at once when too many are parked
 * or Redis is known down. */
enum kv_rc conn_lease_park(struct kv_conn *c);

/* C's account (for a new WHAT: "key" or "user") is being made by another
 * process (errno EAGAIN from kv_ledger_account). Parked like a lease
 * wait, without the master's kick, and its reservation tried again each
 * KV_LEASE_POLL_MS: KV_AGAIN, until KV_ACCOUNT_PARK_MS have passed, then
 * the 503 with retry-after: 1 (a claimer that died holds its slot until
 * the master's repair frees it). Also the 503 at once when too many are
 * parked. */
enum kv_rc conn_account_park(struct kv_conn *c, const char *what);

/* Take C off the parked list (no-op when it is not on it). */
void	conn_lease_unpark(struct kv_conn *c);

/* Once per loop: every parked request runs its step again (it retries
 * its reservation). */
void	kv_lease_poll(struct kv_worker *w);

/* How long epoll may sleep, at most MS: KV_LEASE_POLL_MS while any
 * request is parked. */
int	kv_lease_wait_ms(const struct kv_worker *w, int ms);

#endif

/* Requests parked for want of cluster lease; see leasewait.h. */
#include "worker/leasewait.h"

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/log.h"
#include "worker/conn-t.h"
#include "worker/reply.h"

/* The 503 a request gets when the lease did not come in time: the lease
 * grown for it is held for the retry (master/cluster_lease.c HOLD_MS). */
static enum kv_rc
lease_refuse(struct kv_conn *c)
{
	atomic_fetch_add(&c->w->ledger->hdr->counters.cluster_lease_refusals_total, 1);
	c->retry_after = 1;
	return reply_error(c, 503, "this host's share of the key's budget is being "
	    "renewed; retry in a second");
}

/* Wake the master's loop; a full counter already has a wake-up queued. */
static void
kick(struct kv_worker *w)
{
	uint64_t one = 1;
	int fd = w->ledger->lease_kick_fd;

	if (fd < 0)
		return;
	if (write(fd, &one, sizeof(one)) == -1 && errno != EAGAIN)
		kv_log_warn("KV0518", "waking the master for a lease");
}

/* Put C on the parked list, WHY, for at most MS. */
static void
park(struct kv_conn *c, int why, int64_t ms)
{
	struct kv_worker *w = c->w;

	c->adm.lease_parked = why;
	c->adm.lease_until_ms = w->now_ms + ms;
	c->adm.lease_next = w->lease_parked;
	w->lease_parked = c;
	w->nlease_parked++;
	/* only its leaving matters now; its next request waits for this one */
	conn_watch_client(c, EPOLLRDHUP);
}

enum kv_rc
conn_lease_park(struct kv_conn *c)
{
	struct kv_worker *w = c->w;
	struct kv_ledger_header *hdr = w->ledger->hdr;

	if (c->adm.lease_parked == KV_PARK_LEASE) {
		if (w->now_ms >= c->adm.lease_until_ms) {
			conn_lease_unpark(c);
			return lease_refuse(c);
		}
		/* each retry asks again (kv_ledger_reserve recorded the need) */
		if (w->now_ms >= w->lease_kick_ms + KV_LEASE_POLL_MS * 4) {
			w->lease_kick_ms = w->now_ms;
			kick(w);
		}
		return KV_AGAIN;
	}
	conn_lease_unpark(c);	/* its account was made: the lease's own wait now */
	/* Redis is known down (not merely not synced yet, at start): the
	 * lease will not come within the wait, so say so at once. */
	if (w->nlease_parked >= KV_LEASE_PARK_MAX ||
	    (!atomic_load(&hdr->cluster_up) && atomic_load(&hdr->cluster_synced_ms) != 0))
		return lease_refuse(c);
	park(c, KV_PARK_LEASE, KV_LEASE_PARK_MS);
	w->lease_kick_ms = w->now_ms;
	kick(w);
	return KV_AGAIN;
}

enum kv_rc
conn_account_park(struct kv_conn *c, const char *what)
{
	char msg[64];

	if (c->adm.lease_parked == KV_PARK_ACCOUNT && c->w->now_ms < c->adm.lease_until_ms)
		return KV_AGAIN;
	if (c->adm.lease_parked == 0 && c->w->nlease_parked < KV_LEASE_PARK_MAX) {
		park(c, KV_PARK_ACCOUNT, KV_ACCOUNT_PARK_MS);
		return KV_AGAIN;
	}
	conn_lease_unpark(c);
	c->retry_after = 1;
	snprintf(msg, sizeof(msg), "%s account is being created; retry", what);
	return reply_error(c, 503, msg);
}

void
conn_lease_unpark(struct kv_conn *c)
{
	struct kv_conn **pp;

	if (!c->adm.lease_parked)
		return;
	for (pp = &c->w->lease_parked; *pp != NULL; pp = &(*pp)->adm.lease_next)
		if (*pp == c) {
			*pp = c->adm.lease_next;
			break;
		}
	c->adm.lease_next = NULL;
	c->adm.lease_parked = 0;
	c->w->nlease_parked--;
}

void
kv_lease_poll(struct kv_worker *w)
{
	struct kv_conn *c;

	if (w->lease_parked == NULL || w->now_ms < w->lease_poll_ms + KV_LEASE_POLL_MS)
		return;
	w->lease_poll_ms = w->now_ms;
	for (c = w->lease_parked; c != NULL; c = c->adm.lease_next)
		conn_ready(c);
}

int
kv_lease_wait_ms(const struct kv_worker *w, int ms)
{
	if (w->lease_parked != NULL && (ms < 0 || ms > KV_LEASE_POLL_MS))
		return KV_LEASE_POLL_MS;
	return ms;
}

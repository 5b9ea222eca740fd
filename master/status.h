/* The status service: libmicrohttpd driven from the master's own poll loop
 * (external epoll: MHD_USE_EPOLL without an internal thread), never its
 * threads, because the master forks. Endpoints: GET / (HTML page),
 * /status.json, /metrics (Prometheus text 0.0.4), /healthz; with
 * Authorization: Bearer <admin_token>, POST /keys/{id}/reset, /budget and
 * /limits, and the issued keys' POST /keys, DELETE /keys/{id} and POST
 * /keys/{id}/rotate (master/admin_keys.h). */
#ifndef KV_STATUS_H
#define KV_STATUS_H

#include <stddef.h>

#include "common/config.h"
#include "shm/ledger.h"

struct kv_status;

struct kv_mloop;

/* Listen on cf->status_host:status_port (IPv4 or IPv6 literal or a name;
 * port 0 picks a free one, logged as "status service on HOST:PORT") and
 * serve on LP: libmicrohttpd's epoll fd (the listening socket and every
 * connection) is one watch, its connection timeouts one timer. Returns
 * NULL when cf->status_host is "" (disabled), or with a log line on
 * failure; the gateway then runs without a status service. The config,
 * ledger and loop must outlive the service; kv_status_set_config swaps the
 * config after a reload (admin token, labels). */
struct kv_status *kv_status_start(const struct kv_config *cf, struct kv_ledger *l,
	    struct kv_mloop *lp);
void	kv_status_set_config(struct kv_status *st, const struct kv_config *cf);

/* Close every connection and the listening socket; NULL is a no-op. Only
 * the master may call it: in a forked worker it would shut down the
 * master's sockets. */
void	kv_status_stop(struct kv_status *st);

#endif

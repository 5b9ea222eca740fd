/* The status service: libmicrohttpd driven from the master's own poll loop
 * (external epoll: MHD_USE_EPOLL without an internal thread), never its
 * threads, because the master forks. Endpoints: GET / (HTML page),
 * /status.json, /metrics (Prometheus text 0.0.4), /healthz; with
 * Authorization: Bearer <admin_token>, POST /keys/{id}/reset, /budget and
 * /limits, and the issued keys' POST /keys, DELETE /keys/{id} and POST
 * /keys/{id}/rotate (master/admin_keys.h). */
#ifndef KV_STATUS_H
#define KV_STATUS_H

#include <poll.h>
#include <stddef.h>

#include "common/config.h"
#include "shm/ledger.h"

struct kv_status;

/* Listen on cf->status_host:status_port (IPv4 or IPv6 literal or a name;
 * port 0 picks a free one, logged as "status service on HOST:PORT").
 * Returns NULL when cf->status_host is "" (disabled), or with a log line on
 * failure; the gateway then runs without a status service. The config and
 * ledger must outlive the service; kv_status_set_config swaps the config
 * after a reload (admin token, labels). */
struct kv_status *kv_status_start(const struct kv_config *cf, struct kv_ledger *l);
void	kv_status_set_config(struct kv_status *st, const struct kv_config *cf);

/* Fill pfd (at most max entries) with the fds to poll for POLLIN: one,
 * libmicrohttpd's epoll fd, which covers the listening socket and every
 * connection. Lowers *timeout_ms to the longest the caller may sleep before
 * calling kv_status_run (a negative *timeout_ms means "no limit yet" and is
 * left alone when MHD has no deadline). Returns the number of entries used:
 * 0 when st is NULL or max is 0. */
int	kv_status_pollfds(struct kv_status *st, struct pollfd *pfd, size_t max,
	    int *timeout_ms);

/* Serve whatever is ready; never blocks. Call it after every poll that
 * included the status fds, whether they were ready or not (MHD needs the
 * call to expire idle connections). NULL is a no-op. */
void	kv_status_run(struct kv_status *st);

/* Close every connection and the listening socket; NULL is a no-op. Only
 * the master may call it: in a forked worker it would shut down the
 * master's sockets. */
void	kv_status_stop(struct kv_status *st);

#endif

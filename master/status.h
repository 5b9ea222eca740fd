/* The status service: libmicrohttpd driven from the master's own poll loop
 * (MHD_USE_NO_THREAD_SAFETY-style external select), never its threads,
 * because the master forks. */
#ifndef KV_STATUS_H
#define KV_STATUS_H

#include <poll.h>
#include <stddef.h>

#include "common/config.h"
#include "shm/ledger.h"

struct kv_status;

/* Listen on cf->status_host:status_port. Returns NULL (with a log line) on
 * failure; the gateway then runs without a status service. The config and
 * ledger must outlive the service; kv_status_set_config swaps the config
 * after a reload (admin token, labels). */
struct kv_status *kv_status_start(const struct kv_config *cf, struct kv_ledger *l);
void	kv_status_set_config(struct kv_status *st, const struct kv_config *cf);

/* The fd to poll for input (the listening socket and its connections are
 * driven through MHD_get_fdset-equivalents; see status.c), and the longest
 * the caller may sleep before calling kv_status_run, in ms. */
int	kv_status_pollfds(struct kv_status *st, struct pollfd *pfd, size_t max,
	    int *timeout_ms);

/* Serve whatever is ready; never blocks. */
void	kv_status_run(struct kv_status *st);

void	kv_status_stop(struct kv_status *st);

#endif

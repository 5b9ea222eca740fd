/* Active health checks of upstream targets (`health_check = PATH`,
 * `health_interval = SECS` in an [upstream]): the master sends GET PATH to
 * every target of such an upstream an interval after its last check ended
 * (checks of a target never overlap), over TLS with the
 * upstream's verification for https:// targets, without credentials. A 2xx
 * head marks the target up, anything else (another status, a malformed
 * answer, a connect, TLS or write error, no head within 5 s) marks
 * it down. The mark is the target slot's `health` word in the ledger, which
 * every worker reads when it chooses a target (shm/targets.h): a target
 * marked down gets no request while another target of its upstream is
 * usable. Probes run on non-blocking sockets behind one epoll fd, driven
 * from the master's poll loop like the status service; no threads (the
 * master forks). */
#ifndef KV_HEALTH_CHECK_H
#define KV_HEALTH_CHECK_H

#include <poll.h>

#include "common/config.h"
#include "shm/ledger.h"

struct kv_health;

/* Probes for every target of CF's upstreams that have a health_check; the
 * first round starts at the first kv_health_run. The health word of every
 * target slot not probed is cleared (a check removed from the config, or
 * from an earlier run, marks nothing down). Returns NULL when no upstream
 * has a health_check, or on failure (logged: the gateway runs unchecked).
 * CF must outlive the result. */
struct kv_health *kv_health_start(const struct kv_config *cf, struct kv_ledger *l);

/* Fill at most one pollfd (returns 0 or 1) and lower *timeout_ms to the
 * next probe start or deadline. NULL is a no-op returning 0. */
int	kv_health_pollfds(struct kv_health *h, struct pollfd *pfd, int max, int *timeout_ms);

/* After poll, whether the fd was ready or not: moves every probe on,
 * starts those due, fails those past their deadline. Never blocks, except
 * for the resolution of a target named by a host name (getaddrinfo, at
 * most once a minute per target): IP literals and /etc/hosts names never
 * wait. NULL is a no-op. */
void	kv_health_run(struct kv_health *h);

/* Close every probe, free H (NULL is a no-op). */
void	kv_health_free(struct kv_health *h);

/* In a forked child: close the fds without a word on them, free nothing
 * the parent still uses. */
void	kv_health_forget(struct kv_health *h);

#endif

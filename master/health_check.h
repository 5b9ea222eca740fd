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
 * usable. Probes run on non-blocking sockets in the master's event loop
 * (master/loop.h), like the status service; no threads (the master
 * forks). */
#ifndef KV_HEALTH_CHECK_H
#define KV_HEALTH_CHECK_H

#include "common/config.h"
#include "shm/ledger.h"

struct kv_health;

struct kv_mloop;

/* Probes for every target of CF's upstreams that have a health_check,
 * driven by LP (each probe's socket a watch, the next start or deadline a
 * timer); the first round starts at LP's next turn. The health word of
 * every target slot not probed is cleared (a check removed from the
 * config, or from an earlier run, marks nothing down). Returns NULL when
 * no upstream has a health_check, or on failure (logged: the gateway runs
 * unchecked). CF and LP must outlive the result. Probes never block,
 * except for the resolution of a target named by a host name (getaddrinfo,
 * at most once a minute per target): IP literals and /etc/hosts names
 * never wait. */
struct kv_health *kv_health_start(const struct kv_config *cf, struct kv_ledger *l,
	    struct kv_mloop *lp);

/* Close every probe, free H (NULL is a no-op). */
void	kv_health_free(struct kv_health *h);

/* In a forked child: close the fds without a word on them, free nothing
 * the parent still uses. */
void	kv_health_forget(struct kv_health *h);

#endif

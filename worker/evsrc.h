/* What an epoll event of a worker points at: the source's own callback,
 * so the loop dispatches without knowing what kinds there are. */
#ifndef KV_EVSRC_H
#define KV_EVSRC_H

#include <stdint.h>

enum kv_ev_kind { KV_EV_LISTEN, KV_EV_CLIENT, KV_EV_UPSTREAM };

struct kv_worker;
struct kv_evsrc;

/* Runs when SRC's descriptor is ready with EVENTS (epoll's). */
typedef void kv_ev_fn(struct kv_worker *w, struct kv_evsrc *src, uint32_t events);

/* For KV_EV_UPSTREAM it is the upstream connection's own (struct
 * kv_upconn's ev), ptr its conn, NULL while it waits in the pool; the
 * kind lets the loop take idle pooled connections' events first. */
struct kv_evsrc {
	kv_ev_fn	*fn;
	enum kv_ev_kind	 kind;
	void		*ptr;
};

#endif

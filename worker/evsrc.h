/* What an epoll event of a worker points at. */
#ifndef KV_EVSRC_H
#define KV_EVSRC_H

enum kv_ev_kind { KV_EV_LISTEN, KV_EV_CLIENT, KV_EV_UPSTREAM };

/* For KV_EV_UPSTREAM it is the upstream connection's own (struct
 * kv_upconn's ev), ptr its conn, NULL while it waits in the pool. */
struct kv_evsrc {
	enum kv_ev_kind	 kind;
	void		*ptr;
};

#endif

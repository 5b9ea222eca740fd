/* A reload and its handover (master_reload.c). Only the master's own
 * files include it. */
#ifndef KV_MASTER_RELOAD_H
#define KV_MASTER_RELOAD_H

#include "common/config.h"
#include "master/master_state.h"

/* A listening socket on CF's listen address (non-blocking, close-on-exec,
 * SO_REUSEADDR), or -1 (logged). */
int	kv_master_open_listener(const struct kv_config *cf);

/* The newest generation's workers all run: the older ones drain now, and
 * only now, so a burst of reloads or a failing one never leaves no worker
 * accepting. */
void	kv_master_maybe_handover(struct master *m);

/* A worker of the pending generation cannot serve its config (it logged
 * why): stop that generation, the serving one goes on as it was. */
void	kv_master_reload_failed(struct master *m);

/* A [key] section of CF named like an issued key (kvctl keys create):
 * refused (-1, logged), never one of the two silently taking the other's
 * name. Returns 0 when there is none. */
int	kv_master_keys_clash(struct master *m, const struct kv_config *cf);

/* Parse the config again; start a new generation of workers on it. The
 * serving generation drains only once the new one runs (maybe_handover);
 * a new one that fails is dropped (reload_failed). A reload arriving while
 * one is pending replaces the pending one. */
void	kv_master_reload(struct master *m);

/* The probes follow m->cf: a reload, a failed one and a replaced pending
 * one all change it. The old probes only hold their own sockets and
 * labels, so they are freed safely after the config they came from. */
void	kv_master_sync_health(struct master *m);

#endif

/* Rebuilding the ledger with room for more keys (or without tombstones)
 * at master start-up, history kept; see grow.h. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/grow.h"
#include "shm/incarnation.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

uint32_t
kv_ledger_tombstones(const struct kv_ledger *l)
{
	uint32_t i, n = 0;

	KV_FOR_EACH_SLOT(l, i)
		n += atomic_load(&l->accounts[i].state) == KV_SLOT_DEAD;
	return n;
}

static uint32_t
live_accounts(const struct kv_ledger *l)
{
	uint32_t i, n = 0;

	KV_FOR_EACH_SLOT(l, i)
		n += atomic_load(&l->accounts[i].state) == KV_SLOT_READY;
	return n;
}

/* Place a copy of A, with its history H, at its probe position in N (no
 * one else writes N). */
static void
place(struct kv_ledger *n, const struct kv_account *a, const struct kv_hist_slot *h)
{
	uint32_t max = n->hdr->max_keys, i;
	uint64_t start = 0;

	for (i = 0; i < 8; i++)
		start = start << 8 | a->hash[i];
	start %= max;
	for (i = 0; i < max; i++) {
		struct kv_account *d = &n->accounts[(start + i) % max];

		if (atomic_load(&d->tag) == 0) {
			kv_ledger_mark_slot(n, (start + i) % max);
			memcpy(d, a, sizeof(*d));
			memcpy(&n->history[(start + i) % max], h, sizeof(*h));
			return;
		}
	}
}

/* Everything but the layout words and the worker slots. */
static void
copy_state(struct kv_ledger *n, const struct kv_ledger *o)
{
	const size_t from = offsetof(struct kv_ledger_header, master_pid);
	uint32_t i, used = 0;

	memcpy((char *)n->hdr + from, (const char *)o->hdr + from,
	    sizeof(struct kv_ledger_header) - from);
	atomic_store(&n->hdr->quiesce, 0);
	memcpy(n->models, o->models, (size_t)KV_MODEL_SLOTS * sizeof(*n->models));
	memcpy(n->targets, o->targets, (size_t)KV_TARGET_SLOTS * sizeof(*n->targets));
	KV_FOR_EACH_SLOT(o, i)
		if (atomic_load(&o->accounts[i].state) == KV_SLOT_READY) {
			place(n, &o->accounts[i], &o->history[i]);
			used++;
		}
	atomic_store(&n->hdr->accounts_used, used);
}

int
kv_ledger_grow(struct kv_ledger *l, const char *path, uint32_t max_keys,
    char *err, size_t errlen)
{
	struct kv_ledger n;
	char tmp[4200];

	if (max_keys < live_accounts(l) + 1) {
		snprintf(err, errlen, "ledger %s: %u keys do not fit in %u slots", path,
		    live_accounts(l), max_keys);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.grow.%d", path, (int)getpid());
	if (unlink(tmp) == -1 && errno != ENOENT)
		return snprintf(err, errlen, "%s: %s", tmp, strerror(errno)), -1;
	if (kv_ledger_open(&n, tmp, max_keys, KV_LEDGER_CREATE, err, errlen) == -1)
		return -1;
	copy_state(&n, l);
	/* The same ledger in a new file: not a copy, so its incarnation stays. */
	if (kv_ledger_incarnation_moved(&n) == -1 || msync(n.base, n.size, MS_SYNC) == -1 || fsync(n.fd) == -1 ||
	    flock(n.fd, LOCK_EX | LOCK_NB) == -1 || rename(tmp, path) == -1) {
		snprintf(err, errlen, "ledger %s: rebuild for %u keys: %s", path, max_keys,
		    strerror(errno));
		kv_ledger_close(&n);
		if (unlink(tmp) == -1)
			errno = EIO;
		return -1;
	}
	kv_ledger_close(l);
	*l = n;
	return 0;
}

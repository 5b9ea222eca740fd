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
#include <stdlib.h>
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

	KV_FOR_EACH_SLOT(l, i)	/* a rotated secret's link takes a slot too */
		n += atomic_load(&l->accounts[i].state) == KV_SLOT_READY ||
		    atomic_load(&l->accounts[i].state) == KV_SLOT_LINK;
	return n;
}

/* Place a copy of A, with its history H, at its probe position in N (no
 * one else writes N). Returns its index there + 1 (0: no room). */
static uint32_t
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
			return (uint32_t)((start + i) % max) + 1;
		}
	}
	return 0;
}

/* The rotated secrets' links (shm/keys.h), after their accounts: each
 * names its account by index, which the rebuild moved (MOVED[old] = new
 * index + 1). A link whose account is gone is dropped. Returns how many
 * were placed. */
static uint32_t
copy_links(struct kv_ledger *n, const struct kv_ledger *o, const uint32_t *moved)
{
	uint32_t i, to, at, placed = 0;

	KV_FOR_EACH_SLOT(o, i) {
		const struct kv_account *a = &o->accounts[i];

		if (atomic_load(&a->state) != KV_SLOT_LINK)
			continue;
		to = atomic_load(&a->link);
		if (to == 0 || to > o->hdr->max_keys || moved[to - 1] == 0 ||
		    atomic_load(&o->accounts[to - 1].tag) != atomic_load(&a->link_tag))
			continue;
		if ((at = place(n, a, &o->history[i])) != 0) {
			atomic_store(&n->accounts[at - 1].link, moved[to - 1]);
			placed++;
		}
	}
	return placed;
}

/* Everything but the layout words and the worker slots. Returns 0, or -1
 * (ENOMEM). */
static int
copy_state(struct kv_ledger *n, const struct kv_ledger *o)
{
	const size_t from = offsetof(struct kv_ledger_header, master_pid);
	uint32_t i, used = 0, *moved;

	if ((moved = calloc(o->hdr->max_keys, sizeof(*moved))) == NULL)
		return -1;

	memcpy((char *)n->hdr + from, (const char *)o->hdr + from,
	    sizeof(struct kv_ledger_header) - from);
	atomic_store(&n->hdr->quiesce, 0);
	memcpy(n->models, o->models, (size_t)KV_MODEL_SLOTS * sizeof(*n->models));
	memcpy(n->targets, o->targets, (size_t)KV_TARGET_SLOTS * sizeof(*n->targets));
	KV_FOR_EACH_SLOT(o, i)
		if (atomic_load(&o->accounts[i].state) == KV_SLOT_READY) {
			moved[i] = place(n, &o->accounts[i], &o->history[i]);
			used++;
		}
	/* Slots in use: the accounts and their links. */
	atomic_store(&n->hdr->accounts_used, used + copy_links(n, o, moved));
	free(moved);
	return 0;
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
	/* The same ledger in a new file: not a copy, so its incarnation stays. */
	if (copy_state(&n, l) == -1 || kv_ledger_incarnation_moved(&n) == -1 ||
	    msync(n.base, n.size, MS_SYNC) == -1 || fsync(n.fd) == -1 ||
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

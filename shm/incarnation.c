/* The ledger's cluster incarnation; see incarnation.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/incarnation.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

uint64_t
kv_ledger_incarnation(struct kv_ledger *l, const char *host_id, int *drawn)
{
	struct kv_ledger_header *h = l->hdr;
	uint64_t id = atomic_load(&h->incarnation);
	struct stat st;

	*drawn = 0;
	if (fstat(l->fd, &st) == -1)
		return 0;
	/* The same file under the same host_id: the same incarnation. A
	 * copied file has another inode (or device), and one copied across
	 * hosts with its inode number by chance has another host_id. */
	if (id != 0 && h->inc_dev == (uint64_t)st.st_dev &&
	    h->inc_ino == (uint64_t)st.st_ino &&
	    strncmp(h->inc_host_id, host_id, sizeof(h->inc_host_id)) == 0)
		return id;
	do {
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
			if (errno == 0)
				errno = EIO;
			return 0;
		}
	} while (id == 0);
	h->inc_dev = (uint64_t)st.st_dev;
	h->inc_ino = (uint64_t)st.st_ino;
	memset(h->inc_host_id, 0, sizeof(h->inc_host_id));
	strncpy(h->inc_host_id, host_id, sizeof(h->inc_host_id) - 1);
	atomic_store(&h->incarnation, id);
	*drawn = 1;
	return id;
}

int
kv_ledger_incarnation_moved(struct kv_ledger *l)
{
	struct stat st;

	if (fstat(l->fd, &st) == -1)
		return -1;
	l->hdr->inc_dev = (uint64_t)st.st_dev;
	l->hdr->inc_ino = (uint64_t)st.st_ino;
	return 0;
}

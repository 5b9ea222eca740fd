/* The ledger's segment: its layout, create, attach and validate, close and
 * sync, and the sums over its worker slots; accounts are in accounts.c,
 * periods in periods.c, reservations and settlement in reserve.c. Every
 * shared word is updated with C11 atomics; see ledger.h. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/ledger.h"
#include "shm/ratelimit.h"
#include "shm/targets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


/* Offsets and size the layout must have for max_keys accounts. */
struct layout {
	uint64_t workers_off;
	uint64_t models_off;
	uint64_t targets_off;
	uint64_t used_off;	/* the claimed-slot bitmap (kv_ledger_next_slot) */
	uint64_t accounts_off;
	uint64_t history_off;	/* struct kv_hist_slot [max_keys] */
	uint64_t total_size;
};

static uint64_t
round64(uint64_t v)
{
	return (v + 63) & ~(uint64_t)63;
}

static void
layout_for(uint32_t max_keys, struct layout *lo)
{
	lo->workers_off = round64(sizeof(struct kv_ledger_header));
	lo->models_off = lo->workers_off +
	    (uint64_t)KV_WORKER_SLOTS * sizeof(struct kv_worker_slot);
	lo->targets_off = lo->models_off +
	    (uint64_t)KV_MODEL_SLOTS * sizeof(struct kv_model_slot);
	lo->used_off = lo->targets_off +
	    (uint64_t)KV_TARGET_SLOTS * sizeof(struct kv_target_slot);
	lo->accounts_off = lo->used_off + round64(((uint64_t)max_keys + 63) / 64 * 8);
	lo->history_off = lo->accounts_off +
	    (uint64_t)max_keys * sizeof(struct kv_account);
	lo->total_size = lo->history_off +
	    (uint64_t)max_keys * sizeof(struct kv_hist_slot);
}

static void
ledger_carve(struct kv_ledger *l)
{
	char *b = l->base;
	struct layout lo;

	l->hdr = l->base;
	/* The target table and the bitmap have no offset words of their
	 * own: they follow from max_keys, and check_layout found the header's
	 * offsets equal to the same layout. */
	layout_for(l->hdr->max_keys, &lo);
	l->workers = (struct kv_worker_slot *)(b + l->hdr->workers_off);
	l->models = (struct kv_model_slot *)(b + l->hdr->models_off);
	l->targets = (struct kv_target_slot *)(b + lo.targets_off);
	l->used = (_Atomic uint64_t *)(b + lo.used_off);
	l->accounts = (struct kv_account *)(b + l->hdr->accounts_off);
	l->history = (struct kv_hist_slot *)(b + lo.history_off);
}

static int
open_error(const char *path, const char *what, char *err, size_t errlen)
{
	int saved = errno;

	if (saved == EACCES || saved == EPERM)
		snprintf(err, errlen, "ledger %s: permission denied (%s: %s)",
		    path, what, strerror(saved));
	else
		snprintf(err, errlen, "ledger %s: %s: %s", path, what,
		    strerror(saved));
	errno = saved;
	return -1;
}

/* Fill in a freshly truncated (all-zero) segment. The magic goes in last,
 * after a release fence, so a reader of a half-made file sees no magic. */
static void
ledger_init_header(struct kv_ledger_header *h, uint32_t max_keys)
{
	struct layout lo;

	layout_for(max_keys, &lo);
	h->version = KV_LEDGER_VERSION;
	h->header_size = sizeof(*h);
	h->worker_slot_size = sizeof(struct kv_worker_slot);
	h->worker_slots = KV_WORKER_SLOTS;
	h->model_slot_size = sizeof(struct kv_model_slot);
	h->model_slots = KV_MODEL_SLOTS;
	h->account_size = sizeof(struct kv_account);
	h->max_keys = max_keys;
	h->workers_off = lo.workers_off;
	h->models_off = lo.models_off;
	h->accounts_off = lo.accounts_off;
	h->total_size = lo.total_size;
	atomic_store(&h->created, (int64_t)time(NULL));
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&h->magic, KV_LEDGER_MAGIC, __ATOMIC_RELEASE);
}

static int
map_fd(struct kv_ledger *l, int fd, size_t size, int readonly)
{
	int prot = readonly ? PROT_READ : PROT_READ | PROT_WRITE;
	void *p;

	p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	/* Every process reads a few words of each slot; readahead would make
	 * each of them map (and be charged for) the whole segment. */
	(void)madvise(p, size, MADV_RANDOM);
	l->fd = fd;
	l->size = size;
	l->base = p;
	return 0;
}

/* Give TMP the name PATH unless PATH exists. */
static int
publish(const char *tmp, const char *path)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* No RENAME_NOREPLACE on this file system: link fails on EEXIST too. */
	if (link(tmp, path) == -1)
		return -1;
	return unlink(tmp);
}

/* Size FD for the layout and reserve its blocks: a store into a hole of a
 * mapped file on a full disk is a SIGBUS, not an error we could log. */
static int
allocate(int fd, uint64_t size, const char *path, char *err, size_t errlen)
{
	if ((errno = posix_fallocate(fd, 0, (off_t)size)) != 0 &&
	    errno != EOPNOTSUPP && errno != EINVAL)
		return open_error(path, "allocate (disk full?)", err, errlen);
	return 0;
}

/* Create the ledger as a temporary file, fully written, then give it its
 * name: an interrupted creation leaves no half-made ledger at PATH.
 * Returns 0, 1 when the file already exists, or -1. */
static int
ledger_create(struct kv_ledger *l, const char *path, uint32_t max_keys,
    char *err, size_t errlen)
{
	struct layout lo;
	char tmp[4200];
	int fd;

	if (access(path, F_OK) == 0)
		return 1;
	snprintf(tmp, sizeof(tmp), "%s.new.%d", path, (int)getpid());
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd == -1)
		return open_error(path, "create", err, errlen);
	layout_for(max_keys, &lo);
	if (ftruncate(fd, (off_t)lo.total_size) == -1) {
		open_error(path, "ftruncate", err, errlen);
		goto fail;
	}
	if (allocate(fd, lo.total_size, path, err, errlen) == -1)
		goto fail;
	if (map_fd(l, fd, lo.total_size, 0) == -1) {
		open_error(path, "mmap", err, errlen);
		goto fail;
	}
	ledger_init_header(l->base, max_keys);
	ledger_carve(l);
	if (msync(l->base, l->size, MS_SYNC) == -1 || fsync(fd) == -1) {
		open_error(path, "sync", err, errlen);
		goto fail;
	}
	if (publish(tmp, path) == -1) {
		if (errno == EEXIST) {
			/* Someone else created it meanwhile: use theirs. */
			kv_ledger_close(l);
			if (unlink(tmp) == -1)
				return open_error(tmp, "unlink", err, errlen);
			return 1;
		}
		open_error(path, "rename", err, errlen);
		goto fail;
	}
	return 0;
fail:
	if (l->base != NULL && munmap(l->base, l->size) == -1)
		errno = EIO;
	l->base = NULL;
	if (unlink(tmp) == -1)
		errno = EIO;
	if (close(fd) == -1)
		errno = EIO;
	l->fd = -1;
	return -1;
}

static int
check_u32(const char *path, const char *what, uint32_t got, uint32_t want,
    char *err, size_t errlen)
{
	if (got == want)
		return 0;
	snprintf(err, errlen, "ledger %s: %s is %u, this build expects %u "
	    "(written by another build?)", path, what, got, want);
	return -1;
}

static int
check_sizes(const struct kv_ledger_header *h, const char *path, char *err,
    size_t errlen)
{
	if (check_u32(path, "header size", h->header_size,
	    sizeof(struct kv_ledger_header), err, errlen) == -1 ||
	    check_u32(path, "worker slot size", h->worker_slot_size,
	    sizeof(struct kv_worker_slot), err, errlen) == -1 ||
	    check_u32(path, "worker slot count", h->worker_slots,
	    KV_WORKER_SLOTS, err, errlen) == -1 ||
	    check_u32(path, "model slot size", h->model_slot_size,
	    sizeof(struct kv_model_slot), err, errlen) == -1 ||
	    check_u32(path, "model slot count", h->model_slots,
	    KV_MODEL_SLOTS, err, errlen) == -1 ||
	    check_u32(path, "account size", h->account_size,
	    sizeof(struct kv_account), err, errlen) == -1)
		return -1;
	return 0;
}

static int
check_layout(const struct kv_ledger_header *h, const char *path,
    uint64_t file_size, char *err, size_t errlen)
{
	struct layout lo;

	if (h->max_keys == 0) {
		snprintf(err, errlen, "ledger %s: corrupt header: max_keys is 0", path);
		return -1;
	}
	layout_for(h->max_keys, &lo);
	if (h->workers_off != lo.workers_off || h->models_off != lo.models_off ||
	    h->accounts_off != lo.accounts_off || h->total_size != lo.total_size) {
		snprintf(err, errlen, "ledger %s: corrupt header: offsets or total "
		    "size do not match the layout for %u keys", path, h->max_keys);
		return -1;
	}
	if (file_size < h->total_size) {
		snprintf(err, errlen, "ledger %s: truncated: %llu bytes, header "
		    "says %llu", path, (unsigned long long)file_size,
		    (unsigned long long)h->total_size);
		return -1;
	}
	if (file_size > h->total_size) {
		snprintf(err, errlen, "ledger %s: %llu bytes, header says %llu "
		    "(trailing data)", path, (unsigned long long)file_size,
		    (unsigned long long)h->total_size);
		return -1;
	}
	return 0;
}

/* Every check a segment must pass before anyone maps it. */
static int
check_header(const struct kv_ledger_header *h, const char *path,
    uint64_t file_size, uint32_t max_keys, char *err, size_t errlen)
{
	if (h->magic != KV_LEDGER_MAGIC) {
		snprintf(err, errlen, "ledger %s: bad magic: not a kilovolt ledger, "
		    "or its creation was interrupted", path);
		return -1;
	}
	if (h->version != KV_LEDGER_VERSION) {
		snprintf(err, errlen, "ledger %s: layout version %u, this build "
		    "reads %u", path, h->version, KV_LEDGER_VERSION);
		return -1;
	}
	if (check_sizes(h, path, err, errlen) == -1 ||
	    check_layout(h, path, file_size, err, errlen) == -1)
		return -1;
	if (max_keys != 0 && h->max_keys != max_keys) {
		snprintf(err, errlen, "ledger %s: has %u key slots, the config asks "
		    "for %u (set max_keys = %u, or move the file away)", path,
		    h->max_keys, max_keys, h->max_keys);
		return -1;
	}
	return 0;
}

/* Read the header with pread and check it before mapping anything. */
static int
ledger_attach(struct kv_ledger *l, const char *path, uint32_t max_keys,
    int readonly, char *err, size_t errlen)
{
	struct kv_ledger_header h;
	struct stat st;
	ssize_t n;
	int fd;

	fd = open(path, (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd == -1)
		return open_error(path, readonly ? "open for reading" :
		    "open for writing", err, errlen);
	if (fstat(fd, &st) == -1) {
		open_error(path, "fstat", err, errlen);
		goto fail;
	}
	n = pread(fd, &h, sizeof(h), 0);
	if (n == -1) {
		open_error(path, "read", err, errlen);
		goto fail;
	}
	if ((size_t)n < sizeof(h)) {
		snprintf(err, errlen, "ledger %s: truncated: %lld bytes, smaller "
		    "than the %zu-byte header", path, (long long)st.st_size,
		    sizeof(h));
		errno = EINVAL;
		goto fail;
	}
	if (check_header(&h, path, (uint64_t)st.st_size, max_keys, err,
	    errlen) == -1) {
		errno = EINVAL;
		goto fail;
	}
	/* A restored sparse copy would SIGBUS on a full disk: back every
	 * page now, while a failure is still an error message. */
	if (!readonly && allocate(fd, h.total_size, path, err, errlen) == -1)
		goto fail;
	if (map_fd(l, fd, h.total_size, readonly) == -1) {
		open_error(path, "mmap", err, errlen);
		goto fail;
	}
	ledger_carve(l);
	return 0;
fail:
	if (close(fd) == -1)
		return -1;
	return -1;
}

int
kv_ledger_open(struct kv_ledger *l, const char *path, uint32_t max_keys,
    int flags, char *err, size_t errlen)
{
	int readonly = (flags & KV_LEDGER_READONLY) != 0;
	int rc;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	l->lease_kick_fd = -1;
	if (readonly && (flags & KV_LEDGER_CREATE)) {
		snprintf(err, errlen, "ledger %s: cannot create read-only", path);
		errno = EINVAL;
		return -1;
	}
	/* Without a size there is nothing to create: only attach. */
	if ((flags & KV_LEDGER_CREATE) && max_keys != 0) {
		rc = ledger_create(l, path, max_keys, err, errlen);
		if (rc != 1)
			return rc;
	}
	return ledger_attach(l, path, max_keys, readonly, err, errlen);
}

void
kv_ledger_close(struct kv_ledger *l)
{
	/* Nothing useful to do if these fail at teardown. */
	if (l->base != NULL && munmap(l->base, l->size) == -1)
		l->base = NULL;
	if (l->fd != -1 && close(l->fd) == -1)
		l->fd = -1;
	memset(l, 0, sizeof(*l));
	l->fd = -1;
}

int
kv_ledger_sync(struct kv_ledger *l)
{
	return msync(l->base, l->size, MS_SYNC);
}

static uint64_t
sum_workers(const struct kv_ledger *l, size_t field)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		struct kv_worker_slot *w = &l->workers[i];

		if (atomic_load(&w->pid) == 0)
			continue;
		sum += atomic_load((_Atomic uint64_t *)((char *)w + field));
	}
	return sum;
}

uint64_t
kv_ledger_sum_active_streams(const struct kv_ledger *l)
{
	return sum_workers(l, offsetof(struct kv_worker_slot, active_streams));
}

uint64_t
kv_ledger_sum_connections(const struct kv_ledger *l)
{
	return sum_workers(l, offsetof(struct kv_worker_slot, connections));
}

uint64_t
kv_ledger_sum_mem_pending(const struct kv_ledger *l)
{
	return sum_workers(l, offsetof(struct kv_worker_slot, mem_pending));
}

void
kv_histogram_observe(struct kv_histogram *h, uint64_t us)
{
	static const uint64_t bounds_ms[KV_HIST_BUCKETS] = KV_HIST_BOUNDS_MS;
	int i;

	for (i = 0; i < KV_HIST_BUCKETS; i++)
		if (us <= bounds_ms[i] * 1000)
			break;
	atomic_fetch_add(&h->bucket[i], 1);
	atomic_fetch_add(&h->sum_us, us);
	atomic_fetch_add(&h->count, 1);
}

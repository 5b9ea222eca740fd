/* The ledger: the mapped segment (open, create, validate), accounts and
 * their account API, reservations, settlement, periods and per-model
 * totals, all shared words updated with C11 atomics; see ledger.h. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/ledger.h"
#include "shm/ratelimit.h"
#include "shm/targets.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

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

/* A claimer fills its slot between the tag CAS and the store of READY:
 * nanoseconds unless it is preempted. A lookup of the same key polls this
 * many times, then answers "busy" (errno EAGAIN) rather than wait on
 * another process; the master repairs a claim whose claimer died. */
#define CLAIM_POLLS	2000

/* How long a ledger operation waits for the master's repair to finish
 * (it takes about a millisecond, once per worker death) before going on;
 * the repair then sees the change and leaves that account for next time. */
#define QUIESCE_WAIT_NS	50000000LL

/* Admission retries that re-validate spent after the CAS; see admit(). */
#define ADMIT_VALIDATE_TRIES	10000

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

void
kv_key_id(const uint8_t hash[32], char id[13])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 6; i++) {
		id[2 * i] = hex[hash[i] >> 4];
		id[2 * i + 1] = hex[hash[i] & 0xf];
	}
	id[12] = '\0';
}

void
kv_key_hash(const char *key, size_t len, uint8_t hash[32])
{
	/* Fetched once per process: EVP_sha256() makes EVP_Digest look the
	 * algorithm up again on every call, half the hash's cost. */
	static EVP_MD *sha256;
	unsigned int n = 0;

	if (sha256 == NULL)
		sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	/* Only an allocation failure inside OpenSSL can fail a SHA-256; an
	 * all-zero hash would merge every key into one account, so stop. */
	if (sha256 == NULL || EVP_Digest(key, len, hash, &n, sha256, NULL) != 1 || n != 32) {
		fprintf(stderr, "kilovolt: SHA-256 failed\n");
		abort();
	}
}

static int64_t
mono_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A slot whose tag is ours but not READY yet: poll a moment. Returns
 * the state seen last. */
static uint32_t
slot_poll_ready(_Atomic uint32_t *state)
{
	uint32_t st = KV_SLOT_FREE;
	int i;

	for (i = 0; i < CLAIM_POLLS; i++) {
		st = atomic_load_explicit(state, memory_order_acquire);
		if (st != KV_SLOT_FREE && st != KV_SLOT_CLAIMING)
			break;
	}
	return st;
}

/* Claim a free slot: CAS its tag 0 -> tag. Returns 1 when won; else sets
 * *seen to the tag now there. */
static int
slot_try_claim(_Atomic uint64_t *slot_tag, uint64_t tag, uint64_t *seen)
{
	uint64_t expect = 0;

	if (atomic_compare_exchange_strong(slot_tag, &expect, tag))
		return 1;
	*seen = expect;
	return 0;
}

/* Ledger operations of a worker are bracketed by op_enter/op_leave so the
 * master can repair counters while no live worker is half-way through one
 * (see kv_ledger_quiesce). Outside a worker (l->self NULL) they do nothing. */
static int64_t mono_ns(void);

static void
op_enter(struct kv_ledger *l)
{
	struct kv_worker_slot *w = l->self;
	int64_t deadline = 0;

	if (w == NULL || l->op_depth++ > 0)
		return;
	for (;;) {
		atomic_store(&w->in_ledger, 1);
		if (atomic_load(&l->hdr->quiesce) == 0)
			return;
		if (deadline == 0)
			deadline = mono_ns() + QUIESCE_WAIT_NS;
		else if (mono_ns() > deadline) {
			atomic_fetch_add(&w->quiesce_timeouts, 1);
			return;
		}
		atomic_store(&w->in_ledger, 0);
		sched_yield();
	}
}

static void
op_leave(struct kv_ledger *l)
{
	if (l->self == NULL || --l->op_depth > 0)
		return;
	atomic_store(&l->self->in_ledger, 0);
}

void
kv_ledger_op_begin(struct kv_ledger *l)
{
	op_enter(l);
}

void
kv_ledger_op_end(struct kv_ledger *l)
{
	op_leave(l);
}

static uint64_t
hash_start(const uint8_t h[32])
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | h[i];
	return v;
}

uint64_t
kv_account_tag(const uint8_t hash[32])
{
	uint64_t t = hash_start(hash) | 1;

	/* Never 0 (free) nor KV_TAG_DEAD (a retired slot). */
	return t == KV_TAG_DEAD ? 3 : t;
}

static void
account_fill(struct kv_account *a, const uint8_t hash[32], const char *label,
    int64_t budget_nusd)
{
	memcpy(a->hash, hash, 32);
	memset(a->label, 0, sizeof(a->label));
	a->flags = 0;
	if (label != NULL && label[0] != '\0') {
		snprintf(a->label, sizeof(a->label), "%s", label);
		a->flags = KV_ACCOUNT_NAMED;
	}
	atomic_store(&a->budget_nusd, budget_nusd);
	/* "Spent since now": a period roll happens only at the next boundary. */
	atomic_store(&a->period_start, (int64_t)time(NULL));
	atomic_store_explicit(&a->state, KV_SLOT_READY, memory_order_release);
}

/* Claim slot A (its tag was EXPECT: free or retired) for HASH. */
static struct kv_account *
account_claim(struct kv_ledger *l, struct kv_account *a, uint64_t expect,
    uint64_t tag, const uint8_t hash[32], const char *label, int64_t budget_nusd)
{
	/* The bit first: a claimer killed after its tag CAS leaves a slot the
	 * repair's scan must still find. */
	kv_ledger_mark_slot(l, (uint32_t)(a - l->accounts));
	if (!atomic_compare_exchange_strong(&a->tag, &expect, tag))
		return NULL;
	/* before account_fill() publishes the slot */
	atomic_store(&a->rpm, atomic_load(&l->hdr->default_rpm));
	atomic_store(&a->tpm, atomic_load(&l->hdr->default_tpm));
	account_fill(a, hash, label, budget_nusd);
	atomic_fetch_add(&l->hdr->accounts_used, 1);
	return a;
}

/* One pass over HASH's chain: the account when found (or EAGAIN when
 * someone is filling it); else the first free or retired slot in *avail.
 * Retired slots are made only by the master while every worker is outside
 * a ledger operation (kv_ledger_reclaim), and a probe and its claim run in
 * one operation, so all claimers of one key see the same first slot and
 * its tag CAS picks one of them: never two accounts for one key. */
static struct kv_account *
account_find(struct kv_ledger *l, const uint8_t hash[32], struct kv_account **avail,
    int *busy)
{
	uint32_t n = l->hdr->max_keys, i, st;
	uint64_t start = hash_start(hash) % n, tag = kv_account_tag(hash), t;
	struct kv_account *a;

	*avail = NULL;
	*busy = 0;
	for (i = 0; i < n; i++) {
		a = &l->accounts[(start + i) % n];
		t = atomic_load_explicit(&a->tag, memory_order_acquire);
		if (t == 0 || t == KV_TAG_DEAD) {
			if (*avail == NULL)
				*avail = a;
			if (t == 0)	/* the end of the chain */
				return NULL;
			continue;
		}
		if (t != tag)
			continue;
		st = atomic_load_explicit(&a->state, memory_order_acquire);
		if (st != KV_SLOT_READY)
			st = slot_poll_ready(&a->state);
		if (st == KV_SLOT_READY && memcmp(a->hash, hash, 32) == 0)
			return a;
		/* Ours, still being filled by someone else: never claim a second
		 * slot for the key behind it. */
		if (st != KV_SLOT_READY)
			*busy = 1;
	}
	return NULL;
}

#define CLAIM_TRIES	8

/* See kv_ledger_account. */
static struct kv_account *
account_probe(struct kv_ledger *l, const uint8_t hash[32], int create,
    const char *label, int64_t budget_nusd)
{
	struct kv_account *a, *avail;
	uint64_t expect;
	int busy, tries;

	for (tries = 0; tries < CLAIM_TRIES; tries++) {
		if ((a = account_find(l, hash, &avail, &busy)) != NULL)
			return a;
		if (busy) {
			errno = EAGAIN;
			return NULL;
		}
		if (!create || avail == NULL) {
			errno = create ? ENOSPC : ENOENT;
			return NULL;
		}
		expect = atomic_load(&avail->tag);
		if (expect != 0 && expect != KV_TAG_DEAD)
			continue;	/* taken since: look again */
		if ((a = account_claim(l, avail, expect, kv_account_tag(hash), hash, label,
		    budget_nusd)) != NULL)
			return a;
	}
	errno = EAGAIN;
	return NULL;
}

struct kv_account *
kv_ledger_account(struct kv_ledger *l, const uint8_t hash[32], int create,
    const char *label, int64_t budget_nusd)
{
	struct kv_account *a;
	int saved;

	op_enter(l);
	a = account_probe(l, hash, create, label, budget_nusd);
	saved = errno;
	op_leave(l);
	errno = saved;
	return a;
}

int
kv_account_label_retired(const struct kv_account *a)
{
	return (a->flags & KV_ACCOUNT_NAMED) && a->label[0] != '\0' &&
	    (atomic_load(&a->aflags) & KV_AF_FORMER);
}

void
kv_account_set_label(struct kv_account *a, const char *label)
{
	if (strncmp(a->label, label, sizeof(a->label) - 1) == 0 &&
	    (a->flags & KV_ACCOUNT_NAMED))
		return;
	memset(a->label, 0, sizeof(a->label));
	snprintf(a->label, sizeof(a->label), "%s", label);
	a->flags |= KV_ACCOUNT_NAMED;
}

uint32_t
kv_ledger_account_index(const struct kv_ledger *l, const struct kv_account *a)
{
	return (uint32_t)(a - l->accounts);
}

static int64_t
floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's
 * days_from_civil), and its inverse for the year and month. */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void
civil_from_days(int64_t z, int64_t *y, unsigned *m)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = floor_div(z, 146097);
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

int64_t
kv_period_start(enum kv_period period, int64_t now)
{
	int64_t days = floor_div(now, 86400), y;
	unsigned m;

	switch (period) {
	case KV_PERIOD_DAILY:
		return days * 86400;
	case KV_PERIOD_WEEKLY:
		/* 1970-01-01 was a Thursday: day 0 is weekday 3 counting from Monday. */
		return (days - ((days + 3) % 7 + 7) % 7) * 86400;
	case KV_PERIOD_MONTHLY:
		civil_from_days(days, &y, &m);
		return days_from_civil(y, m, 1) * 86400;
	case KV_PERIOD_NONE:
	default:
		return 0;
	}
}

static int64_t
spent_value(int64_t word)
{
	int64_t v = word & ~KV_SPENT_ROLLED;

	return v >= KV_SPENT_MAX ? INT64_MAX : v;
}

int64_t
kv_account_spent(const struct kv_account *a)
{
	return spent_value(atomic_load(&a->spent_nusd));
}

void
kv_account_charge(struct kv_account *a, int64_t cost)
{
	int64_t cur = atomic_load(&a->spent_nusd), v;

	if (cost <= 0)
		return;
	do {
		v = cur & ~KV_SPENT_ROLLED;
		v = v > KV_SPENT_MAX - cost ? KV_SPENT_MAX : v + cost;
	} while (!atomic_compare_exchange_weak(&a->spent_nusd, &cur,
	    (cur & KV_SPENT_ROLLED) | v));
}

int64_t
kv_account_spent_reset(struct kv_account *a)
{
	int64_t cur = atomic_load(&a->spent_nusd);

	while (!atomic_compare_exchange_weak(&a->spent_nusd, &cur, cur & KV_SPENT_ROLLED))
		;
	return spent_value(cur);
}

int64_t
kv_account_period(const struct kv_account *a)
{
	int64_t ps = atomic_load(&a->period_start);

	return ps < 0 ? -ps : ps;
}

void
kv_ledger_period_roll(struct kv_ledger *l, struct kv_account *a,
    enum kv_period period, int64_t now)
{
	int64_t start, ps;

	if (period == KV_PERIOD_NONE)
		return;
	start = kv_period_start(period, now);
	/* Fast path, outside the bracket: nothing to roll. A negative value
	 * (a roll under way) compares as current. */
	ps = atomic_load(&a->period_start);
	if (ps >= start || ps < 0)
		return;
	op_enter(l);
	while (ps >= 0 && ps < start) {
		if (!atomic_compare_exchange_weak(&a->period_start, &ps, -start))
			continue;
		/* A cluster lease is the old period's: cap first, so no
		 * admission sees the cleared spent under the old cap. */
		atomic_store(&a->lease_cap_nusd, 0);
		(void)atomic_exchange(&a->spent_nusd, KV_SPENT_ROLLED);
		atomic_store(&a->period_start, start);
		atomic_fetch_and(&a->spent_nusd, ~KV_SPENT_ROLLED);
		break;
	}
	op_leave(l);
}

int
kv_ledger_roll_finish(struct kv_account *a)
{
	int64_t ps = atomic_load(&a->period_start);

	if (ps < 0) {
		/* Stopped after step 1 or 2: the old spend is still there
		 * (the bit is not set) and goes now; after 3 it went already. */
		atomic_store(&a->lease_cap_nusd, 0);
		if (!(atomic_load(&a->spent_nusd) & KV_SPENT_ROLLED))
			atomic_store(&a->spent_nusd, 0);
		atomic_fetch_and(&a->spent_nusd, ~KV_SPENT_ROLLED);
		atomic_store(&a->period_start, -ps);
		return 1;
	}
	if (atomic_load(&a->spent_nusd) & KV_SPENT_ROLLED) {	/* after 4 */
		atomic_fetch_and(&a->spent_nusd, ~KV_SPENT_ROLLED);
		return 1;
	}
	return 0;
}

int64_t
kv_account_remaining(const struct kv_account *a)
{
	int64_t reserved = atomic_load(&a->reserved_nusd);
	int64_t spent = kv_account_spent(a);
	int64_t budget = atomic_load(&a->budget_nusd);

	return kv_sat_add(kv_sat_add(budget, -spent), -reserved);
}

/* Find a free reservation entry in W (only its own worker writes there,
 * starting from the hint) and record the amount before the account, so a
 * master that sees the account also sees the amount. */
static int
resv_record(struct kv_worker_slot *w, uint32_t account, int64_t amount)
{
	uint32_t start = atomic_load(&w->resv_hint) % KV_RESV_PER_WORKER, i, j;

	for (i = 0; i < KV_RESV_PER_WORKER; i++) {
		j = (start + i) % KV_RESV_PER_WORKER;
		if (atomic_load(&w->resv[j].account) != 0)
			continue;
		if (j + 1 > atomic_load(&w->resv_hi))	/* before the record shows */
			atomic_store(&w->resv_hi, j + 1);
		atomic_store(&w->resv[j].amount_nusd, amount);
		atomic_store(&w->resv_sent_nusd[j], 0);
		atomic_store_explicit(&w->resv[j].account, account,
		    memory_order_release);
		atomic_store(&w->resv_hint, (j + 1) % KV_RESV_PER_WORKER);
		return (int)j;
	}
	return -1;
}

static void
resv_clear(struct kv_worker_slot *w, int r)
{
	atomic_store(&w->resv[r].amount_nusd, 0);
	atomic_store(&w->resv_sent_nusd[r], 0);
	atomic_store_explicit(&w->resv[r].account, 0, memory_order_release);
	atomic_store(&w->resv_hint, (uint32_t)r);
}

void
kv_ledger_resv_sent(struct kv_worker_slot *w, int resv, int64_t min_nusd)
{
	if (resv < 0 || resv >= KV_RESV_PER_WORKER || min_nusd < 0)
		return;
	atomic_store(&w->resv_sent_nusd[resv], min_nusd < KV_SPENT_MAX ? min_nusd : KV_SPENT_MAX);
}

/* What a dead worker's reservation leaves spent: the real cost when it
 * died settling (KV_RESV_COST), else the minimum its worker recorded once
 * the request was sent (at most the amount reserved). */
static int64_t
resv_death_charge(struct kv_worker_slot *w, uint32_t r, int64_t amount)
{
	int64_t min = atomic_load(&w->resv_sent_nusd[r]);

	if (min & KV_RESV_COST)
		return min & ~KV_RESV_COST;
	return min < amount ? min : amount;
}

int64_t
kv_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (!__builtin_add_overflow(a, b, &r))
		return r;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

/* spent + reserved + amount <= budget, without overflow. */
static int
admits(int64_t budget, int64_t spent, int64_t reserved, int64_t amount)
{
	int64_t sum;

	if (__builtin_add_overflow(spent, reserved, &sum) ||
	    __builtin_add_overflow(sum, amount, &sum))
		return 0;
	return sum <= budget;
}

/* The admission loop. reserved is read before spent because settlement
 * adds to spent before it subtracts from reserved: in that order a reader
 * may over-count but never under-count. The CAS on reserved alone cannot
 * see spent move (reserved can come back to the same value: ABA), so after
 * a successful CAS spent is read again; unchanged means the check held at
 * the instant of the CAS, changed means undo and try again.
 * With cluster leases (LEASED) the budget is what the other hosts have not
 * committed, and this host's lease caps it too (-3 when only the lease
 * refuses). The master lowers a cap before it reads spent and reserved to
 * return the rest, so a cap seen lower after the CAS means undo and retry:
 * either this admission sees the new cap or the master sees it. */
static int
admit(struct kv_account *a, int64_t amount, int64_t *remaining, int leased)
{
	int64_t budget, spent, word, reserved, cap = 0;
	int tries;

	for (tries = 0; ; tries++) {
		reserved = atomic_load(&a->reserved_nusd);
		word = atomic_load(&a->spent_nusd);
		spent = spent_value(word);
		budget = atomic_load(&a->budget_nusd);
		if (leased)
			budget -= atomic_load(&a->cluster_other_nusd);
		if (!admits(budget, spent, reserved, amount)) {
			*remaining = kv_sat_add(kv_sat_add(budget, -spent), -reserved);
			return -1;
		}
		if (leased && !admits(cap = atomic_load(&a->lease_cap_nusd), spent, reserved,
		    amount)) {
			*remaining = kv_sat_add(kv_sat_add(budget, -spent), -reserved);
			return -3;
		}
		if (!atomic_compare_exchange_strong(&a->reserved_nusd, &reserved,
		    reserved + amount))
			continue;
		if (leased && atomic_load(&a->lease_cap_nusd) < cap) {
			atomic_fetch_sub(&a->reserved_nusd, amount);
			continue;
		}
		/* Past the bound, accept the (rarely ABA-prone) plain CAS rather
		 * than spin forever under a storm of settlements. */
		if (tries > ADMIT_VALIDATE_TRIES ||
		    atomic_load(&a->spent_nusd) == word) {
			*remaining = budget - spent - reserved - amount;
			return 0;
		}
		atomic_fetch_sub(&a->reserved_nusd, amount);
	}
}

int
kv_ledger_reserve(struct kv_ledger *l, struct kv_worker_slot *w,
    struct kv_account *a, int64_t amount, int64_t *remaining)
{
	int r, rc;

	if (amount < 0)
		amount = 0;
	op_enter(l);
	/* Retired by the master between this worker's lookup and now. */
	if (atomic_load(&a->state) != KV_SLOT_READY) {
		op_leave(l);
		*remaining = 0;
		return -4;
	}
	/* Recorded first; a worker killed anywhere in here is made exact by
	 * the master's repair, which recomputes reserved from the records of
	 * the live workers (kv_ledger_repair). */
	r = resv_record(w, kv_ledger_account_index(l, a) + 1, amount);
	if (r == -1) {
		*remaining = kv_account_remaining(a);
		op_leave(l);
		return -2;
	}
	rc = admit(a, amount, remaining, atomic_load(&l->hdr->cluster) != 0);
	if (rc == -3) {
		int64_t need = atomic_load(&a->lease_need_nusd);

		while (need < amount &&
		    !atomic_compare_exchange_weak(&a->lease_need_nusd, &need, amount))
			;
		resv_clear(w, r);
		op_leave(l);
		return -3;
	}
	if (rc == -1) {
		atomic_fetch_add(&a->refusals, 1);
		resv_clear(w, r);
		op_leave(l);
		return -1;
	}
	op_leave(l);
	return r;
}

static void
model_add(struct kv_model_slot *m, int64_t cost, const struct kv_usage *u)
{
	atomic_fetch_add(&m->requests, 1);
	atomic_fetch_add(&m->cost_nusd, (uint64_t)cost);
	if (u == NULL)
		return;
	atomic_fetch_add(&m->input_tokens, (uint64_t)(u->input > 0 ? u->input : 0));
	atomic_fetch_add(&m->output_tokens, (uint64_t)(u->output > 0 ? u->output : 0));
	atomic_fetch_add(&m->cached_input_tokens,
	    (uint64_t)(u->cached_input > 0 ? u->cached_input : 0));
}

static void
account_add(struct kv_account *a, const struct kv_usage *u)
{
	atomic_fetch_add(&a->requests, 1);
	atomic_store(&a->last_used, (int64_t)time(NULL));
	if (u == NULL)
		return;
	atomic_fetch_add(&a->input_tokens, (uint64_t)(u->input > 0 ? u->input : 0));
	atomic_fetch_add(&a->output_tokens, (uint64_t)(u->output > 0 ? u->output : 0));
	atomic_fetch_add(&a->cached_input_tokens,
	    (uint64_t)(u->cached_input > 0 ? u->cached_input : 0));
}

void
kv_ledger_settle(struct kv_ledger *l, struct kv_worker_slot *w, int resv,
    int64_t cost, const struct kv_usage *usage, const char *model)
{
	struct kv_model_slot *m;
	struct kv_account *a;
	uint32_t idx;
	int64_t amount;

	if (resv < 0 || resv >= KV_RESV_PER_WORKER)
		return;
	idx = atomic_load(&w->resv[resv].account);
	if (idx == 0 || idx > l->hdr->max_keys)
		return;
	a = &l->accounts[idx - 1];
	if (cost < 0)
		cost = 0;
	op_enter(l);
	/* What a kill -9 from here on leaves: the real cost, recorded as the
	 * death charge before it is added and cleared right after, so a death
	 * on either side of the add is charged exactly once. Only between the
	 * CAS that adds and the store that clears (two instructions) is it
	 * charged twice: docs/ledger.md says why no lock-free order closes
	 * that, and test_repair measures it. */
	atomic_store(&w->resv_sent_nusd[resv],
	    (cost < KV_SPENT_MAX ? cost : KV_SPENT_MAX) | KV_RESV_COST);
	/* Spent first, then reserved: admission may briefly over-count the
	 * pair, never under-count it. Saturating: an overflow sentinel cost
	 * must not wrap spent negative. */
	kv_account_charge(a, cost);
	atomic_store(&w->resv_sent_nusd[resv], 0);
	amount = atomic_exchange(&w->resv[resv].amount_nusd, 0);
	atomic_fetch_sub(&a->reserved_nusd, amount);
	resv_clear(w, resv);
	if (cost != 0 || usage != NULL) {
		if (cost > 0)
			atomic_fetch_or(&a->aflags, KV_AF_KEPT);
		account_add(a, usage);
		m = (model != NULL && model[0] != '\0') ? kv_ledger_model(l, model) : NULL;
		if (m != NULL)
			model_add(m, cost, usage);
	}
	op_leave(l);
}

int
kv_ledger_release_worker(struct kv_ledger *l, struct kv_worker_slot *w)
{
	uint32_t i, idx;
	int64_t amount, charge;
	int n = 0;

	(void)kv_ratelimit_release_worker(l, w);	/* reads the same records */
	kv_targets_release_worker(l, w);
	for (i = 0; i < kv_ledger_resv_end(w); i++) {
		idx = atomic_load(&w->resv[i].account);
		if (idx == 0)
			continue;
		amount = atomic_exchange(&w->resv[i].amount_nusd, 0);
		charge = resv_death_charge(w, i, amount);
		/* spent first, then reserved, as kv_ledger_settle does */
		if (idx <= l->hdr->max_keys)
			kv_account_charge(&l->accounts[idx - 1], charge);
		if (idx <= l->hdr->max_keys && amount != 0)
			atomic_fetch_sub(&l->accounts[idx - 1].reserved_nusd, amount);
		atomic_store(&w->resv_sent_nusd[i], 0);
		atomic_store(&w->resv[i].account, 0);
		n++;
	}
	atomic_store(&w->resv_hint, 0);
	atomic_store(&w->resv_hi, 0);
	atomic_store(&w->connections, 0);
	atomic_store(&w->active_streams, 0);
	return n;
}

static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Names longer than the slot are stored and compared truncated. */
static int
model_name_eq(const struct kv_model_slot *m, const char *name)
{
	return strncmp(m->name, name, KV_MODEL_NAME - 1) == 0;
}

static void
model_fill(struct kv_model_slot *m, const char *name)
{
	memset(m->name, 0, sizeof(m->name));
	snprintf(m->name, sizeof(m->name), "%s", name);
	atomic_store_explicit(&m->state, KV_SLOT_READY, memory_order_release);
}

static struct kv_model_slot *
model_probe(struct kv_ledger *l, const char *name)
{
	uint64_t h = fnv1a(name), tag = h | 1, t;
	struct kv_model_slot *m;
	uint32_t i, st;

	for (i = 0; i < KV_MODEL_SLOTS; i++) {
		m = &l->models[(h + i) % KV_MODEL_SLOTS];
		t = atomic_load_explicit(&m->tag, memory_order_acquire);
		if (t == 0) {
			if (slot_try_claim(&m->tag, tag, &t)) {
				model_fill(m, name);
				atomic_fetch_add(&l->hdr->models_used, 1);
				return m;
			}
		}
		if (t != tag)
			continue;
		/* A row is its 64-bit name hash; the name is its label. While
		 * another process is still writing the label (it can be
		 * preempted there for a whole time slice), the hash alone says
		 * the row is ours: counting into it loses nothing. Once the
		 * label is there it also rules out a hash collision. */
		st = atomic_load_explicit(&m->state, memory_order_acquire);
		if (st == KV_SLOT_FREE || st == KV_SLOT_CLAIMING)
			return m;
		if (st == KV_SLOT_READY && model_name_eq(m, name))
			return m;
	}
	return NULL;
}

struct kv_model_slot *
kv_ledger_model(struct kv_ledger *l, const char *model)
{
	char name[KV_MODEL_NAME];
	struct kv_model_slot *m;

	if (model == NULL || model[0] == '\0')
		return NULL;
	snprintf(name, sizeof(name), "%s", model);
	op_enter(l);
	m = model_probe(l, name);
	op_leave(l);
	return m;
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

void
kv_ledger_mark_slot(struct kv_ledger *l, uint32_t i)
{
	atomic_fetch_or(&l->used[i / 64], (uint64_t)1 << (i % 64));
}

uint32_t
kv_ledger_next_slot(const struct kv_ledger *l, uint32_t i)
{
	uint32_t n = l->hdr->max_keys, w;
	uint64_t bits;

	if (i >= n)
		return n;
	w = i / 64;
	bits = atomic_load_explicit(&l->used[w], memory_order_acquire) &
	    (~(uint64_t)0 << (i % 64));
	while (bits == 0) {
		if (++w >= (n + 63) / 64)
			return n;
		bits = atomic_load_explicit(&l->used[w], memory_order_acquire);
	}
	i = w * 64 + (uint32_t)__builtin_ctzll(bits);
	return i < n ? i : n;
}

uint32_t
kv_ledger_resv_end(const struct kv_worker_slot *w)
{
	uint32_t hi = atomic_load(&w->resv_hi);

	return hi < KV_RESV_PER_WORKER ? hi : KV_RESV_PER_WORKER;
}

/* ---- the account API (kvctl, the admin API) -------------------------- */

int64_t
kv_account_reset(struct kv_account *a)
{
	atomic_store(&a->lease_cap_nusd, 0);
	return kv_account_spent_reset(a);
}

int64_t
kv_account_set_budget(struct kv_account *a, int64_t v)
{
	atomic_fetch_or(&a->aflags, KV_AF_OVERRIDE);
	return atomic_exchange(&a->budget_nusd, v);
}

void
kv_account_set_limits(struct kv_account *a, int64_t rpm, int64_t tpm)
{
	if (rpm >= 0) {
		atomic_store(&a->rpm, (uint32_t)rpm);
		atomic_store(&a->rpm_tat, 0);
	}
	if (tpm >= 0) {
		atomic_store(&a->tpm, (uint32_t)tpm);
		atomic_store(&a->tpm_tat, 0);
	}
}

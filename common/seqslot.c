/* The shared seqlock slot (seqslot.h): the writer makes the count odd,
 * writes, makes it even; a reader copies between two equal even counts.
 * The copy is done byte by byte with relaxed atomic loads so that racing
 * with the writer is defined behaviour, not a data race. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/seqslot.h"

#include <sys/mman.h>

void *
kv_seqslot_map(size_t size)
{
	void *p;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Not in a core dump even if dumping is turned back on. */
	(void)madvise(p, size, MADV_DONTDUMP);
	return p;
}

static void
copy_out(const void *src, void *dst, size_t n)
{
	const _Atomic unsigned char *s = src;
	unsigned char *d = dst;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = atomic_load_explicit(&s[i], memory_order_relaxed);
}

static void
copy_in(void *dst, const void *src, size_t n)
{
	_Atomic unsigned char *d = dst;
	const unsigned char *s = src;
	size_t i;

	for (i = 0; i < n; i++)
		atomic_store_explicit(&d[i], s[i], memory_order_relaxed);
}

void
kv_seqslot_publish(struct kv_seqslot *s, void *dst, const void *src, size_t n)
{
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	copy_in(dst, src, n);
	atomic_fetch_add_explicit(&s->generation, 1, memory_order_relaxed);
	atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

uint64_t
kv_seqslot_generation(const struct kv_seqslot *s)
{
	return atomic_load_explicit(&s->generation, memory_order_acquire);
}

int
kv_seqslot_read(const struct kv_seqslot *s, const void *src, void *out, size_t n,
    uint64_t *gen)
{
	uint64_t q0, q1;

	for (;;) {
		q0 = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (q0 & 1)
			continue;	/* the master is writing: a few microseconds */
		*gen = atomic_load_explicit(&s->generation, memory_order_relaxed);
		copy_out(src, out, n);
		atomic_thread_fence(memory_order_acquire);
		q1 = atomic_load_explicit(&s->seq, memory_order_relaxed);
		if (q0 == q1)
			break;
	}
	return *gen == 0 ? -1 : 0;
}

/* The AWS credentials slot shared by the master and its workers: see
 * aws_creds.h. A seqlock over a plain struct: the writer makes the count
 * odd, writes, makes it even; a reader copies between two equal even
 * counts. The copy is done byte by byte with relaxed atomic loads so that
 * racing with the writer is defined behaviour, not a data race. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/aws_creds.h"

#include <string.h>
#include <sys/mman.h>

#include <openssl/crypto.h>

static struct kv_aws_slot *the_slot;

struct kv_aws_slot *
kv_aws_slot_map(void)
{
	void *p;

	if (the_slot != NULL)
		return the_slot;
	p = mmap(NULL, sizeof(struct kv_aws_slot), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Not in a core dump even if dumping is turned back on. */
	(void)madvise(p, sizeof(struct kv_aws_slot), MADV_DONTDUMP);
	the_slot = p;
	return the_slot;
}

struct kv_aws_slot *
kv_aws_slot_get(void)
{
	return the_slot;
}

/* The struct as atomic bytes: the copy in and out of the slot. */
static void
copy_out(const struct kv_aws_creds *src, struct kv_aws_creds *dst)
{
	const _Atomic unsigned char *s = (const _Atomic unsigned char *)(const void *)src;
	unsigned char *d = (unsigned char *)dst;
	size_t i;

	for (i = 0; i < sizeof(*src); i++)
		d[i] = atomic_load_explicit(&s[i], memory_order_relaxed);
}

static void
copy_in(struct kv_aws_creds *dst, const struct kv_aws_creds *src)
{
	_Atomic unsigned char *d = (_Atomic unsigned char *)(void *)dst;
	const unsigned char *s = (const unsigned char *)src;
	size_t i;

	for (i = 0; i < sizeof(*src); i++)
		atomic_store_explicit(&d[i], s[i], memory_order_relaxed);
}

void
kv_aws_slot_publish(struct kv_aws_slot *s, const struct kv_aws_creds *c)
{
	uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, q + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	copy_in(&s->creds, c);
	atomic_fetch_add_explicit(&s->generation, 1, memory_order_relaxed);
	atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

uint64_t
kv_aws_slot_generation(const struct kv_aws_slot *s)
{
	return atomic_load_explicit(&s->generation, memory_order_acquire);
}

int
kv_aws_slot_read(const struct kv_aws_slot *s, struct kv_aws_creds *out, uint64_t *gen)
{
	uint64_t q0, q1;

	for (;;) {
		q0 = atomic_load_explicit(&s->seq, memory_order_acquire);
		if (q0 & 1)
			continue;	/* the master is writing: a few microseconds */
		*gen = atomic_load_explicit(&s->generation, memory_order_relaxed);
		copy_out(&s->creds, out);
		atomic_thread_fence(memory_order_acquire);
		q1 = atomic_load_explicit(&s->seq, memory_order_relaxed);
		if (q0 == q1)
			break;
	}
	if (*gen == 0)
		return -1;
	/* Terminated whatever the bytes: the writer always terminates, but a
	 * reader must not trust shared memory to. */
	out->access_key[KV_AWS_KEY_MAX] = '\0';
	out->secret[KV_AWS_SECRET_MAX] = '\0';
	out->token[KV_AWS_TOKEN_MAX] = '\0';
	return 0;
}

const char *
kv_aws_source_name(int source)
{
	switch (source) {
	case KV_AWS_ENV:
		return "env";
	case KV_AWS_WEB_IDENTITY:
		return "web identity";
	case KV_AWS_IMDS:
		return "instance role (IMDSv2)";
	default:
		return "none";
	}
}

void
kv_aws_wipe(void *p, size_t n)
{
	OPENSSL_cleanse(p, n);
}

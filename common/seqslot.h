/* A secret handed from the master to its workers without a restart: one
 * slot in a MAP_SHARED|MAP_ANONYMOUS mapping the master makes at start-up,
 * before it forks any worker, so every worker of every generation
 * (reloads, respawns) inherits the same page. Never a file: secrets must
 * not reach a disk, nor a core dump (MADV_DONTDUMP). The master alone
 * writes (a seqlock: a worker never copies a half-written secret); a
 * generation number tells a worker when what it derived from the last one
 * is stale. Used for AWS's credentials (aws_creds.h) and Google's access
 * token (gcp_token.h). */
#ifndef KV_SEQSLOT_H
#define KV_SEQSLOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The head of a slot; the payload follows it in the same mapping. SEQ is
 * odd while the master writes; GENERATION counts publications (0: nothing
 * published yet). */
struct kv_seqslot {
	_Alignas(64) _Atomic uint64_t	seq;
	_Atomic uint64_t		generation;
};

/* A zeroed shared anonymous mapping of SIZE bytes (a struct that starts
 * with a struct kv_seqslot), kept out of core dumps. NULL with errno set
 * when mmap fails. */
void	*kv_seqslot_map(size_t size);

/* Publish SRC (N bytes) into DST, the payload of slot S (the only writer:
 * the master), and bump the generation. */
void	kv_seqslot_publish(struct kv_seqslot *s, void *dst, const void *src, size_t n);

/* The generation published last, 0 for none: one atomic load. */
uint64_t kv_seqslot_generation(const struct kv_seqslot *s);

/* Copy SRC (N bytes, the payload of slot S) into OUT and its generation
 * into *GEN, consistently (retried while the master writes). 0, or -1
 * when nothing was published yet. */
int	kv_seqslot_read(const struct kv_seqslot *s, const void *src, void *out, size_t n,
	    uint64_t *gen);

#endif

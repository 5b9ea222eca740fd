/* AWS credentials handed from the master to the workers without a restart:
 * one slot in a MAP_SHARED|MAP_ANONYMOUS mapping the master makes once at
 * start-up, before it forks any worker, so every worker of every generation
 * (reloads, respawns) inherits the same page. Never a file: secrets must
 * not reach a disk. The master alone writes it (a seqlock: a worker never
 * copies a half-written secret); a generation number tells a worker when to
 * drop the signing keys it derived from the previous credentials. */
#ifndef KV_AWS_CREDS_H
#define KV_AWS_CREDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/seqslot.h"

#define KV_AWS_KEY_MAX		128	/* an access key id, at most (AWS: 128) */
#define KV_AWS_SECRET_MAX	128	/* a secret access key, at most */
#define KV_AWS_TOKEN_MAX	4096	/* a session token, at most (STS's run to ~2 KB) */

/* Where the credentials came from: the chain's order. */
enum kv_aws_source { KV_AWS_NONE = 0, KV_AWS_ENV, KV_AWS_WEB_IDENTITY, KV_AWS_IMDS };

/* One set of credentials, NUL-terminated strings; token "" for long-term
 * keys; expires in Unix seconds, 0 for never (static keys). */
struct kv_aws_creds {
	char		access_key[KV_AWS_KEY_MAX + 1];
	char		secret[KV_AWS_SECRET_MAX + 1];
	char		token[KV_AWS_TOKEN_MAX + 1];
	int64_t		expires;
	int		source;		/* enum kv_aws_source */
};

/* The shared slot (common/seqslot.h). */
struct kv_aws_slot {
	struct kv_seqslot	head;
	struct kv_aws_creds	creds;
};

/* Map the process's slot, zeroed (idempotent: a second call returns the
 * first mapping). Called by the master before it forks; children inherit
 * it. NULL with errno set when mmap fails. */
struct kv_aws_slot *kv_aws_slot_map(void);

/* The mapping kv_aws_slot_map made in this process or a parent, or NULL. */
struct kv_aws_slot *kv_aws_slot_get(void);

/* Publish C (the only writer: the master) and bump the generation. */
void	kv_aws_slot_publish(struct kv_aws_slot *s, const struct kv_aws_creds *c);

/* The generation published last, 0 for none: one atomic load, for a
 * worker to compare with the one it copied. */
uint64_t kv_aws_slot_generation(const struct kv_aws_slot *s);

/* Copy the published credentials into *OUT and their generation into
 * *GEN, consistently (retried while the master writes). Returns 0, or -1
 * when nothing was published yet. */
int	kv_aws_slot_read(const struct kv_aws_slot *s, struct kv_aws_creds *out, uint64_t *gen);

/* "env", "web identity", "instance role (IMDSv2)" or "none", for logs. */
const char *kv_aws_source_name(int source);

/* Wipe N bytes at P in a way the compiler keeps (secrets on the stack). */
void	kv_aws_wipe(void *p, size_t n);

#endif

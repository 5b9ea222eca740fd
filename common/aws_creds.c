/* The AWS credentials slot shared by the master and its workers: see
 * aws_creds.h; the seqlock is common/seqslot.c's. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/aws_creds.h"

#include <openssl/crypto.h>

#include "common/seqslot.h"

static struct kv_aws_slot *the_slot;

struct kv_aws_slot *
kv_aws_slot_map(void)
{
	if (the_slot == NULL)
		the_slot = kv_seqslot_map(sizeof(struct kv_aws_slot));
	return the_slot;
}

struct kv_aws_slot *
kv_aws_slot_get(void)
{
	return the_slot;
}

void
kv_aws_slot_publish(struct kv_aws_slot *s, const struct kv_aws_creds *c)
{
	kv_seqslot_publish(&s->head, &s->creds, c, sizeof(*c));
}

uint64_t
kv_aws_slot_generation(const struct kv_aws_slot *s)
{
	return kv_seqslot_generation(&s->head);
}

int
kv_aws_slot_read(const struct kv_aws_slot *s, struct kv_aws_creds *out, uint64_t *gen)
{
	if (kv_seqslot_read(&s->head, &s->creds, out, sizeof(*out), gen) == -1)
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

/* The HTTP face of the rate limits: the x-ratelimit-* header lines a
 * limited key's responses carry, and the providers' token rules. The GCRA
 * arithmetic and the ledger's buckets stay in shm/ratelimit.h. */
#ifndef KV_WORKER_RATELIMIT_HEADERS_H
#define KV_WORKER_RATELIMIT_HEADERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/money.h"
#include "shm/ratelimit.h"

/* The tokens a response counts against tpm, as the providers count them:
 * OpenAI's prompt tokens include cached ones, so input + output; Anthropic
 * does not count cache reads toward its input limit, so input (which here
 * includes cache reads and writes) - cache reads + output. */
int64_t	kv_ratelimit_tokens(const struct kv_usage *u, int anthropic);

/* The x-ratelimit-* header lines (OpenAI's six, for the limits that are
 * set) for V into BUF. Returns the length written, or -1 if it does not fit. */
int	kv_ratelimit_headers(const struct kv_rl_view *v, char *buf, size_t len);

#endif

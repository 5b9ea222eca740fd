/* What a rate limit looks like to a client: the x-ratelimit-* header text
 * and the providers' rules for which tokens count against tpm
 * (worker/ratelimit_headers.h). The arithmetic and its ledger bookkeeping
 * are shm/ratelimit.c's. */
#include "worker/ratelimit_headers.h"

#include <string.h>

#include "common/duration.h"
#include "common/fmt.h"

int64_t
kv_ratelimit_tokens(const struct kv_usage *u, int anthropic)
{
	int64_t n = u->input + u->output;

	if (anthropic)
		n -= u->cached_input;
	return n > 0 ? n : 0;
}

/* A string literal: its length is known, no strlen. */
#define LIT(b, s)	kv_sb_put((b), (s), sizeof(s) - 1)

/* The three lines of one limit: x-ratelimit-{limit,remaining,reset}-WHAT. */
static void
limit_lines(struct kv_sb *b, const char *what, uint64_t limit, int64_t remaining,
    int64_t reset_ms)
{
	size_t wl = strlen(what);

	LIT(b, "x-ratelimit-limit-");
	kv_sb_put(b, what, wl);
	LIT(b, ": ");
	kv_sb_u64(b, limit);
	LIT(b, "\r\nx-ratelimit-remaining-");
	kv_sb_put(b, what, wl);
	LIT(b, ": ");
	kv_sb_i64(b, remaining);
	LIT(b, "\r\nx-ratelimit-reset-");
	kv_sb_put(b, what, wl);
	LIT(b, ": ");
	kv_sb_duration(b, reset_ms);
	LIT(b, "\r\n");
}

/* Written by hand, not snprintf: these lines go on every response of a
 * limited key (callgrind: the snprintf version cost 5.4 k instructions a
 * request, 9 % of a small chat request's). */
int
kv_ratelimit_headers(const struct kv_rl_view *v, char *buf, size_t len)
{
	struct kv_sb b = { buf, 0, len };

	if (len == 0)
		return -1;
	if (v->rpm != 0)
		limit_lines(&b, "requests", v->rpm, v->req_remaining, v->req_reset_ms);
	if (v->tpm != 0)
		limit_lines(&b, "tokens", v->tpm, v->tok_remaining, v->tok_reset_ms);
	if (b.len == len)	/* no room for the NUL: cut, as snprintf's n >= len */
		return -1;
	buf[b.len] = '\0';
	return (int)b.len;
}

/* Log back-off for repeating errors: see backoff.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stddef.h>
#include <stdio.h>

#include "common/backoff.h"

int
kv_backoff_fail(struct kv_backoff *b, int64_t now)
{
	if (b->count++ == 0) {
		b->first_s = now;
		b->step_s = 1;
		b->next_s = now + 1;
		return 1;
	}
	if (now < b->next_s)
		return 0;
	b->step_s = b->step_s * 2 > KV_BACKOFF_MAX_S ? KV_BACKOFF_MAX_S : b->step_s * 2;
	b->next_s = now + b->step_s;
	return 1;
}

void
kv_backoff_describe(const struct kv_backoff *b, int64_t now, char *buf, size_t len)
{
	int64_t d = now - b->first_s;

	if (b->count <= 1)
		snprintf(buf, len, "%s", "");
	else if (d < 120)
		snprintf(buf, len, ", still failing: %llu times in %lld s",
		    (unsigned long long)b->count, (long long)d);
	else
		snprintf(buf, len, ", still failing: %llu times in %lld min",
		    (unsigned long long)b->count, (long long)(d / 60));
}

uint64_t
kv_backoff_ok(struct kv_backoff *b)
{
	uint64_t n = b->count;

	b->count = 0;
	b->step_s = 0;
	return n;
}

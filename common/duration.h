/* Go-style durations ("0s", "12ms", "1.5s", "6m0s", "1h0m0s"), as OpenAI
 * writes its x-ratelimit-reset-* values; kvctl shows resets the same way. */
#ifndef KV_COMMON_DURATION_H
#define KV_COMMON_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "common/fmt.h"

/* Go-style duration, as OpenAI writes its reset values: "0s", "12ms",
 * "1s", "1.5s", "6m0s", "1h0m0s". */
void	kv_format_duration(int64_t ms, char *buf, size_t len);

/* The same duration appended to B (no NUL). */
void	kv_sb_duration(struct kv_sb *b, int64_t ms);

#endif

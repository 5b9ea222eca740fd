/* The response scanner (usage_scan.c) as its SSE framing (usage.c) uses
 * it; kv_usage_init, in usage.h, is its start. */
#ifndef KV_USAGE_SCAN_H
#define KV_USAGE_SCAN_H

#include <stddef.h>

#include "worker/usage.h"

/* Feed JSON bytes (a whole body, or an SSE event's data) to S. */
void	usage_scan_json(struct kv_usage_scanner *s, const unsigned char *p, size_t n);

/* An SSE event ended: S forgets what it knew of it (its type, the usage
 * object it was reading). */
void	usage_scan_event_reset(struct kv_usage_scanner *s);

/* 1 for a key whose string values are generated text ("content", "text",
 * "arguments", "partial_json", "thinking", "refusal",
 * "reasoning_content"). */
int	usage_counted_key(int key);

/* usage_gemini.c: a lexer event of a Gemini response (every one but a
 * string's end, which usage_scan.c reads as for any API). */
void	usage_gm_event(struct kv_usage_scanner *s, int ev);

/* The tier (KV_TIER_*) a "service_tier" value NAME[0..LEN) names. */
int	usage_tier_name(const char *name, size_t len);

#endif

/* What the usage scanner's fuzz targets share (fuzz_usage.c,
 * fuzz_gemini.c): a body fed whole, in two pieces, or byte by byte. */
#ifndef KV_USAGE_FUZZ_H
#define KV_USAGE_FUZZ_H

#include <stddef.h>

#include "worker/usage.h"
#include "worker/usage_json.h"

/* BODY (LEN bytes) to a fresh S for API (SSE framing when SSE): cut at
 * SPLIT, or byte by byte when BYTEWISE. */
static void
usage_fuzz_scan(enum kv_api api, int sse, const char *body, size_t len, size_t split,
    int bytewise, struct kv_usage_scanner *s)
{
	size_t i;

	kv_usage_init(s, api, sse);
	if (bytewise) {
		/* the reference: the lexer's run reports every event, so
		 * on_string_begin sees every string the whole feed's run
		 * takes quietly (usage_json_run's WANT) */
		s->run_want = USAGE_WANT_ALL;
		for (i = 0; i < len; i++)
			kv_usage_feed(s, body + i, 1);
		return;
	}
	kv_usage_feed(s, body, split);
	kv_usage_feed(s, body + split, len - split);
}

#endif

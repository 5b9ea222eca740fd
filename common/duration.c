/* Go-style durations, as OpenAI writes its reset values (common/duration.h):
 * the x-ratelimit-* headers and kvctl's tables write them. */
#include "common/duration.h"

/* A string literal: its length is known, no strlen. */
#define LIT(b, s)	kv_sb_put((b), (s), sizeof(s) - 1)

void
kv_sb_duration(struct kv_sb *b, int64_t ms)
{
	int64_t h, m, s, frac;
	char d[3];

	if (ms <= 0) {
		LIT(b, "0s");
		return;
	}
	if (ms < 1000) {
		kv_sb_i64(b, ms);
		LIT(b, "ms");
		return;
	}
	h = ms / 3600000;
	m = ms / 60000 % 60;
	s = ms / 1000 % 60;
	frac = ms % 1000;
	if (h > 0) {
		kv_sb_i64(b, h);
		LIT(b, "h");
	}
	if (h > 0 || m > 0) {
		kv_sb_i64(b, m);
		LIT(b, "m");
	}
	kv_sb_i64(b, s);
	if (frac != 0) {
		/* Trailing zeros dropped: 1.5s, 1.25s, 1.125s. */
		int w = frac % 100 == 0 ? 1 : frac % 10 == 0 ? 2 : 3;

		kv_fmt_u64_pad(d, (uint64_t)frac, 3);
		LIT(b, ".");
		kv_sb_put(b, d, (size_t)w);
	}
	LIT(b, "s");
}

void
kv_format_duration(int64_t ms, char *buf, size_t len)
{
	struct kv_sb b = { buf, 0, len > 0 ? len - 1 : 0 };

	if (len == 0)
		return;
	kv_sb_duration(&b, ms);
	buf[b.len] = '\0';
}

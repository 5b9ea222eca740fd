/* A strict, streaming RFC 8259 validator: one JSON value, UTF-8 without a
 * byte order mark, no NaN/Infinity, no trailing commas or comments, depth
 * bounded. It resumes across any split of the input, holds no input bytes,
 * and reports what it reads as events, decoding string escapes, so that a
 * caller sees member names as the provider's parser will ("mod\u0065l" is
 * "model"). Used on request bodies before admission. */
#ifndef KV_JSONV_H
#define KV_JSONV_H

#include <stddef.h>
#include <stdint.h>

#define KV_JV_MAX_DEPTH	128	/* deeper nesting is refused */

enum kv_jv_ev {
	KV_JV_OBJ_OPEN, KV_JV_OBJ_CLOSE, KV_JV_ARR_OPEN, KV_JV_ARR_CLOSE,
	KV_JV_KEY, KV_JV_KEY_END,	/* a member name; its bytes come between */
	KV_JV_STR, KV_JV_STR_END,	/* a string value; its bytes come between */
	KV_JV_NUM, KV_JV_NUM_END,	/* a number; its text comes between */
	KV_JV_TRUE, KV_JV_FALSE, KV_JV_NULL,
	KV_JV_BYTES,	/* decoded bytes of the current name, string or number */
};

/* level: containers around the token (0 for the top-level value; an
 * object's member names and values are one level deeper than its braces).
 * off: the token's offset in the whole input. p, n: for KV_JV_BYTES, and
 * for KV_JV_KEY_END, KV_JV_STR_END and KV_JV_NUM_END the token's last
 * decoded bytes, which come before the end (n may be 0, p then NULL): a
 * token whole in one feed comes as its start and its end, its bytes with
 * the end. The split of a token's bytes over events depends on the feeds. */
typedef void (*kv_jv_cb)(void *arg, enum kv_jv_ev ev, int level, uint64_t off,
	    const char *p, size_t n);

struct kv_jv {
	uint8_t		 state;
	uint8_t		 nstate;	/* number grammar position */
	uint8_t		 lit, litpos;	/* literal being matched */
	uint8_t		 u8need, u8lo, u8hi;	/* UTF-8 sequence being checked */
	uint8_t		 uhex;		/* hex digits of a \u escape read */
	uint8_t		 is_key;
	uint32_t	 ucp;		/* that escape's code unit */
	uint32_t	 hisur;		/* pending high surrogate, 0 if none */
	int		 depth;		/* open containers */
	uint8_t		 isobj[KV_JV_MAX_DEPTH / 8];
	uint64_t	 off;		/* input bytes consumed */
	char		 err[96];	/* why it failed, "" while valid (last:
					   kv_jv_init sets only its first byte) */
};

void	kv_jv_init(struct kv_jv *v);

/* Feed buf[0..len). Returns 0, or -1 once the input cannot be JSON (err says
 * what and where; later calls return -1 at once). cb may be NULL. */
int	kv_jv_feed(struct kv_jv *v, const char *buf, size_t len, kv_jv_cb cb, void *arg);

/* End of input: 0 when exactly one whole value was read, else -1 with err. */
int	kv_jv_finish(struct kv_jv *v);

#endif

/* The usage lexer's state (usage_json.h): types only, so that usage.h can
 * embed it in the scanner without the lexer's names. */
#ifndef KV_USAGE_JSON_T_H
#define KV_USAGE_JSON_T_H

#include <stddef.h>
#include <stdint.h>

#define KV_SCAN_DEPTH	32	/* levels whose key is remembered */
#define KV_SCAN_NEST	512	/* nesting beyond this is treated as malformed */
#define KV_SCAN_MODEL	96
#define KV_SCAN_KEY	40

/* A resumable JSON tokenizer (usage_json.h; here only so the scanner
 * can live on the stack or inside a connection without allocation). */
struct kv_json {
	uint8_t		 state;
	uint8_t		 nstate;	/* number grammar position */
	uint8_t		 lit;		/* literal being matched */
	uint8_t		 litpos;
	uint8_t		 uhex;		/* hex digits of a backslash-u escape seen */
	uint8_t		 is_key;	/* the string being read is a key */
	uint8_t		 capture;	/* keep the string value's bytes */
	uint8_t		 count;		/* add the string's bytes to nbytes */
	uint8_t		 str_bad;	/* captured value did not fit */
	uint8_t		 num_ok;	/* num is a non-negative int64 */
	uint8_t		 neg;		/* the number has a minus sign */
	uint8_t		 multi;		/* accept several top-level values */
	uint32_t	 ucp;		/* code point of that escape */
	uint32_t	 hisur;		/* pending high surrogate, 0 if none */
	int		 depth;		/* open containers */
	int		 evdepth;	/* depth an event happened at */
	uint8_t		 isobj[KV_SCAN_NEST / 8];	/* bit per level */
	uint8_t		 path[KV_SCAN_DEPTH];	/* key id per level */
	char		 key[KV_SCAN_KEY];
	size_t		 keylen;
	char		 str[KV_SCAN_MODEL];
	size_t		 slen;
	int64_t		 num;
	int64_t		 nbytes;	/* counted string bytes */
	int64_t		 nhigh;		/* of them, bytes >= 0x80 */
	int64_t		 nchars;	/* of them, UTF-8 lead bytes: non-ASCII characters */
};

#endif

/* RESP2, the Redis wire protocol: a command encoder and a bounded,
 * incremental reply parser. Pure functions with no I/O, so the master's
 * non-blocking connection (master/redis.c), kvctl's blocking one and the
 * fuzz target share them.
 *
 * Why our own and not hiredis: Debian 12's libhiredis 0.14 has no timers
 * and would be one more library in a 30 MB image for what is about 300
 * lines here; kilovolt needs arrays, integers, bulk and simple strings and
 * errors, nothing of RESP3. */
#ifndef KV_RESP_H
#define KV_RESP_H

#include <stddef.h>
#include <stdint.h>

#define KV_RESP_MAX_NODES	4096	/* values in one reply, all levels */
#define KV_RESP_MAX_DEPTH	8	/* nested arrays */
#define KV_RESP_MAX_BULK	(1 << 20)	/* one bulk string */
#define KV_RESP_MAX_LINE	64	/* a type byte + an integer, or a short status */

enum kv_resp_type {
	KV_RESP_STATUS = '+',
	KV_RESP_ERROR = '-',
	KV_RESP_INTEGER = ':',
	KV_RESP_BULK = '$',
	KV_RESP_ARRAY = '*',
};

struct kv_resp_value {
	int			 type;		/* enum kv_resp_type */
	int			 nil;		/* $-1 or *-1 */
	int64_t			 integer;	/* INTEGER */
	const char		*str;		/* STATUS, ERROR, BULK: into the input */
	size_t			 len;
	struct kv_resp_value	*elem;		/* ARRAY: n contiguous values */
	size_t			 n;
};

/* Space for one parsed reply; nodes[0] is the root. */
struct kv_resp_reply {
	struct kv_resp_value	 nodes[KV_RESP_MAX_NODES];
	size_t			 nnodes;
};

/* Parse one complete reply from the first LEN bytes of BUF into R.
 * Returns 1 and sets *used to its length when a whole reply is there,
 * 0 when BUF is a proper prefix of a reply that may still be valid (read
 * more and call again with the longer buffer), -1 when it can never be
 * valid RESP2 or passes a bound above. Strictness is the contract: only
 * the canonical form Redis sends is accepted (CRLF line ends, integers
 * without '+' or leading zeros, no "-0"), so that encoding a parsed reply
 * gives back exactly its bytes. Strings in R point into BUF. */
int	kv_resp_parse(const char *buf, size_t len, struct kv_resp_reply *r, size_t *used);

/* Append the command ARGV[0..argc) (lengths in LENS) to OUT as an array of
 * bulk strings. Returns the bytes written, or -1 when OUTLEN is too small
 * (OUT then holds nothing useful). */
long	kv_resp_command(char *out, size_t outlen, int argc, const char *const *argv,
	    const size_t *lens);

/* Encode value V in canonical RESP2 into OUT. Returns the length, or -1
 * when OUTLEN is too small. */
long	kv_resp_encode(char *out, size_t outlen, const struct kv_resp_value *v);

/* V as an integer: an INTEGER, or a BULK/STATUS holding a canonical
 * decimal. Returns 0, or -1 when it is neither. */
int	kv_resp_int(const struct kv_resp_value *v, int64_t *out);

#endif

/* The audit log of admin writes (docs/audit.md): one JSON object a line,
 * each naming who changed what in the ledger, the fields before and after,
 * and the result, chained by SHA-256 so that an edited, deleted, reordered
 * or torn line shows. The admin API (master/status.c) and kvctl's writing
 * commands append to it; kvctl audit prints and verifies it.
 *
 * A line (without its '\n') is P + ",\"hash\":\"" + H + "\"}" where P is
 * "{" + the members up to and including "prev", so that P + "}" is itself
 * the JSON object without "hash":
 *   H    = hex(SHA-256(P + "}"))                 (the line's own hash)
 *   prev = hex(SHA-256(previous line's bytes))   (all of it, "hash" too,
 *          without its '\n'); KV_AUDIT_GENESIS on the first line.
 * Hex is lowercase, 64 digits. This file's functions are pure (no I/O), so
 * the unit test and the fuzzer (tests/fuzz/fuzz_audit.c) drive them. */
#ifndef KV_AUDIT_H
#define KV_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#define KV_AUDIT_LINE_MAX	4096	/* longest line written or read, '\n' included */
#define KV_AUDIT_HEX		65	/* 64 hex digits and the NUL */
/* The "prev" of the first line: 64 zeros. */
#define KV_AUDIT_GENESIS \
	"0000000000000000000000000000000000000000000000000000000000000000"

/* A JSON object under construction: members appended in order, each value
 * escaped; len 0 is "no object" (written null). A member that does not fit
 * sets failed, and the line is then refused whole (kv_audit_format). */
struct kv_audit_obj {
	char	 buf[768];
	size_t	 len;
	int	 failed;
};

void	kv_audit_obj_int(struct kv_audit_obj *o, const char *name, int64_t v);
/* S NULL is a JSON null. */
void	kv_audit_obj_str(struct kv_audit_obj *o, const char *name, const char *s);
void	kv_audit_obj_bool(struct kv_audit_obj *o, const char *name, int v);

/* One admin write. Every text is the caller's and is escaped on output;
 * none may hold a secret (the raw key, the admin token): the callers put
 * only ids (hash prefixes) there. */
struct kv_audit_rec {
	int64_t			time_ms;	/* UTC, ms since the epoch */
	const char		*via;		/* "api" or "kvctl" */
	struct kv_audit_obj	 who;		/* the admin token's id and name, or the Unix user */
	char			 op[32];	/* "key.budget", ... (docs/audit.md) */
	char			 request[512];	/* "POST /keys/a/budget", or the kvctl command line */
	char			 key_id[13];	/* the account's id, "" none */
	char			 label[64];	/* its label, "" none */
	struct kv_audit_obj	 args;		/* the write's arguments as parsed */
	struct kv_audit_obj	 before;	/* the fields it changed, as they were */
	struct kv_audit_obj	 after;		/* and as they are */
	int			 status;	/* HTTP status, or kvctl's exit code */
};

/* The line of R chained after PREV (64 hex digits) into OUT (CAP bytes),
 * with its hash and '\n'. Returns its length, or -1 when it does not fit
 * KV_AUDIT_LINE_MAX (or CAP) or a member of R failed. */
int	kv_audit_format(char *out, size_t cap, const struct kv_audit_rec *r,
	    const char prev[KV_AUDIT_HEX]);

/* hex(SHA-256(B[0..N))) into HEX: what the next line's prev names. */
void	kv_audit_digest(const char *b, size_t n, char hex[KV_AUDIT_HEX]);

/* What kv_audit_parse reads of a line. */
struct kv_audit_line {
	char	 prev[KV_AUDIT_HEX];
	char	 hash[KV_AUDIT_HEX];
	int64_t	 time_ms;
};

/* Parse LINE (LEN bytes, without its '\n'): one JSON object (common/
 * jsonread.h's strict grammar) opening with "time" and "time_ms", ending in
 * "prev" and "hash" exactly as kv_audit_format writes them, whose hash is
 * right. Returns 0, or -1 with why in WHY (WHYLEN bytes) for a person. */
int	kv_audit_parse(const char *line, size_t len, struct kv_audit_line *out,
	    char *why, size_t whylen);

/* Walking a log from its first line: kv_audit_chain_init, then
 * kv_audit_chain_next for each line in order. */
struct kv_audit_chain {
	char	 prev[KV_AUDIT_HEX];	/* what the next line's prev must be */
	size_t	 lines;			/* lines taken so far */
};

void	kv_audit_chain_init(struct kv_audit_chain *ch);

/* The next line, LEN bytes without its '\n'; TERMINATED is 0 when the
 * file ended without one (a line cut short). Returns 0 when it parses and
 * chains on, else -1 with why in WHY: its number is ch->lines + 1. */
int	kv_audit_chain_next(struct kv_audit_chain *ch, const char *line, size_t len,
	    int terminated, char *why, size_t whylen);

#endif

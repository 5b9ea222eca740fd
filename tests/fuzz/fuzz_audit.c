/* libFuzzer target: the audit log verifier's line parser and chain walk
 * (common/audit_line.c) over arbitrary bytes: kvctl audit --verify reads
 * files anyone with write access may have edited. Each input is split at
 * '\n' into lines walked as a log; every line is also parsed alone. A line
 * that parses must hold what its own tail says, and a line kv_audit_format
 * writes from the input's bytes must parse and chain. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_why(const char *why, size_t cap)
{
	if (memchr(why, '\0', cap) == NULL || why[0] == '\0')
		abort();
}

/* A line made from the input's first bytes must come back. */
static void
round_trip(const char *d, size_t n)
{
	struct kv_audit_rec r;
	struct kv_audit_line l;
	struct kv_audit_chain ch;
	char line[KV_AUDIT_LINE_MAX + 1], why[300];
	int len;

	memset(&r, 0, sizeof(r));
	r.via = "kvctl";
	r.time_ms = 1796670001123LL;
	n = n > 100 ? 100 : n;	/* escaped 6 bytes a byte, all fits */
	memcpy(r.request, d, n);	/* NULs end it early: fine */
	memcpy(r.label, d, n > sizeof(r.label) - 1 ? sizeof(r.label) - 1 : n);
	kv_audit_obj_str(&r.before, "s", r.request);
	len = kv_audit_format(line, sizeof(line), &r, KV_AUDIT_GENESIS);
	if (len <= 0 || line[len - 1] != '\n')
		abort();
	kv_audit_chain_init(&ch);
	if (kv_audit_parse(line, (size_t)len - 1, &l, why, sizeof(why)) != 0 ||
	    l.time_ms != r.time_ms ||
	    kv_audit_chain_next(&ch, line, (size_t)len - 1, 1, why, sizeof(why)) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *d = (const char *)data, *p = d, *end = d + size, *nl;
	struct kv_audit_chain ch;
	struct kv_audit_line l;
	char why[300];
	int walking = 1;

	kv_audit_chain_init(&ch);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

		memset(why, 'x', sizeof(why));
		if (kv_audit_parse(p, n, &l, why, sizeof(why)) == 0) {
			if (strlen(l.prev) != 64 || strlen(l.hash) != 64 || n < 149 ||
			    memcmp(p + n - 66, l.hash, 64) != 0)
				abort();
		} else {
			check_why(why, sizeof(why));
		}
		if (walking && kv_audit_chain_next(&ch, p, n, nl != NULL, why,
		    sizeof(why)) == -1) {
			check_why(why, sizeof(why));
			walking = 0;
		}
		p = nl != NULL ? nl + 1 : end;
	}
	round_trip(d, size);
	return 0;
}

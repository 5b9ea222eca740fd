/* Unit tests of the audit log (common/audit.h, common/audit_log.h): the
 * line's exact bytes and its hash, computed here from the definition with
 * OpenSSL apart from the code under test; the parser's refusals; the chain
 * walk naming the first broken line for an edit, a deletion, a swap, a
 * missing first line and a cut; and the appender: a chain across opens,
 * a cut file refused, a held lock refused, the path beside the ledger. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "common/audit.h"
#include "common/audit_log.h"
#include "tests/unit.h"

static void
sha_hex(const char *b, size_t n, char out[65])
{
	unsigned char md[32];
	int i;

	SHA256((const unsigned char *)b, n, md);
	for (i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

static void
sample(struct kv_audit_rec *r, int64_t budget)
{
	memset(r, 0, sizeof(*r));
	r->time_ms = 1796670001123LL;	/* 2026-12-07T19:00:01.123Z */
	r->via = "api";
	kv_audit_obj_str(&r->who, "admin_token", "0123456789ab");
	kv_audit_obj_str(&r->who, "name", NULL);
	snprintf(r->op, sizeof(r->op), "key.budget");
	snprintf(r->request, sizeof(r->request), "POST /keys/alice/budget");
	snprintf(r->key_id, sizeof(r->key_id), "ab12cd34ef56");
	snprintf(r->label, sizeof(r->label), "alice");
	kv_audit_obj_int(&r->args, "budget_nusd", budget);
	kv_audit_obj_int(&r->before, "budget_nusd", 5000000000LL);
	kv_audit_obj_int(&r->after, "budget_nusd", budget);
	r->status = 200;
}

static void
test_format(void)
{
	static const char body[] = "{\"time\":\"2026-12-07T19:00:01.123Z\","
	    "\"time_ms\":1796670001123,\"via\":\"api\",\"who\":{\"admin_token\":"
	    "\"0123456789ab\",\"name\":null},\"op\":\"key.budget\",\"request\":"
	    "\"POST /keys/alice/budget\",\"key\":{\"id\":\"ab12cd34ef56\",\"label\":"
	    "\"alice\"},\"args\":{\"budget_nusd\":7},\"before\":{\"budget_nusd\":"
	    "5000000000},\"after\":{\"budget_nusd\":7},\"status\":200,\"prev\":\""
	    KV_AUDIT_GENESIS "\"";
	struct kv_audit_rec r;
	struct kv_audit_line l;
	char line[KV_AUDIT_LINE_MAX + 1], want[KV_AUDIT_LINE_MAX + 1], h[65], why[200];
	int n;

	sample(&r, 7);
	n = kv_audit_format(line, sizeof(line), &r, KV_AUDIT_GENESIS);
	snprintf(want, sizeof(want), "%s}", body);
	sha_hex(want, strlen(want), h);
	snprintf(want, sizeof(want), "%s,\"hash\":\"%s\"}\n", body, h);
	CHECK_STR(line, want);
	CHECK_INT(n, strlen(want));
	CHECK_INT(kv_audit_parse(line, (size_t)n - 1, &l, why, sizeof(why)), 0);
	CHECK_STR(l.prev, KV_AUDIT_GENESIS);
	CHECK_STR(l.hash, h);
	CHECK_INT(l.time_ms, 1796670001123LL);
	/* a digest is of the line's bytes without its newline */
	kv_audit_digest(line, (size_t)n - 1, h);
	sha_hex(line, (size_t)n - 1, want);
	CHECK_STR(h, want);
}

/* Any byte a label or a command line holds comes out as valid JSON. */
static void
test_escapes(void)
{
	struct kv_audit_rec r;
	struct kv_audit_line l;
	char line[KV_AUDIT_LINE_MAX + 1], why[200];
	int n;

	sample(&r, 1);
	snprintf(r.request, sizeof(r.request), "kvctl budget \"a\\b\"\t\x01\x7f\xc3\xa9 1");
	kv_audit_obj_str(&r.after, "label", "\xff\"x");
	n = kv_audit_format(line, sizeof(line), &r, KV_AUDIT_GENESIS);
	CHECK(n > 0);
	CHECK(strstr(line, "\"kvctl budget \\\"a\\\\b\\\"\\u0009\\u0001\\u007f\\u00c3\\u00a9 1\"")
	    != NULL);
	CHECK(strstr(line, "\"label\":\"\\u00ff\\\"x\"") != NULL);
	CHECK_INT(kv_audit_parse(line, (size_t)n - 1, &l, why, sizeof(why)), 0);
}

static void
test_limits(void)
{
	struct kv_audit_rec r;
	char line[KV_AUDIT_LINE_MAX + 1];
	int i;

	sample(&r, 1);
	for (i = 0; i < 200 && !r.before.failed; i++)
		kv_audit_obj_str(&r.before, "a_rather_long_field_name", "and a long value");
	CHECK(r.before.failed);
	CHECK_INT(kv_audit_format(line, sizeof(line), &r, KV_AUDIT_GENESIS), -1);
	sample(&r, 1);
	memset(r.request, 'x', sizeof(r.request) - 1);
	CHECK(kv_audit_format(line, sizeof(line), &r, KV_AUDIT_GENESIS) > 0);
	CHECK_INT(kv_audit_format(line, 300, &r, KV_AUDIT_GENESIS), -1);
}

static void
test_parse_refusals(void)
{
	struct kv_audit_rec r;
	struct kv_audit_line l;
	char line[KV_AUDIT_LINE_MAX + 1], bad[KV_AUDIT_LINE_MAX + 1], why[200];
	int n;

	sample(&r, 3);
	n = kv_audit_format(line, sizeof(line), &r, KV_AUDIT_GENESIS) - 1;
	CHECK_INT(kv_audit_parse("", 0, &l, why, sizeof(why)), -1);
	CHECK_INT(kv_audit_parse("{}", 2, &l, why, sizeof(why)), -1);
	CHECK_INT(kv_audit_parse("[1]", 3, &l, why, sizeof(why)), -1);
	memcpy(bad, line, (size_t)n);
	bad[20] ^= 1;	/* inside the time */
	CHECK_INT(kv_audit_parse(bad, (size_t)n, &l, why, sizeof(why)), -1);
	memcpy(bad, line, (size_t)n);
	bad[n - 10] = 'A';	/* an upper-case digit in the hash */
	CHECK_INT(kv_audit_parse(bad, (size_t)n, &l, why, sizeof(why)), -1);
	memcpy(bad, line, (size_t)n);
	bad[n - 1] = ' ';	/* not an object any more */
	CHECK_INT(kv_audit_parse(bad, (size_t)n, &l, why, sizeof(why)), -1);
	CHECK(strstr(why, "JSON") != NULL);
	memcpy(bad, line, (size_t)n);
	memcpy(strstr(bad, "\"status\":200"), "\"status\":201", 12);
	CHECK_INT(kv_audit_parse(bad, (size_t)n, &l, why, sizeof(why)), -1);
	CHECK(strstr(why, "hash does not match") != NULL);
	CHECK_INT(kv_audit_parse(line, (size_t)n, &l, why, sizeof(why)), 0);
}

/* Five chained lines at B, each line's offset and length in OFF/LEN. */
static size_t
five(char *b, size_t cap, size_t off[5], size_t len[5])
{
	struct kv_audit_rec r;
	char prev[65];
	size_t p = 0;
	int i, n;

	memcpy(prev, KV_AUDIT_GENESIS, sizeof(prev));
	for (i = 0; i < 5; i++) {
		sample(&r, i + 1);
		n = kv_audit_format(b + p, cap - p, &r, prev);
		off[i] = p;
		len[i] = (size_t)n - 1;
		kv_audit_digest(b + p, len[i], prev);
		p += (size_t)n;
	}
	return p;
}

/* Walk lines L[0..N) (pointers and lengths); the last unterminated when
 * CUT. Returns the first broken line's number, 0 when intact. */
static size_t
walk(const char *const *l, const size_t *len, int n, int cut, char *why, size_t wl)
{
	struct kv_audit_chain ch;
	int i;

	kv_audit_chain_init(&ch);
	for (i = 0; i < n; i++)
		if (kv_audit_chain_next(&ch, l[i], len[i], !(cut && i == n - 1), why, wl) == -1)
			return ch.lines + 1;
	return 0;
}

static void
test_chain(void)
{
	char b[5 * KV_AUDIT_LINE_MAX], why[300], edited[KV_AUDIT_LINE_MAX];
	size_t off[5], len[5], ln[5];
	const char *l[5];
	int i;

	five(b, sizeof(b), off, len);
	for (i = 0; i < 5; i++) {
		l[i] = b + off[i];
		ln[i] = len[i];
	}
	CHECK_INT(walk(l, ln, 5, 0, why, sizeof(why)), 0);
	/* a byte edited in line 3 */
	memcpy(edited, l[2], len[2]);
	edited[30] = edited[30] == '1' ? '2' : '1';
	l[2] = edited;
	CHECK_INT(walk(l, ln, 5, 0, why, sizeof(why)), 3);
	CHECK(strstr(why, "line 3: its hash") != NULL);
	l[2] = b + off[2];
	/* line 4 deleted */
	l[3] = b + off[4], ln[3] = len[4];
	CHECK_INT(walk(l, ln, 4, 0, why, sizeof(why)), 4);
	CHECK(strstr(why, "line 4: its prev is not the hash of line 3") != NULL);
	/* lines 2 and 3 swapped */
	l[1] = b + off[2], ln[1] = len[2];
	l[2] = b + off[1], ln[2] = len[1];
	l[3] = b + off[3], ln[3] = len[3];
	CHECK_INT(walk(l, ln, 5, 0, why, sizeof(why)), 2);
	/* the first line deleted */
	CHECK_INT(walk(l + 1, ln + 1, 4, 0, why, sizeof(why)), 1);
	CHECK(strstr(why, "genesis") != NULL);
	/* cut mid-line: the last line unterminated (and short) */
	l[1] = b + off[1], ln[1] = len[1];
	l[2] = b + off[2], ln[2] = len[2];
	ln[4] = len[4] - 7;
	CHECK_INT(walk(l, ln, 5, 1, why, sizeof(why)), 5);
	CHECK(strstr(why, "cut short") != NULL);
	/* cut at a line's end but for its newline: still a cut */
	ln[4] = len[4];
	CHECK_INT(walk(l, ln, 5, 1, why, sizeof(why)), 5);
}

static void
test_appender(void)
{
	char dir[] = "/tmp/kv-test-audit.XXXXXX", ledger[256], path[256], err[300];
	char buf[3 * KV_AUDIT_LINE_MAX];
	struct kv_audit_log lg;
	struct kv_audit_rec r;
	struct kv_audit_chain ch;
	char *p, *nl;
	ssize_t n;
	int fd, i;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(ledger, sizeof(ledger), "%s/ledger", dir);
	CHECK_INT(kv_audit_path_beside(ledger, path, sizeof(path)), 0);
	snprintf(err, sizeof(err), "%s/audit.jsonl", dir);
	CHECK_STR(path, err);
	for (i = 0; i < 3; i++) {
		sample(&r, i);
		CHECK_INT(kv_audit_begin(&lg, path, err, sizeof(err)), 0);
		CHECK_INT(kv_audit_commit(&lg, &r, err, sizeof(err)), 0);
	}
	fd = open(path, O_RDWR);
	n = read(fd, buf, sizeof(buf) - 1);
	CHECK(n > 0);
	buf[n > 0 ? n : 0] = '\0';
	kv_audit_chain_init(&ch);
	for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1)
		CHECK_INT(kv_audit_chain_next(&ch, p, (size_t)(nl - p), 1, err, sizeof(err)), 0);
	CHECK_INT(ch.lines, 3);
	/* a lock held elsewhere: refused, after a wait */
	CHECK_INT(flock(fd, LOCK_EX), 0);
	CHECK_INT(kv_audit_begin(&lg, path, err, sizeof(err)), -1);
	CHECK(strstr(err, "another writer") != NULL);
	CHECK_INT(flock(fd, LOCK_UN), 0);
	/* a file ending inside a line: refused, nothing written */
	CHECK_INT(write(fd, "{\"ti", 4), 4);
	CHECK_INT(kv_audit_begin(&lg, path, err, sizeof(err)), -1);
	CHECK(strstr(err, "ends inside a line") != NULL);
	close(fd);
	/* off: nothing to take, nothing written */
	CHECK_INT(kv_audit_begin(&lg, "", err, sizeof(err)), 0);
	CHECK_INT(kv_audit_commit(&lg, &r, err, sizeof(err)), 0);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	test_format();
	test_escapes();
	test_limits();
	test_parse_refusals();
	test_chain();
	test_appender();
	return unit_done();
}

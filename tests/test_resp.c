/* RESP2: replies Redis sends parse to the right values at any split of the
 * input; malformed and over-bound input is refused; commands encode to the
 * bytes redis-cli would send. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/resp.h"
#include "tests/unit.h"

static struct kv_resp_reply r;

static int
parse(const char *s, size_t *used)
{
	return kv_resp_parse(s, strlen(s), &r, used);
}

/* Every proper prefix of a complete reply asks for more. */
static void
check_prefixes(const char *s)
{
	size_t n = strlen(s), k, used;

	for (k = 0; k < n; k++)
		CHECK_INT(kv_resp_parse(s, k, &r, &used), 0);
}

static void
test_scalars(void)
{
	size_t used = 0;

	CHECK_INT(parse("+OK\r\n", &used), 1);
	CHECK_INT(used, 5);
	CHECK_INT(r.nodes[0].type, KV_RESP_STATUS);
	CHECK(r.nodes[0].len == 2 && memcmp(r.nodes[0].str, "OK", 2) == 0);
	CHECK_INT(parse("-NOSCRIPT No matching script\r\n", &used), 1);
	CHECK_INT(r.nodes[0].type, KV_RESP_ERROR);
	CHECK_INT(parse(":-42\r\n", &used), 1);
	CHECK_INT(r.nodes[0].integer, -42);
	CHECK_INT(parse(":9223372036854775807\r\n", &used), 1);
	CHECK_INT(r.nodes[0].integer, INT64_MAX);
	CHECK_INT(parse(":-9223372036854775808\r\n", &used), 1);
	CHECK(r.nodes[0].integer == INT64_MIN);
	CHECK_INT(parse("$3\r\nabc\r\n:1\r\n", &used), 1);
	CHECK_INT(used, 9);	/* the next reply stays in the buffer */
	CHECK_INT(parse("$-1\r\n", &used), 1);
	CHECK(r.nodes[0].nil);
	CHECK_INT(parse("$0\r\n\r\n", &used), 1);
	CHECK_INT(r.nodes[0].len, 0);
	check_prefixes("$11\r\nhello world\r\n");
	check_prefixes(":12345\r\n");
}

static void
test_arrays(void)
{
	const char *s = "*3\r\n:1\r\n*2\r\n$2\r\nab\r\n$-1\r\n+x\r\n";
	size_t used = 0;
	int64_t v = 0;

	CHECK_INT(parse(s, &used), 1);
	CHECK_INT(used, strlen(s));
	CHECK_INT(r.nodes[0].n, 3);
	CHECK_INT(r.nodes[0].elem[0].integer, 1);
	CHECK_INT(r.nodes[0].elem[1].n, 2);
	CHECK(memcmp(r.nodes[0].elem[1].elem[0].str, "ab", 2) == 0);
	CHECK(r.nodes[0].elem[1].elem[1].nil);
	CHECK_INT(r.nodes[0].elem[2].type, KV_RESP_STATUS);
	check_prefixes(s);
	CHECK_INT(parse("*2\r\n$3\r\n-17\r\n:5\r\n", &used), 1);
	CHECK_INT(kv_resp_int(&r.nodes[0].elem[0], &v), 0);
	CHECK_INT(v, -17);
	CHECK_INT(parse("*-1\r\n", &used), 1);
	CHECK(r.nodes[0].nil);
}

static void
test_bad(void)
{
	static const char *bad[] = {
		"?\r\n", ":\r\n", ":+1\r\n", ":01\r\n", ":-0\r\n", ":1\n", "+OK\n",
		"+O\rK\r\n", "$3\r\nabcd\r\n", "$-2\r\n", "*-2\r\n",
		":9223372036854775808\r\n", ":-9223372036854775809\r\n",
		"$1048577\r\n", "*4097\r\n",
		"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
	};
	size_t i, used;
	char longline[128];

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(bad[i], &used);
		if (rc != -1)
			fprintf(stderr, "accepted: %s\n", bad[i]);
		CHECK_INT(rc, -1);
	}
	/* an integer line that never ends is refused once past the bound */
	memset(longline, '1', sizeof(longline) - 1);
	longline[0] = ':';
	longline[sizeof(longline) - 1] = '\0';
	CHECK_INT(parse(longline, &used), -1);
	/* 4096 nodes, the root included, is the bound */
	{
		static char big[4 + 4095 * 4 + 16];
		size_t o = (size_t)snprintf(big, sizeof(big), "*4095\r\n");
		for (i = 0; i < 4095; i++)
			o += (size_t)snprintf(big + o, sizeof(big) - o, ":1\r\n");
		CHECK_INT(kv_resp_parse(big, o, &r, &used), 1);
	}
}

static void
test_command(void)
{
	const char *argv[] = { "EVALSHA", "abc", "0", "" };
	size_t lens[] = { 7, 3, 1, 0 };
	char out[128], small[10];
	long n = kv_resp_command(out, sizeof(out), 4, argv, lens);
	const char *want = "*4\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n0\r\n$0\r\n\r\n";

	CHECK_INT(n, (long)strlen(want));
	CHECK(n > 0 && memcmp(out, want, (size_t)n) == 0);
	CHECK_INT(kv_resp_command(small, sizeof(small), 4, argv, lens), -1);
}

int
main(void)
{
	test_scalars();
	test_arrays();
	test_bad();
	test_command();
	return unit_done();
}

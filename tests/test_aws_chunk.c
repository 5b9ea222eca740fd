/* The chunk-payload decoder ({"bytes":"<base64>"} to the bytes): each case
 * fed whole, a byte at a time and cut in two at every point must give the
 * same bytes, or be refused each way. The stream made by AWS's own codec
 * is covered in test_aws_eventstream.c; here are the shapes it does not
 * make: padding variants, escapes, other members, malformed payloads. */
#include <stdlib.h>
#include <string.h>

#include "tests/unit.h"
#include "worker/aws_chunk.h"

struct got {
	char	buf[4096];
	size_t	len;
};

static int
collect(void *arg, const char *p, size_t len)
{
	struct got *g = arg;

	if (len == 0 || len > KV_AWS_CHUNK_OUT || g->len + len > sizeof(g->buf))
		return -1;
	memcpy(g->buf + g->len, p, len);
	g->len += len;
	return 0;
}

/* Decode IN cut at A and B (A ≤ B ≤ len); 0 with the bytes in G, or -1. */
static int
run(const char *in, size_t a, size_t b, struct got *g)
{
	struct kv_aws_chunk c;
	size_t n = strlen(in);

	g->len = 0;
	kv_aws_chunk_init(&c, collect, g);
	if (kv_aws_chunk_feed(&c, in, a) == -1 || kv_aws_chunk_feed(&c, in + a, b - a) == -1 ||
	    kv_aws_chunk_feed(&c, in + b, n - b) == -1)
		return -1;
	return kv_aws_chunk_finish(&c);
}

/* IN decodes to WANT (WANT_LEN bytes), or is refused when WANT is NULL,
 * under every cut into one, two and three pieces. */
static void
expect(const char *in, const char *want, size_t want_len)
{
	struct got g;
	size_t n = strlen(in), a, b, bad = 0;

	for (a = 0; a <= n; a++)
		for (b = a; b <= n; b++) {
			int rc = run(in, a, b, &g);
			if (want == NULL ? rc != -1 :
			    rc != 0 || g.len != want_len || memcmp(g.buf, want, want_len) != 0)
				bad++;
		}
	if (bad)
		fprintf(stderr, "case %s: %zu cuts wrong\n", in, bad);
	CHECK_INT(bad, 0);
}

#define OK(in, want)	expect(in, want, sizeof(want) - 1)
#define BAD(in)		expect(in, NULL, 0)

static int
stop(void *arg, const char *p, size_t len)
{
	(void)arg;
	(void)p;
	(void)len;
	return -1;
}

int
main(void)
{
	struct kv_aws_chunk c;
	char big[2048], want[1500];
	size_t i, n;

	OK("{\"bytes\":\"eyJ0eXBlIjoicGluZyJ9\"}", "{\"type\":\"ping\"}");
	OK(" { \"bytes\" : \"YQ==\" , \"p\" : \"abc\" } \n", "a");
	OK("{\"p\":\"x\\\"}y\",\"bytes\":\"YWI=\"}", "ab");
	OK("{\"bytes\":\"YWJj\"}", "abc");
	OK("{\"bytes\":\"YWI\"}", "ab");		/* padding left out */
	OK("{\"bytes\":\"\"}", "");
	OK("{\"bytes\":\"Pz8\\/\"}", "??\?");	/* "\/" is "/" */
	OK("{\"n\":{\"a\":[1,\"]}\",{}]},\"t\":true,\"x\":-1.5e3,\"bytes\":\"YQ\"}", "a");
	OK("{\"byte\":1,\"bytess\":2,\"b\\u0079tes\":3,\"bytes\":\"YQ\"}", "a");
	BAD("{\"bytes\":\"YQ=\"}");		/* half the padding */
	BAD("{\"bytes\":\"Y\"}");		/* one digit cannot be a byte */
	BAD("{\"bytes\":\"YQ==YQ==\"}");	/* digits after padding */
	BAD("{\"bytes\":\"YQ===\"}");
	BAD("{\"bytes\":\"Y===\"}");
	BAD("{\"bytes\":\"YW-_\"}");		/* the URL alphabet is not Bedrock's */
	BAD("{\"bytes\":\"Y\\nQ\"}");
	BAD("{\"bytes\":1}");
	BAD("{\"bytes\":\"YQ\",\"bytes\":\"YQ\"}");
	BAD("{\"p\":\"x\"}");			/* no bytes */
	BAD("{\"bytes\":\"YQ\"");		/* not closed */
	BAD("{\"bytes\":\"YQ\"}x");
	BAD("[\"bytes\"]");
	BAD("{\"bytes\" \"YQ\"}");
	BAD("{\"bytes\":\"YQ\",}");
	BAD("{,\"bytes\":\"YQ\"}");
	BAD("");
	BAD("{}");

	/* a long payload: out in pieces of at most KV_AWS_CHUNK_OUT */
	for (i = 0; i < sizeof(want); i++)
		want[i] = (char)(i * 7);
	n = (size_t)snprintf(big, sizeof(big), "{\"bytes\":\"");
	for (i = 0; i < sizeof(want); i += 3) {
		static const char d[] =
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
		unsigned v = (unsigned char)want[i] << 16 | (unsigned char)want[i + 1] << 8 |
		    (unsigned char)want[i + 2];
		big[n++] = d[v >> 18];
		big[n++] = d[v >> 12 & 63];
		big[n++] = d[v >> 6 & 63];
		big[n++] = d[v & 63];
	}
	memcpy(big + n, "\"}", 3);
	{
		struct got g;
		CHECK_INT(run(big, 0, 0, &g), 0);
		CHECK_INT(g.len, sizeof(want));
		CHECK(memcmp(g.buf, want, sizeof(want)) == 0);
		CHECK_INT(run(big, 100, 1001, &g), 0);
		CHECK(g.len == sizeof(want) && memcmp(g.buf, want, sizeof(want)) == 0);
	}

	/* OUT failing stops the decoder for good */
	kv_aws_chunk_init(&c, stop, NULL);
	CHECK_INT(kv_aws_chunk_feed(&c, "{\"bytes\":\"YQ==\"}", 16), -1);
	CHECK_INT(kv_aws_chunk_feed(&c, "", 0), -1);
	CHECK_INT(kv_aws_chunk_finish(&c), -1);
	return unit_done();
}

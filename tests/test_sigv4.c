/* SigV4 (common/sigv4.h) on AWS's published test-suite vectors (get-vanilla,
 * get-vanilla-query-order-key-case, post-vanilla: credentials AKIDEXAMPLE,
 * 2015-08-30T12:36:00Z, us-east-1, service "service"), the canonical URI of
 * a Bedrock ARN path, the signing-key cache, and the refusals. The
 * comparison with AWS's own signer on thousands of generated requests is
 * tests/t_sigv4.sh. */
#include <string.h>

#include "common/sigv4.h"
#include "tests/unit.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SUITE_TIME 1440938160	/* 20150830T123600Z */

static const struct kv_sigv4_creds suite = {
	"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL
};

static const char *
sign(const char *method, const char *target, const struct kv_sigv4_header *h, size_t nh,
    const struct kv_sigv4_creds *c, struct kv_sigv4_key *key)
{
	static struct kv_sigv4_out out;
	struct kv_sigv4_request r = { method, target, strlen(target), "example.amazonaws.com",
		h, nh, EMPTY_SHA256, 0 };
	char err[128];

	if (kv_sigv4_sign(&r, c, "us-east-1", "service", SUITE_TIME, key, &out, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "sign: %s\n", err);
		return "";
	}
	CHECK_STR(out.amz_date, "20150830T123600Z");
	return out.authorization;
}

static void
test_suite(void)
{
	char canon[1024], sh[256], err[128];
	struct kv_sigv4_request r = { "GET", "/", 1, "example.amazonaws.com", NULL, 0,
		EMPTY_SHA256, 0 };

	CHECK_STR(sign("GET", "/", NULL, 0, &suite, NULL),
	    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
	    "SignedHeaders=host;x-amz-date, "
	    "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
	CHECK_STR(sign("GET", "/?Param2=value2&Param1=value1", NULL, 0, &suite, NULL),
	    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
	    "SignedHeaders=host;x-amz-date, "
	    "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
	CHECK_STR(sign("POST", "/", NULL, 0, &suite, NULL),
	    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
	    "SignedHeaders=host;x-amz-date, "
	    "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
	CHECK(kv_sigv4_canonical(&r, "20150830T123600Z", NULL, canon, sizeof(canon), sh,
	    sizeof(sh), err, sizeof(err)) > 0);
	CHECK_STR(canon, "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
	    "host;x-amz-date\n" EMPTY_SHA256);
	CHECK_STR(sh, "host;x-amz-date");
}

/* A model ARN as the AWS SDK sends it: its escapes escaped once more. */
static void
test_bedrock_path(void)
{
	static const char target[] = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012"
	    "%3Ainference-profile%2Fus.anthropic.claude-3-5-haiku-20241022-v1%3A0/invoke"
	    "?b=%2F&a=x y&a=%7e";
	struct kv_sigv4_header h[] = {
		{ "Content-Type", 12, "application/json", 16 },
		{ "User-Agent", 10, "kilovolt", 8 },		/* never signed */
		{ "X-Amzn-Bedrock-Trace", 20, "  ENABLED \t now ", 16 },
	};
	struct kv_sigv4_request r = { "POST", target, strlen(target), "bedrock-runtime.us-east-1.amazonaws.com",
		h, 3, EMPTY_SHA256, 1 };
	char canon[2048], sh[256], err[128];

	CHECK_INT(kv_sigv4_canonical(&r, "20260101T000000Z", "TOKEN", canon, sizeof(canon), sh,
	    sizeof(sh), err, sizeof(err)), -1);	/* a raw space in the target */
	r.target_len = strlen(target) - strlen("&a=x y&a=%7e");
	CHECK(kv_sigv4_canonical(&r, "20260101T000000Z", "TOKEN", canon, sizeof(canon), sh,
	    sizeof(sh), err, sizeof(err)) > 0);
	CHECK_STR(canon, "POST\n"
	    "/model/arn%253Aaws%253Abedrock%253Aus-east-1%253A123456789012%253Ainference-profile"
	    "%252Fus.anthropic.claude-3-5-haiku-20241022-v1%253A0/invoke\n"
	    "b=%2F\n"
	    "content-type:application/json\n"
	    "host:bedrock-runtime.us-east-1.amazonaws.com\n"
	    "x-amz-content-sha256:" EMPTY_SHA256 "\n"
	    "x-amz-date:20260101T000000Z\n"
	    "x-amz-security-token:TOKEN\n"
	    "x-amzn-bedrock-trace:ENABLED now\n\n"
	    "content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;"
	    "x-amzn-bedrock-trace\n" EMPTY_SHA256);
}

/* Dot segments, empty segments, a repeated and an empty parameter, a
 * repeated header. */
static void
test_canonical_edges(void)
{
	static const char target[] = "/a/./b/../c//d/?z=2&y&z=1&&x-amz-signature=s&c=%41%2b+";
	struct kv_sigv4_header h[] = { { "X-A", 3, "1", 1 }, { "x-a", 3, " 2", 2 } };
	struct kv_sigv4_request r = { "GET", target, strlen(target), "h", h, 2, EMPTY_SHA256, 0 };
	char canon[1024], sh[256], err[128];

	CHECK(kv_sigv4_canonical(&r, "D", NULL, canon, sizeof(canon), sh, sizeof(sh), err,
	    sizeof(err)) > 0);
	CHECK_STR(canon, "GET\n/a/c/d/\nc=A%2B%2B&y=&z=1&z=2\nhost:h\nx-a:1,2\nx-amz-date:D\n\n"
	    "host;x-a;x-amz-date\n" EMPTY_SHA256);
	r.target = "/..";
	r.target_len = 3;
	r.nheaders = 0;
	CHECK(kv_sigv4_canonical(&r, "D", NULL, canon, sizeof(canon), sh, sizeof(sh), err,
	    sizeof(err)) > 0);
	CHECK(strncmp(canon, "GET\n/\n\n", 7) == 0);
}

static void
test_key_cache(void)
{
	struct kv_sigv4_key key;
	char first[KV_SIGV4_AUTH_MAX];
	struct kv_sigv4_creds other = { "AKIDOTHER", "another secret", "tok" };

	memset(&key, 0, sizeof(key));
	snprintf(first, sizeof(first), "%s", sign("GET", "/", NULL, 0, &suite, &key));
	CHECK_STR(key.date, "20150830");
	CHECK_STR(sign("GET", "/", NULL, 0, &suite, &key), first);	/* reused */
	CHECK(strcmp(sign("GET", "/", NULL, 0, &other, &key), first) != 0);
	CHECK_STR(key.access_key, "AKIDOTHER");
	CHECK_STR(sign("GET", "/", NULL, 0, &suite, &key), first);	/* re-derived */
}

static void
test_refusals(void)
{
	struct kv_sigv4_header crlf = { "X-A", 3, "a\r\nX-B: b", 9 };
	struct kv_sigv4_header own = { "X-Amz-Date", 10, "x", 1 };
	struct kv_sigv4_header badname = { "X A", 3, "x", 1 };
	struct kv_sigv4_header many[KV_SIGV4_HEADERS_MAX + 1];
	struct kv_sigv4_creds nokey = { "", "s", NULL }, badtok = { "AK", "s", "a\nb" };
	struct kv_sigv4_request r = { "GET", "/", 1, "h", NULL, 0, EMPTY_SHA256, 0 };
	struct kv_sigv4_out out;
	char err[128];
	size_t i;

	CHECK_STR(sign("GET", "/", &crlf, 1, &suite, NULL), "");
	CHECK_STR(sign("GET", "/", &own, 1, &suite, NULL), "");
	CHECK_STR(sign("GET", "/", &badname, 1, &suite, NULL), "");
	CHECK_STR(sign("G T", "/", NULL, 0, &suite, NULL), "");
	CHECK_STR(sign("GET", "x", NULL, 0, &suite, NULL), "");
	CHECK_STR(sign("GET", "/?a=%4", NULL, 0, &suite, NULL), "");
	CHECK_STR(sign("GET", "/?a=%zz", NULL, 0, &suite, NULL), "");
	CHECK_STR(sign("GET", "/#f", NULL, 0, &suite, NULL), "");
	CHECK_STR(sign("GET", "/", NULL, 0, &nokey, NULL), "");
	CHECK_STR(sign("GET", "/", NULL, 0, &badtok, NULL), "");
	for (i = 0; i < KV_SIGV4_HEADERS_MAX + 1; i++)
		many[i] = (struct kv_sigv4_header){ "X-A", 3, "1", 1 };
	CHECK_STR(sign("GET", "/", many, KV_SIGV4_HEADERS_MAX + 1, &suite, NULL), "");
	CHECK(strcmp(sign("GET", "/", many, KV_SIGV4_HEADERS_MAX, &suite, NULL), "") != 0);
	r.body_sha256 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855";
	CHECK_INT(kv_sigv4_sign(&r, &suite, "us-east-1", "s", 0, NULL, &out, err, sizeof(err)), -1);
	r.body_sha256 = EMPTY_SHA256;
	CHECK_INT(kv_sigv4_sign(&r, &suite, "US-EAST-1", "s", 0, NULL, &out, err, sizeof(err)), -1);
	CHECK_INT(kv_sigv4_sign(&r, &suite, "us-east-1", "", 0, NULL, &out, err, sizeof(err)), -1);
	CHECK_INT(kv_sigv4_sign(&r, &suite, "us-east-1", "s", 0, NULL, &out, err, sizeof(err)), 0);
	CHECK_STR(out.amz_date, "19700101T000000Z");
}

int
main(void)
{
	test_suite();
	test_bedrock_path();
	test_canonical_edges();
	test_key_cache();
	test_refusals();
	return unit_done();
}

/* The AWS credentials slot (its seqlock under a writer in another process)
 * and the parsers of STS's and IMDS's answers. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/aws_creds.h"
#include "common/aws_creds_parse.h"
#include "master/http_fetch.h"
#include "tests/unit.h"

/* Credentials whose every byte says which publication they are: a torn
 * read mixes two letters. */
static void
fill(struct kv_aws_creds *c, char ch, size_t toklen)
{
	memset(c, 0, sizeof(*c));
	memset(c->access_key, ch, 20);
	memset(c->secret, ch, 40);
	memset(c->token, ch, toklen);
	c->expires = ch;
	c->source = KV_AWS_IMDS;
}

static int
consistent(const struct kv_aws_creds *c)
{
	char ch = c->access_key[0];
	size_t i, n = strlen(c->token);

	if (strlen(c->access_key) != 20 || strlen(c->secret) != 40 || c->expires != ch)
		return 0;
	for (i = 0; i < 40; i++)
		if (c->secret[i] != ch || (i < 20 && c->access_key[i] != ch))
			return 0;
	for (i = 0; i < n; i++)
		if (c->token[i] != ch)
			return 0;
	return n == (size_t)(ch == 'A' ? 3000 : 100);
}

static void
test_seqlock(void)
{
	struct kv_aws_slot *s = kv_aws_slot_map();
	struct kv_aws_creds c, a, b;
	uint64_t gen, last = 0;
	int torn = 0, changes = 0, i = 0;
	pid_t pid;

	CHECK(s != NULL);
	CHECK(kv_aws_slot_map() == s && kv_aws_slot_get() == s);
	CHECK_INT(kv_aws_slot_generation(s), 0);
	CHECK_INT(kv_aws_slot_read(s, &c, &gen), -1);
	fill(&a, 'A', 3000);
	fill(&b, 'B', 100);
	kv_aws_slot_publish(s, &a);
	CHECK_INT(kv_aws_slot_generation(s), 1);
	if ((pid = fork()) == 0) {	/* the master's part, far more often than it would */
		for (;;) {
			kv_aws_slot_publish(s, (i = !i) ? &b : &a);
			usleep(20);
		}
	}
	CHECK(pid > 0);
	for (i = 0; i < 20000; i++) {
		CHECK_INT(kv_aws_slot_read(s, &c, &gen), 0);
		torn += !consistent(&c);
		changes += gen != last;
		CHECK(gen >= last);
		last = gen;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	CHECK_INT(torn, 0);
	CHECK(changes > 1);	/* the writer did run alongside */
}

static void
test_time(void)
{
	int64_t t;

	CHECK_INT(kv_aws_parse_time("1970-01-01T00:00:00Z", 20, &t), 0);
	CHECK_INT(t, 0);
	CHECK_INT(kv_aws_parse_time("2026-12-07T20:30:15Z", 20, &t), 0);
	CHECK_INT(t, 1796675415);
	CHECK_INT(kv_aws_parse_time("2024-02-29T23:59:59.123Z", 24, &t), 0);
	CHECK_INT(t, 1709251199);
	CHECK_INT(kv_aws_parse_time("2026-12-07T20:30:15+00:00", 25, &t), 0);
	CHECK_INT(t, 1796675415);
	CHECK_INT(kv_aws_parse_time("2026-12-07T20:30:15", 19, &t), -1);
	CHECK_INT(kv_aws_parse_time("2026-13-07T20:30:15Z", 20, &t), -1);
	CHECK_INT(kv_aws_parse_time("2026-12-07T20:30:15.Z", 21, &t), -1);
	CHECK_INT(kv_aws_parse_time("2026-12-07T20:30:15+01:00", 25, &t), -1);
	CHECK_INT(kv_aws_parse_time("2026-12-07 20:30:15Z", 20, &t), -1);
}

#define STS_OK(tok) \
	"<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n" \
	"<AssumeRoleWithWebIdentityResult><SubjectFromWebIdentityToken>sub</SubjectFromWebIdentityToken>" \
	"<Credentials>\n  <SessionToken>" tok "</SessionToken>\n" \
	"  <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY</SecretAccessKey>\n" \
	"  <Expiration>2026-12-07T21:00:00Z</Expiration>\n  <AccessKeyId>ASIAEXAMPLE</AccessKeyId>\n" \
	"</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>\n"

static int
sts(const char *xml, struct kv_aws_creds *c, char *err)
{
	return kv_aws_parse_sts(xml, strlen(xml), c, err, 256);
}

static void
test_sts(void)
{
	struct kv_aws_creds c;
	char err[256];

	CHECK_INT(sts(STS_OK("FwoGZXIvYXdzE+/=="), &c, err), 0);
	CHECK_STR(c.access_key, "ASIAEXAMPLE");
	CHECK_STR(c.secret, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
	CHECK_STR(c.token, "FwoGZXIvYXdzE+/==");
	CHECK_INT(c.expires, 1796677200);
	CHECK_INT(sts(STS_OK("a&amp;b"), &c, err), 0);
	CHECK_STR(c.token, "a&b");
	CHECK_INT(sts(STS_OK("a&nbsp;b"), &c, err), -1);
	CHECK_INT(sts(STS_OK("a<x/>b"), &c, err), -1);
	CHECK_INT(sts(STS_OK("a b"), &c, err), -1);	/* unfit for a header */
	CHECK_INT(sts(STS_OK("a&#10;b"), &c, err), -1);
	CHECK_INT(sts(STS_OK(""), &c, err), -1);
	CHECK_INT(sts("<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
	    "<Message>No OpenIDConnect provider\nfound</Message></Error></ErrorResponse>", &c, err), -1);
	CHECK_STR(err, "STS refused: InvalidIdentityToken: No OpenIDConnect provider?found");
	CHECK_INT(sts("<AssumeRoleWithWebIdentityResponse><Credentials><AccessKeyId>A</AccessKeyId>"
	    "</Credentials></AssumeRoleWithWebIdentityResponse>", &c, err), -1);
	CHECK_INT(sts("<AssumeRoleWithWebIdentityResponse><Credentials>", &c, err), -1);
	CHECK_INT(sts("", &c, err), -1);
}

static int
imds(const char *js, struct kv_aws_creds *c, char *err)
{
	return kv_aws_parse_imds(js, strlen(js), c, err, 256);
}

static void
test_imds(void)
{
	static const char ok[] = "{\n  \"Code\" : \"Success\",\n  \"LastUpdated\" : "
	    "\"2026-12-07T19:00:00Z\",\n  \"Type\" : \"AWS-HMAC\",\n  \"AccessKeyId\" : "
	    "\"ASIAIMDS\",\n  \"SecretAccessKey\" : \"s3cr\\/et\",\n  \"Token\" : \"IQoJ+==\",\n"
	    "  \"Expiration\" : \"2026-12-07T21:00:00Z\"\n}";
	struct kv_aws_creds c;
	char err[256], role[KV_AWS_ROLE_MAX + 1];

	CHECK_INT(imds(ok, &c, err), 0);
	CHECK_STR(c.access_key, "ASIAIMDS");
	CHECK_STR(c.secret, "s3cr/et");
	CHECK_STR(c.token, "IQoJ+==");
	CHECK_INT(c.expires, 1796677200);
	CHECK_INT(imds("{\"Code\":\"Failure\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
	    "\"Token\":\"T\",\"Expiration\":\"2026-12-07T21:00:00Z\"}", &c, err), -1);
	CHECK_STR(err, "IMDS credentials Code is not Success");
	CHECK_INT(imds("{\"Code\":\"Success\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\","
	    "\"Token\":\"T\"}", &c, err), -1);
	CHECK_INT(imds("{\"Code\":\"Success\",\"AccessKeyId\":\"A\",\"AccessKeyId\":\"B\","
	    "\"SecretAccessKey\":\"S\",\"Token\":\"T\",\"Expiration\":\"2026-12-07T21:00:00Z\"}",
	    &c, err), -1);
	CHECK_INT(imds("{\"Code\":\"Success\",\"AccessKeyId\":\"A\",\"SecretAccessKey\":\"S\\r\\n\","
	    "\"Token\":\"T\",\"Expiration\":\"2026-12-07T21:00:00Z\"}", &c, err), -1);
	CHECK_INT(imds("{\"Code\":\"Success\",\"AccessKeyId\":1,\"SecretAccessKey\":\"S\","
	    "\"Token\":\"T\",\"Expiration\":\"2026-12-07T21:00:00Z\"}", &c, err), -1);
	CHECK_INT(imds("{\"Code\":\"Success\"} x", &c, err), -1);
	CHECK_INT(imds("", &c, err), -1);
	CHECK_INT(kv_aws_parse_role("my-role\n", 8, role, err, sizeof(err)), 0);
	CHECK_STR(role, "my-role");
	CHECK_INT(kv_aws_parse_role("r@x.y_z+=,", 10, role, err, sizeof(err)), 0);
	CHECK_INT(kv_aws_parse_role("", 0, role, err, sizeof(err)), -1);
	CHECK_INT(kv_aws_parse_role("../etc", 6, role, err, sizeof(err)), -1);
	CHECK_INT(kv_aws_parse_role("a b", 3, role, err, sizeof(err)), -1);
	CHECK_INT(kv_aws_parse_role("..\n", 3, role, err, sizeof(err)), -1);
	CHECK_INT(kv_aws_parse_role(".", 1, role, err, sizeof(err)), -1);
}

/* The credential endpoints' URLs (AWS_ENDPOINT_URL_STS,
 * AWS_EC2_METADATA_SERVICE_ENDPOINT, STS's regional one). */
static void
test_url(void)
{
	struct kv_fetch_url u;

	CHECK_INT(kv_fetch_parse_url("https://sts.us-east-1.amazonaws.com/", &u), 0);
	CHECK(u.tls == 1 && u.v6 == 0);
	CHECK_STR(u.host, "sts.us-east-1.amazonaws.com");
	CHECK_STR(u.port, "443");
	CHECK_STR(u.path, "/");
	CHECK_INT(kv_fetch_parse_url("http://169.254.169.254", &u), 0);
	CHECK_STR(u.port, "80");
	CHECK_STR(u.path, "/");
	CHECK_INT(kv_fetch_parse_url("http://[fd00:ec2::254]:8080/x", &u), 0);
	CHECK(u.v6 == 1);
	CHECK_STR(u.host, "fd00:ec2::254");
	CHECK_STR(u.port, "8080");
	CHECK_STR(u.path, "/x");
	CHECK_INT(kv_fetch_parse_url("http://127.0.0.1:35113", &u), 0);
	CHECK_STR(u.port, "35113");
	CHECK_INT(kv_fetch_parse_url("ftp://h/", &u), -1);
	CHECK_INT(kv_fetch_parse_url("http://:80/", &u), -1);
	CHECK_INT(kv_fetch_parse_url("http://h:/", &u), -1);
	CHECK_INT(kv_fetch_parse_url("http://h:8x/", &u), -1);
	CHECK_INT(kv_fetch_parse_url("http://h?q", &u), -1);
	CHECK_INT(kv_fetch_parse_url("http://[::1/", &u), -1);
	CHECK_INT(kv_fetch_parse_url("http://h/a b", &u), -1);
	CHECK_INT(kv_fetch_parse_url("http://h/a\r\nX: y", &u), -1);
}

int
main(void)
{
	test_url();
	test_time();
	test_sts();
	test_imds();
	test_seqlock();
	return unit_done();
}

/* Unit tests of the admin API's key and team bodies (master/admin_keys_parse.c):
 * every member read exactly, every bad input refused with a message that
 * names what was wrong. */
#include "master/admin_keys_parse.h"

#include <stdint.h>
#include <string.h>

#include "tests/unit.h"

#define NOW	1800000000LL	/* 2027-01-15T08:00:00Z */

static int
create(const char *body, struct kv_admin_create *r, char *err, size_t errlen)
{
	return kv_admin_parse_create(body, strlen(body), NOW, r, err, errlen);
}

/* BODY is refused and the message holds WANT. */
static void
refused(const char *body, const char *want)
{
	struct kv_admin_create r;
	char err[256] = "";
	int rc = create(body, &r, err, sizeof(err));

	CHECK_INT(rc, -1);
	if (strstr(err, want) == NULL)
		fprintf(stderr, "body %s: message '%s' lacks '%s'\n", body, err, want);
	CHECK(strstr(err, want) != NULL);
}

static void
test_create(void)
{
	struct kv_admin_create r;
	char err[256];

	CHECK_INT(create("{\"label\":\"dev1\",\"budget\":\"12.50\",\"rpm\":60,\"tpm\":"
	    "90000,\"period\":\"month\",\"expires\":\"2027-02-01\"}", &r, err,
	    sizeof(err)), 0);
	CHECK_STR(r.label, "dev1");
	CHECK_INT(r.budget_nusd, 12500000000LL);
	CHECK_INT(r.rpm, 60);
	CHECK_INT(r.tpm, 90000);
	CHECK_INT(r.period, 3);
	CHECK_INT(r.expires, 1801440000LL);	/* 2027-02-01T00:00:00Z */

	CHECK_INT(create(" {\"label\" : \"a\"} \n", &r, err, sizeof(err)), 0);
	CHECK_INT(r.budget_nusd, -1);
	CHECK_INT(r.rpm, -1);
	CHECK_INT(r.tpm, -1);
	CHECK_INT(r.period, -1);
	CHECK_INT(r.expires, 0);

	CHECK_INT(create("{\"label\":\"b\",\"budget_nusd\":7,\"rpm\":null,\"period\":"
	    "\"daily\",\"expires\":\"2027-01-15T08:00:01Z\"}", &r, err, sizeof(err)), 0);
	CHECK_INT(r.budget_nusd, 7);
	CHECK_INT(r.rpm, -1);
	CHECK_INT(r.period, 1);
	CHECK_INT(r.expires, NOW + 1);
	CHECK_INT(create("{\"label\":\"c\",\"budget\":\"$0.000000001\",\"expires\":"
	    "1900000000}", &r, err, sizeof(err)), 0);
	CHECK_INT(r.budget_nusd, 1);
	CHECK_INT(r.expires, 1900000000LL);
	/* a label of KV_LABEL_MAX - 1 bytes fits, one more does not */
	CHECK_INT(create("{\"label\":\"123456789012345678901234567890123456789012345"
	    "67\"}", &r, err, sizeof(err)), 0);
	refused("{\"label\":\"1234567890123456789012345678901234567890123456789\"}",
	    "too long");
}

static void
test_create_refused(void)
{
	refused("", "empty");
	refused("   ", "empty");
	refused("[]", "JSON object");
	refused("{", "not a JSON object");
	refused("{\"label\":\"a\",}", "not a JSON object");
	refused("{\"label\":\"a\"} x", "not a JSON object");
	refused("{}", "\"label\" is required");
	refused("{\"label\":\"\"}", "\"label\" is required");
	refused("{\"label\":5}", "must be a string");
	refused("{\"label\":null}", "must be a string");
	refused("{\"label\":\"a\",\"owner\":\"x\"}", "unknown field \"owner\"");
	refused("{\"label\":\"a\",\"label\":\"b\"}", "twice");
	refused("{\"label\":\"a\",\"budget\":\"1\",\"budget_nusd\":1}", "budget");
	refused("{\"label\":\"a\",\"budget\":12.5}", "USD amount in a string");
	refused("{\"label\":\"a\",\"budget\":\"-1\"}", "not an amount in USD");
	refused("{\"label\":\"a\",\"budget\":\"1.0000000001\"}", "not an amount in USD");
	refused("{\"label\":\"a\",\"budget\":\"twelve\"}", "not an amount in USD");
	refused("{\"label\":\"a\",\"budget\":\"99999999999\"}", "not an amount in USD");
	refused("{\"label\":\"a\",\"budget_nusd\":-1}", "integer");
	refused("{\"label\":\"a\",\"budget_nusd\":1.5}", "integer");
	refused("{\"label\":\"a\",\"rpm\":4000000001}", "integer 0..4000000000");
	refused("{\"label\":\"a\",\"tpm\":\"5\"}", "integer");
	refused("{\"label\":\"a\",\"period\":\"yearly\"}", "give none, day");
	refused("{\"label\":\"a\",\"expires\":\"2020-01-01\"}", "in the past");
	refused("{\"label\":\"a\",\"expires\":\"2027-02-30\"}", "not a UTC date");
	refused("{\"label\":\"a\",\"expires\":\"tomorrow\"}", "not a UTC date");
	refused("{\"label\":\"a\",\"expires\":100}", "in the past");
}

static void
test_budget_limits(void)
{
	int64_t v = 0, rpm, tpm;
	char err[256];

#define BUDGET(s) kv_admin_parse_budget(s, strlen(s), &v, err, sizeof(err))
#define LIMITS(s) kv_admin_parse_limits(s, strlen(s), &rpm, &tpm, err, sizeof(err))
	CHECK_INT(BUDGET("{\"budget\":\"25.00\"}"), 0);
	CHECK_INT(v, 25000000000LL);
	CHECK_INT(BUDGET("{\"budget_nusd\": 7000000000}"), 0);
	CHECK_INT(v, 7000000000LL);
	CHECK_INT(BUDGET("{\"budget_nusd\": -1}"), -1);
	CHECK_INT(BUDGET("{\"budget_nusd\": \"5\"}"), -1);
	CHECK_INT(BUDGET("{\"budget_nusd\": 99999999999999999999}"), -1);
	CHECK_INT(BUDGET("{\"budget_nusd\": 5, \"x\": 1}"), -1);
	CHECK(strstr(err, "unknown field \"x\"") != NULL);
	CHECK_INT(BUDGET("{\"budget\":\"1\",\"budget_nusd\":1}"), -1);
	CHECK_INT(BUDGET("{}"), -1);
	CHECK_INT(BUDGET("[5]"), -1);
	CHECK_INT(BUDGET(""), -1);
	CHECK_INT(LIMITS("{\"rpm\": 5, \"tpm\": 7000}"), 0);
	CHECK_INT(rpm, 5);
	CHECK_INT(tpm, 7000);
	CHECK_INT(LIMITS("{\"tpm\":0}"), 0);
	CHECK_INT(rpm, -1);
	CHECK_INT(tpm, 0);
	CHECK_INT(LIMITS("{\"rpm\": 5, \"rpm\": 6}"), -1);
	CHECK_INT(LIMITS("{\"tpm\": 4000000001}"), -1);
	CHECK_INT(LIMITS("{}"), -1);
	CHECK_INT(kv_admin_parse_empty("", 0, err, sizeof(err)), 0);
	CHECK_INT(kv_admin_parse_empty(" {} ", 4, err, sizeof(err)), 0);
	CHECK_INT(kv_admin_parse_empty("{\"a\":1}", 7, err, sizeof(err)), -1);
	CHECK_INT(kv_admin_parse_empty("x", 1, err, sizeof(err)), -1);
}

#define TEAM_ALL	(KV_TEAM_F_NAME | KV_TEAM_F_PARENT | KV_TEAM_F_BUDGET | \
	KV_TEAM_F_PERIOD | KV_TEAM_F_RPM | KV_TEAM_F_TPM | KV_TEAM_F_CAPS)

static void
test_team(void)
{
	struct kv_admin_team t;
	char err[256];

#define TEAM(s, allowed, required) \
	kv_admin_parse_team(s, strlen(s), allowed, required, &t, err, sizeof(err))
	CHECK_INT(TEAM("{\"name\":\"payments\",\"parent\":\"acme\",\"budget\":\"12.5\","
	    "\"period\":\"monthly\",\"rpm\":60,\"tpm\":9000,\"model_budget\":"
	    "\"gpt-5*:300 claude-*:2.5\"}", TEAM_ALL, KV_TEAM_F_NAME), 0);
	CHECK(strcmp(t.name, "payments") == 0 && strcmp(t.parent, "acme") == 0);
	CHECK_INT(t.budget_nusd, 12500000000LL);
	CHECK_INT(t.period, 3);
	CHECK_INT(t.rpm, 60);
	CHECK_INT(t.tpm, 9000);
	CHECK(strcmp(t.model_budget, "gpt-5*:300 claude-*:2.5") == 0);
	CHECK_INT(t.given, TEAM_ALL);
	/* null clears; absent leaves alone */
	CHECK_INT(TEAM("{\"budget\":null,\"model_budget\":null}", TEAM_ALL, 0), 0);
	CHECK_INT(t.given, KV_TEAM_F_BUDGET | KV_TEAM_F_CAPS);
	CHECK_INT(t.budget_nusd, -1);
	CHECK(t.model_budget[0] == '\0');
	CHECK_INT(TEAM("", KV_TEAM_F_BUDGET, 0), 0);	/* set with nothing */
	CHECK_INT(t.given, 0);
	CHECK_INT(TEAM("{\"parent\":null}", KV_TEAM_F_PARENT, KV_TEAM_F_PARENT), 0);
	CHECK(t.parent[0] == '\0');
	/* refusals, each naming what */
	CHECK_INT(TEAM("{}", TEAM_ALL, KV_TEAM_F_NAME), -1);
	CHECK(strstr(err, "\"name\" is required") != NULL);
	CHECK_INT(TEAM("{\"name\":\"a b\"}", TEAM_ALL, KV_TEAM_F_NAME), -1);
	CHECK(strstr(err, "not a team name") != NULL);
	CHECK_INT(TEAM("{\"name\":\"a\\n[key x]\"}", TEAM_ALL, KV_TEAM_F_NAME), -1);
	CHECK_INT(TEAM("{\"name\":\"a\",\"parent\":\"x/y\"}", TEAM_ALL, KV_TEAM_F_NAME), -1);
	CHECK_INT(TEAM("{\"name\":\"a\",\"model_budget\":\"x:1\\nrpm = 5\"}", TEAM_ALL,
	    KV_TEAM_F_NAME), -1);
	CHECK_INT(TEAM("{\"name\":\"a\",\"model_budget\":\"x:1 ; y\"}", TEAM_ALL,
	    KV_TEAM_F_NAME), -1);
	CHECK_INT(TEAM("{\"parent\":\"a\"}", TEAM_ALL & ~KV_TEAM_F_PARENT, 0), -1);
	CHECK(strstr(err, "unknown field \"parent\"") != NULL);
	CHECK_INT(TEAM("{\"rpm\":1,\"rpm\":2}", TEAM_ALL, 0), -1);
	CHECK(strstr(err, "twice") != NULL);
	CHECK_INT(TEAM("{\"budget\":\"1\",\"budget_nusd\":1}", TEAM_ALL, 0), -1);
	CHECK_INT(TEAM("{\"rpm\":-1}", TEAM_ALL, 0), -1);
	CHECK_INT(TEAM("{\"period\":\"hourly\"}", TEAM_ALL, 0), -1);
	CHECK_INT(TEAM("{\"parent\":\"a\"}", KV_TEAM_F_PARENT, KV_TEAM_F_PARENT), 0);
	CHECK_INT(TEAM("{}", KV_TEAM_F_PARENT, KV_TEAM_F_PARENT), -1);
	CHECK(strstr(err, "\"parent\" is required") != NULL);
#undef TEAM
}

static void
test_date(void)
{
	int64_t t;

	CHECK_INT(kv_admin_parse_date("1970-01-01", &t), 0);
	CHECK_INT(t, 0);
	CHECK_INT(kv_admin_parse_date("2000-02-29T23:59:59Z", &t), 0);
	CHECK_INT(t, 951868799LL);
	CHECK_INT(kv_admin_parse_date("2027-01-15 08:00:00", &t), 0);
	CHECK_INT(t, NOW);
	CHECK_INT(kv_admin_parse_date("1900-02-29", &t), -1);
	CHECK_INT(kv_admin_parse_date("2027-13-01", &t), -1);
	CHECK_INT(kv_admin_parse_date("2027-01-01T24:00:00Z", &t), -1);
	CHECK_INT(kv_admin_parse_date("2027-01-01Z", &t), -1);
	CHECK_INT(kv_admin_parse_date("2027-01-01T00:00:00ZZ", &t), -1);
	CHECK_INT(kv_admin_parse_date("1969-12-31", &t), -1);
}

int
main(void)
{
	test_create();
	test_create_refused();
	test_budget_limits();
	test_team();
	test_date();
	return unit_done();
}

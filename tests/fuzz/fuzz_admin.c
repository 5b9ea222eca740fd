/* libFuzzer target: the admin API's key bodies (master/admin_keys_parse.c)
 * over arbitrary bytes. Every parser either accepts, with values inside
 * their documented ranges, or refuses with a terminated message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "master/admin_keys_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_err(const char *err, size_t cap)
{
	if (memchr(err, '\0', cap) == NULL || err[0] == '\0')
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct kv_admin_create r;
	struct kv_admin_team t;
	char err[256], s[64];
	int64_t v, rpm, tpm;

	memset(err, 'x', sizeof(err));
	if (kv_admin_parse_create(body, size, 1800000000LL, &r, err, sizeof(err)) == 0) {
		if (r.label[0] == '\0' || memchr(r.label, '\0', sizeof(r.label)) == NULL ||
		    r.budget_nusd < -1 || r.rpm < -1 || r.rpm > KV_ADMIN_LIMIT_MAX ||
		    r.tpm < -1 || r.tpm > KV_ADMIN_LIMIT_MAX || r.period < -1 ||
		    r.period > 3 || (r.expires != 0 && r.expires <= 1800000000LL))
			abort();
	} else {
		check_err(err, sizeof(err));
	}
	memset(err, 'x', sizeof(err));
	if (kv_admin_parse_budget(body, size, &v, err, sizeof(err)) == 0) {
		if (v < 0)
			abort();
	} else {
		check_err(err, sizeof(err));
	}
	memset(err, 'x', sizeof(err));
	if (kv_admin_parse_limits(body, size, &rpm, &tpm, err, sizeof(err)) == 0) {
		if (rpm < -1 || rpm > KV_ADMIN_LIMIT_MAX || tpm < -1 ||
		    tpm > KV_ADMIN_LIMIT_MAX || (rpm == -1 && tpm == -1))
			abort();
	} else {
		check_err(err, sizeof(err));
	}
	memset(err, 'x', sizeof(err));
	if (kv_admin_parse_team(body, size, 0x7fu, 0x01u, &t, err, sizeof(err)) == 0) {
		/* nothing the teams file could read as another line or section */
		if (t.name[0] == '\0' || strpbrk(t.name, " \n[]=;#") != NULL ||
		    strpbrk(t.parent, " \n[]=;#") != NULL || strpbrk(t.model_budget, "\n[]=;#") != NULL ||
		    t.rpm < 0 || t.rpm > KV_ADMIN_LIMIT_MAX || t.tpm < 0 ||
		    t.tpm > KV_ADMIN_LIMIT_MAX || t.budget_nusd < -1 || t.period < -1 || t.period > 3)
			abort();
	} else {
		check_err(err, sizeof(err));
	}
	memset(err, 'x', sizeof(err));
	if (kv_admin_parse_empty(body, size, err, sizeof(err)) == -1)
		check_err(err, sizeof(err));
	/* the string parsers, on the bytes as one C string */
	if (size < sizeof(s)) {
		memcpy(s, data, size);
		s[size] = '\0';
		if (kv_admin_parse_usd(s, &v) == 0 && v < 0)
			abort();
		if (kv_admin_parse_date(s, &v) == 0 && (v < 0 || v > 253402300799LL))
			abort();
	}
	return 0;
}

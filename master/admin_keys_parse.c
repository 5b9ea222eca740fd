/* Parsing the admin API's key bodies (see admin_keys_parse.h). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/admin_keys_parse.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/errf.h"
#include "common/jsonread.h"
#include "common/money.h"

/* Any string a body can hold: the body is at most a few KB, so a value
 * that is too long for its member is read whole and refused by name. */
#define ADMIN_STR_MAX	1100
#define ADMIN_NAME_MAX	32

/* jsonread's own message ("1:7: unexpected ...") for a malformed body. */
static int
fail_jr(const struct kv_jr *jr, char *err, size_t errlen)
{
	return kv_errf(err, errlen, "the body is not a JSON object: %s", jr->err);
}

/* Open the body's object. An empty body is the empty object only when
 * EMPTY_OK (writes without arguments). Returns 1 (an object is open), 0
 * (empty body) or -1. */
static int
open_body(struct kv_jr *jr, const char *body, size_t len, int empty_ok, char *err,
    size_t errlen)
{
	size_t i;

	for (i = 0; i < len && strchr(" \t\r\n", body[i]) != NULL && body[i] != '\0'; i++)
		;
	if (i == len) {
		if (empty_ok)
			return 0;
		return kv_errf(err, errlen, "the body is empty: send a JSON object");
	}
	kv_jr_init(jr, body, len);
	if (kv_jr_peek(jr) != KV_JR_OBJECT) {
		if (!jr->failed)
			return kv_errf(err, errlen, "the body must be a JSON object {...}");
		return fail_jr(jr, err, errlen);
	}
	if (kv_jr_enter(jr, KV_JR_OBJECT) == -1)
		return fail_jr(jr, err, errlen);
	return 1;
}

/* The next member's name into NAME: 1, 0 at the end of the object (the
 * rest of the body checked to be whitespace), or -1. */
static int
next_member(struct kv_jr *jr, char name[ADMIN_NAME_MAX], char *err, size_t errlen)
{
	char big[ADMIN_STR_MAX];
	int r = kv_jr_member(jr, big, sizeof(big));

	if (r == -1)
		return fail_jr(jr, err, errlen);
	if (r == 0)
		return kv_jr_finish(jr) == -1 ? fail_jr(jr, err, errlen) : 0;
	if (strlen(big) >= ADMIN_NAME_MAX)
		return kv_errf(err, errlen, "unknown field (a name of %zu bytes)", strlen(big));
	memcpy(name, big, strlen(big) + 1);
	return 1;
}

/* A member's value, a string, into OUT (CAP bytes; longer is refused by
 * NAME). */
static int
read_string(struct kv_jr *jr, const char *name, char *out, size_t cap, char *err,
    size_t errlen)
{
	char big[ADMIN_STR_MAX];
	enum kv_jr_type t = kv_jr_peek(jr);

	if (t != KV_JR_STRING) {
		if (jr->failed)
			return fail_jr(jr, err, errlen);
		return kv_errf(err, errlen, "\"%s\" must be a string", name);
	}
	if (kv_jr_string(jr, big, sizeof(big)) == -1)
		return fail_jr(jr, err, errlen);
	if (strlen(big) >= cap)
		return kv_errf(err, errlen, "\"%s\" is too long (%zu bytes, at most %zu)",
		    name, strlen(big), cap - 1);
	memcpy(out, big, strlen(big) + 1);
	return 0;
}

/* A member's value, an integer 0..MAX written as plain digits. */
static int
read_count(struct kv_jr *jr, const char *name, int64_t max, int64_t *out, char *err,
    size_t errlen)
{
	const char *text;
	size_t len, i;
	int64_t v = 0;

	if (kv_jr_peek(jr) != KV_JR_NUMBER) {
		if (jr->failed)
			return fail_jr(jr, err, errlen);
		return kv_errf(err, errlen, "\"%s\" must be an integer 0..%lld", name,
		    (long long)max);
	}
	if (kv_jr_number(jr, &text, &len) == -1)
		return fail_jr(jr, err, errlen);
	for (i = 0; i < len; i++)
		if (text[i] < '0' || text[i] > '9' ||
		    __builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, text[i] - '0', &v) || v > max)
			return kv_errf(err, errlen, "\"%s\" must be an integer 0..%lld, "
			    "not %.*s", name, (long long)max, (int)(len > 40 ? 40 : len), text);
	*out = v;
	return 0;
}

/* A member's value, a USD string. */
static int
read_usd(struct kv_jr *jr, const char *name, int64_t *out, char *err, size_t errlen)
{
	char s[64];

	if (kv_jr_peek(jr) == KV_JR_NUMBER)
		return kv_errf(err, errlen, "\"%s\" is a USD amount in a string, such as "
		    "\"12.50\" (or \"budget_nusd\": an integer of nano-dollars)", name);
	if (read_string(jr, name, s, sizeof(s), err, errlen) == -1)
		return -1;
	if (kv_admin_parse_usd(s, out) == -1)
		return kv_errf(err, errlen, "\"%s\": '%s' is not an amount in USD (digits, "
		    "at most 9 decimals, not negative: \"12.50\")", name, s);
	return 0;
}

int
kv_admin_parse_usd(const char *s, int64_t *nusd)
{
	return kv_parse_nano(s[0] == '$' ? s + 1 : s, nusd);
}

/* Days from 1970-01-01 to Y-M-D of the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = y / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int
leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* N digits at S into *v; 0 or -1. */
static int
digits(const char *s, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		*v = *v * 10 + (s[i] - '0');
	}
	return 0;
}

int
kv_admin_parse_date(const char *s, int64_t *t)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, mo, d, h = 0, mi = 0, sec = 0;
	size_t n = strlen(s);

	if (n < 10 || digits(s, 4, &y) == -1 || s[4] != '-' ||
	    digits(s + 5, 2, &mo) == -1 || s[7] != '-' || digits(s + 8, 2, &d) == -1)
		return -1;
	if (n > 10) {
		if ((s[10] != 'T' && s[10] != ' ') || n < 19 ||
		    digits(s + 11, 2, &h) == -1 || s[13] != ':' ||
		    digits(s + 14, 2, &mi) == -1 || s[16] != ':' ||
		    digits(s + 17, 2, &sec) == -1)
			return -1;
		if (n > 19 && (n != 20 || s[19] != 'Z'))
			return -1;
	}
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || sec > 59)
		return -1;
	*t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	return 0;
}

/* "none", "day"/"daily", "week"/"weekly", "month"/"monthly". */
static int
parse_period(const char *s, int *period)
{
	static const char *const names[][2] = {
		{ "none", "none" }, { "day", "daily" }, { "week", "weekly" },
		{ "month", "monthly" },
	};
	int i;

	for (i = 0; i < 4; i++)
		if (strcmp(s, names[i][0]) == 0 || strcmp(s, names[i][1]) == 0) {
			*period = i;
			return 0;
		}
	return -1;
}

static int
read_period(struct kv_jr *jr, int *period, char *err, size_t errlen)
{
	char s[16];

	if (read_string(jr, "period", s, sizeof(s), err, errlen) == -1)
		return -1;
	if (parse_period(s, period) == -1)
		return kv_errf(err, errlen, "\"period\": '%s': give none, day, week or month",
		    s);
	return 0;
}

static int
read_expires(struct kv_jr *jr, int64_t now, int64_t *out, char *err, size_t errlen)
{
	char s[32];

	if (kv_jr_peek(jr) == KV_JR_NUMBER) {
		if (read_count(jr, "expires", INT64_MAX, out, err, errlen) == -1)
			return -1;
	} else if (read_string(jr, "expires", s, sizeof(s), err, errlen) == -1) {
		return -1;
	} else if (kv_admin_parse_date(s, out) == -1) {
		return kv_errf(err, errlen, "\"expires\": '%s' is not a UTC date "
		    "(2027-01-31 or 2027-01-31T12:00:00Z)", s);
	}
	if (*out <= now)
		return kv_errf(err, errlen, "\"expires\" is in the past: give a future date");
	return 0;
}

/* The member NAME's value into R; SEEN holds the bit of each member read. */
static int
create_member(struct kv_jr *jr, const char *name, int64_t now,
    struct kv_admin_create *r, unsigned *seen, char *err, size_t errlen)
{
	static const char *const names[] = { "label", "budget", "budget_nusd", "rpm",
		"tpm", "period", "expires" };
	unsigned i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			break;
	if (i == sizeof(names) / sizeof(names[0]))
		return kv_errf(err, errlen, "unknown field \"%s\" (known: label, budget, "
		    "rpm, tpm, period, expires)", name);
	if ((*seen & (1u << i)) || (i <= 2 && i >= 1 && (*seen & 6u)))
		return kv_errf(err, errlen, "\"%s\" is given twice (or with %s)", name,
		    i == 1 ? "budget_nusd" : i == 2 ? "budget" : "itself");
	*seen |= 1u << i;
	if (kv_jr_peek(jr) == KV_JR_NULL && i != 0)
		return kv_jr_skip(jr) == -1 ? fail_jr(jr, err, errlen) : 0;
	switch (i) {
	case 0:
		return read_string(jr, "label", r->label, sizeof(r->label), err, errlen);
	case 1:
		return read_usd(jr, "budget", &r->budget_nusd, err, errlen);
	case 2:
		return read_count(jr, "budget_nusd", INT64_MAX, &r->budget_nusd, err,
		    errlen);
	case 3:
		return read_count(jr, "rpm", KV_ADMIN_LIMIT_MAX, &r->rpm, err, errlen);
	case 4:
		return read_count(jr, "tpm", KV_ADMIN_LIMIT_MAX, &r->tpm, err, errlen);
	case 5:
		return read_period(jr, &r->period, err, errlen);
	default:
		return read_expires(jr, now, &r->expires, err, errlen);
	}
}

int
kv_admin_parse_create(const char *body, size_t len, int64_t now,
    struct kv_admin_create *r, char *err, size_t errlen)
{
	struct kv_jr jr;
	char name[ADMIN_NAME_MAX];
	unsigned seen = 0;
	int m;

	memset(r, 0, sizeof(*r));
	r->budget_nusd = r->rpm = r->tpm = -1;
	r->period = -1;
	if (open_body(&jr, body, len, 0, err, errlen) == -1)
		return -1;
	while ((m = next_member(&jr, name, err, errlen)) == 1)
		if (create_member(&jr, name, now, r, &seen, err, errlen) == -1)
			return -1;
	if (m == -1)
		return -1;
	if (r->label[0] == '\0')
		return kv_errf(err, errlen, "\"label\" is required: the key's name, 1 to %d "
		    "bytes", KV_LABEL_MAX - 1);
	return 0;
}

int
kv_admin_parse_budget(const char *body, size_t len, int64_t *nusd, char *err,
    size_t errlen)
{
	struct kv_jr jr;
	char name[ADMIN_NAME_MAX];
	int m, n = 0;

	if (open_body(&jr, body, len, 0, err, errlen) == -1)
		return -1;
	while ((m = next_member(&jr, name, err, errlen)) == 1) {
		if (strcmp(name, "budget") != 0 && strcmp(name, "budget_nusd") != 0)
			return kv_errf(err, errlen, "unknown field \"%s\": the body is "
			    "{\"budget\": \"12.50\"} (USD)", name);
		if (n++ > 0)
			return kv_errf(err, errlen, "give one of \"budget\" (USD) or "
			    "\"budget_nusd\", once");
		if (strcmp(name, "budget") == 0)
			m = read_usd(&jr, name, nusd, err, errlen);
		else
			m = read_count(&jr, name, INT64_MAX, nusd, err, errlen);
		if (m == -1)
			return -1;
	}
	if (m == -1)
		return -1;
	if (n == 0)
		return kv_errf(err, errlen, "the body is {\"budget\": \"12.50\"} (USD)");
	return 0;
}

int
kv_admin_parse_limits(const char *body, size_t len, int64_t *rpm, int64_t *tpm,
    char *err, size_t errlen)
{
	struct kv_jr jr;
	char name[ADMIN_NAME_MAX];
	int64_t *dst;
	int m;

	*rpm = *tpm = -1;
	if (open_body(&jr, body, len, 0, err, errlen) == -1)
		return -1;
	while ((m = next_member(&jr, name, err, errlen)) == 1) {
		if (strcmp(name, "rpm") == 0)
			dst = rpm;
		else if (strcmp(name, "tpm") == 0)
			dst = tpm;
		else
			return kv_errf(err, errlen, "unknown field \"%s\": the body is "
			    "{\"rpm\": N, \"tpm\": N}, either or both", name);
		if (*dst != -1)
			return kv_errf(err, errlen, "\"%s\" is given twice", name);
		if (read_count(&jr, name, KV_ADMIN_LIMIT_MAX, dst, err, errlen) == -1)
			return -1;
	}
	if (m == -1)
		return -1;
	if (*rpm == -1 && *tpm == -1)
		return kv_errf(err, errlen, "the body is {\"rpm\": N, \"tpm\": N}, either "
		    "or both, N 0..%lld (0 = no limit)", KV_ADMIN_LIMIT_MAX);
	return 0;
}

int
kv_admin_parse_empty(const char *body, size_t len, char *err, size_t errlen)
{
	struct kv_jr jr;
	char name[ADMIN_NAME_MAX];
	int r;

	if ((r = open_body(&jr, body, len, 1, err, errlen)) <= 0)
		return r;
	if ((r = next_member(&jr, name, err, errlen)) == 1)
		return kv_errf(err, errlen, "unknown field \"%s\": this call takes no body",
		    name);
	return r;
}

/* A team's name: what the config takes and nothing that could end its
 * line or section in the teams file. */
static int
team_word(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("._-", s[i]) == NULL)
			return -1;
	return i == 0 ? -1 : 0;
}

static int
read_team_word(struct kv_jr *jr, const char *name, char out[64], char *err, size_t errlen)
{
	if (read_string(jr, name, out, 64, err, errlen) == -1)
		return -1;
	if (team_word(out) == -1)
		return kv_errf(err, errlen, "\"%s\": '%s' is not a team name (letters, "
		    "digits, '.', '_' and '-')", name, out);
	return 0;
}

static int
read_caps(struct kv_jr *jr, char *out, char *err, size_t errlen)
{
	size_t i;

	if (read_string(jr, "model_budget", out, KV_TEAM_CAPS_MAX + 1, err, errlen) == -1)
		return -1;
	for (i = 0; out[i] != '\0'; i++)
		if (out[i] < 0x20 || out[i] > 0x7e || strchr(";#=[]", out[i]) != NULL)
			return kv_errf(err, errlen, "\"model_budget\": want GLOB:USD ... "
			    "(printable, without ; # = [ ])");
	return 0;
}

/* Member NAME (the bit F) of a team body into T, a null clearing it. */
static int
team_member(struct kv_jr *jr, const char *name, unsigned f, struct kv_admin_team *t,
    char *err, size_t errlen)
{
	if (kv_jr_peek(jr) == KV_JR_NULL && f != KV_TEAM_F_NAME)
		return kv_jr_skip(jr) == -1 ? fail_jr(jr, err, errlen) : 0;
	switch (f) {
	case KV_TEAM_F_NAME:
		return read_team_word(jr, "name", t->name, err, errlen);
	case KV_TEAM_F_PARENT:
		return read_team_word(jr, "parent", t->parent, err, errlen);
	case KV_TEAM_F_BUDGET:
		if (strcmp(name, "budget_nusd") == 0)
			return read_count(jr, name, INT64_MAX, &t->budget_nusd, err, errlen);
		return read_usd(jr, "budget", &t->budget_nusd, err, errlen);
	case KV_TEAM_F_PERIOD:
		return read_period(jr, &t->period, err, errlen);
	case KV_TEAM_F_RPM:
		return read_count(jr, "rpm", KV_ADMIN_LIMIT_MAX, &t->rpm, err, errlen);
	case KV_TEAM_F_TPM:
		return read_count(jr, "tpm", KV_ADMIN_LIMIT_MAX, &t->tpm, err, errlen);
	default:
		return read_caps(jr, t->model_budget, err, errlen);
	}
}

int
kv_admin_parse_team(const char *body, size_t len, unsigned allowed, unsigned required,
    struct kv_admin_team *t, char *err, size_t errlen)
{
	static const struct { const char *name; unsigned f; } m[] = {
		{ "name", KV_TEAM_F_NAME }, { "parent", KV_TEAM_F_PARENT },
		{ "budget", KV_TEAM_F_BUDGET }, { "budget_nusd", KV_TEAM_F_BUDGET },
		{ "period", KV_TEAM_F_PERIOD }, { "rpm", KV_TEAM_F_RPM },
		{ "tpm", KV_TEAM_F_TPM }, { "model_budget", KV_TEAM_F_CAPS } };
	char name[ADMIN_NAME_MAX];
	struct kv_jr jr;
	size_t i;
	int r;

	memset(t, 0, sizeof(*t));
	t->budget_nusd = -1;
	t->period = -1;
	if ((r = open_body(&jr, body, len, required == 0, err, errlen)) < 1)
		return r;	/* 0: an empty body, nothing to change */
	while ((r = next_member(&jr, name, err, errlen)) == 1) {
		for (i = 0; i < sizeof(m) / sizeof(m[0]) && strcmp(m[i].name, name) != 0; i++)
			;
		if (i == sizeof(m) / sizeof(m[0]) || !(allowed & m[i].f))
			return kv_errf(err, errlen, "unknown field \"%s\" here", name);
		if (t->given & m[i].f)
			return kv_errf(err, errlen, "\"%s\" is given twice", name);
		t->given |= m[i].f;
		if (team_member(&jr, name, m[i].f, t, err, errlen) == -1)
			return -1;
	}
	if (r == -1)
		return -1;
	if ((t->given & required) != required)
		return kv_errf(err, errlen, "\"%s\" is required", required & KV_TEAM_F_NAME ?
		    "name" : "parent");
	return 0;
}

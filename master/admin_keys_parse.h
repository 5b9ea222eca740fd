/* The bodies of the admin API's key writes: POST /keys (master/admin_keys.c)
 * and POST /keys/ID/budget and /limits (master/status.c). Each body is one
 * strict JSON object (common/jsonread.h) with known members only, each at
 * most once; money is a USD string ("12.50", as kvctl takes it), with the
 * older integer "budget_nusd" still read. Pure: no I/O, no allocation, no
 * clock (the caller passes NOW), so the fuzzer drives it directly
 * (tests/fuzz/fuzz_admin.c).
 *
 * Every parser returns 0, or -1 with a message for the API's client in
 * ERR (ERRLEN bytes, always terminated): what member, what was wrong. */
#ifndef KV_ADMIN_KEYS_PARSE_H
#define KV_ADMIN_KEYS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "shm/ledger-t.h"

#define KV_ADMIN_LIMIT_MAX	4000000000LL	/* rpm / tpm, as kvctl limits */

/* A POST /keys body. Absent members: label "", the rest -1 (budget: the
 * [budget] default; rpm/tpm: the [budget] default; period: the config's),
 * expires 0 (never). A JSON null is the same as absent. */
struct kv_admin_create {
	char	 label[KV_LABEL_MAX];
	int64_t	 budget_nusd;
	int64_t	 rpm, tpm;
	int	 period;	/* enum kv_period */
	int64_t	 expires;	/* unix seconds */
};

/* {"label": S, "budget": "USD" | "budget_nusd": N, "rpm": N, "tpm": N,
 * "period": P, "expires": DATE | N}: LABEL required (1..KV_LABEL_MAX-1
 * bytes; its characters are kv_keys_issue's to judge), rpm/tpm
 * 0..KV_ADMIN_LIMIT_MAX (0 = no limit), P one of none, day(ly), week(ly),
 * month(ly), DATE a UTC "2027-01-01" or "2027-01-01T12:00:00Z" (or unix
 * seconds) after NOW. BODY is LEN bytes, need not be terminated. */
int	kv_admin_parse_create(const char *body, size_t len, int64_t now,
	    struct kv_admin_create *out, char *err, size_t errlen);

/* {"budget": "USD"} or {"budget_nusd": N} (an integer >= 0), exactly one
 * of them, into *nusd. */
int	kv_admin_parse_budget(const char *body, size_t len, int64_t *nusd,
	    char *err, size_t errlen);

/* {"rpm": N, "tpm": N}, either or both, N 0..KV_ADMIN_LIMIT_MAX (0 = no
 * limit); an absent one is -1. */
int	kv_admin_parse_limits(const char *body, size_t len, int64_t *rpm, int64_t *tpm,
	    char *err, size_t errlen);

/* A POST /teams or POST /teams/NAME (set) or /teams/NAME/move body
 * (master/admin_teams.c). GIVEN has the bit of each member present
 * (KV_TEAM_F_*); a JSON null clears that setting (budget, parent,
 * model_budget: none; rpm, tpm: 0; period: the [budget] period). */
#define KV_TEAM_F_NAME		0x01u
#define KV_TEAM_F_PARENT	0x02u
#define KV_TEAM_F_BUDGET	0x04u
#define KV_TEAM_F_PERIOD	0x08u
#define KV_TEAM_F_RPM		0x10u
#define KV_TEAM_F_TPM		0x20u
#define KV_TEAM_F_CAPS		0x40u
#define KV_TEAM_CAPS_MAX	150	/* model_budget's text: one config line */

struct kv_admin_team {
	unsigned given;
	char	 name[64];	/* [A-Za-z0-9._-], 1..63 bytes */
	char	 parent[64];	/* the same, "" none */
	int64_t	 budget_nusd;	/* -1 none */
	int64_t	 rpm, tpm;
	int	 period;	/* enum kv_period, -1 the [budget] period */
	char	 model_budget[KV_TEAM_CAPS_MAX + 1];	/* "GLOB:USD ...", "" none */
};

/* {"name": S, "parent": S, "budget": "USD" | "budget_nusd": N,
 * "period": P, "rpm": N, "tpm": N, "model_budget": "GLOB:USD ..."}: only
 * the members of ALLOWED (KV_TEAM_F_*), REQUIRED among them. A name or a
 * parent holds letters, digits, '.', '_' and '-' only; model_budget
 * printable ASCII without ';', '#', '=', '[' or ']' (the config reader
 * judges it whole). */
int	kv_admin_parse_team(const char *body, size_t len, unsigned allowed,
	    unsigned required, struct kv_admin_team *t, char *err, size_t errlen);

/* The body of a write that takes no arguments (DELETE /keys/ID, POST
 * /keys/ID/rotate): nothing, whitespace or {}. */
int	kv_admin_parse_empty(const char *body, size_t len, char *err, size_t errlen);

/* A USD amount: "12.50", "$12.50", "0.000000001"; not negative, at most 9
 * decimals (common/money.h kv_parse_nano). Returns 0 or -1. */
int	kv_admin_parse_usd(const char *s, int64_t *nusd);

/* A UTC date "YYYY-MM-DD" (its midnight), or "YYYY-MM-DDTHH:MM:SSZ" ('T'
 * or a space, 'Z' optional), years 1970..9999, into unix seconds *t.
 * Returns 0 or -1. */
int	kv_admin_parse_date(const char *s, int64_t *t);

#endif

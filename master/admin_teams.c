/* The admin API's teams (admin_teams.h): a team made, moved or set
 * through the API lives in the teams file (teams_file.h), so it survives
 * a restart and a reload; the change is checked by reading the whole
 * config with it and applied by a reload the master starts at once. A
 * [team] of kilovolt.ini takes only a budget here, an override in the
 * ledger as kvctl budget team/NAME makes. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/admin_teams.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jsonline.h"
#include "common/log.h"
#include "master/admin_keys.h"
#include "master/teams_file.h"
#include "shm/tree.h"

enum teams_op { T_NONE, T_LIST, T_SHOW, T_CREATE, T_SET, T_MOVE };

static const char *const period_words[] = { "none", "daily", "weekly", "monthly" };

/* The operation METHOD asks of URL, the team's name into NAME. */
static enum teams_op
op_of(const char *url, const char *method, char name[64])
{
	int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	int post = strcmp(method, "POST") == 0;
	const char *slash;
	size_t n;

	if (strcmp(url, "/teams") == 0 || strcmp(url, "/teams/") == 0)
		return get ? T_LIST : post ? T_CREATE : T_NONE;
	if (strncmp(url, "/teams/", 7) != 0)
		return T_NONE;
	url += 7;
	slash = strchr(url, '/');
	n = slash != NULL ? (size_t)(slash - url) : strlen(url);
	if (n == 0 || n >= 64 || (slash != NULL && strcmp(slash, "/move") != 0))
		return T_NONE;
	memcpy(name, url, n);
	name[n] = '\0';
	if (slash != NULL)
		return post ? T_MOVE : T_NONE;
	return get ? T_SHOW : post ? T_SET : T_NONE;
}

int
kv_admin_teams_route(const char *url)
{
	char name[64];

	return op_of(url, "GET", name) != T_NONE || op_of(url, "POST", name) != T_NONE;
}

int
kv_admin_teams_takes(const char *url, const char *method)
{
	char name[64];
	enum teams_op op = op_of(url, method, name);

	return op == T_CREATE || op == T_SET || op == T_MOVE;
}


/* The ledger's account of team node NODE, or NULL. */
static struct kv_account *
node_account(struct kv_ledger *l, const char *node)
{
	char buf[128];
	uint8_t hash[32];
	struct kv_account *a;
	int n = snprintf(buf, sizeof(buf), "\001node:%s", node);

	kv_key_hash(buf, (size_t)n, hash);
	a = kv_ledger_account(l, hash, 0, NULL, 0);
	return a != NULL && kv_slot_ready(&a->state) &&
	    (atomic_load(&a->aflags) & KV_AF_NODE) ? a : NULL;
}

static void
json_opt_str(FILE *out, const char *name, const char *v)
{
	fprintf(out, ",\"%s\":", name);
	if (v[0] == '\0')
		fputs("null", out);
	else
		kv_json_write_string(out, v);
}

/* One team's object: its settings (T), where it is made, its figures. */
static void
team_json(FILE *out, struct kv_ledger *l, const struct kv_teamdef *d)
{
	struct kv_admin_team t;
	struct kv_account *a = node_account(l, d->node);

	kv_teams_of_def(d, &t);
	fputs("{\"node\":", out);
	kv_json_write_string(out, d->node);
	fputs(",\"name\":", out);
	kv_json_write_string(out, t.name);
	json_opt_str(out, "parent", t.parent);
	if (t.budget_nusd >= 0)
		fprintf(out, ",\"budget_nusd\":%lld", (long long)t.budget_nusd);
	else
		fputs(",\"budget_nusd\":null", out);
	fprintf(out, ",\"period\":\"%s\",\"rpm\":%lld,\"tpm\":%lld",
	    period_words[t.period >= 0 && t.period <= 3 ? t.period : 0], (long long)t.rpm,
	    (long long)t.tpm);
	json_opt_str(out, "model_budget", t.model_budget);
	fprintf(out, ",\"made_by\":\"%s\"", d->from_file ? "api" : "config");
	if (a != NULL)
		fprintf(out, ",\"ledger\":{\"budget_nusd\":%lld,\"spent_nusd\":%lld,"
		    "\"reserved_nusd\":%lld,\"requests\":%llu}",
		    (long long)atomic_load(&a->budget_nusd), (long long)kv_account_spent(a),
		    (long long)atomic_load(&a->reserved_nusd),
		    (unsigned long long)atomic_load(&a->requests));
	else
		fputs(",\"ledger\":null", out);
	fputc('}', out);
}

unsigned int
kv_admin_teams_get(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
    const char *url)
{
	char name[64];
	size_t i;
	int t;

	enum teams_op op = op_of(url, "GET", name);

	if (op != T_LIST && op != T_SHOW)
		return kv_admin_fail(out, 405, "method_not_allowed", "POST only");
	if (op == T_LIST) {
		fputs("{\"teams\":[", out);
		for (i = 0; i < cf->nteams; i++) {
			fputs(i ? "," : "", out);
			team_json(out, l, &cf->teams[i]);
		}
		fputs("]}\n", out);
		return 200;
	}
	if ((t = kv_config_team_index(cf, name)) == -1)
		return kv_admin_fail(out, 404, "not_found", "no such team");
	team_json(out, l, &cf->teams[t]);
	fputc('\n', out);
	return 200;
}

/* The record's "key": the team's node, its account's id (made or not, the
 * id follows from the name) and "team/NAME" as its label. */
static void
audit_node(struct kv_audit_rec *rec, const char *name)
{
	char buf[96];
	uint8_t hash[32];
	int n = snprintf(buf, sizeof(buf), "\001node:team/%s", name);

	kv_key_hash(buf, (size_t)n, hash);
	kv_key_id(hash, rec->key_id);
	/* a name past 58 bytes is cut here; args.team has it whole */
	snprintf(rec->label, sizeof(rec->label), "team/%.58s", name);
}

/* The settings of T that F names, into O (a record's args, before or
 * after). */
static void
audit_team(struct kv_audit_obj *o, const struct kv_admin_team *t, unsigned f)
{
	if (f & KV_TEAM_F_PARENT)
		kv_audit_obj_str(o, "parent", t->parent[0] ? t->parent : NULL);
	if ((f & KV_TEAM_F_BUDGET) && t->budget_nusd >= 0)
		kv_audit_obj_int(o, "budget_nusd", t->budget_nusd);
	else if (f & KV_TEAM_F_BUDGET)
		kv_audit_obj_str(o, "budget_nusd", NULL);
	if (f & KV_TEAM_F_PERIOD)
		kv_audit_obj_str(o, "period", t->period >= 0 && t->period <= 3 ?
		    period_words[t->period] : NULL);
	if (f & KV_TEAM_F_RPM)
		kv_audit_obj_int(o, "rpm", t->rpm);
	if (f & KV_TEAM_F_TPM)
		kv_audit_obj_int(o, "tpm", t->tpm);
	if (f & KV_TEAM_F_CAPS)
		kv_audit_obj_str(o, "model_budget", t->model_budget[0] ? t->model_budget : NULL);
}

/* The settings SRC gives into DST. */
static void
merge(struct kv_admin_team *dst, const struct kv_admin_team *src)
{
	if (src->given & KV_TEAM_F_PARENT)
		memcpy(dst->parent, src->parent, sizeof(dst->parent));
	if (src->given & KV_TEAM_F_BUDGET)
		dst->budget_nusd = src->budget_nusd;
	if (src->given & KV_TEAM_F_PERIOD)
		dst->period = src->period;
	if (src->given & KV_TEAM_F_RPM)
		dst->rpm = src->rpm;
	if (src->given & KV_TEAM_F_TPM)
		dst->tpm = src->tpm;
	if (src->given & KV_TEAM_F_CAPS)
		memcpy(dst->model_budget, src->model_budget, sizeof(dst->model_budget));
}

/* TS as the new teams file, then the reload that applies it; NAME's new
 * settings (those of F) into REC's after and its object into OUT. */
static unsigned int
install(FILE *out, struct kv_ledger *l, const struct kv_config *cf, const struct kv_teams *ts,
    const char *name, unsigned f, struct kv_audit_rec *rec, unsigned int status)
{
	struct kv_config ncf;
	struct kv_admin_team now;
	char err[1024];
	int busy, t;

	if (kv_teams_install(cf, ts, &ncf, &busy, err, sizeof(err)) == -1) {
		if (busy)
			kv_log_warnx("KV0710", "status: the teams file not written: %s", err);
		return kv_admin_fail(out, busy ? 503 : 409, busy ? "busy" : "refused", err);
	}
	if ((t = kv_config_team_index(&ncf, name)) >= 0) {
		kv_teams_of_def(&ncf.teams[t], &now);
		audit_team(&rec->after, &now, f);
		team_json(out, l, &ncf.teams[t]);
		fputc('\n', out);
	}
	kv_config_free(&ncf);
	kv_log_info("status: team %s %s by admin; reloading", name, rec->op + 5);
	/* the reload makes the node and gives the workers the new tree */
	if (kill(getpid(), SIGHUP) == -1)
		kv_log_warn("KV0711", "status: the reload after a team change");
	return status;
}

static unsigned int
teams_create(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
    const struct kv_admin_team *t, struct kv_audit_rec *rec)
{
	struct kv_teams *ts;
	unsigned int status;

	if (kv_config_team_index(cf, t->name) >= 0)
		return kv_admin_fail(out, 409, "exists", "a team of that name exists (in "
		    "kilovolt.ini or made here)");
	if (t->parent[0] != '\0' && kv_config_team_index(cf, t->parent) == -1)
		return kv_admin_fail(out, 400, "unknown_parent", "the parent is no team");
	if ((ts = malloc(sizeof(*ts))) == NULL)
		return kv_admin_fail(out, 503, "busy", "out of memory");
	kv_teams_from_config(cf, ts);
	if (ts->n == KV_TEAMS_MAX) {
		free(ts);
		return kv_admin_fail(out, 409, "table_full", "the teams file holds its most teams");
	}
	ts->t[ts->n] = *t;
	ts->t[ts->n++].given = t->given | KV_TEAM_F_NAME;
	status = install(out, l, cf, ts, t->name, t->given & ~KV_TEAM_F_NAME, rec, 201);
	free(ts);
	return status;
}

/* A [team] of kilovolt.ini: only its budget, as an override in the ledger. */
static unsigned int
config_team_budget(FILE *out, struct kv_ledger *l, const struct kv_teamdef *d,
    const struct kv_admin_team *t, struct kv_audit_rec *rec)
{
	struct kv_account *a;

	if ((t->given & ~KV_TEAM_F_BUDGET) != 0 || t->budget_nusd < 0)
		return kv_admin_fail(out, 409, "config_team", "a [team] of kilovolt.ini: edit its "
		    "section and reload (only a budget can be set here, as an override)");
	if ((a = node_account(l, d->node)) == NULL)
		return kv_admin_fail(out, 503, "busy", "the team is not in the ledger yet; retry");
	kv_audit_obj_int(&rec->before, "budget_nusd", kv_account_set_budget(a, t->budget_nusd));
	kv_audit_obj_int(&rec->after, "budget_nusd", t->budget_nusd);
	kv_log_info("status: team %s budget set to %lld nusd by admin", d->name,
	    (long long)t->budget_nusd);
	team_json(out, l, d);
	fputc('\n', out);
	return 200;
}

/* Set or move NAME (index I of CF) to what T gives. */
static unsigned int
teams_change(FILE *out, struct kv_ledger *l, const struct kv_config *cf, int i,
    const struct kv_admin_team *t, struct kv_audit_rec *rec)
{
	struct kv_teams *ts;
	struct kv_admin_team *was = NULL;
	unsigned int status;
	size_t j;

	if (!cf->teams[i].from_file)
		return config_team_budget(out, l, &cf->teams[i], t, rec);
	if ((ts = malloc(sizeof(*ts))) == NULL)
		return kv_admin_fail(out, 503, "busy", "out of memory");
	kv_teams_from_config(cf, ts);
	for (j = 0; j < ts->n && was == NULL; j++)
		if (strcmp(ts->t[j].name, cf->teams[i].name) == 0)
			was = &ts->t[j];
	if (was == NULL) {
		free(ts);
		return kv_admin_fail(out, 503, "busy", "the team is not in the teams file");
	}
	audit_team(&rec->before, was, t->given);
	merge(was, t);
	status = install(out, l, cf, ts, cf->teams[i].name, t->given, rec, 200);
	free(ts);
	return status;
}

/* Moving team I under PARENT: a parent of the config, not I nor below I. */
static unsigned int
move_check(FILE *out, const struct kv_config *cf, int i, const char *parent)
{
	int p;

	if (!cf->teams[i].from_file)
		return kv_admin_fail(out, 409, "config_team", "a [team] of kilovolt.ini: change "
		    "its parent in its section and reload");
	if (parent[0] == '\0')
		return 0;
	if ((p = kv_config_team_index(cf, parent)) == -1)
		return kv_admin_fail(out, 400, "unknown_parent", "the parent is no team");
	for (; p != -1; p = cf->teams[p].up)
		if (p == i)
			return kv_admin_fail(out, 409, "cycle", "the parent is the team itself or "
			    "below it: the tree would make a cycle");
	return 0;
}

unsigned int
kv_admin_teams_serve(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
    const char *method, const char *url, const char *body, size_t len,
    struct kv_audit_rec *rec)
{
	static const unsigned settable = KV_TEAM_F_BUDGET | KV_TEAM_F_PERIOD | KV_TEAM_F_RPM |
	    KV_TEAM_F_TPM | KV_TEAM_F_CAPS;
	static const char *const ops[] = { "", "", "", "team.create", "team.set", "team.move" };
	struct kv_admin_team t;
	char name[64], err[256];
	enum teams_op op = op_of(url, method, name);
	unsigned int status;
	int i = -1;

	snprintf(rec->op, sizeof(rec->op), "%s", ops[op]);
	if (op != T_CREATE && op != T_SET && op != T_MOVE)
		return kv_admin_fail(out, 404, "not_found", "not found");
	if (kv_admin_parse_team(body, len, op == T_CREATE ? settable | KV_TEAM_F_NAME |
	    KV_TEAM_F_PARENT : op == T_SET ? settable : KV_TEAM_F_PARENT, op == T_CREATE ?
	    KV_TEAM_F_NAME : op == T_MOVE ? KV_TEAM_F_PARENT : 0, &t, err, sizeof(err)) == -1)
		return kv_admin_fail(out, 400, "bad_request", err);
	kv_audit_obj_str(&rec->args, "team", op == T_CREATE ? t.name : name);
	audit_node(rec, op == T_CREATE ? t.name : name);
	audit_team(&rec->args, &t, t.given);
	if (op == T_CREATE)
		return teams_create(out, l, cf, &t, rec);
	if ((i = kv_config_team_index(cf, name)) == -1)
		return kv_admin_fail(out, 404, "not_found", "no such team");
	if (op == T_MOVE && (status = move_check(out, cf, i, t.parent)) != 0)
		return status;
	return teams_change(out, l, cf, i, &t, rec);
}

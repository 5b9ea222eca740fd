/* The admin API's teams file: the teams made through the API, as [team]
 * sections, beside the ledger (teams_file.h). The config reader reads it
 * after kilovolt.ini, so a team made here survives a restart and a reload
 * as an issued key does (its numbers live in the ledger either way). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/teams_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/config_units.h"

static const char *const period_words[] = { "none", "daily", "weekly", "monthly" };

void
kv_teams_of_def(const struct kv_teamdef *d, struct kv_admin_team *t)
{
	char usd[40];
	size_t off = 0;
	int i;

	memset(t, 0, sizeof(*t));
	t->given = KV_TEAM_F_NAME | KV_TEAM_F_PARENT | KV_TEAM_F_BUDGET | KV_TEAM_F_PERIOD |
	    KV_TEAM_F_RPM | KV_TEAM_F_TPM | KV_TEAM_F_CAPS;
	snprintf(t->name, sizeof(t->name), "%s", d->name);
	snprintf(t->parent, sizeof(t->parent), "%s", d->parent);
	t->budget_nusd = d->budget_nusd;
	t->period = d->period;
	t->rpm = d->rpm;
	t->tpm = d->tpm;
	for (i = 0; d->caps != NULL && i < d->caps->n; i++) {
		kv_cfg_format_nano(d->caps->cap[i].budget_nusd, usd, sizeof(usd));
		off += (size_t)snprintf(t->model_budget + off, off < sizeof(t->model_budget) ?
		    sizeof(t->model_budget) - off : 0, "%s%s:%s", i ? " " : "",
		    d->caps->cap[i].glob, usd);
		if (off >= sizeof(t->model_budget))
			off = sizeof(t->model_budget) - 1;
	}
}

void
kv_teams_from_config(const struct kv_config *cf, struct kv_teams *ts)
{
	size_t i;

	ts->n = 0;
	for (i = 0; i < cf->nteams && ts->n < KV_TEAMS_MAX; i++)
		if (cf->teams[i].from_file)
			kv_teams_of_def(&cf->teams[i], &ts->t[ts->n++]);
}

static void
team_text(FILE *f, const struct kv_admin_team *t)
{
	char usd[40];

	fprintf(f, "\n[team %s]\n", t->name);
	if (t->parent[0] != '\0')
		fprintf(f, "parent = %s\n", t->parent);
	if (t->budget_nusd >= 0) {
		kv_cfg_format_nano(t->budget_nusd, usd, sizeof(usd));
		fprintf(f, "budget = %s\n", usd);
	}
	if (t->period >= 0 && t->period <= KV_PERIOD_MONTHLY)
		fprintf(f, "period = %s\n", period_words[t->period]);
	if (t->rpm > 0)
		fprintf(f, "rpm = %lld\n", (long long)t->rpm);
	if (t->tpm > 0)
		fprintf(f, "tpm = %lld\n", (long long)t->tpm);
	if (t->model_budget[0] != '\0')
		fprintf(f, "model_budget = %s\n", t->model_budget);
}

/* TS into PATH, synced. Returns 0 or -1 (errno). */
static int
write_file(const char *path, const struct kv_teams *ts)
{
	FILE *f;
	size_t i;
	int fd, e;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640)) == -1)
		return -1;
	if ((f = fdopen(fd, "w")) == NULL) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	fputs("; The teams made through kilovolt's admin API (kvctl team create,\n"
	    "; move, set): rewritten whole by the master at each change.\n", f);
	for (i = 0; i < ts->n; i++)
		team_text(f, &ts->t[i]);
	if (fflush(f) == EOF || fsync(fileno(f)) == -1) {
		e = errno;
		fclose(f);
		errno = e;
		return -1;
	}
	return fclose(f) == EOF ? -1 : 0;
}

/* The directory of PATH synced, so the rename holds after a crash. */
static int
sync_dir(const char *path)
{
	char dir[sizeof(((struct kv_config *)0)->ledger) + 8];
	char *slash;
	int fd, r;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		slash[slash == dir] = '\0';
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

/* A reader's message without its "FILE: " (the config's path). */
static void
reason(const struct kv_config *cf, const char *msg, char *err, size_t errlen)
{
	size_t n = strlen(cf->path);

	if (strncmp(msg, cf->path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		msg += n + 2;
	snprintf(err, errlen, "%s", msg);
}

int
kv_teams_install(const struct kv_config *cf, const struct kv_teams *ts,
    struct kv_config *ncf, int *busy, char *err, size_t errlen)
{
	char path[sizeof(cf->ledger) + 8], tmp[sizeof(cf->ledger) + 16], why[1024];

	*busy = 1;
	if (kv_config_teams_path(cf, path, sizeof(path)) == -1 ||
	    snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "the ledger's path is too long for a teams file");
		return -1;
	}
	if (write_file(tmp, ts) == -1) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		(void)unlink(tmp);
		return -1;
	}
	memset(ncf, 0, sizeof(*ncf));
	if (kv_config_load_teams(ncf, cf->path, tmp, why, sizeof(why)) == -1) {
		*busy = 0;
		reason(cf, why, err, errlen);
		(void)unlink(tmp);
		return -1;
	}
	if (rename(tmp, path) == -1 || sync_dir(path) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		(void)unlink(tmp);
		kv_config_free(ncf);
		return -1;
	}
	return 0;
}

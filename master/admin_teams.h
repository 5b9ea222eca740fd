/* The admin API's teams (admin_teams.c): GET /teams, GET /teams/NAME,
 * POST /teams (create), POST /teams/NAME (set), POST /teams/NAME/move. */
#ifndef KV_ADMIN_TEAMS_H
#define KV_ADMIN_TEAMS_H

#include <stddef.h>
#include <stdio.h>

#include "common/audit.h"
#include "common/config.h"
#include "shm/ledger.h"

/* Is URL one of the teams' paths (any method)? */
int	kv_admin_teams_route(const char *url);

/* Is METHOD on URL one of the teams' writes (POST)? */
int	kv_admin_teams_takes(const char *url, const char *method);

/* GET /teams ({"teams":[...]}) or GET /teams/NAME (one) into OUT: each
 * team of CF with its settings, where it is made (config or api) and its
 * ledger figures. Returns the status. */
unsigned int kv_admin_teams_get(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
	    const char *url);

/* The write METHOD on URL with BODY (LEN bytes): the answer into OUT,
 * what changed into REC (op team.create, team.set, team.move). A team of
 * the teams file is rewritten there, checked by reading the whole config
 * with the change, and applied by a reload (SIGHUP to this process); a
 * [team] of kilovolt.ini takes only a budget (an override in the ledger).
 * Returns the status. */
unsigned int kv_admin_teams_serve(FILE *out, struct kv_ledger *l, const struct kv_config *cf,
	    const char *method, const char *url, const char *body, size_t len,
	    struct kv_audit_rec *rec);

#endif

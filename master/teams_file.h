/* The teams made through the admin API, in the teams file beside the
 * ledger (kv_config_teams_path): read from the running config, written
 * whole, checked by reading the whole config with it, then put in place
 * (teams_file.c). */
#ifndef KV_TEAMS_FILE_H
#define KV_TEAMS_FILE_H

#include <stddef.h>

#include "common/config.h"
#include "master/admin_keys_parse.h"

#define KV_TEAMS_MAX	1024	/* teams the file may hold */

struct kv_teams {
	struct kv_admin_team t[KV_TEAMS_MAX];
	size_t	  n;
};

/* CF's teams that came from the teams file, as they are, into TS. */
void	kv_teams_from_config(const struct kv_config *cf, struct kv_teams *ts);

/* TEAM as the admin API's record of it: every setting given. */
void	kv_teams_of_def(const struct kv_teamdef *d, struct kv_admin_team *t);

/* Write TS as the new teams file of CF: a temporary file, the config read
 * whole with it (unknown parents, cycles, trees too deep, bad caps refused
 * as they are in kilovolt.ini), then renamed over the old one. Returns 0
 * with the new config in *NCF (the caller frees it), or -1 with the
 * reason in ERR (the file unchanged), *BUSY set when it was the disk's
 * fault rather than the change's. */
int	kv_teams_install(const struct kv_config *cf, const struct kv_teams *ts,
	    struct kv_config *ncf, int *busy, char *err, size_t errlen);

#endif

/* A driver for tests/t_jwt.sh: verifies tokens with kilovolt's verifier
 * (common/jwt.h) under a config's [auth jwt] section and its jwks_file,
 * so that the shell test can hand it tokens minted by other
 * implementations (the jose library, an OpenID provider).
 *
 * usage: jwt_check CONFIG [NOW]  (NOW: seconds since the epoch; default
 * the clock). One token a line on stdin; one line out for each:
 * "ok<TAB>USER<TAB>TEAM,TEAM..." or "refused<TAB>REASON<TAB>DETAIL".
 * Exit 0 when every line was answered, 2 on a usage or config error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/config.h"
#include "common/jwt.h"

static void
answer(const char *tok, size_t len, const struct kv_jwks *ks, const struct kv_jwt_policy *pol,
    long long now)
{
	struct kv_jwt_identity id;
	enum kv_jwt_status st;
	char why[256];
	size_t i;

	st = kv_jwt_verify(tok, len, ks, pol, now, &id, why, sizeof(why));
	if (st != KV_JWT_OK) {
		printf("refused\t%s\t%s\n", kv_jwt_reason(st), why);
		return;
	}
	printf("ok\t%s\t", id.user);
	for (i = 0; i < id.nteams; i++)
		printf("%s%s", i ? "," : "", id.teams[i]);
	printf("\n");
}

int
main(int argc, char **argv)
{
	struct kv_config cf;
	struct kv_jwt_policy pol;
	struct kv_jwks ks;
	char err[512], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	long long now = argc > 2 ? atoll(argv[2]) : (long long)time(NULL);

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: jwt_check CONFIG [NOW] < tokens\n");
		return 2;
	}
	if (kv_config_load_prices(&cf, argv[1], "", err, sizeof(err)) == -1) {
		fprintf(stderr, "jwt_check: %s\n", err);
		return 2;
	}
	if (!cf.auth_jwt.enabled || cf.auth_jwt.jwks_file[0] == '\0' ||
	    kv_jwks_load(&ks, cf.auth_jwt.jwks_file, err, sizeof(err)) == -1) {
		fprintf(stderr, "jwt_check: no [auth jwt] jwks_file that loads: %s\n",
		    cf.auth_jwt.enabled ? err : "no section");
		kv_config_free(&cf);
		return 2;
	}
	kv_jwt_policy_of(&cf.auth_jwt, &pol);
	while ((n = getline(&line, &cap, stdin)) != -1) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		answer(line, (size_t)n, &ks, &pol, now);
	}
	free(line);
	kv_jwks_free(&ks);
	kv_config_free(&cf);
	return fflush(stdout) == 0 ? 0 : 2;
}

/* kilovoltd: flags, config check, then the master. */
#ifdef HAVE_CONFIG_H
#include <config.h>	/* PACKAGE_VERSION: configure.ac's AC_INIT */
#endif

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/money.h"
#include "common/pricetab.h"
#include "master/master.h"
#include "worker/upstream.h"

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>

#ifndef PACKAGE_VERSION
#error "build through configure: PACKAGE_VERSION comes from configure.ac"
#endif

static void
usage(FILE *f)
{
	fprintf(f, "usage: kilovoltd [-c FILE] [-t | -T] [-V]\n"
	    "  -c FILE        config file (default: $KILOVOLT_CONFIG, else\n"
	    "                 /etc/kilovolt/kilovolt.ini, else ./kilovolt.ini)\n"
	    "  -t             check the config and exit (0 ok, 2 bad)\n"
	    "  -T             check the config, print it as in effect (defaults,\n"
	    "                 overrides, absolute paths; secrets as ***) and exit\n"
	    "  -V, --version  print the version and what it was built with, and exit\n"
	    "  -h, --help     show this help and exit\n"
	    "Exit status: 0 ok (or stopped cleanly), 1 could not start, 2 bad usage or config.\n");
}

/* The version, then the libraries as built and as running (nginx -V,
 * haproxy -vv): what a bug report needs. */
static void
version(void)
{
	printf("kilovoltd %s\n", PACKAGE_VERSION);
	printf("built with %s, running %s\n", OPENSSL_VERSION_TEXT,
	    OpenSSL_version(OPENSSL_VERSION));
	printf("libmicrohttpd %s (status service), libinih (config)\n", MHD_get_version());
#ifdef __SANITIZE_ADDRESS__
	printf("features: epoll, splice, AddressSanitizer\n");
#else
	printf("features: epoll, splice\n");
#endif
}

/* -t: what the price catalogue gave, where each price comes from, and
 * what the file said that kilovolt does not understand: the operator's
 * check after a refresh. */
static void
print_prices(FILE *say, const char *path, const struct kv_config *cf)
{
	char sources[4608];

	if (cf->prices_summary[0] != '\0')
		fprintf(say, "%s: prices: %s\n", path, cf->prices_summary);
	kv_pricetab_sources(cf, sources, sizeof(sources));
	fprintf(say, "%s: prices: %s\n", path, sources);
	if (cf->prices_unknown[0] != '\0')
		fprintf(say, "%s: prices: fields not understood (ignored): %s\n", path,
		    cf->prices_unknown);
	if (cf->prices_refused[0] != '\0')
		fprintf(say, "%s: prices: %s\n", path, cf->prices_refused);
	if (cf->prices_dead[0] != '\0')
		fprintf(say, "%s: prices: warning: matching no catalogue entry (pricing only the "
		    "models the catalogue lacks): %s\n", path, cf->prices_dead);
}

/* -t: the budget tree, one line a team (its place, budget and keys) and
 * one a tag. */
static void
print_tree(FILE *say, const char *path, const struct kv_config *cf)
{
	char usd[40];
	size_t i, j, keys;

	for (i = 0; i < cf->nteams; i++) {
		const struct kv_teamdef *t = &cf->teams[i];

		for (keys = j = 0; j < cf->nkeys; j++)
			keys += cf->keys[j].team_idx == (int)i;
		if (t->budget_nusd >= 0)
			kv_format_usd(t->budget_nusd, usd, sizeof(usd));
		fprintf(say, "%s: team %s: %s%s, budget %s, %d model caps, %zu keys\n", path,
		    t->name, t->up < 0 ? "an org" : "in ", t->up < 0 ? "" : cf->teams[t->up].name,
		    t->budget_nusd >= 0 ? usd : "none", t->caps != NULL ? t->caps->n : 0, keys);
	}
	for (i = 0; i < cf->ntags; i++) {
		const struct kv_teamdef *t = &cf->tags[i];

		if (t->budget_nusd >= 0)
			kv_format_usd(t->budget_nusd, usd, sizeof(usd));
		fprintf(say, "%s: tag %s: budget %s, %d model caps\n", path, t->name,
		    t->budget_nusd >= 0 ? usd : "none", t->caps != NULL ? t->caps->n : 0);
	}
}

/* kilovoltd -t and -T: the config as loaded, and every TLS context the
 * workers will build (ca_file, client certificates), so that a reload that
 * passes -t does not fail on them. -T then prints the effective config on
 * stdout and the verdict on stderr (nginx -T), so that stdout is an ini
 * that -t reads back. Exit 0 or 2. */
static int
check_config(struct kv_config *cf, const char *path, int dump)
{
	struct kv_upstream_rt *rts = NULL;
	FILE *say = dump ? stderr : stdout;
	char err[1024];
	int rc = 0;

	/* no connections are made: no event callback */
	if (kv_upstreams_init(&rts, cf, NULL, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s: %s\n", path, err);
		rc = 2;
		goto out;
	}
	kv_upstreams_free(rts, cf->nupstreams);
	if (dump && kv_config_dump(cf, stdout) == -1) {
		fprintf(stderr, "kilovoltd: writing the config: %s\n", strerror(errno));
		rc = 1;
		goto out;
	}
	fprintf(say, "%s: ok\n", path);
	print_prices(say, path, cf);
	print_tree(say, path, cf);
out:
	kv_config_free(cf);
	free(cf);
	return rc;
}

int
main(int argc, char **argv)
{
	struct kv_config *cf;
	const char *path = NULL;
	char err[1024];
	int ch, test = 0, dump = 0;

	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};

	while ((ch = getopt_long(argc, argv, "c:tTVh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			path = optarg;
			break;
		case 't':
			test = 1;
			break;
		case 'T':
			test = dump = 1;
			break;
		case 'V':
			version();
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (path == NULL)
		path = kv_config_default_path();
	if ((cf = calloc(1, sizeof(*cf))) == NULL) {
		fprintf(stderr, "kilovoltd: out of memory\n");
		return 1;
	}
	if (kv_config_load(cf, path, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		free(cf);
		return 2;
	}
	if (test)
		return check_config(cf, path, dump);
	kv_log_set_role("master");
	return kv_master_run(cf);
}

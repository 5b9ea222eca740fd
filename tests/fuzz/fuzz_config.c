/* libFuzzer target: the input as a kilovolt.ini. Beyond "no crash, no
 * leak", it checks the loader's contract: a failure leaves cf empty and an
 * "FILE..." message; a success has at least one upstream with a host,
 * every upstream routes at least one of its own paths or models, every
 * price has its input and output, and its kilovoltd -T print reads back
 * to the same print (kv_config_dump). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* CF's -T print, without its first line (it names the file). */
static char *
dump_body(const struct kv_config *cf, size_t *len)
{
	char *buf = NULL, *nl;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (f == NULL || kv_config_dump(cf, f) == -1 || fclose(f) == EOF)
		abort();
	nl = strchr(buf, '\n');
	if (nl == NULL)
		abort();
	*len = n - (size_t)(nl + 1 - buf);
	memmove(buf, nl + 1, *len + 1);
	return buf;
}

/* What -T prints is a config that loads and prints the same. */
static void
check_dump(const struct kv_config *cf)
{
	struct kv_config again;
	char path[64], err[512], *one, *two;
	size_t n1, n2;
	int fd;

	one = dump_body(cf, &n1);
	fd = memfd_create("fuzz_config_dump", MFD_CLOEXEC);
	if (fd == -1 || write(fd, one, n1) != (ssize_t)n1)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (kv_config_load(&again, path, err, sizeof(err)) == -1) {
		/* A value written at the line limit may print longer: a path
		 * made absolute, "k=v" as "k = v". The limit is the reader's. */
		if (strstr(err, ": line too long") != NULL)
			goto out;
		fprintf(stderr, "-T output refused: %s\n%s", err, one);
		abort();
	}
	two = dump_body(&again, &n2);
	if (n1 != n2 || memcmp(one, two, n1) != 0) {
		fprintf(stderr, "-T output differs when read back:\n%s\n---\n%s", one, two);
		abort();
	}
	kv_config_free(&again);
	free(two);
out:
	free(one);
	close(fd);
}

static void
check_loaded(const struct kv_config *cf)
{
	size_t i;

	if (cf->nupstreams == 0 || cf->workers < 1)
		abort();
	for (i = 0; i < cf->nupstreams; i++) {
		const struct kv_upstream *u = &cf->upstreams[i];
		if (u->host[0] == '\0' || u->port[0] == '\0' || u->host_header[0] == '\0')
			abort();
		if (u->npaths > 0 && kv_config_route(cf, u->paths[0], NULL) == NULL)
			abort();
		if (u->nmodels > 0 && kv_config_route(cf, NULL, u->models[0]) == NULL)
			abort();
	}
	/* every price is whole once merged: a section the catalogue did not
	 * complete was refused (pricetab.c) */
	for (i = 0; i < cf->nprices; i++)
		if (kv_config_price(cf, cf->prices[i].model) == NULL ||
		    cf->prices[i].input < 0 || cf->prices[i].output < 0)
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_config cf;
	char path[64], err[512];
	int fd, r;

	fd = memfd_create("fuzz_config", MFD_CLOEXEC);
	if (fd == -1)
		abort();
	if (size > 0 && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = kv_config_load(&cf, path, err, sizeof(err));
	if (r == 0) {
		check_loaded(&cf);
		check_dump(&cf);
		kv_config_free(&cf);
	} else if (r != -1 || strncmp(err, path, strlen(path)) != 0 ||
	    cf.upstreams != NULL || cf.admin_token != NULL) {
		abort();
	}
	close(fd);
	return 0;
}

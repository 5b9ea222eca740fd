/* [server] worker_cpu_affinity: how workers are placed on CPUs. The
 * placement itself is the master's (master/cpu_pin.c); this reads and
 * prints the setting. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <string.h>

#include "common/config_int.h"

/* The highest CPU number sched_setaffinity takes with a cpu_set_t. */
#define CPU_NUMBER_MAX	1023

int
cfg_set_cpu_affinity(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_config *cf = p->cf;
	char word[16];
	long long n;
	size_t len;

	cf->ncpus = 0;
	if (strcmp(v, "auto") == 0 || strcmp(v, "none") == 0) {
		cf->cpu_affinity = v[0] == 'a' ? KV_CPUS_AUTO : KV_CPUS_NONE;
		return 0;
	}
	for (v += strspn(v, " \t"); *v != '\0'; v += strspn(v, " \t")) {
		len = strcspn(v, " \t");
		if (len >= sizeof(word) || cf->ncpus == KV_MAX_CPU_LIST)
			return cfg_err(p, p->lineno, "%s: at most %d CPU numbers of 0..%d",
			    k->name, KV_MAX_CPU_LIST, CPU_NUMBER_MAX);
		memcpy(word, v, len);
		word[len] = '\0';
		if (cfg_parse_ll(word, 0, CPU_NUMBER_MAX, &n) == -1)
			return cfg_err(p, p->lineno, "%s: '%s' is not auto, none or a CPU "
			    "number (0..%d)", k->name, word, CPU_NUMBER_MAX);
		cf->cpus[cf->ncpus++] = (int16_t)n;
		v += len;
	}
	if (cf->ncpus == 0)
		return cfg_err(p, p->lineno, "%s: auto, none, or CPU numbers one per worker "
		    "(\"0 1\")", k->name);
	cf->cpu_affinity = KV_CPUS_LIST;
	return 0;
}

void
cfg_show_cpu_affinity(FILE *f, const struct kv_config *cf, const void *obj,
    const struct cfg_key *k)
{
	int i;

	(void)obj;
	fprintf(f, "%s =", k->name);
	if (cf->cpu_affinity != KV_CPUS_LIST)
		fprintf(f, " %s", cf->cpu_affinity == KV_CPUS_AUTO ? "auto" : "none");
	for (i = 0; cf->cpu_affinity == KV_CPUS_LIST && i < cf->ncpus; i++)
		fprintf(f, " %d", cf->cpus[i]);
	fputc('\n', f);
}

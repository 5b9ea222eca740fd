/* [cluster] redis: where the Redis the hosts share is, read and printed
 * back for -T. The one key of the table with a grammar of four forms, and
 * the Sentinel list among them. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdio.h>
#include <string.h>

#include "common/config_int.h"

/* redis+sentinel://H:P[,H:P...]/NAME (port 26379 when omitted) */
static int
set_sentinels(struct cfg_parse *p, const char *v)
{
	struct kv_cluster *c = &p->cf->cluster;
	const char *list = v + 17, *slash = strchr(list, '/'), *q;
	char hp[300];
	size_t n;

	/* slash == list: no Sentinel at all, and nothing to ask */
	if (slash == NULL || slash == list || slash[1] == '\0' ||
	    strlen(slash + 1) >= sizeof(c->sentinel_master) ||
	    !cfg_valid_name(slash + 1, sizeof(c->sentinel_master), 0) ||
	    strchr(list, '@') != NULL)
		return cfg_err(p, p->lineno, "redis: want redis+sentinel://HOST:PORT[,HOST:PORT...]"
		    "/MASTER");
	strcpy(c->sentinel_master, slash + 1);
	for (q = list; q < slash; q += n + (q[n] == ',')) {
		n = strcspn(q, ",/");
		if (c->nsentinels == KV_SENTINELS_MAX || n == 0 || n >= sizeof(hp) - 7)
			return cfg_err(p, p->lineno, "redis: at most %d sentinels, each "
			    "HOST[:PORT]", KV_SENTINELS_MAX);
		snprintf(hp, sizeof(hp), "%.*s%s", (int)n, q,
		    memchr(q, ':', n) == NULL ? ":26379" : "");
		if (cfg_parse_hostport(hp, c->sentinel_host[c->nsentinels],
		    c->sentinel_port[c->nsentinels]) == -1 || hp[0] == ':')
			return cfg_err(p, p->lineno, "redis: bad sentinel '%.*s'", (int)n, q);
		c->nsentinels++;
	}
	/* a placeholder until a Sentinel names the master */
	strcpy(c->redis_host, c->sentinel_host[0]);
	strcpy(c->redis_port, c->sentinel_port[0]);
	return 0;
}

int
cfg_set_redis(struct cfg_parse *p, const struct cfg_key *k, const char *v)
{
	struct kv_cluster *c = &p->cf->cluster;
	const char *hostport;
	char hp[300];

	(void)k;
	c->redis_host[0] = c->redis_unix[0] = '\0';
	c->redis_tls = c->nsentinels = 0;
	c->sentinel_master[0] = '\0';
	if (strncmp(v, "redis+sentinel://", 17) == 0)
		return set_sentinels(p, v);
	if (strncmp(v, "unix:", 5) == 0) {
		if (v[5] != '/' || strlen(v + 5) >= sizeof(c->redis_unix))
			return cfg_err(p, p->lineno, "redis: unix: needs an absolute path "
			    "of at most %zu bytes", sizeof(c->redis_unix) - 1);
		strcpy(c->redis_unix, v + 5);
		return 0;
	}
	c->redis_tls = strncmp(v, "rediss://", 9) == 0;
	hostport = v + (c->redis_tls ? 9 : 8);
	if ((!c->redis_tls && strncmp(v, "redis://", 8) != 0) ||
	    strlen(hostport) >= sizeof(hp) - 6 ||
	    strchr(hostport, '/') != NULL || strchr(hostport, '@') != NULL)
		return cfg_err(p, p->lineno, "redis: want redis://HOST:PORT, "
		    "rediss://HOST:PORT, redis+sentinel://HOST:PORT/MASTER or unix:PATH "
		    "(the password goes in 'password')");
	snprintf(hp, sizeof(hp), "%s%s", hostport,
	    (strrchr(hostport, ':') == NULL || strrchr(hostport, ']') > strrchr(hostport, ':')) ?
	    ":6379" : "");
	if (cfg_parse_hostport(hp, c->redis_host, c->redis_port) == -1 || hp[0] == ':')
		return cfg_err(p, p->lineno, "redis: bad host or port in '%s'", v);
	return 0;
}

/* HOST[:PORT] into B, v6 in brackets, the port only when not DFLT: the
 * line stays as short as it was written (a line holds 198 bytes). A v6
 * Sentinel needs its port: "[::1]" has a ':' and is taken as HOST:PORT. */
static void
redis_hostport(char *b, size_t len, const char *host, const char *port, const char *dflt)
{
	int v6 = strchr(host, ':') != NULL, dp = !v6 && strcmp(port, dflt) == 0;

	snprintf(b, len, "%s%s%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "", dp ? "" : ":",
	    dp ? "" : port);
}

void
cfg_show_redis(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	const struct kv_cluster *c = &cf->cluster;
	char hp[300];
	int i;

	(void)obj;
	if (c->redis_unix[0] != '\0') {
		fprintf(f, "%s = unix:%s\n", k->name, c->redis_unix);
		return;
	}
	if (c->nsentinels == 0) {
		redis_hostport(hp, sizeof(hp), c->redis_host, c->redis_port, "6379");
		fprintf(f, "%s = %s://%s\n", k->name, c->redis_tls ? "rediss" : "redis", hp);
		return;
	}
	fprintf(f, "%s = redis+sentinel://", k->name);
	for (i = 0; i < c->nsentinels; i++) {
		redis_hostport(hp, sizeof(hp), c->sentinel_host[i], c->sentinel_port[i], "26379");
		fprintf(f, "%s%s", i > 0 ? "," : "", hp);
	}
	fprintf(f, "/%s\n", c->sentinel_master);
}

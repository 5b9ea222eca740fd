/* kvctl requests: read the request log ([server] request_log) back, as a
 * table or as JSON, filtered by key and time. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/jsonline.h"

/* "2026-12-01T21:35:00.123Z" (or without the milliseconds) to ms since the
 * epoch; -1 when it is not such a time. */
static int64_t
parse_iso_ms(const char *s)
{
	struct tm tm;
	const char *end;
	int ms = 0;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == NULL)
		end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (end == NULL) {
		memset(&tm, 0, sizeof(tm));
		if ((end = strptime(s, "%Y-%m-%d", &tm)) == NULL)
			return -1;
	}
	if (*end == '.' && isdigit((unsigned char)end[1]) &&
	    isdigit((unsigned char)end[2]) && isdigit((unsigned char)end[3])) {
		ms = (end[1] - '0') * 100 + (end[2] - '0') * 10 + (end[3] - '0');
		end += 4;
	}
	if (*end == 'Z')
		end++;
	if (*end != '\0')
		return -1;
	return (int64_t)timegm(&tm) * 1000 + ms;
}

int
kvctl_parse_since(const char *s, int64_t now, int64_t *ms)
{
	char *end;
	long long v;
	int64_t unit;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end != s && errno == 0 && v >= 0) {
		switch (*end) {
		case '\0': *ms = (int64_t)v * 1000; return 0;	/* unix seconds */
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		default: unit = 0; break;
		}
		if (unit != 0 && end[1] == '\0' && v < INT64_MAX / 1000 / unit) {
			*ms = (now - (int64_t)v * unit) * 1000;
			return 0;
		}
	}
	*ms = parse_iso_ms(s);
	return *ms < 0 ? -1 : 0;
}

static int
key_matches(const char *line, size_t len, const char *key)
{
	char id[64], label[256];
	size_t n;

	if (key == NULL)
		return 1;
	n = strlen(key);
	if (kv_jsonline_get(line, len, "label", label, sizeof(label)) == 's' &&
	    strcmp(label, key) == 0)
		return 1;
	return kv_jsonline_get(line, len, "key_id", id, sizeof(id)) == 's' &&
	    n > 0 && n <= strlen(id) && strncasecmp(id, key, n) == 0;
}

static void
print_head(FILE *out)
{
	fprintf(out, "%-19s  %-16s  %-14s  %-22s  %6s  %8s  %8s  %11s  %7s\n",
	    "TIME", "REQUEST ID", "KEY", "MODEL", "STATUS", "IN", "OUT", "COST", "MS");
}

static void
print_row(FILE *out, const char *line, size_t len)
{
	char t[40], id[40], key[80], model[200], st[16], in[24], outt[24],
	    cost[32], ms[24], money[32], est[8];
	int64_t nusd;

#define GET(name, buf) if (kv_jsonline_get(line, len, name, buf, sizeof(buf)) == 0) \
	snprintf(buf, sizeof(buf), "-")
	GET("time", t);
	GET("request_id", id);
	if (kv_jsonline_get(line, len, "label", key, sizeof(key)) != 's')
		GET("key_id", key);
	if (kv_jsonline_get(line, len, "model", model, sizeof(model)) != 's')
		snprintf(model, sizeof(model), "-");
	GET("status", st);
	GET("input_tokens", in);
	GET("output_tokens", outt);
	GET("cost_nusd", cost);
	GET("duration_ms", ms);
	GET("estimated", est);
#undef GET
	if (strcmp(key, "null") == 0)
		snprintf(key, sizeof(key), "-");
	t[10] = t[10] == 'T' ? ' ' : t[10];
	t[19] = '\0';
	nusd = strtoll(cost, NULL, 10);
	kvctl_format_money(nusd, money, sizeof(money));
	if (strcmp(est, "true") == 0)
		strncat(money, "~", sizeof(money) - strlen(money) - 1);
	kvctl_printable(key);
	kvctl_printable(model);
	fprintf(out, "%-19s  %-16s  %-14.14s  %-22.22s  %6s  %8s  %8s  %11s  %7s\n",
	    t, id, key, model, st, in, outt, money, ms);
}

int
kvctl_requests(FILE *out, const char *path, const char *key, int64_t since_ms,
    int json)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, t[40];
	size_t cap = 0, shown = 0;
	ssize_t len;

	if (f == NULL) {
		fprintf(stderr, "kvctl: request log %s: %s\n", path, strerror(errno));
		return KVCTL_EXIT_USAGE;
	}
	if (json)
		fputs("{\"requests\":[", out);
	else
		print_head(out);
	while ((len = getline(&line, &cap, f)) > 0) {
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		/* A torn or foreign line is skipped: it is no request. */
		if (kv_jsonline_get(line, (size_t)len, "time", t, sizeof(t)) != 's')
			continue;
		if (since_ms > 0 && parse_iso_ms(t) < since_ms)
			continue;
		if (!key_matches(line, (size_t)len, key))
			continue;
		if (json)
			fprintf(out, "%s%s", shown ? "," : "", line);
		else
			print_row(out, line, (size_t)len);
		shown++;
	}
	if (ferror(f))
		fprintf(stderr, "kvctl: reading %s: %s\n", path, strerror(errno));
	free(line);
	fclose(f);
	if (json)
		fputs("]}\n", out);
	else if (shown == 0)
		fputs("(no requests)\n", out);
	return KVCTL_EXIT_OK;
}

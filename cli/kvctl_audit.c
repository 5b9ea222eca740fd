/* kvctl audit: the audit log of admin writes (docs/audit.md) printed, or
 * its hash chain walked from the first line (common/audit.h) to find the
 * first line edited, deleted, moved or cut short. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jsonline.h"
#include "common/jsonread.h"

struct audit_cmd {
	const char	*path;
	const char	*since;		/* --since T */
	const char	*anchor;	/* --anchor DIGEST: a line that must still be there */
	int		 json;
	int		 verify;
};

/* The parts of a line the table shows, each a JSON text of the line. */
struct audit_row {
	char	 time[40], via[16], op[40], status[16];
	char	 who[400], key[200], before[800], after[800];
};

static int
audit_usage(const char *fmt, const char *arg)
{
	return kvctl_usage_error("audit", fmt, arg);
}

static int
parse_args(struct audit_cmd *a, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			a->json = 1;
		else if (strcmp(argv[i], "--verify") == 0)
			a->verify = 1;
		else if (strcmp(argv[i], "--since") == 0 && i + 1 < argc)
			a->since = argv[++i];
		else if (strcmp(argv[i], "--anchor") == 0 && i + 1 < argc)
			a->anchor = argv[++i];
		else
			return audit_usage("unknown argument '%s'", argv[i]);
	}
	if (a->verify && a->since != NULL)
		return audit_usage("%s", "--verify walks the whole log: no --since");
	if (a->anchor != NULL && (!a->verify || strlen(a->anchor) != 64 ||
	    strspn(a->anchor, "0123456789abcdef") != 64))
		return audit_usage("--anchor '%s': give --verify and a line's digest (64 "
		    "lowercase hex digits, as --verify prints the last one)", a->anchor);
	return KVCTL_EXIT_OK;
}

/* ---- --verify ----------------------------------------------------------- */

static int
verify_result(const struct audit_cmd *a, const struct kv_audit_chain *ch, int ok,
    const char *why)
{
	if (a->json) {
		fputs("{\"file\":", stdout);
		kv_json_write_string(stdout, a->path);
		printf(",\"intact\":%s,\"lines\":%zu,", ok ? "true" : "false", ch->lines);
		if (ok) {
			printf("\"last_hash\":\"%s\"}\n", ch->prev);
		} else {
			printf("\"line\":%zu,\"error\":", ch->lines + 1);
			kv_json_write_string(stdout, why);
			fputs("}\n", stdout);
		}
	} else if (ok) {
		printf("%s: %zu line%s, the chain is intact (last line's digest %s)\n",
		    a->path, ch->lines, ch->lines == 1 ? "" : "s", ch->prev);
	} else {
		printf("%s: the chain is broken: %s\n", a->path, why);
	}
	return ok ? KVCTL_EXIT_OK : KVCTL_EXIT_NOTFOUND;
}

static int
verify(const struct audit_cmd *a, FILE *f)
{
	struct kv_audit_chain ch;
	char *line = NULL, why[512];
	size_t cap = 0;
	ssize_t n;
	int ok = 1, anchored = 0;

	kv_audit_chain_init(&ch);
	while (ok && (n = getline(&line, &cap, f)) != -1) {
		int term = n > 0 && line[n - 1] == '\n';

		if (kv_audit_chain_next(&ch, line, (size_t)n - (size_t)term, term, why,
		    sizeof(why)) == -1)
			ok = 0;
		else if (a->anchor != NULL && strcmp(ch.prev, a->anchor) == 0)
			anchored = 1;
	}
	free(line);
	if (ferror(f)) {
		fprintf(stderr, "kvctl: audit: reading %s: %s\n", a->path, strerror(errno));
		return KVCTL_EXIT_USAGE;
	}
	/* An intact chain that no longer holds the anchored line was cut at
	 * its end (or replaced): reported past its last line. */
	if (ok && a->anchor != NULL && !anchored) {
		snprintf(why, sizeof(why), "no line has the anchored digest %s: lines were "
		    "deleted from the end, or the log was replaced", a->anchor);
		ok = 0;
	}
	return verify_result(a, &ch, ok, why);
}

/* ---- the listing -------------------------------------------------------- */

/* The JSON text of the next value of JR into OUT (cut to fit). */
static int
value_text(struct kv_jr *jr, char *out, size_t len)
{
	const char *start;
	size_t n;

	if (kv_jr_peek(jr) == KV_JR_NONE)
		return -1;
	start = jr->p;
	if (kv_jr_skip(jr) == -1)
		return -1;
	n = (size_t)(jr->p - start);
	snprintf(out, len, "%.*s", (int)n, start);
	kvctl_printable(out);
	return 0;
}

/* The members of LINE the table shows into ROW. */
static int
read_row(const char *line, size_t len, struct audit_row *row)
{
	static const char *const names[] = { "time", "via", "op", "status", "who", "key",
		"before", "after" };
	char *dst[] = { row->time, row->via, row->op, row->status, row->who, row->key,
		row->before, row->after };
	const size_t lens[] = { sizeof(row->time), sizeof(row->via), sizeof(row->op),
		sizeof(row->status), sizeof(row->who), sizeof(row->key),
		sizeof(row->before), sizeof(row->after) };
	struct kv_jr jr;
	char name[32];
	size_t i;
	int r;

	memset(row, 0, sizeof(*row));
	kv_jr_init(&jr, line, len);
	if (kv_jr_enter(&jr, KV_JR_OBJECT) == -1)
		return -1;
	while ((r = kv_jr_member(&jr, name, sizeof(name))) == 1) {
		for (i = 0; i < 8 && strcmp(name, names[i]) != 0; i++)
			;
		if ((i < 8 ? value_text(&jr, dst[i], lens[i]) : kv_jr_skip(&jr)) == -1)
			return -1;
	}
	return r;
}

/* FIELD of the flat object TEXT, or DEF. */
static const char *
member(const char *text, const char *field, char *out, size_t len, const char *def)
{
	if (kv_jsonline_get(text, strlen(text), field, out, len) == 0 ||
	    strcmp(out, "null") == 0)
		return def;
	kvctl_printable(out);
	return out;
}

/* A JSON string's text without its quotes, in place. */
static char *
unquote(char *s)
{
	size_t n = strlen(s);

	if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
		s[n - 1] = '\0';
		return s + 1;
	}
	return s;
}

/* TIME VIA:WHO OP KEY (LABEL) BEFORE -> AFTER STATUS */
static void
print_row(struct audit_row *row)
{
	char id[16], label[64], name[64];
	const char *w, *lb;

	w = member(row->who, "name", name, sizeof(name), NULL);
	if (w == NULL)
		w = member(row->who, "user", name, sizeof(name), NULL);
	if (w == NULL)
		w = member(row->who, "admin_token", name, sizeof(name), "?");
	lb = member(row->key, "label", label, sizeof(label), NULL);
	printf("%s %s:%s %s %s%s%s%s %s -> %s %s\n", unquote(row->time), unquote(row->via),
	    w, unquote(row->op), member(row->key, "id", id, sizeof(id), "-"),
	    lb != NULL ? " (" : "", lb != NULL ? lb : "", lb != NULL ? ")" : "",
	    row->before, row->after, row->status);
}

static int
list(const struct audit_cmd *a, FILE *f, int64_t since_ms)
{
	struct kv_audit_line l;
	struct audit_row row;
	char *line = NULL, why[256];
	size_t cap = 0, no = 0, shown = 0;
	ssize_t n;

	if (a->json)
		fputs("{\"audit\":[", stdout);
	while ((n = getline(&line, &cap, f)) != -1) {
		no++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (kv_audit_parse(line, (size_t)n, &l, why, sizeof(why)) == -1) {
			fprintf(stderr, "kvctl: audit: line %zu: %s (kvctl audit --verify)\n",
			    no, why);
			continue;
		}
		if (l.time_ms < since_ms)
			continue;
		if (a->json)
			printf("%s%s", shown++ ? "," : "", line);
		else if (read_row(line, (size_t)n, &row) == 0)
			print_row(&row);
	}
	free(line);
	if (a->json)
		fputs("]}\n", stdout);
	return ferror(f) ? KVCTL_EXIT_USAGE : KVCTL_EXIT_OK;
}

int
kvctl_audit(const char *path, int argc, char **argv)
{
	struct audit_cmd a;
	int64_t since = 0;
	FILE *f;
	int rc;

	memset(&a, 0, sizeof(a));
	a.path = path;
	if ((rc = parse_args(&a, argc, argv)) != KVCTL_EXIT_OK)
		return rc;
	if (path == NULL || path[0] == '\0') {
		fputs("kvctl: audit: the config turns the audit log off ([server] "
		    "audit_log = off)\n", stderr);
		return KVCTL_EXIT_USAGE;
	}
	if (a.since != NULL && kvctl_parse_since(a.since, (int64_t)time(NULL), &since) == -1)
		return audit_usage("--since '%s': give 10m, 2h, 1d, unix seconds or a UTC "
		    "time like 2026-12-01T21:00:00Z", a.since);
	if ((f = fopen(path, "re")) == NULL) {
		fprintf(stderr, "kvctl: audit: %s: %s%s\n", path, strerror(errno),
		    errno == ENOENT ? " (no admin write has been recorded yet?)" : "");
		return KVCTL_EXIT_USAGE;
	}
	rc = a.verify ? verify(&a, f) : list(&a, f, since);
	fclose(f);
	return rc;
}

/* kvctl team create|move|set|show NAME: the teams through the master's
 * admin API (master/admin_teams.c), which records each write in the audit
 * log and keeps a team it made in the teams file beside the ledger. kvctl
 * reads the config for the status service's address and the admin token,
 * and sends one HTTP/1.1 request to it over TCP. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/jsonline.h"

#define API_TIMEOUT_MS	30000
#define API_ANSWER_MAX	(1 << 20)

/* A connected socket to the status service of CF, or -1 (said). */
static int
api_connect(const struct kv_config *cf)
{
	const char *host = strcmp(cf->status_host, "0.0.0.0") == 0 ? "127.0.0.1" :
	    strcmp(cf->status_host, "::") == 0 ? "::1" : cf->status_host;
	int fd = kvctl_tcp_connect(host, cf->status_port);

	if (fd == -1)
		fprintf(stderr, "kvctl: team: the status service at %s:%s does not answer "
		    "(is kilovoltd running?): %s\n", cf->status_host, cf->status_port,
		    strerror(errno));
	return fd;
}

/* Read the whole answer (the server closes) into a new buffer *OUT. */
static ssize_t
read_all(int fd, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1), *nb;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (buf != NULL && poll(&p, 1, API_TIMEOUT_MS) == 1) {
		if (len == cap && (cap *= 2) <= API_ANSWER_MAX) {
			if ((nb = realloc(buf, cap + 1)) == NULL)
				break;
			buf = nb;
		}
		if (len == cap || (n = read(fd, buf + len, cap - len)) <= 0)
			break;
		len += (size_t)n;
	}
	if (buf == NULL)
		return -1;
	buf[len] = '\0';
	*out = buf;
	return (ssize_t)len;
}

/* A money member NAME of the object J as "$1.50", or "none". */
static const char *
money_of(const char *j, const char *name, char *buf, size_t len)
{
	char v[32];

	if (kv_jsonline_get(j, strlen(j), name, v, sizeof(v)) != 'n' || strcmp(v, "null") == 0)
		return "none";
	kvctl_format_money(strtoll(v, NULL, 10), buf, len);
	return buf;
}

/* Member NAME of J, or "-" for none or null. */
static const char *
get(const char *j, const char *name, char *buf, size_t len)
{
	if (kv_jsonline_get(j, strlen(j), name, buf, len) == 0 || strcmp(buf, "null") == 0)
		return "-";
	return buf;
}

/* The API's answer ANS with status STATUS, for a person: the team in a
 * line, or the refusal on standard error. */
static void
print_answer(const char *ans, int status)
{
	char b[8][200], m[3][32];
	const char *led = strstr(ans, "\"ledger\":{");

	if (status / 100 != 2) {
		fprintf(stderr, "kvctl: team: %s (%d %s)\n", get(ans, "error", b[0], sizeof(b[0])),
		    status, get(ans, "code", b[1], sizeof(b[1])));
		return;
	}
	printf("%s: parent %s, budget %s %s, rpm %s, tpm %s, model_budget %s, made by %s",
	    get(ans, "node", b[0], sizeof(b[0])), get(ans, "parent", b[1], sizeof(b[1])),
	    money_of(ans, "budget_nusd", m[0], sizeof(m[0])), get(ans, "period", b[2],
	    sizeof(b[2])), get(ans, "rpm", b[3], sizeof(b[3])), get(ans, "tpm", b[4],
	    sizeof(b[4])), get(ans, "model_budget", b[5], sizeof(b[5])),
	    get(ans, "made_by", b[6], sizeof(b[6])));
	if (led != NULL)
		printf("; spent %s, reserved %s, %s requests", money_of(led + 9, "spent_nusd",
		    m[1], sizeof(m[1])), money_of(led + 9, "reserved_nusd", m[2], sizeof(m[2])),
		    get(led + 9, "requests", b[7], sizeof(b[7])));
	else
		fputs("; not in the ledger yet (the reload makes it)", stdout);
	putchar('\n');
}

/* METHOD PATH with BODY (NULL: none) to the admin API of CF: the status
 * into *STATUS and the answer's body printed on standard output, as JSON
 * when JSON, else for a person. Returns 0 or -1 (said). */
static int
api_call(const struct kv_config *cf, const char *method, const char *path, const char *body,
    int json, int *status)
{
	char *head = NULL, *ans = NULL, *b;
	int fd, n, ok = -1;

	if ((fd = api_connect(cf)) == -1)
		return -1;
	n = asprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s%s%s"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s", method, path,
	    cf->status_host, cf->admin_token != NULL ? "Authorization: Bearer " : "",
	    cf->admin_token != NULL ? cf->admin_token : "", cf->admin_token != NULL ? "\r\n" : "",
	    body != NULL ? strlen(body) : 0, body != NULL ? body : "");
	if (n > 0 && write(fd, head, (size_t)n) == n && read_all(fd, &ans) > 0 &&
	    sscanf(ans, "HTTP/1.%*d %d", status) == 1 && (b = strstr(ans, "\r\n\r\n")) != NULL) {
		if (json)
			fputs(b + 4, stdout);
		else
			print_answer(b + 4, *status);
		ok = 0;
	} else {
		fprintf(stderr, "kvctl: team: no answer from the status service\n");
	}
	if (head != NULL)
		explicit_bzero(head, strlen(head));	/* it holds the token */
	free(head);
	free(ans);
	close(fd);
	return ok;
}

/* The flags of create and set (ARGV[0..ARGC)) as a JSON object into F;
 * --json into *JSON. Returns 0 or KVCTL_EXIT_USAGE (said). */
static int
team_body(FILE *f, int argc, char **argv, int create, int *json)
{
	static const char *const flag[] = { "--parent", "--budget", "--period", "--rpm",
		"--tpm", "--model-budget" };
	static const char *const member[] = { "parent", "budget", "period", "rpm", "tpm",
		"model_budget" };
	const char *v;
	int i, j, first = 1;

	for (i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && (*json = 1))
			continue;
		for (j = 0; j < 6 && strcmp(argv[i], flag[j]) != 0; j++)
			;
		if (j == 6 || (j == 0 && !create) || i + 1 == argc)
			return kvctl_usage_error("team", "'%s': give --parent TEAM (create), "
			    "--budget USD|none, --period P, --rpm N, --tpm N, --model-budget "
			    "'GLOB:USD ...'|none, each with its value", argv[i]);
		v = argv[++i];
		fprintf(f, "%s\"%s\":", first ? "" : ",", member[j]);
		first = 0;
		if ((j == 1 || j == 5) && strcmp(v, "none") == 0)
			fputs("null", f);
		else if ((j == 3 || j == 4) && v[strspn(v, "0123456789")] == '\0' && *v != '\0')
			fputs(v, f);
		else if (j == 3 || j == 4)
			return kvctl_usage_error("team", "--rpm and --tpm want a number, not '%s'",
			    v);
		else
			kv_json_write_string(f, v);
	}
	return 0;
}

/* The request of SUB on NAME (ARGV: its flags) as METHOD, PATH and BODY
 * (the caller frees *BODY). Returns 0 or KVCTL_EXIT_USAGE (said). */
static int
team_request(const char *sub, const char *name, int argc, char **argv, char path[128],
    const char **method, char **body, int *json)
{
	size_t blen = 0;
	FILE *f = open_memstream(body, &blen);
	int rc = 0, i;

	if (f == NULL)
		return kvctl_usage_error("team", "%s", "out of memory");
	*method = "POST";
	snprintf(path, 128, "/teams/%s", name);
	fputc('{', f);
	if (strcmp(sub, "create") == 0) {
		snprintf(path, 128, "/teams");
		fputs("\"name\":", f);
		kv_json_write_string(f, name);
		fputs(argc > 0 && strcmp(argv[0], "--json") != 0 ? "," : "", f);
		rc = team_body(f, argc, argv, 1, json);
	} else if (strcmp(sub, "set") == 0) {
		rc = team_body(f, argc, argv, 0, json);
	} else if (strcmp(sub, "move") == 0) {
		snprintf(path, 128, "/teams/%s/move", name);
		for (i = 0; i < argc && rc == 0; i++)
			if (strcmp(argv[i], "--json") == 0)
				*json = 1;
			else if (strcmp(argv[i], "--org") == 0)
				fputs("\"parent\":null", f);
			else if (argv[i][0] != '-' && (fputs("\"parent\":", f), 1))
				kv_json_write_string(f, argv[i]);
			else
				rc = kvctl_usage_error("team", "%s", "move NAME PARENT|--org");
	} else {
		*method = "GET";
		for (i = 0; i < argc; i++)
			*json |= strcmp(argv[i], "--json") == 0;
	}
	fputc('}', f);
	fclose(f);
	return rc;
}

int
kvctl_team_api(const char *config, int argc, char **argv)
{
	struct kv_config cf;
	const char *method = "GET";
	char path[128], err[1024], *body = NULL;
	int rc, status = 0, json = 0;

	if (argc < 2 || argv[1][0] == '-')
		return kvctl_usage_error("team", "%s NAME ...", argv[0]);
	if ((rc = team_request(argv[0], argv[1], argc - 2, argv + 2, path, &method, &body,
	    &json)) != 0) {
		free(body);
		return rc;
	}
	if (kv_config_load_prices(&cf, config, "", err, sizeof(err)) == -1) {
		free(body);
		fprintf(stderr, "kvctl: %s\n", err);
		return KVCTL_EXIT_USAGE;
	}
	if (cf.status_host[0] == '\0')
		rc = kvctl_usage_error("team", "%s", "the status service is off ([server] "
		    "status_listen): the admin API makes teams");
	else if (api_call(&cf, method, path, strcmp(method, "GET") == 0 ? NULL : body, json,
	    &status) == -1)
		rc = KVCTL_EXIT_USAGE;
	else
		rc = status / 100 == 2 ? KVCTL_EXIT_OK : status == 404 ? KVCTL_EXIT_NOTFOUND :
		    KVCTL_EXIT_USAGE;
	free(body);
	kv_config_free(&cf);
	return rc;
}

int
kvctl_team_is_sub(const char *word)
{
	return strcmp(word, "create") == 0 || strcmp(word, "move") == 0 ||
	    strcmp(word, "set") == 0 || strcmp(word, "show") == 0;
}

/* kvctl's helpers shared by its command files: the usage error every
 * command prints, and how a key named on the command line is found in the
 * ledger and named back to the operator, and a command's audit record
 * started. Calls nothing in kvctl.c or the
 * command files, so they all sit above it. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"
#include "cli/kvctl_int.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/config.h"
#include "shm/keys.h"

int
kvctl_usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "kvctl: %s%s", cmd != NULL ? cmd : "", cmd != NULL ? ": " : "");
	fprintf(stderr, fmt, arg);
	fputs("\n(kvctl --help for usage)\n", stderr);
	return KVCTL_EXIT_USAGE;
}

void
kvctl_describe_key(const struct kv_account *a, char *buf, size_t len)
{
	char id[13], label[KV_LABEL_MAX];

	kv_key_id(a->hash, id);
	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	kvctl_printable(label);
	if (label[0] != '\0' && kv_account_label_retired(a))
		snprintf(buf, len, "%s (%s, no longer in the config)", id, label);
	else if (label[0] != '\0')
		snprintf(buf, len, "%s (%s)", id, label);
	else
		snprintf(buf, len, "%s", id);
}

#define AMBIGUOUS_SHOWN 10

/* KEY matches N keys (FOUND): an id prefix of several, or (CLASH) a label
 * an older build let in that is also a prefix of another key's id. Name
 * them, pick none. */
static int
ambiguous(const char *key, struct kv_account **found, size_t n, int clash)
{
	char desc[128];
	size_t i;

	if (clash)
		fprintf(stderr, "kvctl: '%s' is both a key's label and a prefix of "
		    "another key's id:\n", key);
	else
		fprintf(stderr, "kvctl: '%s' is ambiguous: it matches %zu keys:\n", key, n);
	for (i = 0; i < n && i < AMBIGUOUS_SHOWN; i++) {
		kvctl_describe_key(found[i], desc, sizeof(desc));
		fprintf(stderr, "  %s\n", desc);
	}
	if (n > AMBIGUOUS_SHOWN)
		fprintf(stderr, "  ... and %zu more\n", n - AMBIGUOUS_SHOWN);
	fputs(clash ? "give the whole 12-digit id of the one you mean\n" :
	    "give more digits of the id, or the label\n", stderr);
	return KVCTL_EXIT_USAGE;
}

int
kvctl_resolve_key(const struct kv_ledger *l, const char *key, struct kv_account **a)
{
	struct kv_account *found[AMBIGUOUS_SHOWN];
	size_t n;
	int clash;

	n = kv_keys_lookup(l, key, found, AMBIGUOUS_SHOWN, &clash);
	if (n == 0) {
		fprintf(stderr, "kvctl: no key matches '%s' (a label, an id or an id "
		    "prefix; `kvctl keys` lists them)\n", key);
		return KVCTL_EXIT_NOTFOUND;
	}
	if (n > 1)
		return ambiguous(key, found, n, clash);
	*a = found[0];
	return KVCTL_EXIT_OK;
}

struct kv_config *
kvctl_config_load(const char *file)
{
	struct kv_config *cf;
	char err[1024];

	if (file == NULL || (cf = calloc(1, sizeof(*cf))) == NULL)
		return NULL;
	if (kv_config_load(cf, file, err, sizeof(err)) == -1) {
		free(cf);
		return NULL;
	}
	return cf;
}

void
kvctl_config_free(struct kv_config *cf)
{
	if (cf == NULL)
		return;
	kv_config_free(cf);
	free(cf);
}

/* The audit record of K's command OP; -1: the log cannot take it (said),
 * change nothing. */
int
kvctl_cmd_audit(struct kvctl *k, struct kvctl_audit *ka, const char *op)
{
	return kvctl_audit_start(ka, k->audit, op, "", k->cargc, k->cargv);
}

/* The key named by K's first argument into *A, and the audit record of
 * OP on it started. Returns a KVCTL_EXIT_* code. */
int
kvctl_cmd_audit_key(struct kvctl *k, struct kvctl_audit *ka, const char *op, struct kv_account **a)
{
	int rc = kvctl_resolve_key(&k->l, k->args[0], a);

	if (rc != KVCTL_EXIT_OK)
		return rc;
	if (kvctl_cmd_audit(k, ka, op) == -1)
		return KVCTL_EXIT_USAGE;
	kv_audit_key(&ka->rec, *a);
	return KVCTL_EXIT_OK;
}

int
kvctl_tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints, *ai = NULL, *a;
	int fd = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &ai) != 0) {
		errno = EHOSTUNREACH;
		return -1;
	}
	for (a = ai; a != NULL && fd == -1; a = a->ai_next) {
		if ((fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) == -1) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	return fd;
}

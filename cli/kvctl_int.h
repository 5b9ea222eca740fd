/* kvctl's command state, shared by kvctl.c (arguments, the ledger) and the
 * command files that need the whole of it (kvctl_reset.c). */
#ifndef KV_KVCTL_INT_H
#define KV_KVCTL_INT_H

#include "cli/kvctl.h"
#include "shm/ledger.h"

struct kvctl {
	const char	*config;	/* -c */
	const char	*ledger;	/* -l */
	char		 path[4096];	/* the ledger actually used */
	struct kv_ledger l;
	int		 json;
	int		 watch;
	int		 all;
	int		 use_config;	/* budget KEY --config */
	int		 stdin_key;	/* show --key: the raw key on stdin */
	const char	*req_key;	/* requests --key */
	const char	*req_since;	/* requests --since, report --since */
	const char	*rep_until;	/* report --until */
	const char	*req_file;	/* requests --file */
	const char	*by;		/* report --by */
	char		 reqlog[4096];	/* [server] request_log of the config */
	char		 audit[KV_AUDIT_PATH_MAX];	/* the audit log; "" off */
	int		 cargc;		/* the command's words, for the audit log */
	char		**cargv;
	long		 count;		/* --count N for --watch */
	long long	 rpm, tpm;	/* --rpm N / --tpm N for limits; -1 unset */
	char		*args[2];	/* positional arguments of the command */
	int		 nargs;
};

/* The audit record of K's command OP started in *KA (kvctl_common.c); -1: the log cannot
 * take it (said), change nothing. */
int	kvctl_cmd_audit(struct kvctl *k, struct kvctl_audit *ka, const char *op);

/* The key named by K's first argument into *A, and the audit record of
 * OP on it started. Returns a KVCTL_EXIT_* code. */
int	kvctl_cmd_audit_key(struct kvctl *k, struct kvctl_audit *ka, const char *op,
	    struct kv_account **a);

/* kvctl reset KEY | --all (kvctl_reset.c): its spend to zero, audited. */
int	kvctl_cmd_reset(struct kvctl *k);

/* kvctl forget KEY (kvctl_reset.c): its account freed, audited. */
int	kvctl_cmd_forget(struct kvctl *k);

#endif

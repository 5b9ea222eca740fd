/* The SIGBUS guard on the ledger mapping: one clear line and
 * KV_EXIT_LEDGER instead of a bare signal 7; see guard.h. */

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "shm/guard.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static char *guard_base;
static size_t guard_size;

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "kilovolt: KV0604: the ledger file lost pages under "
	    "its mapping (truncated while running?): leaving (exit 3)\n";
	char *a = si != NULL ? si->si_addr : NULL;
	struct sigaction sa;

	(void)uc;
	if (a >= guard_base && a < guard_base + guard_size) {
		if (write(STDERR_FILENO, msg, sizeof(msg) - 1) == -1)
			_exit(KV_EXIT_LEDGER);
		_exit(KV_EXIT_LEDGER);
	}
	/* Not ours: the default action, as if no handler were there. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
	raise(sig);
}

int
kv_ledger_guard(const struct kv_ledger *l)
{
	struct sigaction sa;

	guard_base = l->base;
	guard_size = l->size;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL);
}

/* What kvctl shows a person: aligned tables, `show` lines, the live view. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/duration.h"
#include "shm/ratelimit.h"
#include "shm/report.h"

#define CELL_MAX	(KV_MODEL_NAME + 4)	/* a whole model name fits */
#define TABLE_COLS	16	/* the widest table: keys, 14 columns */

/* A table of short strings; row 0 is the heading. Columns are sized to the
 * widest cell when printed. */
struct table {
	int	  ncols;
	size_t	  nrows;
	size_t	  cap;
	const int *right;		/* per column: 1 = right-aligned (numbers) */
	char	(*cells)[CELL_MAX];
};

static char *
table_cell(struct table *t, size_t row, int col)
{
	return t->cells[row * (size_t)t->ncols + (size_t)col];
}

/* Append a row; cells are given as a NULL-free array of ncols strings. */
static void
table_add(struct table *t, const char *const *cells)
{
	int c;

	if (t->nrows >= t->cap)
		return;
	for (c = 0; c < t->ncols; c++) {
		snprintf(table_cell(t, t->nrows, c), CELL_MAX, "%s", cells[c]);
		kvctl_printable(table_cell(t, t->nrows, c));
	}
	t->nrows++;
}

/* A table of NCOLS columns headed HEAD. Callers size it for all rows up
 * front, so adding never fails. */
static int
table_init(struct table *t, int ncols, const char *const *head, const int *right,
    size_t rows)
{
	if (ncols > TABLE_COLS)	/* table_print sizes its widths by TABLE_COLS */
		return -1;
	t->ncols = ncols;
	t->nrows = 0;
	t->cap = rows + 1;
	t->right = right;
	t->cells = calloc(t->cap * (size_t)ncols, CELL_MAX);
	if (t->cells == NULL)
		return -1;
	table_add(t, head);
	return 0;
}

/* Print T and free it; then NONE (unless NULL) when T has no row but its
 * heading. */
static void
table_print(FILE *f, struct table *t, const char *none)
{
	size_t w[TABLE_COLS] = { 0 }, r, len;
	int c;

	for (r = 0; r < t->nrows; r++)
		for (c = 0; c < t->ncols; c++) {
			len = strlen(table_cell(t, r, c));
			if (len > w[c])
				w[c] = len;
		}
	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			const char *s = table_cell(t, r, c);
			int last = c == t->ncols - 1;

			if (t->right[c])
				fprintf(f, "%*s", (int)w[c], s);
			else
				fprintf(f, "%-*s", last ? 0 : (int)w[c], s);
			fputs(last ? "\n" : "  ", f);
		}
	}
	free(t->cells);
	t->cells = NULL;
	if (none != NULL && t->nrows == 1)
		fputs(none, f);
}

void
kvctl_printable(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

void
kvctl_format_money(int64_t nusd, char *buf, size_t len)
{
	kv_format_dollars(nusd, buf, len);
}

void
kvctl_format_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t == 0 || gmtime_r(&tt, &tm) == NULL) {
		snprintf(buf, len, "never");
		return;
	}
	strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm);
}

static void
format_duration(int64_t s, char *buf, size_t len)
{
	if (s < 0)
		s = 0;
	if (s >= 86400)
		snprintf(buf, len, "%" PRId64 "d%02" PRId64 "h%02" PRId64 "m",
		    s / 86400, s / 3600 % 24, s / 60 % 60);
	else
		snprintf(buf, len, "%" PRId64 "h%02" PRId64 "m%02" PRId64 "s",
		    s / 3600, s / 60 % 60, s % 60);
}

/* Round up to the micro-dollar (a shown spend is never less than the
 * real one), saturating. */
static int64_t
ceil_micro(int64_t v)
{
	int64_t r = v % 1000;

	if (r > 0 && v > INT64_MAX - 1000)
		return INT64_MAX / 1000 * 1000;
	return r > 0 ? v - r + 1000 : v - r;
}

/* Budget, spent, reserved and remaining as they are shown, to the
 * micro-dollar, such that the shown spent + reserved + remaining is the
 * shown budget exactly. Rounding each of them on its own lets the sum drift
 * by a micro-dollar ($2.000000 budget, $0.000000 spent, $1.999999 left), so
 * spent and spent + reserved are rounded up and the rest is what is left. */
static void
shown_money(const struct kv_account *a, int64_t out[4])
{
	int64_t budget = atomic_load(&a->budget_nusd);
	int64_t spent = kv_account_spent(a);
	int64_t reserved = atomic_load(&a->reserved_nusd);
	int64_t used;

	if (__builtin_add_overflow(spent, reserved, &used))
		used = INT64_MAX;
	out[0] = budget - budget % 1000;
	out[1] = ceil_micro(spent);
	used = ceil_micro(used);
	out[2] = used - out[1];
	if (__builtin_sub_overflow(out[0], used, &out[3]))
		out[3] = INT64_MIN / 1000 * 1000;
}

void
kvctl_format_limit(uint32_t v, const char *none, char *buf, size_t len)
{
	if (v == 0)
		snprintf(buf, len, "%s", none);
	else
		snprintf(buf, len, "%u", v);
}

/* An account's label as kvctl shows it: in parentheses when the config no
 * longer has that key (rotated or removed: kv_account_label_retired). */
static void
shown_label(const struct kv_account *a, char *buf, size_t len)
{
	char label[KV_LABEL_MAX];

	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	if (label[0] != '\0' && kv_account_label_retired(a))
		snprintf(buf, len, "(%s)", label);
	else if (atomic_load(&a->aflags) & KV_AF_REVOKED)
		snprintf(buf, len, "%s [revoked]", label[0] ? label : "-");
	else if (atomic_load(&a->aflags) & KV_AF_ISSUED)
		snprintf(buf, len, "%s [issued]", label);
	else
		snprintf(buf, len, "%s", label);
}

static void
account_row(struct table *t, const struct kv_account *a)
{
	char id[13], label[KV_LABEL_MAX + 2], m[4][32], n[5][24], last[32], lim[2][16];
	int64_t money[4];
	const char *cells[15];
	int i;

	kv_key_id(a->hash, id);
	shown_label(a, label, sizeof(label));
	shown_money(a, money);
	for (i = 0; i < 4; i++)
		kvctl_format_money(money[i], m[i], sizeof(m[i]));
	snprintf(n[0], sizeof(n[0]), "%" PRIu64, atomic_load(&a->requests));
	snprintf(n[1], sizeof(n[1]), "%" PRIu64, atomic_load(&a->input_tokens));
	snprintf(n[2], sizeof(n[2]), "%" PRIu64, atomic_load(&a->output_tokens));
	snprintf(n[3], sizeof(n[3]), "%" PRIu64, atomic_load(&a->estimated_requests));
	snprintf(n[4], sizeof(n[4]), "%" PRIu64, atomic_load(&a->free_requests));
	kvctl_format_time(atomic_load(&a->last_used), last, sizeof(last));
	cells[0] = id;
	cells[1] = label[0] != '\0' ? label : "-";
	cells[2] = m[0], cells[3] = m[1], cells[4] = m[2], cells[5] = m[3];
	cells[6] = n[0], cells[7] = n[1], cells[8] = n[2];
	cells[9] = n[3], cells[10] = n[4];
	kvctl_format_limit(atomic_load(&a->rpm), "-", lim[0], sizeof(lim[0]));
	kvctl_format_limit(atomic_load(&a->tpm), "-", lim[1], sizeof(lim[1]));
	cells[11] = lim[0], cells[12] = lim[1];
	cells[13] = last;
	table_add(t, cells);
}

/* A table of every key, in report order: NCOLS columns titled HEAD
 * (RIGHT: right-aligned), a row of each account by ROW. */
static void
keys_table(FILE *f, const struct kv_ledger *l, int ncols, const char *const *head,
    const int *right, void (*row)(struct table *, const struct kv_account *))
{
	const struct kv_account **v;
	struct table t;
	size_t i, n;

	n = kv_report_sorted_accounts(l, &v);
	if (table_init(&t, ncols, head, right, n) == 0) {
		for (i = 0; i < n; i++)
			row(&t, v[i]);
		table_print(f, &t, "(no keys yet)\n");
	} else
		fputs("kvctl: out of memory\n", stderr);
	free(v);
}

void
kvctl_print_keys(FILE *f, const struct kv_ledger *l)
{
	static const char *const head[] = { "ID", "LABEL", "BUDGET", "SPENT",
	    "RESERVED", "REMAINING", "REQUESTS", "TOKENS IN", "TOKENS OUT",
	    "ESTIMATED", "FREE", "RPM", "TPM", "LAST USED" };
	static const int right[] = { 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0 };

	keys_table(f, l, 14, head, right, account_row);
}

/* ---- the narrow keys table of keys --watch --------------------------- */

#define WATCH_LABEL_MAX	12	/* a longer label is cut, ending in '~' */

static void
watch_row(struct table *t, const struct kv_account *a)
{
	char id[13], label[KV_LABEL_MAX + 2], m[3][32], pct[16], reqs[24];
	int64_t money[4];
	const char *cells[7];

	kv_key_id(a->hash, id);
	shown_label(a, label, sizeof(label));
	if (strlen(label) > WATCH_LABEL_MAX) {
		label[WATCH_LABEL_MAX - 1] = '~';
		label[WATCH_LABEL_MAX] = '\0';
	}
	shown_money(a, money);
	kvctl_format_money(money[1], m[0], sizeof(m[0]));
	kvctl_format_money(money[2], m[1], sizeof(m[1]));
	kvctl_format_money(money[3], m[2], sizeof(m[2]));
	if (money[0] > 0)
		snprintf(pct, sizeof(pct), "%d%%", (int)((money[1] + money[2]) /
		    (money[0] / 100 > 0 ? money[0] / 100 : 1)));
	else
		snprintf(pct, sizeof(pct), "-");
	snprintf(reqs, sizeof(reqs), "%" PRIu64, atomic_load(&a->requests));
	cells[0] = id;
	cells[1] = label[0] != '\0' ? label : "-";
	cells[2] = m[0], cells[3] = m[1], cells[4] = m[2], cells[5] = pct;
	cells[6] = reqs;
	table_add(t, cells);
}

/* The keys table narrowed for a terminal (76 columns with amounts under
 * $100): ID, label, spent, reserved, remaining, the share of the budget
 * used, requests. `kvctl keys` has every column. */
static void
print_keys_narrow(FILE *f, const struct kv_ledger *l)
{
	static const char *const head[] = { "ID", "LABEL", "SPENT", "RESERVED",
	    "REMAINING", "USED", "REQS" };
	static const int right[] = { 0, 0, 1, 1, 1, 1, 1 };

	keys_table(f, l, 7, head, right, watch_row);
}

/* "rpm: 60" and "requests_remaining: 59 (full in 1s)", or "rpm: none". */
static void
print_limit(FILE *f, const char *what, uint32_t limit, int64_t tat)
{
	int64_t rem, reset;
	char d[32];

	fprintf(f, "%s: ", what[0] == 'r' ? "rpm" : "tpm");
	if (limit == 0) {
		fputs("none\n", f);
		return;
	}
	kv_gcra_state(tat, limit, kv_rl_now_ns(), &rem, &reset);
	kv_format_duration(reset, d, sizeof(d));
	fprintf(f, "%u\n%s_remaining: %" PRId64 " (full in %s)\n", limit, what, rem, d);
}

void
kvctl_print_account(FILE *f, const struct kv_account *a)
{
	static const char *const names[4] = { "budget", "spent", "reserved",
	    "remaining" };
	char id[13], label[KV_LABEL_MAX], money[32], when[32];
	int64_t shown[4];
	int i;

	kv_key_id(a->hash, id);
	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	kvctl_printable(label);
	fprintf(f, "id: %s\nlabel: %s%s\nsha256: ", id, label[0] ? label : "-",
	    kv_account_label_retired(a) ? " (no longer in the config: its key was "
	    "rotated or removed)" : "");
	for (i = 0; i < 32; i++)
		fprintf(f, "%02x", a->hash[i]);
	fputc('\n', f);
	fprintf(f, "source: %s%s\n", (atomic_load(&a->aflags) & KV_AF_CONFIG) ? "config" :
	    (atomic_load(&a->aflags) & KV_AF_ISSUED) ? "issued (kvctl keys create)" :
	    "first use", (atomic_load(&a->aflags) & KV_AF_REVOKED) ? ", revoked" : "");
	shown_money(a, shown);
	for (i = 0; i < 4; i++) {
		kvctl_format_money(shown[i], money, sizeof(money));
		fprintf(f, "%s: %s\n", names[i], money);
	}
	if (atomic_load(&a->aflags) & KV_AF_OVERRIDE) {
		kvctl_format_money(atomic_load(&a->config_budget_nusd), money, sizeof(money));
		fprintf(f, "budget_override: yes (the config says %s; `kvctl budget KEY "
		    "--config` drops it)\n", money);
	}
	fprintf(f, "requests: %" PRIu64 "\ninput_tokens: %" PRIu64
	    "\noutput_tokens: %" PRIu64 "\ncached_input_tokens: %" PRIu64
	    "\nrefusals: %" PRIu64 "\nestimated_requests: %" PRIu64
	    "\nfree_requests: %" PRIu64 "\n", atomic_load(&a->requests),
	    atomic_load(&a->input_tokens), atomic_load(&a->output_tokens),
	    atomic_load(&a->cached_input_tokens), atomic_load(&a->refusals),
	    atomic_load(&a->estimated_requests), atomic_load(&a->free_requests));
	kvctl_format_time(atomic_load(&a->last_used), when, sizeof(when));
	fprintf(f, "last_used: %s\n", when);
	kvctl_format_time(kv_account_period(a), when, sizeof(when));
	fprintf(f, "period_start: %s\n", when);
	print_limit(f, "requests", atomic_load(&a->rpm), atomic_load(&a->rpm_tat));
	print_limit(f, "tokens", atomic_load(&a->tpm), atomic_load(&a->tpm_tat));
	fprintf(f, "rate_refusals: %" PRIu64 "\n", atomic_load(&a->rate_refusals));
}

static int
cmp_model_cost(const void *x, const void *y)
{
	const struct kv_model_slot *a = *(const struct kv_model_slot * const *)x;
	const struct kv_model_slot *b = *(const struct kv_model_slot * const *)y;
	uint64_t ca = atomic_load(&a->cost_nusd), cb = atomic_load(&b->cost_nusd);

	if (ca != cb)
		return ca < cb ? 1 : -1;
	return strncmp(a->name, b->name, KV_MODEL_NAME);
}

static void
model_row(struct table *t, const struct kv_model_slot *m)
{
	char name[KV_MODEL_NAME], n[4][24], cost[32];
	const char *cells[6];

	memcpy(name, m->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	snprintf(n[0], sizeof(n[0]), "%" PRIu64, atomic_load(&m->requests));
	snprintf(n[1], sizeof(n[1]), "%" PRIu64, atomic_load(&m->input_tokens));
	snprintf(n[2], sizeof(n[2]), "%" PRIu64, atomic_load(&m->output_tokens));
	snprintf(n[3], sizeof(n[3]), "%" PRIu64,
	    atomic_load(&m->cached_input_tokens));
	kvctl_format_money((int64_t)atomic_load(&m->cost_nusd), cost, sizeof(cost));
	cells[0] = name;
	cells[1] = n[0], cells[2] = n[1], cells[3] = n[2], cells[4] = n[3];
	cells[5] = cost;
	table_add(t, cells);
}

void
kvctl_print_models(FILE *f, const struct kv_ledger *l)
{
	static const char *const head[] = { "MODEL", "REQUESTS", "TOKENS IN",
	    "TOKENS OUT", "CACHED IN", "COST" };
	static const int right[] = { 0, 1, 1, 1, 1, 1 };
	const struct kv_model_slot *v[KV_MODEL_SLOTS];
	struct table t;
	size_t i, n = 0;

	for (i = 0; i < KV_MODEL_SLOTS; i++)
		if (atomic_load_explicit(&l->models[i].state,
		    memory_order_acquire) == 2)
			v[n++] = &l->models[i];
	qsort(v, n, sizeof(v[0]), cmp_model_cost);
	if (table_init(&t, 6, head, right, n) == -1) {
		fputs("kvctl: out of memory\n", stderr);
		return;
	}
	for (i = 0; i < n; i++)
		model_row(&t, v[i]);
	table_print(f, &t, "(no models yet)\n");
}

static void
status_master(FILE *f, const struct kv_ledger *l, int64_t now)
{
	int32_t pid = atomic_load(&l->hdr->master_pid);
	int64_t start = atomic_load(&l->hdr->master_start);
	char up[32];

	if (pid <= 0 && start > 0) {
		/* master_pid is cleared on a clean stop; the start time stays. */
		kvctl_format_time(start, up, sizeof(up));
		fprintf(f, "master:          not running (stopped; last started %s)\n", up);
		return;
	}
	if (pid <= 0) {
		fputs("master:          never started on this ledger\n", f);
		return;
	}
	/* EPERM still means the process exists (kvctl may run as another user). */
	if (kill(pid, 0) == 0 || errno == EPERM) {
		format_duration(now - start, up, sizeof(up));
		fprintf(f, "master:          pid %" PRId32 ", up %s\n", pid, up);
	} else {
		fprintf(f, "master:          not running (last pid %" PRId32 ")\n", pid);
	}
}

static void
worker_row(struct table *t, int slot, const struct kv_worker_slot *w,
    int32_t pid, int64_t now)
{
	char n[7][32];
	const char *cells[8];
	int64_t hb = atomic_load(&w->heartbeat);
	int i;

	snprintf(n[0], sizeof(n[0]), "%d", slot);
	snprintf(n[1], sizeof(n[1]), "%" PRId32, pid);
	snprintf(n[2], sizeof(n[2]), "%" PRIu32, atomic_load(&w->generation));
	snprintf(n[3], sizeof(n[3]), "%" PRIu64, atomic_load(&w->connections));
	snprintf(n[4], sizeof(n[4]), "%" PRIu64, atomic_load(&w->active_streams));
	snprintf(n[5], sizeof(n[5]), "%" PRIu64, atomic_load(&w->requests));
	if (hb > 0)
		snprintf(n[6], sizeof(n[6]), "%" PRId64 "s ago", now > hb ? now - hb : 0);
	else
		snprintf(n[6], sizeof(n[6]), "-");
	cells[0] = n[0], cells[1] = n[1];
	cells[2] = kv_report_worker_state(atomic_load(&w->state));
	for (i = 2; i < 7; i++)
		cells[i + 1] = n[i];
	table_add(t, cells);
}

static void
status_workers(FILE *f, const struct kv_ledger *l, int64_t now)
{
	static const char *const head[] = { "SLOT", "PID", "STATE", "GEN",
	    "CONNS", "STREAMS", "REQUESTS", "HEARTBEAT" };
	static const int right[] = { 1, 1, 0, 1, 1, 1, 1, 1 };
	struct table t;
	int32_t pid;
	int i;

	if (table_init(&t, 8, head, right, KV_WORKER_SLOTS) == -1)
		return;
	for (i = 0; i < KV_WORKER_SLOTS; i++) {
		pid = atomic_load(&l->workers[i].pid);
		if (pid != 0)
			worker_row(&t, i, &l->workers[i], pid, now);
	}
	if (t.nrows == 1) {
		free(t.cells);
		fputs("workers:         none\n", f);
		return;
	}
	fputc('\n', f);
	table_print(f, &t, NULL);
}

static void
status_counters(FILE *f, const struct kv_ledger *l)
{
	const struct kv_counters *c = &l->hdr->counters;
	char money[32];

	fputc('\n', f);
#define KV_X_LINE(name, help) \
	fprintf(f, "%-28s %" PRIu64 "\n", #name, atomic_load(&c->name));
	KV_COUNTERS(KV_X_LINE)
#undef KV_X_LINE
	kvctl_format_money((int64_t)atomic_load(&c->cost_nusd_total), money,
	    sizeof(money));
	fprintf(f, "%-28s %s\n", "cost_total", money);
}

static int64_t
total_spent(const struct kv_ledger *l)
{
	int64_t sum = 0;
	uint32_t i;

	KV_FOR_EACH_SLOT(l, i)
		if (kv_slot_ready(&l->accounts[i].state))
			sum += kv_account_spent(&l->accounts[i]);
	return sum;
}

void
kvctl_print_status(FILE *f, const struct kv_ledger *l, const char *path,
    int64_t now)
{
	char money[32], when[32];

	fprintf(f, "ledger:          %s\n", path);
	kvctl_format_time(atomic_load(&l->hdr->created), when, sizeof(when));
	fprintf(f, "created:         %s\n", when);
	status_master(f, l, now);
	fprintf(f, "keys:            %" PRIu32 " of %" PRIu32 " slots used\n",
	    atomic_load(&l->hdr->accounts_used), l->hdr->max_keys);
	fprintf(f, "models:          %" PRIu32 "\n", atomic_load(&l->hdr->models_used));
	kvctl_format_money(total_spent(l), money, sizeof(money));
	fprintf(f, "spent (periods): %s\n", money);
	fprintf(f, "active streams:  %" PRIu64 "\nconnections:     %" PRIu64 "\n",
	    kv_ledger_sum_active_streams(l), kv_ledger_sum_connections(l));
	status_workers(f, l, now);
	status_counters(f, l);
}

/* ---- keys --watch ---------------------------------------------------- */

static volatile sig_atomic_t watch_stop;

static void
watch_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/* No SA_RESTART: the signal must cut the poll() short. */
static int
watch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = watch_signal;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) == -1 ||
	    sigaction(SIGTERM, &sa, NULL) == -1)
		return -1;
	return 0;
}

/* Keys arrive one at a time, unechoed; Ctrl-C still raises SIGINT. */
static int
watch_raw(struct termios *saved)
{
	struct termios raw;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, saved) == -1)
		return 0;
	raw = *saved;
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == -1)
		return 0;
	return 1;
}

/* The terminal's width, 80 when it does not say. */
static size_t
watch_columns(void)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 80;
}

/* One frame, each line cut to the terminal's width: a wrapped line would
 * scroll the frame and garble the redraw. */
static void
watch_frame(const struct kv_ledger *l)
{
	char when[32], *buf = NULL, *line, *end;
	size_t len = 0, n, cols = watch_columns();
	FILE *mem;

	kvctl_format_time((int64_t)time(NULL), when, sizeof(when));
	fputs("\033[H\033[2J", stdout);
	mem = open_memstream(&buf, &len);
	if (mem == NULL) {
		printf("kvctl: open_memstream: %s\n", strerror(errno));
		fflush(stdout);
		return;
	}
	fprintf(mem, "kvctl keys  %s  (q to quit)\n\n", when);
	print_keys_narrow(mem, l);
	if (fclose(mem) == 0 && buf != NULL)
		for (line = buf; *line != '\0'; line = end + 1) {
			end = strchr(line, '\n');
			if (end == NULL)
				end = line + strlen(line) - 1;
			n = (size_t)(end - line) + (*end != '\n');
			printf("%.*s\n", (int)(n < cols ? n : cols), line);
		}
	free(buf);
	fflush(stdout);
}

/* Wait up to a second for a key. Returns 1 to quit, 0 to go on; *tty_in is
 * cleared when stdin reaches EOF (then only the timer is left). */
static int
watch_wait(int *tty_in)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	char c;
	ssize_t n;
	int rc;

	rc = poll(&pfd, *tty_in ? 1 : 0, 1000);
	if (rc == -1)
		return errno == EINTR ? watch_stop : 1;
	if (rc == 0)
		return 0;
	n = read(STDIN_FILENO, &c, 1);
	if (n <= 0) {
		*tty_in = 0;
		return 0;
	}
	return c == 'q' || c == 'Q' || c == 3;
}

/* Roughly a year of frames: the view is interactive, but no loop runs
 * unbounded. */
#define WATCH_MAX_FRAMES	(366L * 86400)

int
kvctl_watch_keys(const struct kv_ledger *l, long count)
{
	struct termios saved;
	int raw, tty_in = 1;
	long frame;

	if (!isatty(STDOUT_FILENO)) {
		fputs("kvctl: keys --watch needs a terminal on stdout "
		    "(use `kvctl keys --json` in scripts)\n", stderr);
		return KVCTL_EXIT_USAGE;
	}
	if (watch_signals() == -1) {
		perror("kvctl: sigaction");
		return KVCTL_EXIT_USAGE;
	}
	raw = watch_raw(&saved);
	if (count <= 0 || count > WATCH_MAX_FRAMES)
		count = WATCH_MAX_FRAMES;
	for (frame = 0; frame < count && !watch_stop; frame++) {
		watch_frame(l);
		if (frame + 1 < count && watch_wait(&tty_in))
			break;
	}
	if (raw && tcsetattr(STDIN_FILENO, TCSANOW, &saved) == -1)
		perror("kvctl: restoring the terminal");
	return KVCTL_EXIT_OK;
}

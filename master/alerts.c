/* Spend alerts: see alerts.h. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/alerts.h"

#include <errno.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/clock.h"
#include "common/jsonline.h"
#include "common/log.h"
#include "common/money.h"
#include "common/tls_client.h"

#define ALERT_TRIES	4
#define ALERT_IO_S	10	/* per connect, write and read */
#define ALERT_TOTAL_S	60

struct kv_alerts_state {
	uint32_t		 n;
	const struct kv_config	*cf;		/* the config the marks were made for */
	uint8_t			*sent;		/* per account: bit i = thresholds[i] sent */
	int64_t			*period;	/* per account: period_start the bits are for */
	int64_t			*last;		/* per account: spent_nusd at the last look */
	uint8_t			*known;		/* per account: marks initialised */
	int			 started;	/* a first pass was made for cf */
};

struct kv_alerts_state *
kv_alerts_new(const struct kv_ledger *l)
{
	struct kv_alerts_state *s = calloc(1, sizeof(*s));
	uint32_t n = l->hdr->max_keys;

	if (s != NULL) {
		s->n = n;
		s->sent = calloc(n, 1);
		s->known = calloc(n, 1);
		s->period = calloc(n, sizeof(*s->period));
		s->last = calloc(n, sizeof(*s->last));
	}
	if (s == NULL || s->sent == NULL || s->known == NULL || s->period == NULL ||
	    s->last == NULL) {
		kv_log_warn("KV0810", "alerts: out of memory");
		kv_alerts_free(s);
		return NULL;
	}
	return s;
}

void
kv_alerts_free(struct kv_alerts_state *s)
{
	if (s == NULL)
		return;
	free(s->sent);
	free(s->known);
	free(s->period);
	free(s->last);
	free(s);
}

/* The thresholds SPENT reaches of BUDGET, as a bit mask. */
static uint8_t
reached(const struct kv_alerts *al, int64_t spent, int64_t budget)
{
	uint8_t m = 0;
	int i;

	for (i = 0; i < al->nthresholds && budget > 0; i++)
		if ((__int128)spent * 100 >= (__int128)budget * al->thresholds[i])
			m |= (uint8_t)(1u << i);
	return m;
}

int
kv_alerts_message(char *buf, size_t len, int slack, const struct kv_account *a,
    int threshold, int64_t now)
{
	char id[13], label[KV_LABEL_MAX], spent[32], budget[32], text[512], who[128];
	int64_t s = kv_account_spent(a), b = atomic_load(&a->budget_nusd);
	size_t pos = 0;
	int n;

	kv_key_id(a->hash, id);
	memcpy(label, a->label, sizeof(label));
	label[sizeof(label) - 1] = '\0';
	kv_format_dollars(s, spent, sizeof(spent));
	kv_format_dollars(b, budget, sizeof(budget));
	if (label[0] != '\0')
		snprintf(who, sizeof(who), "%s (%s)", label, id);
	else
		snprintf(who, sizeof(who), "%s", id);
	snprintf(text, sizeof(text), "kilovolt: key %s has spent %d%% of its budget: "
	    "%s of %s", who, threshold, spent, budget);
	if (slack) {
		memcpy(buf, "{\"text\":", 8);
		pos = 8;
		if (kv_jsonline_string(buf, len - 1, &pos, text, strlen(text)) == -1)
			return -1;
		buf[pos++] = '}';
		buf[pos] = '\0';
		return (int)pos;
	}
	n = snprintf(buf, len, "{\"event\":\"budget_threshold\",\"key_id\":\"%s\",\"label\":", id);
	if (n < 0 || (size_t)n >= len)
		return -1;
	pos = (size_t)n;
	if (label[0] != '\0') {
		if (kv_jsonline_string(buf, len, &pos, label, strlen(label)) == -1)
			return -1;
	} else {
		pos += (size_t)snprintf(buf + pos, len - pos, "null");
	}
	n = snprintf(buf + pos, len - pos, ",\"threshold_percent\":%d,\"spent_nusd\":%" PRId64
	    ",\"budget_nusd\":%" PRId64 ",\"period_start\":%" PRId64 ",\"time\":%" PRId64
	    ",\"text\":", threshold, s, b, kv_account_period(a), now);
	if (n < 0 || (size_t)n >= len - pos)
		return -1;
	pos += (size_t)n;
	if (kv_jsonline_string(buf, len - 1, &pos, text, strlen(text)) == -1)
		return -1;
	buf[pos++] = '}';
	buf[pos] = '\0';
	return (int)pos;
}

/* ---- delivery, in a child process ---------------------------------------- */

struct url {
	int	 tls;
	char	 host[256];
	char	 port[8];
	char	 path[768];
};

static int
parse_url(const char *u, struct url *out)
{
	const char *h, *end, *colon, *slash;

	out->tls = strncmp(u, "https://", 8) == 0;
	h = u + (out->tls ? 8 : 7);
	slash = strchr(h, '/');
	end = slash != NULL ? slash : h + strlen(h);
	colon = memchr(h, ':', (size_t)(end - h));
	if (h[0] == '[')	/* [v6]:port */
		colon = memchr(h, ']', (size_t)(end - h)) ? strchr(memchr(h, ']',
		    (size_t)(end - h)), ':') : NULL;
	if (colon != NULL && colon > end)
		colon = NULL;
	if ((size_t)((colon ? colon : end) - h) >= sizeof(out->host) || (colon ? colon : end) == h)
		return -1;
	snprintf(out->host, sizeof(out->host), "%.*s", (int)((colon ? colon : end) - h), h);
	if (out->host[0] == '[') {	/* strip the brackets */
		memmove(out->host, out->host + 1, strlen(out->host));
		out->host[strcspn(out->host, "]")] = '\0';
	}
	if (colon != NULL)
		snprintf(out->port, sizeof(out->port), "%.*s", (int)(end - colon - 1), colon + 1);
	else
		snprintf(out->port, sizeof(out->port), "%s", out->tls ? "443" : "80");
	snprintf(out->path, sizeof(out->path), "%s", slash != NULL ? slash : "/");
	return 0;
}

static int
dial(const struct url *u)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	struct timeval tv = { .tv_sec = ALERT_IO_S };
	int fd = -1, rc;

	if ((rc = getaddrinfo(u->host, u->port, &hints, &res)) != 0) {
		kv_log_warnx("KV0811", "alerts: %s: %s", u->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd == -1)
			continue;
		if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0 &&
		    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
		    connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd == -1)
		kv_log_warn("KV0811", "alerts: connect %s:%s", u->host, u->port);
	return fd;
}

/* Whether HOST is an IP address literal (checked as one, not as a name). */
static int
numeric_host(const char *host)
{
	unsigned char a[16];

	return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

/* A verified TLS session over FD, in *CTX and *SSL (freed by the caller
 * either way): verified as the gateway verifies its upstreams, with the
 * one client set-up (common/tls_client.h): CA_FILE when not "", else the
 * system store (SSL_CERT_FILE honoured), and the host name or IP address.
 * 0, or -1. */
static int
tls_open(int fd, const struct url *u, const char *ca_file, SSL_CTX **ctx, SSL **ssl)
{
	if ((*ctx = kv_tls_client_ctx(ca_file[0] ? ca_file : NULL, NULL, 0)) == NULL ||
	    (*ssl = SSL_new(*ctx)) == NULL || SSL_set_fd(*ssl, fd) != 1 ||
	    kv_tls_expect_host(*ssl, u->host, numeric_host(u->host)) != 0)
		return -1;
	if (SSL_connect(*ssl) != 1) {
		kv_log_warnx("KV0812", "alerts: TLS to %s: %s", u->host,
		    ERR_reason_error_string(ERR_get_error()));
		return -1;
	}
	return 0;
}

/* Reads up to CAP bytes of the answer until the peer ends it, within
 * ALERT_IO_S: a ticket or a KeyUpdate ends an SSL_read without a byte
 * (auto-retry is off, common/tls_client.h), and a peer sending them for
 * ever must not keep this child past its read time. The count read. */
static int
tls_read(SSL *ssl, char *resp, size_t cap)
{
	int64_t until = kv_now_ms() + ALERT_IO_S * 1000;
	int got = 0, n;

	while ((size_t)got < cap && kv_now_ms() < until) {
		n = SSL_read(ssl, resp + got, (int)(cap - (size_t)got));
		if (n > 0)
			got += n;
		else if (SSL_get_error(ssl, n) != SSL_ERROR_WANT_READ)
			break;
	}
	ERR_clear_error();
	return got;
}

/* One POST, an https:// one verified against CA_FILE ("": the system's);
 * returns the HTTP status, or -1. */
static int
post_once(const struct url *u, const char *ca_file, const char *body)
{
	char req[4096], resp[256];
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	int fd, n, got = 0, status = -1;

	n = snprintf(req, sizeof(req), "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kilovolt\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
	    u->path, u->host, strlen(body), body);
	if (n < 0 || (size_t)n >= sizeof(req) || (fd = dial(u)) == -1)
		return -1;
	if (u->tls) {
		if (tls_open(fd, u, ca_file, &ctx, &ssl) != 0)
			goto out;
		if (SSL_write(ssl, req, n) != n)
			goto out;
		got = tls_read(ssl, resp, sizeof(resp) - 1);
	} else {
		if (write(fd, req, (size_t)n) != n)
			goto out;
		while (got < (int)sizeof(resp) - 1 &&
		    (n = (int)read(fd, resp + got, sizeof(resp) - 1 - (size_t)got)) > 0)
			got += n;
		if (n == -1 && got == 0)
			kv_log_warn("KV0817", "alerts: reading from %s", u->host);
	}
	resp[got] = '\0';
	if (strncmp(resp, "HTTP/1.", 7) == 0 && got >= 12)
		status = atoi(resp + 9);
out:
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return status;
}

static void __attribute__((noreturn))
deliver(const struct kv_ledger *l, const struct kv_alerts *al, const char *body,
    const char *what)
{
	struct url u;
	int i, st = -1;

	/* Nothing of the master's: a listener kept open here would stop a
	 * restarted daemon from binding its port, and the ledger's mapping
	 * holds its file, so the daemon's flock, past the fd's close: a
	 * restart during the retries failed with KV0602. stderr stays for
	 * the log. */
	if (munmap(l->base, l->size) == -1)
		kv_log_warn("KV0818", "alerts: munmap of the ledger");
	if (close_range(3, ~0U, 0) == -1)
		for (i = 3; i < 1024; i++)
			(void)close(i);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	alarm(ALERT_TOTAL_S);	/* whatever happens, the child goes */
	if (parse_url(al->webhook, &u) == -1) {
		kv_log_warnx("KV0813", "alerts: the webhook URL cannot be used");
		_exit(1);
	}
	for (i = 0; i < ALERT_TRIES; i++) {
		if (i > 0)
			sleep(1u << (i - 1));	/* 1, 2, 4 s */
		st = post_once(&u, al->ca_file, body);
		if (st >= 200 && st < 300) {
			kv_log_info("alert sent: %s (attempt %d)", what, i + 1);
			_exit(0);
		}
		kv_log_warnx("KV0814", "alerts: %s: attempt %d of %d got %s%d", what, i + 1,
		    ALERT_TRIES, st < 0 ? "no answer " : "HTTP ", st);
	}
	kv_log_warnx("KV0815", "alerts: %s: giving up after %d attempts", what, ALERT_TRIES);
	_exit(1);
}

static void
send_alert(const struct kv_config *cf, const struct kv_ledger *l, const struct kv_account *a,
    int threshold, int64_t now)
{
	char body[2048], what[64], id[13];
	pid_t pid;

	if (kv_alerts_message(body, sizeof(body), cf->alerts.slack, a, threshold, now) == -1)
		return;
	kv_key_id(a->hash, id);
	snprintf(what, sizeof(what), "key %s at %d%%", id, threshold);
	kv_log_flush();
	pid = fork();
	if (pid == -1) {
		kv_log_warn("KV0816", "alerts: fork for %s", what);
		return;
	}
	if (pid == 0)
		deliver(l, &cf->alerts, body, what);	/* a, in the ledger, is gone there */
	/* The master's reap() collects it with the workers (unknown pids are
	 * just reaped). */
}

void
kv_alerts_tick(struct kv_alerts_state *s, const struct kv_config *cf,
    const struct kv_ledger *l, int64_t now)
{
	const struct kv_alerts *al = &cf->alerts;
	uint32_t i;
	uint8_t m, fresh;
	int t;

	if (s == NULL || !al->enabled)
		return;
	if (s->cf != cf) {	/* new config: thresholds may differ, start over */
		memset(s->known, 0, s->n);
		s->cf = cf;
		s->started = 0;
	}
	KV_FOR_EACH_SLOT(l, i) {
		const struct kv_account *a = &l->accounts[i];
		int64_t ps = kv_account_period(a), spent = kv_account_spent(a);

		if (i >= s->n)
			break;
		if (atomic_load_explicit(&a->state, memory_order_acquire) != KV_SLOT_READY) {
			s->known[i] = 0;
			continue;
		}
		m = reached(al, spent, atomic_load(&a->budget_nusd));
		if (!s->known[i] || s->period[i] != ps) {
			/* At start-up what a key passed already counts as sent; a
			 * key that appears later, or a new period, starts from
			 * nothing. */
			s->sent[i] = s->started ? 0 : m;
			s->period[i] = ps;
			s->known[i] = 1;
		}
		/* A reset (spend went down, even if it is back up by now)
		 * re-arms every threshold; a raised budget those it is under. */
		if (spent < s->last[i])
			s->sent[i] = 0;
		s->sent[i] &= m;
		s->last[i] = spent;
		fresh = m & (uint8_t)~s->sent[i];
		for (t = 0; t < al->nthresholds; t++)
			if (fresh & (1u << t))
				send_alert(cf, l, a, al->thresholds[t], now);
		s->sent[i] |= fresh;
	}
	s->started = 1;
}

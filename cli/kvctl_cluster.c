/* kvctl cluster: the cluster's view of every key, read from Redis (the
 * ledger of record across hosts; docs/cluster.md): budget, settled spend of
 * all hosts, what is committed, and each host's lease. kvctl may block, so
 * this is a plain blocking client over common/resp.c, with timeouts. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/jsonline.h"
#include "common/redis_keys.h"
#include "common/resp.h"
#include "common/tls_client.h"
#include "shm/lease.h"
#include "shm/report.h"

#define MAX_KEYS	100000
#define IO_TIMEOUT_S	3

struct rconn {
	int			 fd;
	SSL_CTX			*ctx;		/* rediss:// */
	SSL			*ssl;
	char			*buf;
	size_t			 len, cap, used;
	struct kv_resp_reply	 r;
};

static int
dial(const struct kv_cluster *c)
{
	struct addrinfo hints, *ai = NULL, *a;
	struct sockaddr_un sun;
	struct timeval tv = { IO_TIMEOUT_S, 0 };
	int fd = -1;

	if (c->redis_unix[0] != '\0') {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		memcpy(sun.sun_path, c->redis_unix, strlen(c->redis_unix) + 1);
		if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1 &&
		    connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
			close(fd);
			fd = -1;
		}
	} else {
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_NUMERICSERV;
		if (getaddrinfo(c->redis_host, c->redis_port, &hints, &ai) != 0) {
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
	}
	if (fd != -1 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* rediss://: TLS over the connected FD, the server's certificate verified
 * against [cluster] ca_file (or the system's anchors) and its name or IP.
 * Blocking, within the socket's timeouts. Returns 0, or -1 with a reason
 * printed. */
static int
tls_wrap(struct rconn *c, const struct kv_cluster *cl)
{
	unsigned char ip[16];
	long vr;
	int numeric = inet_pton(AF_INET, cl->redis_host, ip) == 1 ||
	    inet_pton(AF_INET6, cl->redis_host, ip) == 1;

	/* the master's set-up (common/tls_client.h), auto-retry off */
	if ((c->ctx = kv_tls_client_ctx(cl->ca_file[0] ? cl->ca_file : NULL, NULL, 0)) == NULL ||
	    (c->ssl = SSL_new(c->ctx)) == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
	    kv_tls_expect_host(c->ssl, cl->redis_host, numeric) != 0) {
		fprintf(stderr, "kvctl: cannot set up TLS to Redis%s%s\n",
		    cl->ca_file[0] ? " with ca_file " : "", cl->ca_file);
		ERR_clear_error();
		return -1;
	}
	if (SSL_connect(c->ssl) == 1)
		return 0;
	vr = SSL_get_verify_result(c->ssl);
	fprintf(stderr, "kvctl: TLS to Redis %s:%s failed: %s\n", cl->redis_host,
	    cl->redis_port, vr != X509_V_OK ? X509_verify_cert_error_string(vr) :
	    "the handshake did not complete");
	ERR_clear_error();
	return -1;
}

static ssize_t
io_send(struct rconn *c, const char *p, size_t n)
{
	if (c->ssl != NULL) {
		int w = SSL_write(c->ssl, p, (int)n);

		return w > 0 ? w : (errno = EIO, -1);
	}
	return send(c->fd, p, n, MSG_NOSIGNAL);
}

static ssize_t
io_recv(struct rconn *c, char *p, size_t n)
{
	/* a ticket or KeyUpdate ends a read (no auto-retry): read on, but
	 * not past the socket's timeout from now */
	int64_t until = kv_now_ms() + IO_TIMEOUT_S * 1000;

	while (c->ssl != NULL) {
		int r = SSL_read(c->ssl, p, (int)n);

		if (r > 0)
			return r;
		switch (SSL_get_error(c->ssl, r)) {
		case SSL_ERROR_ZERO_RETURN:
			return 0;
		case SSL_ERROR_WANT_READ:
			if (kv_now_ms() < until)
				continue;
			/* FALLTHROUGH */
		default:
			ERR_clear_error();
			errno = EIO;
			return -1;
		}
	}
	return recv(c->fd, p, n, 0);
}

static const struct kv_resp_value *call(struct rconn *c, int argc, const char *const *argv);

/* redis+sentinel://: ask each Sentinel in turn for the master's address
 * and put it in CL. Returns 0, or -1 with a reason printed. */
static int
ask_sentinels(struct kv_cluster *cl)
{
	const char *q[] = { "SENTINEL", "get-master-addr-by-name", cl->sentinel_master };
	const struct kv_resp_value *v;
	struct rconn s;
	struct kv_cluster one;
	int i, ok;

	for (i = 0; i < cl->nsentinels; i++) {
		one = *cl;
		one.redis_unix[0] = '\0';
		strcpy(one.redis_host, cl->sentinel_host[i]);
		strcpy(one.redis_port, cl->sentinel_port[i]);
		memset(&s, 0, sizeof(s));
		if ((s.fd = dial(&one)) == -1)
			continue;
		v = call(&s, 3, q);
		ok = v != NULL && v->type == KV_RESP_ARRAY && !v->nil && v->n == 2 &&
		    v->elem[0].len < sizeof(cl->redis_host) && v->elem[1].len < sizeof(cl->redis_port);
		if (ok) {
			memcpy(cl->redis_host, v->elem[0].str, v->elem[0].len);
			cl->redis_host[v->elem[0].len] = '\0';
			memcpy(cl->redis_port, v->elem[1].str, v->elem[1].len);
			cl->redis_port[v->elem[1].len] = '\0';
		}
		close(s.fd);
		free(s.buf);
		if (ok)
			return 0;
	}
	fprintf(stderr, "kvctl: no Sentinel named the master %s\n", cl->sentinel_master);
	return -1;
}

/* Send one command and wait for its reply (valid until the next call). */
static const struct kv_resp_value *
call(struct rconn *c, int argc, const char *const *argv)
{
	size_t lens[8], off = 0;
	char out[1024];
	long n;
	int i, rc;

	for (i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	if ((n = kv_resp_command(out, sizeof(out), argc, argv, lens)) < 0)
		return NULL;
	while (off < (size_t)n) {
		ssize_t w = io_send(c, out + off, (size_t)n - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return NULL;
		off += (size_t)w;
	}
	if (c->used > 0) {
		memmove(c->buf, c->buf + c->used, c->len - c->used);
		c->len -= c->used;
		c->used = 0;
	}
	while ((rc = kv_resp_parse(c->buf, c->len, &c->r, &c->used)) == 0) {
		ssize_t r;

		if (c->cap - c->len < 4096) {
			char *p = realloc(c->buf, c->cap ? c->cap * 2 : 65536);
			if (p == NULL || c->cap > (64u << 20))
				return NULL;
			c->buf = p;
			c->cap = c->cap ? c->cap * 2 : 65536;
		}
		r = io_recv(c, c->buf + c->len, c->cap - c->len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = ECONNRESET;
			return NULL;
		}
		c->len += (size_t)r;
	}
	return rc == 1 ? &c->r.nodes[0] : NULL;
}

static int
field_is(const struct kv_resp_value *v, const char *s)
{
	return v->type == KV_RESP_BULK && !v->nil && v->len == strlen(s) &&
	    memcmp(v->str, s, v->len) == 0;
}

static int64_t
num(const struct kv_resp_value *v)
{
	int64_t x = 0;

	return kv_resp_int(v, &x) == 0 ? x : 0;
}

/* The label of the account with id ID in this host's ledger, or "". */
static void
local_label(const struct kv_ledger *l, const char *id, char *label, size_t len)
{
	char kid[13];
	uint32_t k;

	label[0] = '\0';
	if (l == NULL || l->base == NULL)
		return;
	KV_FOR_EACH_SLOT(l, k) {
		if (!kv_slot_ready(&l->accounts[k].state))
			continue;
		kv_key_id(l->accounts[k].hash, kid);
		if (strcmp(kid, id) == 0) {
			snprintf(label, len, "%.*s", (int)sizeof(l->accounts[k].label) - 1,
			    l->accounts[k].label);
			return;
		}
	}
}

/* Field NAME of the key hash H: NAME's integer, or 0. */
static int64_t
key_field(const struct kv_resp_value *h, const char *name)
{
	size_t i;

	for (i = 0; i + 1 < h->n; i += 2)
		if (field_is(&h->elem[i], name))
			return num(&h->elem[i + 1]);
	return 0;
}

/* The u:/e:/z: fields of host HOST (N is its g: field) in the key hash H:
 * its spend, lease expiry and the zero of its last reset. */
static void
host_fields(const struct kv_resp_value *h, const struct kv_resp_value *n, const char *host,
    int64_t *u, int64_t *e, int64_t *z)
{
	size_t j;

	*u = *e = *z = 0;
	for (j = 0; j + 1 < h->n; j += 2) {
		const struct kv_resp_value *m = &h->elem[j];

		if (m->len != n->len || memcmp(m->str + 2, host, n->len - 2) != 0 ||
		    m->str[1] != ':')
			continue;
		if (m->str[0] == 'u')
			*u = num(&h->elem[j + 1]);
		else if (m->str[0] == 'e')
			*e = num(&h->elem[j + 1]);
		else if (m->str[0] == 'z')	/* its zero: the last reset */
			*z = num(&h->elem[j + 1]);
	}
}

static void
print_host(FILE *f, char *host, int64_t g, int64_t u, int64_t e, int64_t z,
    int64_t now, int json, int first)
{
	char lease[32], spent[32];

	if (json) {
		fprintf(f, "%s{\"host\":", first ? "" : ",");
		kv_json_write_string(f, host);
		fprintf(f, ",\"granted_nusd\":%" PRId64 ",\"spent_nusd\":%" PRId64
		    ",\"lease_nusd\":%" PRId64 ",\"expires_ms\":%" PRId64
		    ",\"expired\":%s}", g - z, u - z, g > u ? g - u : 0, e,
		    e <= now ? "true" : "false");
		return;
	}
	kvctl_format_money(g > u ? g - u : 0, lease, sizeof(lease));
	kvctl_format_money(u - z, spent, sizeof(spent));
	kvctl_printable(host);
	fprintf(f, "    host %-20s lease %s  spent %s  %s %.1f s\n", host, lease, spent,
	    e <= now ? "expired" : "expires in", (double)(e > now ? e - now : now - e) / 1000);
}

static void
print_key_head(FILE *f, const char *key, const char *id, const char *label,
    const struct kv_resp_value *h, int json, int first)
{
	int64_t budget = key_field(h, "budget"), spent = key_field(h, "S"),
	    committed = key_field(h, "C"), retired = key_field(h, "R");
	char money[3][32];

	if (json) {
		fprintf(f, "%s{\"id\":\"%s\",\"label\":", first ? "" : ",", id);
		if (label[0] != '\0')
			kv_json_write_string(f, label);
		else
			fputs("null", f);
		fprintf(f, ",\"period\":%s,\"budget_nusd\":%" PRId64 ",\"spent_nusd\":%"
		    PRId64 ",\"committed_nusd\":%" PRId64 ",\"retired_nusd\":%" PRId64
		    ",\"hosts\":[", strrchr(key, ':') + 1, budget, spent, committed, retired);
		return;
	}
	kvctl_format_money(budget, money[0], sizeof(money[0]));
	kvctl_format_money(spent, money[1], sizeof(money[1]));
	kvctl_format_money(committed, money[2], sizeof(money[2]));
	fprintf(f, "%s %-16s budget %s  spent %s  committed %s\n", id,
	    label[0] ? label : "-", money[0], money[1], money[2]);
}

/* One key's hash (HGETALL reply) as a JSON object or a table block. */
static void
print_key(FILE *f, const char *key, const struct kv_resp_value *h,
    const struct kv_ledger *l, int64_t now, int json, int first)
{
	char id[13], label[KV_LABEL_MAX], host[80];
	int64_t u, e, z;
	size_t i, nh = 0;

	memcpy(id, key + 3, 12);
	id[12] = '\0';
	local_label(l, id, label, sizeof(label));
	print_key_head(f, key, id, label, h, json, first);
	for (i = 0; i + 1 < h->n; i += 2) {
		const struct kv_resp_value *n = &h->elem[i];

		if (n->type != KV_RESP_BULK || n->len < 3 || memcmp(n->str, "g:", 2) != 0 ||
		    n->len - 2 >= sizeof(host))
			continue;
		memcpy(host, n->str + 2, n->len - 2);
		host[n->len - 2] = '\0';
		host_fields(h, n, host, &u, &e, &z);
		print_host(f, host, num(&h->elem[i + 1]), u, e, z, now, json, nh++ == 0);
	}
	if (json)
		fputc(']', f);
}

/* The value of field PREFIX HOST in HGETALL reply H (0 when absent). */
static int64_t
hval(const struct kv_resp_value *h, const char *prefix, const char *host)
{
	size_t i, pl = strlen(prefix), hl = strlen(host);

	for (i = 0; i + 1 < h->n; i += 2) {
		const struct kv_resp_value *n = &h->elem[i];

		if (n->type == KV_RESP_BULK && n->len == pl + hl &&
		    memcmp(n->str, prefix, pl) == 0 && memcmp(n->str + pl, host, hl) == 0)
			return num(&h->elem[i + 1]);
	}
	return 0;
}

/* Each host's rate leases of a key, from its kv:HASH:rl reply H: unused
 * grant and cumulative use, for requests and tokens. */
static void
print_rates(FILE *f, const struct kv_resp_value *h, int64_t now, int json)
{
	size_t i, nh = 0;
	char host[80];

	for (i = 0; i + 1 < h->n; i += 2) {
		const struct kv_resp_value *n = &h->elem[i];
		int64_t rg, ru, tg, tu, e;

		if (n->type != KV_RESP_BULK || n->len < 4 || memcmp(n->str, "le:", 3) != 0 ||
		    n->len - 3 >= sizeof(host))
			continue;
		memcpy(host, n->str + 3, n->len - 3);
		host[n->len - 3] = '\0';
		e = num(&h->elem[i + 1]);
		rg = hval(h, "rg:", host), ru = hval(h, "ru:", host);
		tg = hval(h, "tg:", host), tu = hval(h, "tu:", host);
		if (json) {
			fprintf(f, "%s{\"host\":", nh ? "," : ",\"rate_hosts\":[");
			kv_json_write_string(f, host);
			fprintf(f, ",\"requests_lease\":%" PRId64 ",\"requests_used\":%" PRId64
			    ",\"tokens_lease\":%" PRId64 ",\"tokens_used\":%" PRId64
			    ",\"expired\":%s}", rg > ru ? rg - ru : 0, ru, tg > tu ? tg - tu : 0,
			    tu, e <= now ? "true" : "false");
		} else {
			kvctl_printable(host);
			fprintf(f, "    rate %-20s requests leased %" PRId64 " (used %" PRId64
			    ")  tokens leased %" PRId64 " (used %" PRId64 ")%s\n", host,
			    rg > ru ? rg - ru : 0, ru, tg > tu ? tg - tu : 0, tu,
			    e <= now ? "  expired" : "");
		}
		nh++;
	}
	if (json && nh > 0)
		fputc(']', f);
}

static int
print_hosts(FILE *f, struct rconn *c, int64_t now, int json)
{
	const char *hg[] = { "HGETALL", KV_REDIS_HOSTS };
	const struct kv_resp_value *v = call(c, 2, hg);
	size_t i;
	char host[80];

	if (v == NULL || v->type != KV_RESP_ARRAY)
		return -1;
	fputs(json ? "\"hosts\":[" : "hosts:", f);
	for (i = 0; i + 1 < v->n; i += 2) {
		size_t n = v->elem[i].len < sizeof(host) ? v->elem[i].len : sizeof(host) - 1;
		int64_t seen = num(&v->elem[i + 1]);

		memcpy(host, v->elem[i].str, n);
		host[n] = '\0';
		if (json) {
			fputs(i ? ",{\"host\":" : "{\"host\":", f);
			kv_json_write_string(f, host);
			fprintf(f, ",\"last_sync_ms\":%" PRId64 "}", seen);
		} else {
			kvctl_printable(host);
			fprintf(f, " %s (synced %.1f s ago)", host, (double)(now - seen) / 1000);
		}
	}
	fputs(json ? "]" : "\n", f);
	return 0;
}

/* Every kv:* key: SCAN, then HGETALL each (each one atomic). */
static int
print_keys(FILE *f, struct rconn *c, const struct kv_ledger *l, int64_t now, int json)
{
	char cursor[32] = "0", **keys = NULL;
	size_t nkeys = 0, i;
	const struct kv_resp_value *v;
	int rc = 0, first = 1;

	do {
		const char *scan[] = { "SCAN", cursor, "MATCH", KV_REDIS_KEYS_MATCH, "COUNT", "1000" };

		if ((v = call(c, 6, scan)) == NULL || v->type != KV_RESP_ARRAY || v->n != 2 ||
		    v->elem[0].len >= sizeof(cursor))
			goto fail;
		memcpy(cursor, v->elem[0].str, v->elem[0].len);
		cursor[v->elem[0].len] = '\0';
		for (i = 0; i < v->elem[1].n && nkeys < MAX_KEYS; i++) {
			const struct kv_resp_value *k = &v->elem[1].elem[i];
			char **p = realloc(keys, (nkeys + 1) * sizeof(*keys));

			if (p == NULL)
				goto fail;
			keys = p;
			if ((keys[nkeys] = strndup(k->str, k->len)) == NULL)
				goto fail;
			nkeys++;
		}
	} while (strcmp(cursor, "0") != 0);
	fputs(json ? ",\"keys\":[" : "", f);
	for (i = 0; i < nkeys; i++) {
		const char *hg[] = { "HGETALL", keys[i] };
		char rk[128];
		const char *rh[] = { "HGETALL", rk };
		size_t kl = strlen(keys[i]);

		/* kv:HASH:rl holds the rate-limit buckets, not a budget period */
		if (kl < 16 ||
		    strcmp(keys[i] + kl - strlen(KV_REDIS_RATE_SUFFIX), KV_REDIS_RATE_SUFFIX) == 0 ||
		    (v = call(c, 2, hg)) == NULL || v->type != KV_RESP_ARRAY)
			continue;
		print_key(f, keys[i], v, l, now, json, first);
		first = 0;
		/* the rate leases live in kv:HASH:rl, beside the period hash */
		snprintf(rk, sizeof(rk), "%.*s" KV_REDIS_RATE_SUFFIX,
		    (int)(strchr(keys[i] + strlen(KV_REDIS_PREFIX), ':') -
		    keys[i]), keys[i]);
		if ((v = call(c, 2, rh)) != NULL && v->type == KV_RESP_ARRAY)
			print_rates(f, v, now, json);
		if (json)
			fputc('}', f);
	}
	fputs(json ? "]" : "", f);
	goto out;
fail:
	rc = -1;
out:
	for (i = 0; i < nkeys; i++)
		free(keys[i]);
	free(keys);
	return rc;
}

/* Reach the Redis of [cluster] CC on C: through its Sentinels when it
 * names them, over TLS for rediss://, logged in when it has a password.
 * 0, or -1 with the reason on stderr. */
static int
redis_connect(struct rconn *c, struct kv_cluster *cc)
{
	const struct kv_resp_value *v;
	const char *auth[] = { "AUTH", cc->password, NULL };
	int argc = 2;

	if (cc->nsentinels > 0 && ask_sentinels(cc) == -1)
		return -1;
	if ((c->fd = dial(cc)) == -1) {
		fprintf(stderr, "kvctl: cannot reach Redis: %s\n", strerror(errno));
		return -1;
	}
	if (cc->redis_tls && tls_wrap(c, cc) == -1)
		return -1;
	if (cc->password == NULL)
		return 0;
	if (cc->user[0] != '\0') {	/* AUTH user password */
		auth[1] = cc->user;
		auth[2] = cc->password;
		argc = 3;
	}
	if ((v = call(c, argc, auth)) == NULL || v->type == KV_RESP_ERROR) {
		fprintf(stderr, "kvctl: Redis refused AUTH\n");
		return -1;
	}
	return 0;
}

int
kvctl_cluster(const char *config, const struct kv_ledger *l, int json)
{
	static struct rconn c;
	struct kv_config *cf = calloc(1, sizeof(*cf));
	const struct kv_resp_value *v;
	const char *tm[] = { "TIME" };
	char err[1024];
	int64_t now;
	int rc = KVCTL_EXIT_USAGE;

	if (cf == NULL || kv_config_load(cf, config, err, sizeof(err)) == -1) {
		fprintf(stderr, "kvctl: %s\n", cf ? err : "out of memory");
		free(cf);
		return KVCTL_EXIT_USAGE;
	}
	if (!cf->cluster.enabled) {
		fprintf(stderr, "kvctl: %s has no [cluster] section\n", config);
		goto out;
	}
	if (redis_connect(&c, &cf->cluster) == -1)
		goto out;
	if ((v = call(&c, 1, tm)) == NULL || v->type != KV_RESP_ARRAY || v->n != 2) {
		fprintf(stderr, "kvctl: Redis: no TIME: %s\n", strerror(errno));
		goto out;
	}
	now = num(&v->elem[0]) * 1000 + num(&v->elem[1]) / 1000;
	if (json)
		fprintf(stdout, "{\"now_ms\":%" PRId64 ",", now);
	if (print_hosts(stdout, &c, now, json) == -1 || print_keys(stdout, &c, l, now, json) == -1) {
		fprintf(stderr, "kvctl: Redis: read failed: %s\n", strerror(errno));
		goto out;
	}
	if (json)
		fputs("}\n", stdout);
	rc = KVCTL_EXIT_OK;
out:
	SSL_free(c.ssl);
	SSL_CTX_free(c.ctx);
	if (c.fd > 0)
		close(c.fd);
	free(c.buf);
	kv_config_free(cf);
	free(cf);
	return rc;
}

int
kvctl_cluster_reset(struct kv_ledger *l, struct kv_account **as, size_t n)
{
	struct timespec ts = { 0, 50 * 1000000L };
	int64_t before = 0;
	size_t i, pending = n;
	int tries;
	char money[32];

	for (i = 0; i < n; i++) {
		before += kv_account_spent(as[i]);
		kv_lease_reset_ask(as[i]);
	}
	/* The master clears the flag once Redis has done the reset (its next
	 * sync, within half a second); a Redis reply can take 3 s. */
	for (tries = 0; tries < 100 && pending > 0; tries++) {
		(void)nanosleep(&ts, NULL);
		for (i = pending = 0; i < n; i++)
			if (kv_lease_reset_asked(as[i]))
				pending++;
	}
	if (pending > 0) {
		for (i = 0; i < n; i++)
			kv_lease_reset_done(as[i]);
		fprintf(stderr, "kvctl: KV0850: reset not done: this host leases budgets from "
		    "Redis ([cluster]), so a key's spend is reset on every host at once, by "
		    "this host's master; it did not confirm within 5 s. Is kilovoltd running "
		    "and is Redis reachable (kvctl -c CONFIG cluster)? Nothing was reset; "
		    "retry once it is, or raise the budget with kvctl budget.\n");
		return KVCTL_EXIT_USAGE;
	}
	kvctl_format_money(before, money, sizeof(money));
	printf("reset %zu key%s on every host of the cluster (spent here was %s); each "
	    "host clears its spend at its next sync with Redis, within a second\n", n,
	    n == 1 ? "" : "s", money);
	return KVCTL_EXIT_OK;
}

/* hostile_tls: a TLS 1.3 server that floods its peer with records that
 * carry no data, for the tests that a peer cannot make a kilovolt process
 * spin (issue 34). OpenSSL does the handshake and reads the request; every
 * record after that is sealed here, by hand (RFC 8446 §5.2, §7.1-7.3), so
 * the server can send what OpenSSL's own server never would: empty
 * application-data records, KeyUpdates or session tickets back to back.
 * It shares no code with kilovolt's record layer.
 *
 * Usage: hostile_tls -P PORTFILE -c CHAIN -k KEY -m MODE [-d SECS] [-b] [-L LOG]
 *   Listens on an ephemeral 127.0.0.1 port (written to PORTFILE) and serves
 *   each connection in a child process: the TLS 1.3 handshake
 *   (TLS_AES_128_GCM_SHA256, no tickets of OpenSSL's), the request head
 *   and its Content-Length body, then a close-delimited text/event-stream
 *   answer: its head and a first event in one record, SECS seconds
 *   (default 5) of MODE's records as fast as the socket takes them, a last
 *   event, close_notify.
 *   MODE: empty (empty application-data records), keyupdate (KeyUpdate,
 *         update_not_requested, the write key moving on each time),
 *         tickets (NewSessionTicket messages, one a record),
 *         badheader (a plaintext handshake record header: TLS 1.3 allows
 *         none once the handshake is over)
 *   -b    flood before the answer's head instead of after the first event
 *   -L    append one line per connection to LOG: "mode=M flood=N end=E",
 *         N the flood's records sent, E "done" (all sent) or "cut" (the
 *         peer closed or reset first)
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ssl.h>

#define LIFE_S	120	/* a child never outlives this */

enum mode { M_EMPTY, M_KEYUPDATE, M_TICKETS, M_BADHEADER };

/* The server's write direction, TLS_AES_128_GCM_SHA256. */
struct wdir {
	uint8_t secret[32], key[16], iv[12];
	uint64_t seq;
	int have;
};

static struct wdir wd;		/* one connection per child */
static enum mode mode;
static double flood_s = 5;
static int flood_first;
static const char *log_path;

/* HKDF-Expand-Label with SHA-256 for an output of at most 32 bytes: one
 * HMAC block (RFC 5869 §2.3, RFC 8446 §7.1), empty context. */
static int
expand_label(const uint8_t *secret, const char *label, uint8_t *out, size_t n)
{
	uint8_t info[64], t[32];
	size_t ll = 6 + strlen(label), k = 0;
	unsigned int tl = 0;

	info[k++] = 0;
	info[k++] = (uint8_t)n;
	info[k++] = (uint8_t)ll;
	memcpy(info + k, "tls13 ", 6);
	memcpy(info + k + 6, label, strlen(label));
	k += ll;
	info[k++] = 0;			/* no context */
	info[k++] = 1;			/* T(1) */
	if (HMAC(EVP_sha256(), secret, 32, info, k, t, &tl) == NULL || tl != 32)
		return -1;
	memcpy(out, t, n);
	return 0;
}

static int
dir_keys(struct wdir *d)
{
	d->seq = 0;
	return expand_label(d->secret, "key", d->key, 16) == 0 &&
	    expand_label(d->secret, "iv", d->iv, 12) == 0 ? 0 : -1;
}

/* The server's application traffic secret, from OpenSSL's key log. */
static void
keylog(const SSL *ssl, const char *line)
{
	const char *tag = "SERVER_TRAFFIC_SECRET_0 ";
	const char *hex;
	size_t i;

	(void)ssl;
	if (strncmp(line, tag, strlen(tag)) != 0 || (hex = strrchr(line, ' ')) == NULL ||
	    strlen(hex + 1) != 64)
		return;
	for (i = 0; i < 32; i++) {
		unsigned v;

		if (sscanf(hex + 1 + 2 * i, "%2x", &v) != 1)
			return;
		wd.secret[i] = (uint8_t)v;
	}
	wd.have = dir_keys(&wd) == 0;
}

static int
write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Records sealed and not yet sent: the flood goes out 64 KB a send, so
 * that the peer, which reads a record at a time, is the slower side. */
static uint8_t out[65536 + 5 + 16384 + 1 + 16];
static size_t olen;

static int
flush_out(int fd)
{
	int r = write_all(fd, out, olen);

	olen = 0;
	return r;
}

/* Seals LEN bytes of TYPE into one record after what is held; sends what
 * is held once it reaches 64 KB, or at once with NOW. */
static int
seal(int fd, uint8_t type, const void *in, size_t len, int now)
{
	static EVP_CIPHER_CTX *c;
	uint8_t nonce[12], *rec = out + olen, *p = rec + 5;
	size_t body = len + 1 + 16;
	int outl, ok;

	/* keyed once per key (wd.seq 0 after dir_keys), the nonce per record:
	 * the flood is sealed faster than the peer can open it */
	if ((c == NULL && (c = EVP_CIPHER_CTX_new()) == NULL) || len > 16384 ||
	    (wd.seq == 0 && EVP_EncryptInit_ex(c, EVP_aes_128_gcm(), NULL, wd.key, NULL) != 1))
		return -1;
	memcpy(nonce, wd.iv, 12);
	for (int i = 0; i < 8; i++)
		nonce[11 - i] ^= (uint8_t)(wd.seq >> (8 * i));
	rec[0] = 23, rec[1] = 3, rec[2] = 3;
	rec[3] = (uint8_t)(body >> 8), rec[4] = (uint8_t)body;
	memcpy(p, in, len);
	p[len] = type;
	ok = EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce) == 1 &&
	    EVP_EncryptUpdate(c, NULL, &outl, rec, 5) == 1 &&
	    EVP_EncryptUpdate(c, p, &outl, p, (int)len + 1) == 1 &&
	    EVP_EncryptFinal_ex(c, p + outl, &outl) == 1 &&
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, p + len + 1) == 1;
	wd.seq++;
	if (!ok)
		return -1;
	olen += 5 + body;
	return now || olen >= 65536 ? flush_out(fd) : 0;
}

/* One record of the flood. */
static int
flood_one(int fd, uint32_t i)
{
	static const uint8_t ku[5] = { 24, 0, 0, 1, 0 };
	uint8_t t[4 + 4 + 4 + 1 + 8 + 2 + 32 + 2];
	size_t k = 0;

	switch (mode) {
	case M_EMPTY:
		return seal(fd, 23, "", 0, 0);
	case M_KEYUPDATE:
		if (seal(fd, 22, ku, sizeof ku, 0) == -1 ||
		    expand_label(wd.secret, "traffic upd", wd.secret, 32) == -1)
			return -1;
		return dir_keys(&wd);
	case M_TICKETS:
		t[k++] = 4;			/* new_session_ticket */
		t[k++] = 0, t[k++] = 0, t[k++] = (uint8_t)(sizeof t - 4);
		memcpy(t + k, "\0\0\x1c\x20", 4), k += 4;	/* lifetime 7200 s */
		memcpy(t + k, &i, 4), k += 4;			/* age_add */
		t[k++] = 8;
		memset(t + k, 0, 4), memcpy(t + k + 4, &i, 4), k += 8;	/* nonce */
		t[k++] = 0, t[k++] = 32;
		memset(t + k, 0x5a, 28), memcpy(t + k + 28, &i, 4), k += 32;	/* the ticket */
		t[k++] = 0, t[k++] = 0;				/* no extensions */
		return seal(fd, 22, t, k, 0);
	case M_BADHEADER:
		if (flush_out(fd) == -1)
			return -1;
		return write_all(fd, (const uint8_t *)"\x16\x03\x03\x00\x05hello", 10);
	}
	return -1;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* flood_s seconds of MODE's records; the count sent, negated when the
 * peer went first. */
static long
flood(int fd)
{
	double end = now_s() + flood_s;
	long n = 0;

	while (now_s() < end) {
		if (flood_one(fd, (uint32_t)n) == -1)
			return -n - 1;
		n++;
	}
	return flush_out(fd) == -1 ? -n - 1 : n;
}

/* Reads the request head and its Content-Length body through OpenSSL. */
static int
read_request(SSL *ssl)
{
	char buf[65536], *end, *cl;
	size_t have = 0, want = 0;
	int r;

	for (;;) {
		if (have == sizeof buf - 1)
			return -1;
		if ((r = SSL_read(ssl, buf + have, (int)(sizeof buf - 1 - have))) <= 0)
			return -1;
		have += (size_t)r;
		buf[have] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) == NULL)
			continue;
		if (want == 0) {
			cl = strcasestr(buf, "\r\ncontent-length:");
			want = (size_t)(end + 4 - buf) +
			    (cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
		}
		if (have >= want)
			return 0;
	}
}

static void
log_line(long sent)
{
	static const char *names[] = { "empty", "keyupdate", "tickets", "badheader" };
	FILE *f;

	if (log_path == NULL || (f = fopen(log_path, "a")) == NULL)
		return;
	fprintf(f, "mode=%s flood=%ld end=%s\n", names[mode], sent < 0 ? -sent - 1 : sent,
	    sent < 0 ? "cut" : "done");
	fclose(f);
}

/* The answer: head and first event, the flood (or the flood first), the
 * last event, close_notify. */
static void
answer(int fd)
{
	static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	    "Connection: close\r\n\r\ndata: {\"first\":true}\n\n";
	static const char last[] = "data: {\"last\":true}\n\ndata: [DONE]\n\n";
	static const uint8_t close_notify[2] = { 1, 0 };
	long sent = 0;

	if (flood_first && (sent = flood(fd)) < 0)
		goto out;
	if (seal(fd, 23, head, sizeof head - 1, 1) == -1) {
		sent = -sent - 1;
		goto out;
	}
	if (!flood_first && (sent = flood(fd)) < 0)
		goto out;
	if (seal(fd, 23, last, sizeof last - 1, 0) == -1 ||
	    seal(fd, 21, close_notify, sizeof close_notify, 1) == -1)
		sent = -sent - 1;
out:
	log_line(sent);
}

static void __attribute__((noreturn))
serve(SSL_CTX *ctx, int fd)
{
	SSL *ssl = SSL_new(ctx);

	alarm(LIFE_S);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);	/* the harness stops the parent */
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_accept(ssl) != 1 || !wd.have ||
	    read_request(ssl) == -1) {
		ERR_print_errors_fp(stderr);
		_exit(1);
	}
	/* OpenSSL sent nothing after the handshake (no tickets): the write
	 * direction's sequence is still 0, and from here it is ours alone */
	answer(fd);
	shutdown(fd, SHUT_WR);
	_exit(0);
}

static SSL_CTX *
context(const char *chain, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256") != 1 ||
	    SSL_CTX_set_num_tickets(ctx, 0) != 1 ||
	    SSL_CTX_use_certificate_chain_file(ctx, chain) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		ERR_print_errors_fp(stderr);
		return NULL;
	}
	SSL_CTX_set_keylog_callback(ctx, keylog);
	return ctx;
}

/* A listening socket on an ephemeral loopback port, the port in PATH
 * (written whole, then renamed). */
static int
listen_on(const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof a;
	char tmp[4096];
	FILE *f;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd == -1 || bind(fd, (struct sockaddr *)&a, sizeof a) == -1 || listen(fd, 64) == -1 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) == -1)
		return -1;
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if ((f = fopen(tmp, "w")) == NULL)
		return -1;
	fprintf(f, "%d\n", ntohs(a.sin_port));
	if (fclose(f) != 0 || rename(tmp, path) == -1)
		return -1;
	return fd;
}

static int
parse_args(int argc, char **argv, const char **port, const char **chain, const char **key)
{
	int o;

	while ((o = getopt(argc, argv, "P:c:k:m:d:bL:")) != -1) {
		switch (o) {
		case 'P': *port = optarg; break;
		case 'c': *chain = optarg; break;
		case 'k': *key = optarg; break;
		case 'd': flood_s = atof(optarg); break;
		case 'b': flood_first = 1; break;
		case 'L': log_path = optarg; break;
		case 'm':
			if (strcmp(optarg, "empty") == 0)
				mode = M_EMPTY;
			else if (strcmp(optarg, "keyupdate") == 0)
				mode = M_KEYUPDATE;
			else if (strcmp(optarg, "tickets") == 0)
				mode = M_TICKETS;
			else if (strcmp(optarg, "badheader") == 0)
				mode = M_BADHEADER;
			else
				return -1;
			break;
		default:
			return -1;
		}
	}
	return *port != NULL && *chain != NULL && *key != NULL ? 0 : -1;
}

int
main(int argc, char **argv)
{
	const char *port = NULL, *chain = NULL, *key = NULL;
	SSL_CTX *ctx;
	int lfd, fd;

	if (parse_args(argc, argv, &port, &chain, &key) == -1) {
		fprintf(stderr, "usage: hostile_tls -P PORTFILE -c CHAIN -k KEY "
		    "-m empty|keyupdate|tickets|badheader [-d SECS] [-b] [-L LOG]\n");
		return 2;
	}
	signal(SIGCHLD, SIG_IGN);	/* children are not waited for */
	if ((ctx = context(chain, key)) == NULL || (lfd = listen_on(port)) == -1) {
		perror("hostile_tls");
		return 1;
	}
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("hostile_tls: accept");
			return 1;
		}
		pid_t pid = fork();

		if (pid == 0) {
			close(lfd);
			serve(ctx, fd);
		}
		if (pid == -1)
			perror("hostile_tls: fork");
		close(fd);
	}
}

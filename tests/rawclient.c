/* rawclient: a TCP client for the hostile-input tests, which curl cannot be:
 * it sends bytes verbatim (NULs, bare CR, broken framing), optionally one at
 * a time, can refuse to read, and says how the connection ended.
 *
 * Usage: rawclient [-t SECS] [-d MS] [-n] [-p MS] [-r BYTES] [-W FILE] PORT [FILE]
 *        rawclient -l PORTFILE [-t SECS]
 *   Connects to 127.0.0.1:PORT and sends FILE's bytes (default: stdin; an
 *   empty file sends nothing), then prints what comes back on stdout until
 *   the peer closes or SECS (default 10, decimals allowed) have passed since
 *   the connection was made.
 *   -d MS     send one byte every MS milliseconds (slow-loris); the peer
 *             closing meanwhile ends the run
 *   -n        never read: wait for the peer to close or reset (a client that
 *             does not read its response)
 *   -p MS     pause MS milliseconds after sending before reading (a client
 *             that falls behind, so the response piles up in the gateway)
 *   -r BYTES  SO_RCVBUF, set before connecting
 *   -W FILE   connect, then wait until FILE exists before sending
 *   -l PORTFILE  tap mode: listen on an ephemeral 127.0.0.1 port (written to
 *             PORTFILE), accept any number of connections, never answer,
 *             copy every byte received to stdout, for SECS seconds; a
 *             stand-in upstream that proves nothing reached it
 *
 * On stderr, one last line: "rawclient: end=E ms=N sent=N recv=N", where E
 * is eof (orderly close), reset (RST), timeout (still open after SECS) or
 * error; ms counts from the connection being made.
 * Exit status: 0 when the peer ended the connection (eof or reset), 3 on
 * timeout, 1 on errors (cannot connect, bad usage).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_INPUT	(64 * 1024 * 1024)

enum end { END_NONE, END_EOF, END_RESET, END_TIMEOUT, END_ERROR };

static const char *const end_names[] = { "none", "eof", "reset", "timeout", "error" };

struct opts {
	double		 secs;
	long		 delay_ms;
	int		 no_read;
	long		 pause_ms;
	int		 rcvbuf;
	const char	*wait_file;
	const char	*tap_file;
	int		 port;
	const char	*input;
};

struct run {
	int		 fd;
	int64_t		 t0_ms;
	int64_t		 deadline_ms;
	char		*data;
	size_t		 len, sent;
	uint64_t	 recv;
	enum end	 end;
};

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
left_ms(const struct run *r)
{
	int64_t left = r->deadline_ms - now_ms();

	return left < 0 ? 0 : (int)left;
}

static void
usage(void)
{
	fprintf(stderr, "usage: rawclient [-t SECS] [-d MS] [-n] [-p MS] [-r BYTES] "
	    "[-W FILE] PORT [FILE]\n       rawclient -l PORTFILE [-t SECS]\n");
	exit(1);
}

static void
parse_opts(int argc, char **argv, struct opts *o)
{
	int ch;

	memset(o, 0, sizeof(*o));
	o->secs = 10;
	while ((ch = getopt(argc, argv, "t:d:np:r:W:l:")) != -1) {
		switch (ch) {
		case 't': o->secs = strtod(optarg, NULL); break;
		case 'd': o->delay_ms = strtol(optarg, NULL, 10); break;
		case 'n': o->no_read = 1; break;
		case 'p': o->pause_ms = strtol(optarg, NULL, 10); break;
		case 'r': o->rcvbuf = atoi(optarg); break;
		case 'W': o->wait_file = optarg; break;
		case 'l': o->tap_file = optarg; break;
		default: usage();
		}
	}
	if (o->secs <= 0 || o->delay_ms < 0 || o->pause_ms < 0)
		usage();
	if (o->tap_file != NULL)
		return;
	if (optind >= argc)
		usage();
	o->port = atoi(argv[optind]);
	o->input = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (o->port <= 0 || o->port > 65535)
		usage();
}

/* The whole input in memory: the tests send at most a few hundred KB. */
static int
read_input(const char *path, char **data, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap), *nb;
	ssize_t got;
	int fd = path == NULL ? 0 : open(path, O_RDONLY | O_CLOEXEC);

	if (buf == NULL || fd == -1)
		goto fail;
	while ((got = read(fd, buf + n, cap - n)) != 0) {
		if (got == -1 && errno == EINTR)
			continue;
		if (got == -1)
			goto fail;
		n += (size_t)got;
		if (n == cap) {
			if (cap >= MAX_INPUT || (nb = realloc(buf, cap * 2)) == NULL)
				goto fail;
			buf = nb;
			cap *= 2;
		}
	}
	if (fd != 0)
		close(fd);
	*data = buf;
	*len = n;
	return 0;
fail:
	perror(path != NULL ? path : "stdin");
	if (fd > 0)
		close(fd);
	free(buf);
	return -1;
}

static int
connect_to(const struct opts *o)
{
	struct sockaddr_in sa;
	int fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		perror("socket");
		return -1;
	}
	if (o->rcvbuf > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o->rcvbuf, sizeof(o->rcvbuf)) == -1)
		perror("setsockopt(SO_RCVBUF)");
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)o->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		perror("connect");
		close(fd);
		return -1;
	}
	if (fcntl(fd, F_SETFL, O_NONBLOCK) == -1) {
		perror("fcntl");
		close(fd);
		return -1;
	}
	return fd;
}

/* Read what is there; sets r->end when the peer ended the connection. */
static void
drain(struct run *r)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		n = read(r->fd, buf, sizeof(buf));
		if (n > 0) {
			r->recv += (uint64_t)n;
			if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n) {
				r->end = END_ERROR;
				return;
			}
			continue;
		}
		if (n == 0)
			r->end = END_EOF;
		else if (errno == ECONNRESET || errno == EPIPE)
			r->end = END_RESET;
		else if (errno != EAGAIN && errno != EINTR)
			r->end = END_ERROR;
		return;
	}
}

/* Without reading: POLLRDHUP is the peer's FIN, POLLERR/POLLHUP its RST. */
static void
peek_end(struct run *r, short revents)
{
	int err = 0;
	socklen_t elen = sizeof(err);

	if (revents & (POLLERR | POLLHUP)) {
		(void)getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &elen);
		r->end = err == 0 || err == ECONNRESET || err == EPIPE ? END_RESET : END_ERROR;
	} else if (revents & POLLRDHUP)
		r->end = END_EOF;
}

/* Wait up to ms for the peer; reads (or only watches) the socket. */
static void
wait_peer(struct run *r, const struct opts *o, int ms)
{
	struct pollfd p = { .fd = r->fd, .events = POLLRDHUP };
	int n;

	if (!o->no_read)
		p.events |= POLLIN;
	n = poll(&p, 1, ms);
	if (n == -1 && errno != EINTR) {
		perror("poll");
		r->end = END_ERROR;
		return;
	}
	if (n <= 0)
		return;
	if (o->no_read)
		peek_end(r, p.revents);
	else
		drain(r);
}

/* Write up to `max` bytes; a peer that left while we send ends the sending,
 * not the run: what it answered is still to be read. */
static int
send_some(struct run *r, size_t max)
{
	size_t want = r->len - r->sent;
	ssize_t n;

	if (want > max)
		want = max;
	n = send(r->fd, r->data + r->sent, want, MSG_NOSIGNAL);
	if (n > 0) {
		r->sent += (size_t)n;
		return 0;
	}
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

static void
send_all(struct run *r, const struct opts *o)
{
	struct pollfd p = { .fd = r->fd, .events = POLLOUT };

	while (r->sent < r->len && r->end == END_NONE && left_ms(r) > 0) {
		if (o->delay_ms > 0) {
			if (send_some(r, 1) == -1)
				return;
			wait_peer(r, o, o->delay_ms < left_ms(r) ? (int)o->delay_ms : left_ms(r));
			continue;
		}
		if (send_some(r, r->len - r->sent) == -1)
			return;
		if (r->sent < r->len) {
			p.events = POLLOUT;
			(void)poll(&p, 1, left_ms(r) < 100 ? left_ms(r) : 100);
			if (!o->no_read)
				drain(r);
		}
	}
}

static int
wait_for_file(struct run *r, const char *path)
{
	struct stat st;

	while (stat(path, &st) == -1) {
		if (left_ms(r) == 0)
			return -1;
		wait_peer(r, &(struct opts){ .no_read = 1 }, 20);
		if (r->end != END_NONE)
			return -1;
	}
	return 0;
}

#define TAP_MAX_CONNS	64

/* Listen on an ephemeral loopback port and publish it: written to a
 * temporary name first so a reader never sees half a number. */
static int
tap_listen(const char *portfile)
{
	struct sockaddr_in sa;
	socklen_t salen = sizeof(sa);
	char tmp[4096];
	FILE *f;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1 || listen(fd, 64) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen) == -1) {
		perror("tap: listen");
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", portfile);
	if ((f = fopen(tmp, "w")) == NULL || fprintf(f, "%d\n", ntohs(sa.sin_port)) < 0 ||
	    fclose(f) == EOF || rename(tmp, portfile) == -1) {
		perror(portfile);
		close(fd);
		return -1;
	}
	return fd;
}

/* One readable descriptor of the tap: a new connection or bytes. */
static void
tap_event(struct pollfd *p, int *n, int i, unsigned *conns, uint64_t *bytes)
{
	char buf[65536];
	ssize_t got;
	int fd;

	if (i == 0) {
		if ((fd = accept4(p[0].fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			return;
		(*conns)++;
		if (*n == TAP_MAX_CONNS) {
			close(fd);
			return;
		}
		p[*n].fd = fd;
		p[*n].events = POLLIN;
		(*n)++;
		return;
	}
	got = read(p[i].fd, buf, sizeof(buf));
	if (got > 0) {
		*bytes += (uint64_t)got;
		if (fwrite(buf, 1, (size_t)got, stdout) == (size_t)got)
			fflush(stdout);
		return;
	}
	close(p[i].fd);
	p[i] = p[--(*n)];
}

static int
tap(const struct opts *o)
{
	struct pollfd p[TAP_MAX_CONNS];
	int64_t deadline = now_ms() + (int64_t)(o->secs * 1000), left;
	unsigned conns = 0;
	uint64_t bytes = 0;
	int i, n = 1;

	if ((p[0].fd = tap_listen(o->tap_file)) == -1)
		return 1;
	p[0].events = POLLIN;
	while ((left = deadline - now_ms()) > 0) {
		if (poll(p, (nfds_t)n, (int)left) == -1 && errno != EINTR) {
			perror("tap: poll");
			return 1;
		}
		for (i = n - 1; i >= 0; i--)
			if (p[i].revents != 0)
				tap_event(p, &n, i, &conns, &bytes);
	}
	fprintf(stderr, "rawclient: tap connections=%u bytes=%llu\n", conns,
	    (unsigned long long)bytes);
	return 0;
}

int
main(int argc, char **argv)
{
	struct opts o;
	struct run r;

	signal(SIGPIPE, SIG_IGN);
	parse_opts(argc, argv, &o);
	if (o.tap_file != NULL)
		return tap(&o);
	memset(&r, 0, sizeof(r));
	if (read_input(o.input, &r.data, &r.len) == -1)
		return 1;
	if ((r.fd = connect_to(&o)) == -1)
		return 1;
	r.t0_ms = now_ms();
	r.deadline_ms = r.t0_ms + (int64_t)(o.secs * 1000);
	if (o.wait_file == NULL || wait_for_file(&r, o.wait_file) == 0)
		send_all(&r, &o);
	if (o.pause_ms > 0 && poll(NULL, 0, (int)o.pause_ms) == -1 && errno != EINTR)
		perror("poll");
	while (r.end == END_NONE && left_ms(&r) > 0)
		wait_peer(&r, &o, left_ms(&r));
	if (r.end == END_NONE)
		r.end = END_TIMEOUT;
	fflush(stdout);
	fprintf(stderr, "rawclient: end=%s ms=%lld sent=%zu recv=%llu\n", end_names[r.end],
	    (long long)(now_ms() - r.t0_ms), r.sent, (unsigned long long)r.recv);
	close(r.fd);
	free(r.data);
	return r.end == END_TIMEOUT ? 3 : r.end == END_ERROR ? 1 : 0;
}

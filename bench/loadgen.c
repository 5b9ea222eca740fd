/* loadgen: the benchmark's load generator.
 *
 * N concurrent keep-alive HTTP/1.1 connections to one HOST:PORT, each
 * sending the same request again and again, for a duration or a total
 * count. One thread, one epoll instance, level-triggered, one read per
 * event: the generator must cost little CPU on a 2-core machine that also
 * runs the proxy and the mock.
 *
 * Every response is verified: status 200, framing complete (Content-Length
 * reached, chunked terminator and trailer seen, or close for an unframed
 * body), a text/event-stream body ending in "data: [DONE]" (-s forces the
 * check), and at least -e bytes of body. Anything else is an error, counted
 * by kind, and the connection is reopened.
 *
 * Time to first byte runs from the request's start (the connect for the
 * first request on a connection, the first write after that) to the first
 * response byte; latency to the last. The chunk gap is the longest pause
 * between two reads that returned body bytes within one response.
 *
 * Usage: loadgen -p PORT [-a ADDR] [-c CONNS] [-d SECS | -n COUNT]
 *        [-m METHOD] [-u PATH] [-H "Name: value"]... [-b BODY | -f FILE]
 *        [-s] [-e MINBYTES] [-t TIMEOUT] [-l LABEL]
 * Prints one JSON line on stdout and one human line on stderr; exit 0 when
 * every request succeeded, 1 when any failed, 2 on bad usage.
 * loadgen --self-test checks the response parser and prints "N passed, N
 * failed".
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX	16384
#define READ_BUF	(256 * 1024)
#define TAIL_MAX	32
#define MAX_EVENTS	512
#define MAX_CONNS	60000
#define MAX_SAMPLES	(20 * 1000 * 1000)	/* 160 MB of latencies at most */
#define MAX_SECONDS	3600
#define TICK_MS		50

enum state { ST_IDLE, ST_CONNECTING, ST_SENDING, ST_HEAD, ST_BODY };
enum framing { FR_NONE, FR_LENGTH, FR_CHUNKED, FR_EOF };
enum chunk { CK_SIZE, CK_EXT, CK_DATA, CK_DATA_CR, CK_DATA_LF, CK_TRAILER };
enum err { E_CONNECT, E_STATUS, E_CLOSED, E_PARSE, E_TIMEOUT, E_INCOMPLETE, E_COUNT };

static const char *const err_names[E_COUNT] = {
	"connect", "status", "closed", "parse", "timeout", "incomplete",
};

struct conn {
	int		 fd;
	enum state	 st;
	int		 fresh;		/* connected for this request */
	uint32_t	 watch;		/* the events epoll has for it */
	size_t		 sent;
	char		 head[HEAD_MAX];
	size_t		 head_len;
	int		 status;
	int		 close_after;
	int		 sse;
	enum framing	 fr;
	uint64_t	 left;		/* Content-Length or chunk bytes left */
	enum chunk	 ck;
	int		 ck_digits;
	int		 ck_line_len;	/* trailer line length so far */
	uint64_t	 body_len;
	char		 tail[TAIL_MAX];
	size_t		 tail_len;
	int64_t		 t_start;
	int64_t		 t_first;
	int64_t		 t_last_data;
	int64_t		 max_gap;
};

struct opts {
	struct sockaddr_in addr;
	int		 conns;
	double		 seconds;
	long		 count;
	int		 force_sse;
	uint64_t	 min_body;
	double		 timeout;
	const char	*label;
	char		*req;		/* the whole request, built once */
	size_t		 req_len;
};

struct samples {
	int64_t		*ttfb;
	int64_t		*lat;
	int64_t		*gap;
	size_t		 n;
	size_t		 cap;
};

struct run {
	struct opts	 o;
	int		 ep;
	struct conn	*c;
	struct samples	 s;
	long		 started;	/* requests begun */
	long		 done;		/* requests finished well */
	long		 errors[E_COUNT];
	uint64_t	 bytes;		/* every byte read */
	int64_t		 t0;
	int64_t		 t_end;		/* no request starts after this */
	int64_t		 max_gap;
	char		*buf;
};

static int64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: loadgen -p PORT [-a ADDR] [-c CONNS] [-d SECS | -n COUNT]\n"
	    "       [-m METHOD] [-u PATH] [-H 'Name: value']... [-b BODY | -f FILE]\n"
	    "       [-s] [-e MINBYTES] [-t TIMEOUT] [-l LABEL]\n");
	exit(2);
}

/* ---- the request ---------------------------------------------------------- */

static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (p = malloc((size_t)n + 1)) != NULL) {
		*len = fread(p, 1, (size_t)n, f);
		if (*len != (size_t)n) {
			free(p);
			p = NULL;
		}
	}
	fclose(f);
	return p;
}

/* Build "METHOD PATH HTTP/1.1", Host, the caller's headers, and the body
 * with its Content-Length (only when there is one or the method has one). */
static int
build_request(struct opts *o, const char *method, const char *path,
    char **hdrs, int nh, const char *body, size_t body_len)
{
	size_t cap = 512 + strlen(path) + body_len, off;
	int i, n, has_body = body != NULL || strcmp(method, "POST") == 0 ||
	    strcmp(method, "PUT") == 0;

	for (i = 0; i < nh; i++)
		cap += strlen(hdrs[i]) + 2;
	if ((o->req = malloc(cap)) == NULL)
		return -1;
	n = snprintf(o->req, cap, "%s %s HTTP/1.1\r\nHost: %s:%u\r\n", method, path,
	    inet_ntoa(o->addr.sin_addr), ntohs(o->addr.sin_port));
	off = (size_t)n;
	for (i = 0; i < nh; i++)
		off += (size_t)snprintf(o->req + off, cap - off, "%s\r\n", hdrs[i]);
	if (has_body)
		off += (size_t)snprintf(o->req + off, cap - off,
		    "Content-Length: %zu\r\n", body_len);
	off += (size_t)snprintf(o->req + off, cap - off, "\r\n");
	if (body_len > 0)
		memcpy(o->req + off, body, body_len);
	o->req_len = off + body_len;
	return 0;
}

static void
parse_args(struct opts *o, int argc, char **argv)
{
	const char *method = "GET", *path = "/", *body = NULL, *addr = "127.0.0.1";
	char *file_body = NULL, **hdrs = calloc((size_t)argc, sizeof(*hdrs));
	size_t body_len = 0;
	int ch, nh = 0, port = 0;

	memset(o, 0, sizeof(*o));
	o->conns = 1;
	o->timeout = 60;
	o->label = "loadgen";
	if (hdrs == NULL)
		exit(2);
	while ((ch = getopt(argc, argv, "a:p:c:d:n:m:u:H:b:f:se:t:l:")) != -1) {
		switch (ch) {
		case 'a': addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'c': o->conns = atoi(optarg); break;
		case 'd': o->seconds = atof(optarg); break;
		case 'n': o->count = atol(optarg); break;
		case 'm': method = optarg; break;
		case 'u': path = optarg; break;
		case 'H': hdrs[nh++] = optarg; break;
		case 'b': body = optarg; body_len = strlen(optarg); break;
		case 'f':
			if ((file_body = read_file(optarg, &body_len)) == NULL) {
				perror(optarg);
				exit(2);
			}
			body = file_body;
			break;
		case 's': o->force_sse = 1; break;
		case 'e': o->min_body = strtoull(optarg, NULL, 10); break;
		case 't': o->timeout = atof(optarg); break;
		case 'l': o->label = optarg; break;
		default: usage();
		}
	}
	if (port <= 0 || port > 65535 || o->conns < 1 || o->conns > MAX_CONNS ||
	    o->timeout <= 0 || o->seconds < 0 || o->seconds > MAX_SECONDS ||
	    o->count < 0 || (o->seconds == 0 && o->count == 0) || optind != argc)
		usage();
	if (o->count > MAX_SAMPLES)
		o->count = MAX_SAMPLES;
	o->addr.sin_family = AF_INET;
	o->addr.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &o->addr.sin_addr) != 1)
		usage();
	if (build_request(o, method, path, hdrs, nh, body, body_len) == -1)
		exit(2);
	free(file_body);
	free(hdrs);
}

/* ---- samples ---------------------------------------------------------------- */

static int
samples_add(struct samples *s, int64_t ttfb, int64_t lat, int64_t gap)
{
	size_t cap;

	if (s->n == s->cap) {
		if (s->cap >= MAX_SAMPLES)
			return 0;	/* counted, not sampled */
		cap = s->cap ? s->cap * 2 : 4096;
		if ((s->ttfb = realloc(s->ttfb, cap * sizeof(int64_t))) == NULL ||
		    (s->lat = realloc(s->lat, cap * sizeof(int64_t))) == NULL ||
		    (s->gap = realloc(s->gap, cap * sizeof(int64_t))) == NULL)
			return -1;
		s->cap = cap;
	}
	s->ttfb[s->n] = ttfb;
	s->lat[s->n] = lat;
	s->gap[s->n] = gap;
	s->n++;
	return 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The nearest-rank percentile of a sorted array, in milliseconds. */
static double
pct_ms(const int64_t *v, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return (double)v[i - 1] / 1000.0;
}

/* ---- connections -------------------------------------------------------------- */

static void
conn_close(struct conn *c)
{
	if (c->fd != -1)
		close(c->fd);	/* closing removes it from the epoll set */
	c->fd = -1;
	c->st = ST_IDLE;
}

static int
conn_watch(struct run *r, struct conn *c, uint32_t events, int op)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	if (op == EPOLL_CTL_MOD && c->watch == events)
		return 0;
	c->watch = events;
	return epoll_ctl(r->ep, op, c->fd, &ev);
}

/* Whether another request may begin now. */
static int
more_work(const struct run *r)
{
	if (r->o.count > 0 && r->started >= r->o.count)
		return 0;
	return r->o.seconds == 0 || now_us() < r->t_end;
}

static void
req_reset(struct conn *c, int64_t t)
{
	c->sent = 0;
	c->head_len = 0;
	c->status = 0;
	c->close_after = 0;
	c->sse = 0;
	c->fr = FR_NONE;
	c->left = 0;
	c->ck = CK_SIZE;
	c->ck_digits = 0;
	c->ck_line_len = 0;
	c->body_len = 0;
	c->tail_len = 0;
	c->t_start = t;
	c->t_first = 0;
	c->t_last_data = 0;
	c->max_gap = 0;
}

static void
count_error(struct run *r, struct conn *c, enum err e)
{
	r->errors[e]++;
	conn_close(c);
}

/* Open a connection and begin a request on it. */
static void
conn_open(struct run *r, struct conn *c)
{
	int one = 1;

	r->started++;
	req_reset(c, now_us());
	c->fresh = 1;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd == -1) {
		count_error(r, c, E_CONNECT);
		return;
	}
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&r->o.addr, sizeof(r->o.addr)) == -1 &&
	    errno != EINPROGRESS) {
		count_error(r, c, E_CONNECT);
		return;
	}
	c->st = ST_CONNECTING;
	if (conn_watch(r, c, EPOLLOUT, EPOLL_CTL_ADD) == -1)
		count_error(r, c, E_CONNECT);
}

static void conn_send(struct run *r, struct conn *c);

/* Begin the next request on a kept-alive connection: sent at once (the
 * socket has room after a response), so epoll is asked for EPOLLOUT only
 * when it does not all go: two epoll_ctl per request were a third of the
 * generator's system time, and the generator shares the CPUs it measures. */
static void
conn_next(struct run *r, struct conn *c)
{
	r->started++;
	req_reset(c, now_us());
	c->fresh = 0;
	c->st = ST_SENDING;
	conn_send(r, c);
}

static void
conn_send(struct run *r, struct conn *c)
{
	ssize_t n;

	n = send(c->fd, r->o.req + c->sent, r->o.req_len - c->sent, MSG_NOSIGNAL);
	if (n == -1) {
		if (errno != EAGAIN && errno != EINTR)
			count_error(r, c, E_CLOSED);
		else if (conn_watch(r, c, EPOLLOUT, EPOLL_CTL_MOD) == -1)
			count_error(r, c, E_CLOSED);
		return;
	}
	c->sent += (size_t)n;
	if (c->sent < r->o.req_len) {
		if (conn_watch(r, c, EPOLLOUT, EPOLL_CTL_MOD) == -1)
			count_error(r, c, E_CLOSED);
		return;
	}
	c->st = ST_HEAD;
	if (conn_watch(r, c, EPOLLIN, EPOLL_CTL_MOD) == -1)
		count_error(r, c, E_CLOSED);
}

static void
conn_connected(struct run *r, struct conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 || err != 0) {
		count_error(r, c, E_CONNECT);
		return;
	}
	c->st = ST_SENDING;
	conn_send(r, c);
}

/* ---- response parsing ------------------------------------------------------------ */

/* The value of header NAME in the head (NUL-terminated), or NULL. */
static const char *
head_value(const char *head, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *p = strstr(head, "\r\n"), *e;

	while (p != NULL && p[2] != '\r' && p[2] != '\0') {
		p += 2;
		e = strstr(p, "\r\n");
		if (e == NULL)
			return NULL;
		if ((size_t)(e - p) > nlen && strncasecmp(p, name, nlen) == 0 &&
		    p[nlen] == ':') {
			p += nlen + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			*vlen = (size_t)(e - p);
			return p;
		}
		p = e;
	}
	return NULL;
}

static int
value_has(const char *v, size_t len, const char *word)
{
	size_t wl = strlen(word), i;

	for (i = 0; v != NULL && i + wl <= len; i++)
		if (strncasecmp(v + i, word, wl) == 0)
			return 1;
	return 0;
}

/* Parse the complete head in c->head: status, framing, Connection, type. */
static int
head_parse(struct run *r, struct conn *c)
{
	const char *v;
	size_t vl = 0;
	char *end;
	int minor;

	if (sscanf(c->head, "HTTP/1.%d %d", &minor, &c->status) != 2)
		return -1;
	c->close_after = minor == 0;
	if ((v = head_value(c->head, "Connection", &vl)) != NULL) {
		if (value_has(v, vl, "close"))
			c->close_after = 1;
		else if (value_has(v, vl, "keep-alive"))
			c->close_after = 0;
	}
	v = head_value(c->head, "Content-Type", &vl);
	c->sse = r->o.force_sse || value_has(v, vl, "text/event-stream");
	if ((v = head_value(c->head, "Transfer-Encoding", &vl)) != NULL) {
		if (!value_has(v, vl, "chunked"))
			return -1;
		c->fr = FR_CHUNKED;
	} else if ((v = head_value(c->head, "Content-Length", &vl)) != NULL) {
		c->left = strtoull(v, &end, 10);
		if (end == v)
			return -1;
		c->fr = FR_LENGTH;
	} else {
		c->fr = FR_EOF;
		c->close_after = 1;
	}
	if (c->status == 204 || c->status == 304 || c->status / 100 == 1) {
		c->fr = FR_LENGTH;
		c->left = 0;
	}
	return 0;
}

static void
body_data(struct conn *c, const char *p, size_t n)
{
	size_t keep;

	c->body_len += n;
	if (n >= TAIL_MAX) {
		memcpy(c->tail, p + n - TAIL_MAX, TAIL_MAX);
		c->tail_len = TAIL_MAX;
		return;
	}
	keep = c->tail_len + n > TAIL_MAX ? TAIL_MAX - n : c->tail_len;
	memmove(c->tail, c->tail + c->tail_len - keep, keep);
	memcpy(c->tail + keep, p, n);
	c->tail_len = keep + n;
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* One byte of chunk framing (outside chunk data). Returns 1 when the
 * message is complete, 0 to go on, -1 on a framing error. */
static int
chunk_byte(struct conn *c, char ch)
{
	int h;

	switch (c->ck) {
	case CK_SIZE:
		if ((h = hexval(ch)) >= 0) {
			if (++c->ck_digits > 15)
				return -1;
			c->left = c->left * 16 + (uint64_t)h;
			return 0;
		}
		if (c->ck_digits == 0)
			return -1;
		c->ck = CK_EXT;
		/* fall through */
	case CK_EXT:
		if (ch != '\n')
			return 0;
		c->ck = c->left > 0 ? CK_DATA : CK_TRAILER;
		c->ck_line_len = 0;
		return 0;
	case CK_DATA_CR:
		c->ck = CK_DATA_LF;
		return ch == '\r' ? 0 : -1;
	case CK_DATA_LF:
		c->ck = CK_SIZE;
		c->ck_digits = 0;
		return ch == '\n' ? 0 : -1;
	case CK_TRAILER:
		if (ch == '\n') {
			if (c->ck_line_len == 0)
				return 1;
			c->ck_line_len = 0;
		} else if (ch != '\r') {
			c->ck_line_len++;
		}
		return 0;
	case CK_DATA:
		break;
	}
	return -1;
}

/* Feed body bytes; returns bytes consumed, with *done set at the end of
 * the message, or -1 on a framing error. */
static ssize_t
body_feed(struct conn *c, const char *p, size_t n, int *done)
{
	size_t i = 0, take;
	int rc;

	*done = 0;
	if (c->fr == FR_EOF) {
		body_data(c, p, n);
		return (ssize_t)n;
	}
	if (c->fr == FR_LENGTH) {
		take = n < c->left ? n : (size_t)c->left;
		body_data(c, p, take);
		c->left -= take;
		*done = c->left == 0;
		return (ssize_t)take;
	}
	while (i < n && !*done) {
		if (c->ck == CK_DATA) {
			take = n - i < c->left ? n - i : (size_t)c->left;
			body_data(c, p + i, take);
			i += take;
			if ((c->left -= take) == 0)
				c->ck = CK_DATA_CR;
			continue;
		}
		if ((rc = chunk_byte(c, p[i++])) == -1)
			return -1;
		*done = rc == 1;
	}
	return (ssize_t)i;
}

/* Whether the tail of an SSE body holds the final "data: [DONE]" event. */
static int
sse_done(const struct conn *c)
{
	size_t n = c->tail_len;

	while (n > 0 && (c->tail[n - 1] == '\n' || c->tail[n - 1] == '\r'))
		n--;
	return n >= 12 && memcmp(c->tail + n - 12, "data: [DONE]", 12) == 0;
}

/* A response has ended: check it, record it, go on with the next one. */
static void
resp_done(struct run *r, struct conn *c, int64_t t)
{
	enum err e = E_COUNT;

	if (c->status != 200)
		e = E_STATUS;
	else if ((c->sse && !sse_done(c)) || c->body_len < r->o.min_body)
		e = E_INCOMPLETE;
	if (e != E_COUNT) {
		count_error(r, c, e);
		return;
	}
	r->done++;
	if (c->max_gap > r->max_gap)
		r->max_gap = c->max_gap;
	if (samples_add(&r->s, c->t_first - c->t_start, t - c->t_start, c->max_gap) == -1) {
		perror("loadgen: samples");
		exit(2);
	}
	if (c->close_after || c->fr == FR_EOF) {
		conn_close(c);
		return;
	}
	if (more_work(r))
		conn_next(r, c);
	else
		conn_close(c);
}

/* Take the head bytes of p; returns bytes consumed or -1. */
static ssize_t
head_feed(struct run *r, struct conn *c, const char *p, size_t n)
{
	size_t take = n < HEAD_MAX - 1 - c->head_len ? n : HEAD_MAX - 1 - c->head_len;
	size_t old = c->head_len, scan = old > 3 ? old - 3 : 0;
	char *end;

	memcpy(c->head + old, p, take);
	c->head_len += take;
	c->head[c->head_len] = '\0';
	end = memmem(c->head + scan, c->head_len - scan, "\r\n\r\n", 4);
	if (end == NULL)
		return c->head_len == HEAD_MAX - 1 ? -1 : (ssize_t)take;
	c->head_len = (size_t)(end - c->head) + 4;
	c->head[c->head_len] = '\0';
	if (head_parse(r, c) == -1)
		return -1;
	c->st = ST_BODY;
	return (ssize_t)(c->head_len - old);
}

/* Feed what was read to the connection's parser. */
static void
conn_input(struct run *r, struct conn *c, const char *p, size_t n, int64_t t)
{
	ssize_t used;
	int done;

	if (c->t_first == 0)
		c->t_first = t;
	while (n > 0 || (c->st == ST_BODY && c->fr == FR_LENGTH && c->left == 0)) {
		if (c->st == ST_HEAD) {
			used = head_feed(r, c, p, n);
			done = 0;
		} else if (c->st == ST_BODY) {
			used = body_feed(c, p, n, &done);
		} else {
			count_error(r, c, E_PARSE);	/* bytes nobody asked for */
			return;
		}
		if (used == -1) {
			count_error(r, c, E_PARSE);
			return;
		}
		p += used;
		n -= (size_t)used;
		if (done) {
			resp_done(r, c, t);
			if (n > 0 && c->st != ST_IDLE)
				count_error(r, c, E_PARSE);
			return;
		}
	}
}

static void
conn_readable(struct run *r, struct conn *c)
{
	int64_t t;
	ssize_t n;

	n = recv(c->fd, r->buf, READ_BUF, 0);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	t = now_us();
	if (n <= 0) {
		if (n == 0 && c->st == ST_BODY && c->fr == FR_EOF) {
			resp_done(r, c, t);
			return;
		}
		count_error(r, c, c->st == ST_HEAD && c->head_len == 0 && !c->fresh ?
		    E_CLOSED : (n == 0 ? E_INCOMPLETE : E_CLOSED));
		return;
	}
	r->bytes += (uint64_t)n;
	if (c->st == ST_BODY && c->t_last_data != 0 && t - c->t_last_data > c->max_gap)
		c->max_gap = t - c->t_last_data;
	c->t_last_data = t;
	conn_input(r, c, r->buf, (size_t)n, t);
}

static void
conn_event(struct run *r, struct conn *c, uint32_t ev)
{
	if (c->st == ST_CONNECTING)
		conn_connected(r, c);
	else if (c->st == ST_SENDING)
		conn_send(r, c);
	else if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_readable(r, c);
}

/* ---- the loop ---------------------------------------------------------------------- */

/* Time out requests running too long; reopen idle connections with work. */
static int
tick(struct run *r, int64_t t)
{
	int i, busy = 0;
	int64_t limit = (int64_t)(r->o.timeout * 1e6);

	for (i = 0; i < r->o.conns; i++) {
		struct conn *c = &r->c[i];

		if (c->st != ST_IDLE && t - c->t_start > limit)
			count_error(r, c, E_TIMEOUT);
		if (c->st == ST_IDLE && more_work(r))
			conn_open(r, c);
		busy += c->st != ST_IDLE;
	}
	return busy;
}

static void
run_loop(struct run *r)
{
	struct epoll_event ev[MAX_EVENTS];
	int64_t t, last_tick = 0, hard_end;
	int n, i;

	/* However the peer behaves, stop a timeout past the last start. */
	hard_end = r->t0 + (int64_t)((r->o.seconds > 0 ? r->o.seconds : MAX_SECONDS) * 1e6) +
	    (int64_t)(r->o.timeout * 1e6) + 1000000;
	for (;;) {
		t = now_us();
		if (t - last_tick >= TICK_MS * 1000 || last_tick == 0) {
			last_tick = t;
			if (tick(r, t) == 0 || t > hard_end)
				return;
		}
		n = epoll_wait(r->ep, ev, MAX_EVENTS, TICK_MS);
		if (n == -1 && errno != EINTR) {
			perror("loadgen: epoll_wait");
			exit(2);
		}
		for (i = 0; i < n; i++)
			conn_event(r, ev[i].data.ptr, ev[i].events);
	}
}

/* ---- the report ------------------------------------------------------------------------ */

static void
report(struct run *r, double secs)
{
	struct samples *s = &r->s;
	long errs = 0;
	double rps = (double)r->done / secs, mbps = (double)r->bytes / secs / 1e6;
	int i;

	if (s->n > 0) {
		qsort(s->ttfb, s->n, sizeof(int64_t), cmp_i64);
		qsort(s->lat, s->n, sizeof(int64_t), cmp_i64);
		qsort(s->gap, s->n, sizeof(int64_t), cmp_i64);
	}
	for (i = 0; i < E_COUNT; i++)
		errs += r->errors[i];
	printf("{\"label\":\"%s\",\"conns\":%d,\"requests\":%ld,\"errors\":%ld,"
	    "\"seconds\":%.3f,\"rps\":%.1f,\"bytes\":%llu,\"mbps\":%.2f,",
	    r->o.label, r->o.conns, r->done, errs, secs, rps,
	    (unsigned long long)r->bytes, mbps);
	printf("\"ttfb_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},",
	    pct_ms(s->ttfb, s->n, 50), pct_ms(s->ttfb, s->n, 90),
	    pct_ms(s->ttfb, s->n, 99), pct_ms(s->ttfb, s->n, 100));
	printf("\"lat_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f},",
	    pct_ms(s->lat, s->n, 50), pct_ms(s->lat, s->n, 90),
	    pct_ms(s->lat, s->n, 99), pct_ms(s->lat, s->n, 100));
	printf("\"gap_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f},\"errors_by\":{",
	    pct_ms(s->gap, s->n, 50), pct_ms(s->gap, s->n, 99),
	    (double)r->max_gap / 1000.0);
	for (i = 0; i < E_COUNT; i++)
		printf("%s\"%s\":%ld", i ? "," : "", err_names[i], r->errors[i]);
	printf("}}\n");
	fprintf(stderr, "%s: %ld ok, %ld errors in %.2f s: %.0f req/s, %.1f MB/s, "
	    "ttfb p50 %.2f p99 %.2f ms, latency p50 %.2f p99 %.2f max %.2f ms, "
	    "max chunk gap %.2f ms\n", r->o.label, r->done, errs, secs, rps, mbps,
	    pct_ms(s->ttfb, s->n, 50), pct_ms(s->ttfb, s->n, 99),
	    pct_ms(s->lat, s->n, 50), pct_ms(s->lat, s->n, 99),
	    pct_ms(s->lat, s->n, 100), (double)r->max_gap / 1000.0);
}

/* Raise the open-file limit to the hard limit: each connection is a file. */
static void
raise_nofile(int conns)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((rlim_t)conns + 16 > rl.rlim_cur)
		fprintf(stderr, "loadgen: warning: open-file limit %llu < %d connections\n",
		    (unsigned long long)rl.rlim_cur, conns);
}

/* ---- self-test --------------------------------------------------------------------- */

struct vector {
	const char	*resp;
	int		 sse;		/* -s */
	uint64_t	 min_body;	/* -e */
	int		 err;		/* E_COUNT: a good response */
};

static const struct vector vectors[] = {
	{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 0, 5, E_COUNT },
	{ "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n", 0, 0, E_COUNT },
	{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	  "5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n", 0, 15, E_COUNT },
	{ "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n8\r\ndata: {}\r\n2\r\n\n\n\r\n"
	  "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n", 0, 0, E_COUNT },
	{ "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\ndata: {}\n\n", 1, 0, E_INCOMPLETE },
	{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 0, 6, E_INCOMPLETE },
	{ "HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\n{}", 0, 0, E_STATUS },
	{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, 0, E_PARSE },
	{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", 0, 0, E_PARSE },
	{ "garbage\r\n\r\n", 0, 0, E_PARSE },
};

/* Feed v's response cut at `cut` (and, with cut 0, one byte at a time);
 * 1 when the outcome is the one expected. */
static int
vector_ok(const struct vector *v, size_t cut, char *buf)
{
	struct run r;
	struct conn c;
	size_t len = strlen(v->resp), i;
	int e, ok = 1;

	memset(&r, 0, sizeof(r));
	memset(&c, 0, sizeof(c));
	r.o.count = r.started = 1;	/* no next request: the response ends the run */
	r.o.force_sse = v->sse;
	r.o.min_body = v->min_body;
	c.fd = -1;
	c.st = ST_HEAD;
	memcpy(buf, v->resp, len);	/* the parser reads a buffer it may not own */
	if (cut > 0) {
		conn_input(&r, &c, buf, cut, 1);
		if (c.st != ST_IDLE)
			conn_input(&r, &c, buf + cut, len - cut, 2);
	} else {
		for (i = 0; i < len && c.st != ST_IDLE; i++)
			conn_input(&r, &c, buf + i, 1, (int64_t)i + 1);
	}
	for (e = 0; e < E_COUNT; e++)
		ok &= r.errors[e] == (e == v->err);
	ok &= r.done == (v->err == E_COUNT) && c.st == ST_IDLE;
	free(r.s.ttfb);
	free(r.s.lat);
	free(r.s.gap);
	return ok;
}

/* loadgen --self-test: the response parser against known answers, whole
 * and split at every byte; prints "N passed, N failed". */
static int
self_test(void)
{
	char buf[512];
	size_t k, cut;
	int pass = 0, fail = 0;

	for (k = 0; k < sizeof(vectors) / sizeof(vectors[0]); k++) {
		for (cut = 0; cut < strlen(vectors[k].resp); cut++) {
			if (vector_ok(&vectors[k], cut, buf)) {
				pass++;
			} else {
				fail++;
				fprintf(stderr, "FAIL: vector %zu cut at %zu\n", k, cut);
			}
		}
	}
	printf("%d passed, %d failed\n", pass, fail);
	return fail > 0;
}

int
main(int argc, char **argv)
{
	struct run r;
	long errs = 0;
	int i;

	if (argc == 2 && strcmp(argv[1], "--self-test") == 0)
		return self_test();
	memset(&r, 0, sizeof(r));
	parse_args(&r.o, argc, argv);
	raise_nofile(r.o.conns);
	signal(SIGPIPE, SIG_IGN);
	r.buf = malloc(READ_BUF);
	r.c = calloc((size_t)r.o.conns, sizeof(*r.c));
	if (r.buf == NULL || r.c == NULL || (r.ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		perror("loadgen");
		return 2;
	}
	for (i = 0; i < r.o.conns; i++)
		r.c[i].fd = -1;
	r.t0 = now_us();
	r.t_end = r.t0 + (int64_t)(r.o.seconds * 1e6);
	run_loop(&r);
	for (i = 0; i < r.o.conns; i++)
		if (r.c[i].st != ST_IDLE)
			count_error(&r, &r.c[i], E_TIMEOUT);
	report(&r, (double)(now_us() - r.t0) / 1e6);
	for (i = 0; i < E_COUNT; i++)
		errs += r.errors[i];
	close(r.ep);
	free(r.s.ttfb);
	free(r.s.lat);
	free(r.s.gap);
	free(r.c);
	free(r.buf);
	free(r.o.req);
	return errs > 0 ? 1 : 0;
}

/* benchmock: the provider of the benchmark's small-request scenarios.
 *
 * One thread, one epoll instance, keep-alive, plaintext or TLS. Every
 * request with a body (POST) is answered with the same non-streamed OpenAI
 * chat completion that tests/mock_upstream answers (usage included, so a
 * gateway that meters has something to count); GET /mock/stats answers
 * {"requests":N,"tls_full":N,"tls_resumed":N}. A POST to a Gemini API
 * model's :generateContent is answered with the same answer in Gemini's
 * GenerateContentResponse (usageMetadata), for bench/instructions.sh's
 * gemini mode (issue 38).
 *
 * Paced streams (issue 35: a Bedrock stream's memory beside an OpenAI
 * one): a request with "x-mock-tokens: N" is answered with a chunked
 * stream of N one-token deltas, one event every "x-mock-delay-ms: D" (20)
 * milliseconds, from this same thread (the due streams are written at each
 * turn of the loop, epoll_wait sleeping until the next is due). By path:
 * /model/{id}/invoke-with-response-stream is Bedrock's InvokeModel stream,
 * application/vnd.amazon.eventstream, each Anthropic Messages event base64
 * in a "chunk" message's {"bytes":..,"p":..}, the last one carrying
 * amazon-bedrock-invocationMetrics; /model/{id}/converse-stream is
 * ConverseStream (messageStart, contentBlockDelta, contentBlockStop,
 * messageStop, metadata with usage); anything else is OpenAI's SSE chat
 * completion stream, usage chunk and [DONE] at the end. Every event
 * stream message has its prelude and message CRC-32, as AWS frames them
 * (bench/bench_frames.c).
 *
 * Why not tests/mock_upstream: it runs a thread per connection, so each
 * request costs it a thread wake-up whose price depends on how the proxy in
 * front spreads requests over its upstream connections. Measured on the
 * bench machine (CPU time of the mock per request, scenario 1): 18 us
 * behind kilovolt, 21-27 us behind HAProxy and nginx. A harness that
 * charges the peers unevenly measures itself; this one costs every proxy
 * the same read and write per request.
 *
 * Usage: benchmock -P PORTFILE [-t CERT KEY]
 * Listens on an ephemeral port of 127.0.0.1 and writes it to PORTFILE.
 * -t serves TLS with CERT (a chain file) and KEY; session tickets are on,
 * as at a provider, so clients can resume.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "bench_frames.h"

#define IN_MAX		16384
#define MAX_EVENTS	256

#define BODY "{\"id\":\"chatcmpl-mock\",\"object\":\"chat.completion\",\"created\":1796171434," \
	"\"model\":\"gpt-4o-mini-2024-07-18\",\"choices\":[{\"index\":0,\"message\":" \
	"{\"role\":\"assistant\",\"content\":\"tok1 tok2 tok3 tok4 tok5 \",\"refusal\":null}," \
	"\"logprobs\":null,\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":23," \
	"\"completion_tokens\":5,\"total_tokens\":28,\"prompt_tokens_details\":" \
	"{\"cached_tokens\":0,\"audio_tokens\":0},\"completion_tokens_details\":" \
	"{\"reasoning_tokens\":0,\"audio_tokens\":0,\"accepted_prediction_tokens\":0," \
	"\"rejected_prediction_tokens\":0}},\"service_tier\":\"default\"," \
	"\"system_fingerprint\":\"fp_mock\"}"

#define GM_BODY "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":" \
	"\"tok1 tok2 tok3 tok4 tok5 \"}],\"role\":\"model\"},\"finishReason\":\"STOP\"," \
	"\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":23,\"candidatesTokenCount\":5," \
	"\"totalTokenCount\":28,\"promptTokensDetails\":[{\"modality\":\"TEXT\"," \
	"\"tokenCount\":23}]},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"mock\"}"

struct conn {
	int		 fd;
	SSL		*ssl;
	int		 handshaken;
	int		 want_out;	/* epoll has EPOLLOUT for it */
	size_t		 in_len;
	char		 in[IN_MAX];
	char		*out;		/* what a short write left, or NULL */
	size_t		 out_len;
	size_t		 out_off;
	struct kv_bench_stream st;	/* a paced stream in progress */
	uint64_t	 due_ms;	/* when its next event goes */
	int		 delay_ms;
	struct conn	*snext, *sprev;	/* the streams list, while st.kind */
};

static int ep;
static SSL_CTX *ctx;
static long n_requests, n_full, n_resumed;
static char resp[1024], resp_gm[1024];
static size_t resp_len, resp_gm_len;
static struct conn *streams;	/* conns with a stream in progress */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
stream_unlink(struct conn *c)
{
	if (c->sprev != NULL)
		c->sprev->snext = c->snext;
	else if (streams == c)
		streams = c->snext;
	if (c->snext != NULL)
		c->snext->sprev = c->sprev;
	c->snext = c->sprev = NULL;
	c->st.kind = KV_BENCH_NONE;
}

static void
conn_free(struct conn *c)
{
	if (c->st.kind != KV_BENCH_NONE)
		stream_unlink(c);
	if (c->ssl != NULL)
		SSL_free(c->ssl);
	close(c->fd);	/* leaves the epoll set */
	free(c->out);
	free(c);
}

static void
watch(struct conn *c, int out)
{
	struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.ptr = c };

	if (c->want_out != out && epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) == -1)
		perror("benchmock: epoll_ctl");
	c->want_out = out;
}

/* Write p; 1 when all went or the rest is kept, -1 when the peer is gone. */
static int
put(struct conn *c, const char *p, size_t n)
{
	ssize_t w;
	int e;

	while (n > 0) {
		if (c->ssl != NULL) {
			w = SSL_write(c->ssl, p, (int)n);
			if (w <= 0) {
				e = SSL_get_error(c->ssl, (int)w);
				if (e != SSL_ERROR_WANT_WRITE && e != SSL_ERROR_WANT_READ)
					return -1;
				break;
			}
		} else {
			w = send(c->fd, p, n, MSG_NOSIGNAL);
			if (w == -1) {
				if (errno != EAGAIN && errno != EINTR)
					return -1;
				break;
			}
		}
		p += w;
		n -= (size_t)w;
	}
	if (n == 0)
		return 1;
	/* OpenSSL wants the same bytes again after WANT_WRITE: keep a copy */
	if ((c->out = malloc(n)) == NULL)
		return -1;
	memcpy(c->out, p, n);
	c->out_len = n;
	c->out_off = 0;
	watch(c, 1);
	return 1;
}

static int
flush(struct conn *c)
{
	char *o = c->out;
	size_t n = c->out_len - c->out_off;

	c->out = NULL;
	if (put(c, o + c->out_off, n) == -1) {
		free(o);
		return -1;
	}
	free(o);
	if (c->out == NULL)
		watch(c, 0);
	return 1;
}

/* The value of Content-Length in the head [p, p + n), 0 without one. */
static long
content_length(const char *p, size_t n)
{
	static const char name[] = "\ncontent-length:";
	size_t i, l = sizeof(name) - 1;

	for (i = 0; i + l <= n; i++)
		if ((p[i] == '\n') && strncasecmp(p + i, name, l) == 0)
			return strtol(p + i + l, NULL, 10);
	return 0;
}

/* The number in header NAME (":" included, lower case) of the head
 * [p, p + n), or dflt without one. */
static long
head_long(const char *p, size_t n, const char *name, long dflt)
{
	size_t i, l = strlen(name);

	for (i = 0; i + l + 1 <= n; i++)
		if (p[i] == '\n' && strncasecmp(p + i + 1, name, l) == 0)
			return strtol(p + i + 1 + l, NULL, 10);
	return dflt;
}

/* Start the paced stream the request [p, p + head) asks for: its head now,
 * its first event at the loop's next turn. */
static int
stream_start(struct conn *c, const char *p, size_t head, long tokens)
{
	char out[256];
	size_t n;

	c->st.kind = kv_bench_kind(p, head);
	c->st.tokens = tokens;
	c->st.seq = 0;
	c->delay_ms = (int)head_long(p, head, "x-mock-delay-ms:", 20);
	c->due_ms = now_ms();
	n = kv_bench_head(&c->st, out, sizeof(out));
	c->snext = streams;
	c->sprev = NULL;
	if (streams != NULL)
		streams->sprev = c;
	streams = c;
	return put(c, out, n);
}

/* Answer every complete request in c->in. */
static int
serve(struct conn *c)
{
	char stats[256];
	const char *end;
	size_t head, total;
	long cl, tokens;
	int n;

	while (c->out == NULL && c->st.kind == KV_BENCH_NONE &&
	    (end = memmem(c->in, c->in_len, "\r\n\r\n", 4)) != NULL) {
		head = (size_t)(end - c->in) + 4;
		cl = content_length(c->in, head);
		if (cl < 0 || (size_t)cl > IN_MAX - head)
			return -1;
		total = head + (size_t)cl;
		if (total > c->in_len)
			break;
		n_requests++;
		if (strncmp(c->in, "GET /mock/stats", 15) == 0) {
			n = snprintf(stats + 200, 56, "{\"requests\":%ld,\"tls_full\":%ld,\"tls_resumed\":%ld}",
			    n_requests, n_full, n_resumed);
			n = snprintf(stats, sizeof(stats), "HTTP/1.1 200 OK\r\nContent-Type: "
			    "application/json\r\nContent-Length: %d\r\n\r\n%s", n, stats + 200);
			if (put(c, stats, (size_t)n) == -1)
				return -1;
		} else if ((tokens = head_long(c->in, head, "x-mock-tokens:", 0)) > 0) {
			if (stream_start(c, c->in, head, tokens) == -1)
				return -1;
		} else if (memmem(c->in, head, ":generateContent ", 17) != NULL) {
			if (put(c, resp_gm, resp_gm_len) == -1)
				return -1;
		} else if (put(c, resp, resp_len) == -1)
			return -1;
		memmove(c->in, c->in + total, c->in_len - total);
		c->in_len -= total;
	}
	return 1;
}

static int
handshake(struct conn *c)
{
	int r = SSL_do_handshake(c->ssl), e;

	if (r == 1) {
		c->handshaken = 1;
		if (SSL_session_reused(c->ssl))
			n_resumed++;
		else
			n_full++;
		watch(c, 0);
		return 1;
	}
	e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		watch(c, e == SSL_ERROR_WANT_WRITE);
		return 0;
	}
	return -1;
}

/* Read what there is (all of OpenSSL's buffered records too). */
static int
input(struct conn *c)
{
	ssize_t r;
	int e;

	for (;;) {
		if (c->in_len == IN_MAX)
			return -1;	/* a head or body past what a bench sends */
		if (c->ssl != NULL) {
			r = SSL_read(c->ssl, c->in + c->in_len, (int)(IN_MAX - c->in_len));
			if (r <= 0) {
				e = SSL_get_error(c->ssl, (int)r);
				return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 1 : -1;
			}
		} else {
			r = recv(c->fd, c->in + c->in_len, IN_MAX - c->in_len, 0);
			if (r == 0)
				return -1;
			if (r == -1)
				return errno == EAGAIN || errno == EINTR ? 1 : -1;
		}
		c->in_len += (size_t)r;
		if (serve(c) == -1)
			return -1;
		if (c->ssl == NULL)
			return 1;	/* level-triggered: the rest comes next turn */
	}
}

static void
on_event(struct conn *c, uint32_t ev)
{
	int r = 1;

	if (c->ssl != NULL && !c->handshaken) {
		r = handshake(c);
		if (r == 0)
			return;
	}
	if (r == 1 && c->out != NULL && (ev & EPOLLOUT) && (r = flush(c)) == 1 &&
	    c->out == NULL)
		r = serve(c);	/* requests that came while the answer waited */
	if (r == 1 && c->out == NULL && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		r = input(c);
	if (r == -1)
		conn_free(c);
}

static void
accept_some(int lfd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct conn *c;
	int fd, one = 1, i;

	for (i = 0; i < 64; i++) {
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1)
			return;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			close(fd);
			continue;
		}
		c->fd = fd;
		if (ctx != NULL && ((c->ssl = SSL_new(ctx)) == NULL ||
		    SSL_set_fd(c->ssl, fd) != 1)) {
			conn_free(c);
			continue;
		}
		if (c->ssl != NULL)
			SSL_set_accept_state(c->ssl);
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
			perror("benchmock: epoll_ctl");
			conn_free(c);
		}
	}
}

static int
listen_any(int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4096) == -1 || getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

static int
write_portfile(const char *path, int port)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);	/* renamed whole: never read half */
	if ((f = fopen(tmp, "w")) == NULL)
		return -1;
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp, path) == -1)
		return -1;
	return 0;
}

static SSL_CTX *
tls_context(const char *cert, const char *key)
{
	SSL_CTX *x = SSL_CTX_new(TLS_server_method());

	if (x == NULL || SSL_CTX_use_certificate_chain_file(x, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(x, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(x) != 1) {
		ERR_print_errors_fp(stderr);
		return NULL;
	}
	SSL_CTX_set_mode(x, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return x;
}

/* Write every stream's due event; the milliseconds until the next one is
 * due, -1 when no stream is in progress. */
static int
tick(void)
{
	struct conn *c, *next;
	uint64_t now = now_ms(), first = UINT64_MAX;
	char out[KV_BENCH_EVENT_MAX];
	size_t n;
	int last;

	for (c = streams; c != NULL; c = next) {
		next = c->snext;
		if (c->out == NULL && c->due_ms <= now) {
			n = kv_bench_event(&c->st, out, sizeof(out), &last);
			if (last)
				stream_unlink(c);
			if (put(c, out, n) == -1 || (last && c->out == NULL && serve(c) == -1)) {
				conn_free(c);
				continue;
			}
			c->due_ms += (uint64_t)c->delay_ms;
		}
		/* one waiting for EPOLLOUT is woken by it, not by the clock */
		if (c->st.kind != KV_BENCH_NONE && c->out == NULL && c->due_ms < first)
			first = c->due_ms;
	}
	if (first == UINT64_MAX)
		return -1;
	return first <= now ? 0 : (int)(first - now);
}

int
main(int argc, char **argv)
{
	struct epoll_event evs[MAX_EVENTS], lev = { .events = EPOLLIN, .data.ptr = NULL };
	const char *portfile = NULL;
	int i, n, lfd, port;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-P") == 0 && i + 1 < argc)
			portfile = argv[++i];
		else if (strcmp(argv[i], "-t") == 0 && i + 2 < argc) {
			if ((ctx = tls_context(argv[i + 1], argv[i + 2])) == NULL)
				return 1;
			i += 2;
		} else
			portfile = NULL, i = argc;
	}
	if (portfile == NULL) {
		fprintf(stderr, "usage: benchmock -P PORTFILE [-t CERT KEY]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	resp_len = (size_t)snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\nx-request-id: req_mock\r\n\r\n%s",
	    sizeof(BODY) - 1, BODY);
	resp_gm_len = (size_t)snprintf(resp_gm, sizeof(resp_gm), "HTTP/1.1 200 OK\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    sizeof(GM_BODY) - 1, GM_BODY);
	if ((lfd = listen_any(&port)) == -1 || (ep = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) == -1 || write_portfile(portfile, port) == -1) {
		perror("benchmock");
		return 1;
	}
	for (;;) {
		n = epoll_wait(ep, evs, MAX_EVENTS, tick());
		if (n == -1 && errno != EINTR) {
			perror("benchmock: epoll_wait");
			return 1;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == NULL)
				accept_some(lfd);
			else
				on_event(evs[i].data.ptr, evs[i].events);
		}
	}
}

/* The request log ([server] request_log): one JSON object per request, on
 * one line, for machines: who (key id and label), what (method, path,
 * model, upstream), the outcome (status, tokens, cost, estimated), and how
 * long (ttfb, duration) and how big (bytes). Each worker appends to the
 * file on an O_APPEND descriptor, the lines of an event-loop turn in one
 * write() (kv_reqlog_flush), so lines from several workers never
 * interleave. SIGUSR1 (forwarded by the master)
 * reopens it, for logrotate. The same request id goes out to the client as
 * x-kilovolt-request-id. */
#ifndef KV_REQLOG_H
#define KV_REQLOG_H

#include <stddef.h>
#include <stdint.h>

#define KV_REQID_LEN	16	/* hex digits of a request id */
#define KV_REQLOG_LINE	8192	/* longest line; long fields are cut to fit */

struct kv_reqlog_rec {
	int64_t		 time_ms;	/* wall clock at the request's start */
	const char	*request_id;
	const char	*key_id;	/* "" none (no credential) */
	const char	*label;		/* "" none */
	const char	*method, *path, *model, *upstream;	/* "" none */
	int		 status;
	int64_t		 input_tokens, output_tokens, cached_input_tokens;
	int64_t		 cost_nusd;
	int		 estimated, cut;
	int		 price_default;	/* the response's model had no price (KV0445) */
	int64_t		 ttfb_ms;	/* -1: no response byte came */
	int64_t		 duration_ms;
	uint64_t	 bytes_in, bytes_out;
};

/* Open PATH for appending (created 0640). "" or NULL turns the log off.
 * Returns 0, or -1 with the reason logged (KV0800); the worker then runs
 * without a request log rather than not at all. */
int	kv_reqlog_open(const char *path);

/* Reopen the file opened last (after logrotate moved it). */
void	kv_reqlog_reopen(void);

/* Whether a log is open. */
int	kv_reqlog_enabled(void);

/* Format R as one line ending in '\n' into buf. Returns its length; a
 * field that does not fit is cut, the line always stays valid JSON. */
size_t	kv_reqlog_format(const struct kv_reqlog_rec *r, char *buf, size_t len);

/* Format R and add it to the lines kv_reqlog_flush writes (sooner when
 * they fill the batch). */
void	kv_reqlog_write(const struct kv_reqlog_rec *r);

/* Write the lines added since the last flush, in one write(2). The worker
 * calls it once a loop turn, before epoll_wait (so a line is in the file
 * before the worker sleeps), on reopen and at exit. Errors are logged once
 * per reopen (KV0802), never fatal. */
void	kv_reqlog_flush(void);

/* A new request id: KV_REQID_LEN lowercase hex digits and a NUL, from a
 * per-process generator seeded by getrandom(). */
void	kv_reqlog_new_id(char out[KV_REQID_LEN + 1]);

#endif

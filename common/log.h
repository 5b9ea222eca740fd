/* Logging to stderr: journald and `docker logs` collect it.
 * Every line carries time, pid, the process role ("master", "worker 3", "kvctl")
 * and, for errors, a stable id such as KV0101 so operators can grep for it. */
#ifndef KV_LOG_H
#define KV_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* Set the role shown on every line; call after fork(). */
void kv_log_set_role(const char *role);

/* Errors and warnings. kv_log_warn appends strerror(errno); kv_log_warnx does not. */
void kv_log_warn(const char *id, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kv_log_warnx(const char *id, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kv_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Copy S (n bytes, or up to its NUL when n is (size_t)-1) into OUT for a
 * log line: printable ASCII other than space, '"' and '\\' as is, every
 * other byte as \xHH, so a client-supplied value can neither forge a
 * field or a line nor send a terminal escape. Cut with "..." when OUT
 * (outlen >= 4) is too small. Returns OUT. */
const char *kv_log_escape(const char *s, size_t n, char *out, size_t outlen);

/* Access log: the worker's line per request, already formatted by the
 * caller, as n bytes of text (no newline, no format to interpret). */
void kv_log_access_text(const char *text, size_t n);

/* With batching on, access lines wait in a PIPE_BUF-sized buffer until
 * kv_log_flush (or the next other line, or a full buffer): a worker writes
 * a turn's lines at once instead of one write(2) per request. The caller
 * flushes before it sleeps and before it exits. */
void kv_log_batch_access(int on);
void kv_log_flush(void);

#ifdef KV_DEBUG
#define kv_log_debug(fmt, ...) kv_log_info("%s: " fmt, __func__, ##__VA_ARGS__)
#else
#define kv_log_debug(fmt, ...) ((void)0)
#endif

#endif

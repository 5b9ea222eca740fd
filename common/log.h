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

/* kv_log_escape, returning the length of what it wrote at OUT (its NUL
 * not counted; 0 when outlen is 0). */
size_t kv_log_escape_len(const char *s, size_t n, char *out, size_t outlen);

/* The longest log line, its newline included. */
#define KV_LOG_LINE	2048

/* Access log: the worker's line per request, already formatted by the
 * caller, as n bytes of text (no newline, no format to interpret). */
void kv_log_access_text(const char *text, size_t n);

/* The same line built in place, without the copies: kv_log_access_begin
 * writes the line's prefix, in the batch itself when a line fits there,
 * else at LINE (KV_LOG_LINE bytes), and returns where, its length in
 * *len; the caller appends its text there up to KV_LOG_LINE - 1 bytes in
 * all, logs nothing else meanwhile, and hands the line over with
 * kv_log_access_end(that pointer, its length). The bytes logged, and the
 * writes they leave in, are those of kv_log_access_text of the text. */
char *kv_log_access_begin(char *line, size_t *len);
void kv_log_access_end(char *line, size_t len);

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

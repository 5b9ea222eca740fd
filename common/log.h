/* Logging to stderr: journald and `docker logs` collect it.
 * Every line carries time, pid, the process role ("master", "worker 3", "kvctl")
 * and, for errors, a stable id such as KV0101 so operators can grep for it. */
#ifndef KV_LOG_H
#define KV_LOG_H

#include <stdarg.h>

/* Set the role shown on every line; call after fork(). */
void kv_log_set_role(const char *role);

/* Errors and warnings. kv_log_warn appends strerror(errno); kv_log_warnx does not. */
void kv_log_warn(const char *id, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kv_log_warnx(const char *id, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kv_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Access log: one line per request, already formatted by the caller. */
void kv_log_access(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef KV_DEBUG
#define kv_log_debug(fmt, ...) kv_log_info("%s: " fmt, __func__, ##__VA_ARGS__)
#else
#define kv_log_debug(fmt, ...) ((void)0)
#endif

#endif

#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char log_role[32] = "kilovolt";
static pid_t log_pid;		/* set with the role: a worker sets both after fork */

void
kv_log_set_role(const char *role)
{
	snprintf(log_role, sizeof(log_role), "%s", role);
	log_pid = getpid();
}

/* "YYYY-MM-DDTHH:MM:SS" for ts, formatted once a second: a worker writes an
 * access line per request, and gmtime_r plus six %02d per line cost more
 * than the rest of the line. */
static const char *
log_stamp(const struct timespec *ts)
{
	static char stamp[64];
	static time_t stamp_sec = -1;
	struct tm tm;

	if (ts->tv_sec != stamp_sec) {
		gmtime_r(&ts->tv_sec, &tm);
		snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
		stamp_sec = ts->tv_sec;
	}
	return stamp;
}

/* One write(2) per line so lines from several workers never interleave. */
static void
log_line(const char *level, const char *id, const char *fmt, va_list ap,
    const char *suffix)
{
	char buf[2048];
	struct timespec ts;
	int n, m;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(buf, sizeof(buf), "%s.%03ldZ [%s] %s[%d] %s%s",
	    log_stamp(&ts), ts.tv_nsec / 1000000, level, log_role,
	    (int)(log_pid != 0 ? log_pid : getpid()), id ? id : "", id ? ": " : "");
	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	m = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	if (suffix != NULL) {
		m = snprintf(buf + n, sizeof(buf) - n, ": %s", suffix);
		if (m > 0)
			n += m;
		if ((size_t)n >= sizeof(buf) - 1)
			n = sizeof(buf) - 2;
	}
	buf[n++] = '\n';
	/* Nothing sensible to do if stderr is gone. */
	if (write(STDERR_FILENO, buf, n) == -1)
		return;
}

void
kv_log_warn(const char *id, const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	log_line("error", id, fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

void
kv_log_warnx(const char *id, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("error", id, fmt, ap, NULL);
	va_end(ap);
}

void
kv_log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("info", NULL, fmt, ap, NULL);
	va_end(ap);
}

void
kv_log_access(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line("access", NULL, fmt, ap, NULL);
	va_end(ap);
}

/* The log writer: one line per event on stderr with time, pid, role and,
 * for errors, the KV code (docs/kvcodes.md); contract in log.h. */

#include "common/log.h"
#include "common/fmt.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char log_role[32] = "kilovolt";
static pid_t log_pid;		/* set with the role: a worker sets both after fork */
/* "Z [access] ROLE[PID] ", the part of an access line's prefix after the
 * milliseconds, made once the role and pid are set (0: not made) */
static char access_tail[80];
static size_t access_tail_len;

void
kv_log_set_role(const char *role)
{
	snprintf(log_role, sizeof(log_role), "%s", role);
	log_pid = getpid();
	access_tail_len = 0;
}

/* "YYYY-MM-DDTHH:MM:SS" for ts, formatted once a second: a worker writes an
 * access line per request, and gmtime_r plus six %02d per line cost more
 * than the rest of the line. */
static char stamp[64];
static size_t stamp_len;

static const char *
log_stamp(const struct timespec *ts)
{
	static time_t stamp_sec = -1;
	struct tm tm;
	int n;

	if (ts->tv_sec != stamp_sec) {
		gmtime_r(&ts->tv_sec, &tm);
		n = snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02d",
		    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		    tm.tm_min, tm.tm_sec);
		stamp_len = n < 0 ? 0 : (size_t)n < sizeof(stamp) ? (size_t)n : sizeof(stamp) - 1;
		stamp_sec = ts->tv_sec;
	}
	return stamp;
}

/* Format one line, newline included, into buf[KV_LOG_LINE]; returns its
 * length. */
static size_t
log_format(char *buf, const char *level, const char *id, const char *fmt, va_list ap,
    const char *suffix)
{
	const size_t size = KV_LOG_LINE;
	struct timespec ts;
	int n, m;

	clock_gettime(CLOCK_REALTIME, &ts);
	n = snprintf(buf, size, "%s.%03ldZ [%s] %s[%d] %s%s",
	    log_stamp(&ts), ts.tv_nsec / 1000000, level, log_role,
	    (int)(log_pid != 0 ? log_pid : getpid()), id ? id : "", id ? ": " : "");
	if (n < 0 || (size_t)n >= size)
		n = 0;
	m = vsnprintf(buf + n, size - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n >= size - 2)
		n = size - 2;
	if (suffix != NULL) {
		m = snprintf(buf + n, size - n, ": %s", suffix);
		if (m > 0)
			n += m;
		if ((size_t)n >= size - 1)
			n = size - 2;
	}
	buf[n++] = '\n';
	return (size_t)n;
}

/* Access lines held until kv_log_flush: whole lines, at most PIPE_BUF
 * bytes a write, so a pipe (journald's, docker's) keeps each write whole
 * and lines from several workers still never interleave. */
static char access_buf[PIPE_BUF];
static size_t access_len;
static int access_batch;

static void
log_write(const char *buf, size_t n)
{
	/* Nothing sensible to do if stderr is gone. */
	if (write(STDERR_FILENO, buf, n) == -1)
		return;
}

void
kv_log_flush(void)
{
	if (access_len > 0)
		log_write(access_buf, access_len);
	access_len = 0;
}

void
kv_log_batch_access(int on)
{
	kv_log_flush();
	access_batch = on;
}

static void
log_line(const char *level, const char *id, const char *fmt, va_list ap,
    const char *suffix)
{
	char buf[KV_LOG_LINE];
	size_t n = log_format(buf, level, id, fmt, ap, suffix);

	kv_log_flush();		/* lines leave in the order they were made */
	log_write(buf, n);
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

/* Batch a whole line (one write per loop turn) or write it now. */
static void
access_put(const char *line, size_t n)
{
	if (access_len + n > sizeof(access_buf))
		kv_log_flush();
	if (!access_batch || n > sizeof(access_buf)) {
		log_write(line, n);
		return;
	}
	/* memmove: a line built in the batch (kv_log_access_begin) may sit
	 * past a flush that moved the batch's end back */
	memmove(access_buf + access_len, line, n);
	access_len += n;
}

/* "Z [access] ROLE[PID] " at buf (80 bytes); returns its length. */
static size_t
access_tail_make(char *buf)
{
	struct kv_sb b = { buf, 0, 80 };

	kv_sb_put(&b, "Z [access] ", 11);
	kv_sb_str(&b, log_role);
	kv_sb_put(&b, "[", 1);
	kv_sb_i64(&b, log_pid != 0 ? log_pid : getpid());
	kv_sb_put(&b, "] ", 2);
	return b.len;
}

/* The prefix log_format would write for an access line, by hand: "STAMP.mmmZ
 * [access] ROLE[PID] ", of a stamp made once a second and a tail made once
 * (while no role is set, the pid is asked each time, as log_format does).
 * Returns its length (< 160). */
static size_t
access_prefix(char *buf)
{
	struct timespec ts;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	(void)log_stamp(&ts);
	memcpy(buf, stamp, stamp_len);
	len = stamp_len;
	buf[len++] = '.';
	kv_fmt_u64_pad(buf + len, (uint64_t)(ts.tv_nsec / 1000000), 3);
	len += 3;
	if (log_pid == 0)
		return len + access_tail_make(buf + len);
	if (access_tail_len == 0)
		access_tail_len = access_tail_make(access_tail);
	memcpy(buf + len, access_tail, access_tail_len);
	return len + access_tail_len;
}

char *
kv_log_access_begin(char *line, size_t *plen)
{
	char *buf = line;

	/* in the batch when a whole line fits after what waits there, where
	 * access_put would have copied it without a flush: no copy */
	if (access_batch && sizeof(access_buf) - access_len >= KV_LOG_LINE)
		buf = access_buf + access_len;
	*plen = access_prefix(buf);
	return buf;
}

void
kv_log_access_end(char *line, size_t len)
{
	if (len > KV_LOG_LINE - 1)
		len = KV_LOG_LINE - 1;
	line[len++] = '\n';
	if (line == access_buf + access_len && access_len + len <= sizeof(access_buf)) {
		access_len += len;	/* built in place */
		return;
	}
	access_put(line, len);
}

void
kv_log_access_text(const char *text, size_t n)
{
	char buf[KV_LOG_LINE];
	size_t len;
	char *line = kv_log_access_begin(buf, &len);

	if (n > KV_LOG_LINE - 1 - len)
		n = KV_LOG_LINE - 1 - len;
	memcpy(line + len, text, n);
	kv_log_access_end(line, len + n);
}

/* The bytes kv_log_escape keeps as they are: printable ASCII but space,
 * '"' and '\\' (a table: one load a byte instead of four compares). */
#define KEEP1(c)	((c) > 0x20 && (c) < 0x7f && (c) != '"' && (c) != '\\')
#define KEEP4(c)	KEEP1(c), KEEP1((c) + 1), KEEP1((c) + 2), KEEP1((c) + 3)
#define KEEP16(c)	KEEP4(c), KEEP4((c) + 4), KEEP4((c) + 8), KEEP4((c) + 12)
#define KEEP64(c)	KEEP16(c), KEEP16((c) + 16), KEEP16((c) + 32), KEEP16((c) + 48)
static const unsigned char esc_keep[256] = {
	KEEP64(0), KEEP64(64), KEEP64(128), KEEP64(192)
};

/* 1 when every one of the n bytes at s is kept as it is: eight a step,
 * without a branch a byte. */
static int
all_kept(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned ok = 1;
	size_t i = 0;

	for (; i + 8 <= n && ok; i += 8)
		ok = esc_keep[p[i]] & esc_keep[p[i + 1]] & esc_keep[p[i + 2]] &
		    esc_keep[p[i + 3]] & esc_keep[p[i + 4]] & esc_keep[p[i + 5]] &
		    esc_keep[p[i + 6]] & esc_keep[p[i + 7]];
	for (; i < n; i++)	/* at most seven */
		ok &= esc_keep[p[i]];
	return ok != 0;
}

const char *
kv_log_escape(const char *s, size_t n, char *out, size_t outlen)
{
	(void)kv_log_escape_len(s, n, out, outlen);
	return out;
}

/* An escape that ran out of room at o: "..." in place of what did not fit
 * (room for it by construction of the callers' checks: back off). */
static size_t
escape_cut(char *out, size_t o, size_t outlen)
{
	while (o > 0 && o + 4 > outlen)
		o--;
	if (outlen >= 4) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	if (o >= outlen)
		o = outlen - 1;
	out[o] = '\0';
	return o;
}

size_t
kv_log_escape_len(const char *s, size_t n, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;
	unsigned char ch;

	if (outlen == 0)
		return 0;
	/* up to the NUL: then a byte past n is never read, and most fields
	 * (every byte kept, room for all) are one check and one copy */
	if (s == NULL) {
		out[0] = '\0';
		return 0;
	}
	n = strnlen(s, n);
	if (n < outlen && all_kept(s, n)) {
		memcpy(out, s, n);
		out[n] = '\0';
		return n;
	}
	for (i = 0; i < n; i++) {
		size_t r = i, take;

		/* a run of bytes kept as they are goes in one copy (three
		 * fields of every access line; a byte at a time cost ~22
		 * instructions a byte); NUL is not kept, so the run stops
		 * there too */
		while (r < n && esc_keep[(unsigned char)s[r]])
			r++;
		if (r > i) {
			take = r - i;
			if (o + take >= outlen) {
				/* as byte by byte: up to the last byte's room */
				memcpy(out + o, s + i, outlen - 1 - o);
				return escape_cut(out, outlen - 1, outlen);
			}
			memcpy(out + o, s + i, take);
			o += take;
			i = r - 1;
			continue;
		}
		ch = (unsigned char)s[i];
		if (o + 4 >= outlen)
			return escape_cut(out, o, outlen);
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[ch >> 4];
		out[o++] = hex[ch & 0xf];
	}
	out[o] = '\0';
	return o;
}

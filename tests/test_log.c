/* Unit tests for kv_log_escape: client-supplied values in log lines. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "tests/unit.h"

/* The escape as it was, a byte at a time: the reference the runs of
 * kv_log_escape must match, output byte for byte. */
static const char *
ref_escape(const char *s, size_t n, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;
	unsigned char ch;

	if (outlen == 0)
		return out;
	for (i = 0; s != NULL && i < n && s[i] != '\0'; i++) {
		ch = (unsigned char)s[i];
		if (ch > 0x20 && ch < 0x7f && ch != '"' && ch != '\\') {
			if (o + 1 >= outlen)
				goto cut;
			out[o++] = (char)ch;
			continue;
		}
		if (o + 4 >= outlen)
			goto cut;
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[ch >> 4];
		out[o++] = hex[ch & 0xf];
	}
	out[o] = '\0';
	return out;
cut:
	while (o > 0 && o + 4 > outlen)
		o--;
	if (outlen >= 4) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o < outlen ? o : outlen - 1] = '\0';
	return out;
}

/* Random strings over a small alphabet of kept and escaped bytes, every
 * length limit and output size from 1 to 40. */
static void
test_against_reference(void)
{
	static const char abc[] = "ab/?\\\" \n\x1b\x7f\xc3\xa9-_.0";
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	char in[48], got[48], want[48];
	int t, bad = 0;

	for (t = 0; t < 20000; t++) {
		size_t len, lim, outlen, i;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = x % 40;
		for (i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			in[i] = abc[x % (sizeof(abc) - 1)];
		}
		in[len] = '\0';
		lim = (x >> 20) % 8 == 0 ? (x >> 24) % 40 : (size_t)-1;
		outlen = 1 + (x >> 32) % 40;
		memset(got, 'G', sizeof(got));
		memset(want, 'W', sizeof(want));
		if (t % 4 == 0)		/* any byte at all, now and then */
			for (i = 0; i < len; i++)
				in[i] = (char)(1 + (x >> (i % 56)) % 255);
		if (kv_log_escape_len(in, lim, got, outlen) != strlen(got) && bad++ == 0)
			fprintf(stderr, "  \"%s\": kv_log_escape_len is not its length\n", in);
		ref_escape(in, lim, want, outlen);
		if (strcmp(got, want) != 0 && bad++ == 0)
			fprintf(stderr, "  \"%s\" limit %zu size %zu: \"%s\", want \"%s\"\n",
			    in, lim, outlen, got, want);
		if (got[outlen] != 'G' && bad++ == 0)
			fprintf(stderr, "  wrote past %zu bytes\n", outlen);
	}
	CHECK_INT(bad, 0);
}

/* One line from FD: up to its newline, NUL-terminated. */
static size_t
read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap && read(fd, buf + n, 1) == 1 && buf[n] != '\n')
		n++;
	buf[n] = '\0';
	return n;
}

/* A line built in place (kv_log_access_begin/end) logs the bytes that
 * kv_log_access_text of its text does, at every length, cut included:
 * compared past the prefix, whose time may differ. */
static void
test_access_in_place(void)
{
	char text[2200], line[KV_LOG_LINE], a[2300], b[2300], pid[32];
	int fds[2], saved, bad = 0;
	size_t n, len, pa, pb;

	if (pipe(fds) == -1 || (saved = dup(STDERR_FILENO)) == -1 ||
	    dup2(fds[1], STDERR_FILENO) == -1) {
		CHECK(0);
		return;
	}
	kv_log_set_role("worker 0");
	snprintf(pid, sizeof(pid), "[%d] ", (int)getpid());
	for (n = 0; n < sizeof(text); n++)
		text[n] = (char)('a' + n % 26);
	for (n = 0; n < sizeof(text); n += n < 2100 && n > 1900 ? 1 : 37) {
		char *at;

		/* batched every other time: built in the batch itself when
		 * a line fits there, flushed after each pair */
		kv_log_batch_access((n / 37) % 2);
		kv_log_access_text(text, n);
		at = kv_log_access_begin(line, &len);
		pb = len;
		memcpy(at + len, text, n < KV_LOG_LINE - 1 - len ? n : KV_LOG_LINE - 1 - len);
		len += n < KV_LOG_LINE - 1 - len ? n : KV_LOG_LINE - 1 - len;
		kv_log_access_end(at, len);
		kv_log_flush();
		read_line(fds[0], a, sizeof(a));
		read_line(fds[0], b, sizeof(b));
		pa = strstr(a, pid) != NULL ? (size_t)(strstr(a, pid) - a) + strlen(pid) : 0;
		if ((pa != pb || strcmp(a + pa, b + pb) != 0 || strlen(a) != strlen(b)) &&
		    bad++ == 0)
			fprintf(stdout, "  text of %zu: \"%s\" vs \"%s\"\n", n, a, b);
	}
	kv_log_batch_access(0);
	if (dup2(saved, STDERR_FILENO) == -1 || close(saved) == -1 || close(fds[0]) == -1 ||
	    close(fds[1]) == -1)
		bad++;
	CHECK_INT(bad, 0);
}

int
main(void)
{
	char out[64], small[8];

	test_against_reference();
	test_access_in_place();

	CHECK_STR(kv_log_escape("gpt-4o-mini", (size_t)-1, out, sizeof(out)), "gpt-4o-mini");
	CHECK_STR(kv_log_escape("a b\nc", (size_t)-1, out, sizeof(out)), "a\\x20b\\x0ac");
	CHECK_STR(kv_log_escape("\x1b[31m\"\\", (size_t)-1, out, sizeof(out)),
	    "\\x1b[31m\\x22\\x5c");
	CHECK_STR(kv_log_escape("\xff\x7f", (size_t)-1, out, sizeof(out)), "\\xff\\x7f");
	CHECK_STR(kv_log_escape("/v1/x?key=secret", 5, out, sizeof(out)), "/v1/x");
	CHECK_STR(kv_log_escape(NULL, 3, out, sizeof(out)), "");
	/* Cut with "...", never past the buffer, never a raw byte. */
	CHECK_STR(kv_log_escape("abcdefghijkl", (size_t)-1, small, sizeof(small)), "abcd...");
	kv_log_escape("\n\n\n\n", (size_t)-1, small, sizeof(small));
	CHECK(strlen(small) < sizeof(small) && strchr(small, '\n') == NULL);
	return unit_done();
}

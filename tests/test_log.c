/* Unit tests for kv_log_escape: client-supplied values in log lines. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <stdint.h>
#include <string.h>

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
		kv_log_escape(in, lim, got, outlen);
		ref_escape(in, lim, want, outlen);
		if (strcmp(got, want) != 0 && bad++ == 0)
			fprintf(stderr, "  \"%s\" limit %zu size %zu: \"%s\", want \"%s\"\n",
			    in, lim, outlen, got, want);
		if (got[outlen] != 'G' && bad++ == 0)
			fprintf(stderr, "  wrote past %zu bytes\n", outlen);
	}
	CHECK_INT(bad, 0);
}

int
main(void)
{
	char out[64], small[8];

	test_against_reference();

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

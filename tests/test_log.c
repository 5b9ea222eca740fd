/* Unit tests for kv_log_escape: client-supplied values in log lines. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <string.h>

#include "common/log.h"
#include "tests/unit.h"

int
main(void)
{
	char out[64], small[8];

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

/* Unit tests for common/backoff.c: a failure every 2 s for a day is
 * logged a few dozen times, each repeat with its count. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/backoff.h"
#include "tests/unit.h"

int
main(void)
{
	struct kv_backoff b = { 0 };
	char buf[96];
	int64_t t;
	int logged = 0, early = 0;

	CHECK_INT(kv_backoff_fail(&b, 1000), 1);
	kv_backoff_describe(&b, 1000, buf, sizeof(buf));
	CHECK_STR(buf, "");
	CHECK_INT(kv_backoff_fail(&b, 1000), 0);	/* same second */
	CHECK_INT(kv_backoff_fail(&b, 1002), 1);
	kv_backoff_describe(&b, 1002, buf, sizeof(buf));
	CHECK_STR(buf, ", still failing: 3 times in 2 s");
	for (t = 1004; t < 1000 + 86400; t += 2) {
		int l = kv_backoff_fail(&b, t);

		logged += l;
		if (l && t < 1000 + 600)
			early++;
	}
	/* Doubling to 10 minutes: ~10 lines in the first 10 minutes, then
	 * one per 10 minutes: about 150 in a day instead of 43200. */
	CHECK(logged > 100 && logged < 160);
	CHECK(early >= 5 && early <= 10);
	kv_backoff_describe(&b, 1000 + 86400, buf, sizeof(buf));
	CHECK_STR(buf, ", still failing: 43201 times in 1440 min");
	CHECK_INT(kv_backoff_ok(&b), 43201);	/* 2 at 1000 s, then one per 2 s */
	CHECK_INT(kv_backoff_ok(&b), 0);
	CHECK_INT(kv_backoff_fail(&b, 200000), 1);	/* a new episode: said at once */
	return unit_done();
}

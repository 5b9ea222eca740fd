/* Unit tests for a report's window over the spend history
 * (shm/history_window.h): the buckets a window takes (minutes within the
 * last hour, else hours within the last day, rounded outward, refused
 * beyond), and on a real ledger a team and its two keys charged by the
 * tree's settle at sampled times: each window's sum of the keys is the
 * team's, to the nano-dollar. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "shm/history.h"
#include "shm/history_window.h"
#include "shm/ledger.h"
#include "shm/tree.h"
#include "tests/unit.h"

#define NOW	1796685600LL	/* 20 minutes into an hour */

static void
test_window(void)
{
	struct kv_hist_window w;
	int64_t now = NOW + 34;	/* 20 minutes 34 s into an hour */

	CHECK_INT(kv_history_window(now, now - 600, now, &w), 0);
	CHECK_INT(w.step, 60);
	CHECK_INT(w.from, (now - 600) / 60 * 60);
	CHECK_INT(w.to, (now / 60 + 1) * 60);	/* the current minute whole */
	CHECK_INT(kv_history_window(now, now - 59 * 60, now - 60, &w), 0);
	CHECK_INT(w.step, 60);
	CHECK_INT(w.to, (now - 60) / 60 * 60 + 60);
	/* 61 minutes back: hours */
	CHECK_INT(kv_history_window(now, now - 61 * 60, now, &w), 0);
	CHECK_INT(w.step, 3600);
	CHECK_INT(w.from, (now - 61 * 60) / 3600 * 3600);
	CHECK_INT(w.to, (now / 3600 + 1) * 3600);
	CHECK_INT(kv_history_window(now, now - 23 * 3600, now, &w), 0);
	CHECK_INT(kv_history_window(now, now - 25 * 3600, now, &w), -1);
	CHECK_INT(kv_history_window(now, now, now, &w), -2);
	CHECK_INT(kv_history_window(now, now + 1, now + 5, &w), -2);
	CHECK_INT(kv_history_window(now, now - 10, now - 20, &w), -2);
	/* an until past now ends with the current bucket */
	CHECK_INT(kv_history_window(now, now - 120, now + 86400, &w), 0);
	CHECK_INT(w.to, (now / 60 + 1) * 60);
}

static struct kv_account *
node(struct kv_ledger *l, const char *name)
{
	uint8_t h[32];

	kv_key_hash(name, strlen(name), h);
	return kv_ledger_account(l, h, 1, NULL, 1000000000);
}

/* Charge COST at keys[k] and the team by the tree's settle, at NOW. */
static void
charge(struct kv_ledger *l, struct kv_account *key, struct kv_account *team, int64_t cost)
{
	struct kv_account *chain[2] = { key, team };
	struct kv_tree_hold h;
	int64_t rem;
	int refused;

	CHECK_INT(kv_tree_reserve(l, &l->workers[0], chain, 2, cost, &h, &refused, &rem), 0);
	kv_tree_settle(l, &l->workers[0], &h, cost, 1);
}

static void
test_sums(const char *path)
{
	struct kv_ledger l;
	struct kv_account *k1, *k2, *t;
	struct kv_hist_window w;
	char err[256];
	int64_t now = NOW, step, s[3];
	int i;

	if ((unlink(path) == -1 && errno != ENOENT) ||
	    kv_ledger_open(&l, path, 64, KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "test_sums: %s\n", err);
		unit_fail++;
		return;
	}
	k1 = node(&l, "k1");
	k2 = node(&l, "k2");
	t = node(&l, "team/t");
	/* 3 hours of charges, a sample every 7 s: odd amounts, both keys */
	for (step = 0; step < 3 * 3600; step += 7) {
		charge(&l, step % 2 ? k1 : k2, t, 1000 + step % 997);
		kv_history_sample_all(&l, now + step);
	}
	now += step - 7;
	for (i = 0; i < 4; i++) {
		int64_t since = now - (i == 0 ? 300 : i == 1 ? 3599 : i == 2 ? 2 * 3600 : 23 * 3600);

		CHECK_INT(kv_history_window(now, since, now, &w), 0);
		s[0] = kv_history_window_spent(&l, k1, now, &w);
		s[1] = kv_history_window_spent(&l, k2, now, &w);
		s[2] = kv_history_window_spent(&l, t, now, &w);
		CHECK(s[0] > 0 && s[1] > 0);
		CHECK_INT(s[0] + s[1], s[2]);
	}
	/* the whole history (3 hours < 24) is every charge */
	CHECK_INT(kv_history_window(now, now - 23 * 3600, now, &w), 0);
	CHECK_INT(kv_history_window_spent(&l, t, now, &w), kv_account_spent(t));
	kv_ledger_close(&l);
	unlink(path);
}

int
main(void)
{
	char dir[] = "/tmp/kvwin.XXXXXX", path[64];

	if (mkdtemp(dir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", dir);
	test_window();
	test_sums(path);
	rmdir(dir);
	return unit_done();
}

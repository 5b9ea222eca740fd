/* Unit tests for shm/keys.c: secrets, issue, revoke, rotate (links), the
 * workers' admission, per-key periods, the config clash, links kept
 * through a rebuild of the ledger (shm/grow.c); issue 33: key names that
 * cannot read as ids (common/key_label.c), ids found before names, and
 * link slots that come back (shm/repair.c's reclaim). */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/key_label.h"

#include "shm/grow.h"
#include "shm/keys.h"
#include "shm/repair.h"
#include "tests/unit.h"

static char tmpdir[64], path[128];

static int
open_new(struct kv_ledger *l, uint32_t max_keys)
{
	char err[512];

	if (unlink(path) == -1 && errno != ENOENT)
		return -1;
	if (kv_ledger_open(l, path, max_keys, KV_LEDGER_CREATE, err, sizeof(err)) == -1) {
		fprintf(stderr, "open_new: %s\n", err);
		return -1;
	}
	return 0;
}

/* HASH's hex digits start with HEX (lower case). */
static int
hash_starts(const uint8_t hash[32], const char *hex)
{
	char full[65];
	int i;

	for (i = 0; i < 32; i++)
		snprintf(full + 2 * i, 3, "%02x", hash[i]);
	return strncmp(full, hex, strlen(hex)) == 0;
}

static struct kv_key_spec
spec(const char *label, int64_t budget)
{
	struct kv_key_spec s = { label, budget, -1, -1, -1, 0 };

	return s;
}

static void
test_generate(void)
{
	uint8_t raw[32], hash[32], again[32];
	char key[KV_KEY_TEXT], key2[KV_KEY_TEXT], out[KV_KEY_DIGITS + 1];
	size_t i;

	memset(raw, 0, sizeof(raw));
	kv_keys_base62(raw, out);
	CHECK_INT(strlen(out), KV_KEY_DIGITS);
	CHECK(strspn(out, "0") == KV_KEY_DIGITS);
	raw[31] = 61;
	kv_keys_base62(raw, out);
	CHECK(out[KV_KEY_DIGITS - 1] == 'z' && out[KV_KEY_DIGITS - 2] == '0');
	raw[31] = 62;
	kv_keys_base62(raw, out);
	CHECK(out[KV_KEY_DIGITS - 1] == '0' && out[KV_KEY_DIGITS - 2] == '1');
	memset(raw, 0xff, sizeof(raw));
	kv_keys_base62(raw, out);	/* 2^256 - 1 still fits in 43 digits */
	CHECK(out[0] != '0' && strlen(out) == KV_KEY_DIGITS);

	CHECK_INT(kv_keys_generate(key, hash), 0);
	CHECK_INT(strlen(key), KV_KEY_TEXT - 1);
	CHECK(strncmp(key, "kv-", 3) == 0);
	for (i = 3; key[i] != '\0'; i++)
		CHECK(strchr("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
		    key[i]) != NULL);
	kv_key_hash(key, strlen(key), again);
	CHECK(memcmp(hash, again, 32) == 0);
	CHECK_INT(kv_keys_generate(key2, again), 0);
	CHECK(strcmp(key, key2) != 0 && memcmp(hash, again, 32) != 0);
}

static void
test_issue_revoke(void)
{
	struct kv_ledger l;
	struct kv_key_spec s;
	struct kv_account *a, *found;
	uint8_t h[32], h2[32];
	char err[256];

	CHECK_INT(open_new(&l, 16), 0);
	kv_key_hash("kv-one", 6, h);
	s = spec("dev", 5000);
	s.rpm = 60;
	s.period = KV_PERIOD_DAILY;
	a = kv_keys_issue(&l, h, &s, err, sizeof(err));
	CHECK(a != NULL);
	CHECK(atomic_load(&a->aflags) & KV_AF_ISSUED);
	CHECK(atomic_load(&a->aflags) & KV_AF_KEPT);
	CHECK_INT(atomic_load(&a->budget_nusd), 5000);
	CHECK_INT(atomic_load(&a->rpm), 60);
	CHECK_INT(kv_keys_period(a, KV_PERIOD_NONE), KV_PERIOD_DAILY);
	CHECK(kv_keys_find_label(&l, "dev") == a);
	CHECK(kv_keys_find_label(&l, "de") == NULL);

	/* The name is taken; bad names and budgets are refused. */
	kv_key_hash("kv-two", 6, h2);
	CHECK(kv_keys_issue(&l, h2, &s, err, sizeof(err)) == NULL && errno == EEXIST);
	CHECK(strstr(err, "exists already") != NULL);
	s = spec("with space", 1);
	CHECK(kv_keys_issue(&l, h2, &s, err, sizeof(err)) == NULL && errno == EINVAL);
	s = spec("", 1);
	CHECK(kv_keys_issue(&l, h2, &s, err, sizeof(err)) == NULL);
	s = spec("neg", -1);
	CHECK(kv_keys_issue(&l, h2, &s, err, sizeof(err)) == NULL);

	/* Admission: the account itself; revoked refuses, once. */
	found = kv_ledger_account(&l, h, 0, NULL, 0);
	CHECK(found == a);
	CHECK_INT(kv_keys_admit(&l, &found, 100), KV_KEY_OK);
	CHECK(found == a);
	CHECK_INT(kv_keys_revoke(a), 0);
	CHECK_INT(kv_keys_revoke(a), -1);
	CHECK_INT(kv_keys_admit(&l, &found, 100), KV_KEY_REVOKED);
	CHECK(strstr(kv_keys_refusal(KV_KEY_REVOKED), "revoked") != NULL);
	kv_ledger_close(&l);
}

static void
test_expires(void)
{
	struct kv_ledger l;
	struct kv_key_spec s = spec("temp", 10);
	struct kv_account *a, *f;
	uint8_t h[32];
	char err[256];

	CHECK_INT(open_new(&l, 8), 0);
	kv_key_hash("kv-temp", 7, h);
	s.expires = 1000;
	a = kv_keys_issue(&l, h, &s, err, sizeof(err));
	CHECK(a != NULL);
	f = a;
	CHECK_INT(kv_keys_admit(&l, &f, 999), KV_KEY_OK);
	CHECK_INT(kv_keys_admit(&l, &f, 1000), KV_KEY_EXPIRED);
	kv_ledger_close(&l);
}

/* Rotation: same account, old secret refused, a second rotation refuses
 * the first new one; links are not listed (not READY); spend settles on
 * the account. */
static void
test_rotate(void)
{
	struct kv_ledger l;
	struct kv_key_spec s = spec("rot", 1000);
	struct kv_account *a, *f, *link1;
	struct kv_worker_slot *w;
	uint8_t h0[32], h1[32], h2[32];
	char err[256];
	int64_t rem;
	uint32_t i, ready = 0;
	int r;

	CHECK_INT(open_new(&l, 16), 0);
	w = &l.workers[0];
	kv_key_hash("kv-r0", 5, h0);
	kv_key_hash("kv-r1", 5, h1);
	kv_key_hash("kv-r2", 5, h2);
	a = kv_keys_issue(&l, h0, &s, err, sizeof(err));
	CHECK(a != NULL);
	CHECK_INT(kv_keys_rotate(&l, a, h1, err, sizeof(err)), 0);
	f = kv_ledger_account(&l, h0, 0, NULL, 0);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_ROTATED);
	link1 = f = kv_ledger_account(&l, h1, 0, NULL, 0);
	CHECK(f != NULL && f != a && atomic_load(&f->state) == KV_SLOT_LINK);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_OK);
	CHECK(f == a);
	r = kv_ledger_reserve(&l, w, f, 100, &rem);
	CHECK(r >= 0);
	kv_ledger_settle(&l, w, r, 70, NULL, NULL);
	CHECK_INT(kv_account_spent(a), 70);
	KV_FOR_EACH_SLOT(&l, i)
		ready += kv_slot_ready(&l.accounts[i].state);
	CHECK_INT(ready, 1);
	/* slots in use: the account and its link (kilovolt_keys counts both) */
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 2);

	CHECK_INT(kv_keys_rotate(&l, a, h2, err, sizeof(err)), 0);
	f = link1;
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_ROTATED);
	f = kv_ledger_account(&l, h2, 0, NULL, 0);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_OK);
	CHECK(f == a);
	/* Rotating to a hash that has a slot already is refused. */
	CHECK_INT(kv_keys_rotate(&l, a, h1, err, sizeof(err)), -1);

	/* A revoked account refuses its links too. */
	kv_keys_revoke(a);
	f = kv_ledger_account(&l, h2, 0, NULL, 0);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_REVOKED);
	CHECK_INT(kv_keys_rotate(&l, a, h1, err, sizeof(err)), -1);
	kv_ledger_close(&l);
}

/* Forgetting an account retires its links with it; a link an older build
 * left behind its forgotten account admits nothing and is reclaimable; a
 * key not issued cannot rotate. */
static void
test_forgotten_and_plain(void)
{
	struct kv_ledger l;
	struct kv_key_spec s = spec("gone", 1000);
	struct kv_account *a, *f, *p;
	uint8_t h0[32], h1[32], hp[32];
	char err[256];

	CHECK_INT(open_new(&l, 8), 0);
	kv_key_hash("kv-g0", 5, h0);
	kv_key_hash("kv-g1", 5, h1);
	a = kv_keys_issue(&l, h0, &s, err, sizeof(err));
	CHECK_INT(kv_keys_rotate(&l, a, h1, err, sizeof(err)), 0);
	CHECK_INT(kv_account_retire(&l, a), 1);
	CHECK(kv_ledger_account(&l, h1, 0, NULL, 0) == NULL && errno == ENOENT);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 0);

	/* an older build's forget: the account's slot alone went */
	a = kv_keys_issue(&l, h0, &s, err, sizeof(err));
	CHECK_INT(kv_keys_rotate(&l, a, h1, err, sizeof(err)), 0);
	memset(a, 0, sizeof(*a));
	atomic_store(&a->state, KV_SLOT_DEAD);
	atomic_store(&a->tag, KV_TAG_DEAD);
	f = kv_ledger_account(&l, h1, 0, NULL, 0);
	CHECK(f != NULL);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_REVOKED);
	CHECK_INT(kv_keys_link_reclaimable(&l, f, 1, KV_KEYS_ROTATED_GRACE_S), 1);

	kv_key_hash("sk-plain", 8, hp);
	p = kv_ledger_account(&l, hp, 1, NULL, 5);
	CHECK_INT(kv_keys_rotate(&l, p, h0, err, sizeof(err)), -1);
	CHECK(strstr(err, "not an issued key") != NULL);
	f = p;
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_OK);
	CHECK(f == p);
	kv_ledger_close(&l);
}

/* A rebuild for more keys moves accounts: each link follows its account. */
static void
test_grow_keeps_links(void)
{
	struct kv_ledger l;
	struct kv_key_spec s = spec("grow", 1000);
	struct kv_account *a, *f;
	uint8_t h0[32], h1[32], hx[32];
	char err[256], name[16];
	int i;

	CHECK_INT(open_new(&l, 8), 0);
	for (i = 0; i < 4; i++) {	/* others first, so indices move */
		snprintf(name, sizeof(name), "x%d", i);
		kv_key_hash(name, strlen(name), hx);
		CHECK(kv_ledger_account(&l, hx, 1, NULL, 1) != NULL);
	}
	kv_key_hash("kv-w0", 5, h0);
	kv_key_hash("kv-w1", 5, h1);
	a = kv_keys_issue(&l, h0, &s, err, sizeof(err));
	CHECK(a != NULL);
	kv_account_charge(a, 33);
	CHECK_INT(kv_keys_rotate(&l, a, h1, err, sizeof(err)), 0);
	CHECK_INT(kv_ledger_grow(&l, path, 257, err, sizeof(err)), 0);
	f = kv_ledger_account(&l, h1, 0, NULL, 0);
	CHECK(f != NULL && atomic_load(&f->state) == KV_SLOT_LINK);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_OK);
	CHECK(f != NULL && strcmp(f->label, "grow") == 0);
	CHECK_INT(kv_account_spent(f), 33);
	f = kv_ledger_account(&l, h0, 0, NULL, 0);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_ROTATED);
	kv_ledger_close(&l);
}

static void
test_clash(void)
{
	struct kv_ledger l;
	struct kv_key_spec s = spec("bob", 1);
	struct kv_config cf;
	struct kv_keydef kd;
	uint8_t h[32];
	char err[256];

	CHECK_INT(open_new(&l, 8), 0);
	kv_key_hash("kv-bob", 6, h);
	CHECK(kv_keys_issue(&l, h, &s, err, sizeof(err)) != NULL);
	memset(&cf, 0, sizeof(cf));
	memset(&kd, 0, sizeof(kd));
	snprintf(kd.label, sizeof(kd.label), "bob");
	kv_key_hash("sk-bob-config", 13, kd.hash);
	cf.keys = &kd;
	cf.nkeys = 1;
	CHECK_STR(kv_keys_config_clash(&l, &cf), "bob");
	snprintf(kd.label, sizeof(kd.label), "carol");
	CHECK(kv_keys_config_clash(&l, &cf) == NULL);
	kv_ledger_close(&l);
}

/* kv_keys_create and kv_keys_new_secret (kvctl keys and the admin API):
 * a refusal says why in errno, leaves the key zeroed and the table as it
 * was; kv_keys_lookup finds a label and an id. */
static void
test_create_lookup(void)
{
	struct kv_ledger l;
	struct kv_key_spec s = spec("dave", 5);
	struct kv_account *a, *b, *found[2];
	struct kv_config cf;
	struct kv_keydef kd;
	char key[KV_KEY_TEXT], key2[KV_KEY_TEXT], err[256], id[13], zero[KV_KEY_TEXT];
	uint8_t h[32];
	int clash;

	memset(zero, 0, sizeof(zero));
	CHECK_INT(open_new(&l, 4), 0);
	memset(&cf, 0, sizeof(cf));
	memset(&kd, 0, sizeof(kd));
	snprintf(kd.label, sizeof(kd.label), "erin");
	cf.keys = &kd;
	cf.nkeys = 1;
	a = kv_keys_create(&l, &cf, &s, key, err, sizeof(err));
	CHECK(a != NULL);
	CHECK(strncmp(key, "kv-", 3) == 0 && strlen(key) == KV_KEY_TEXT - 1);
	kv_key_hash(key, strlen(key), h);
	CHECK(a != NULL && memcmp(a->hash, h, 32) == 0);
	CHECK(a != NULL && (atomic_load(&a->aflags) & KV_AF_ISSUED));
	/* a [key] name of the config, then a taken one: EEXIST, nothing made */
	s.label = "erin";
	CHECK(kv_keys_create(&l, &cf, &s, key2, err, sizeof(err)) == NULL);
	CHECK_INT(errno, EEXIST);
	CHECK(memcmp(key2, zero, sizeof(zero)) == 0);
	s.label = "dave";
	CHECK(kv_keys_create(&l, &cf, &s, key2, err, sizeof(err)) == NULL);
	CHECK_INT(errno, EEXIST);
	s.label = "bad name";
	CHECK(kv_keys_create(&l, NULL, &s, key2, err, sizeof(err)) == NULL);
	CHECK_INT(errno, EINVAL);
	/* lookup: label, then id prefix */
	kv_key_id(h, id);
	CHECK_INT(kv_keys_lookup(&l, "dave", found, 2, &clash), 1);
	CHECK(found[0] == a);
	CHECK_INT(kv_keys_lookup(&l, id, found, 2, &clash), 1);
	CHECK(found[0] == a);
	CHECK_INT(kv_keys_lookup(&l, "zz", found, 2, &clash), 0);
	/* a new secret for it; then fill the table: ENOSPC */
	CHECK_INT(kv_keys_new_secret(&l, a, key2, err, sizeof(err)), 0);
	CHECK(strcmp(key, key2) != 0);
	s.label = "f1";
	b = kv_keys_create(&l, NULL, &s, key, err, sizeof(err));
	CHECK(b != NULL);
	s.label = "f2";
	CHECK(kv_keys_create(&l, NULL, &s, key, err, sizeof(err)) != NULL);
	s.label = "f3";
	CHECK(kv_keys_create(&l, NULL, &s, key, err, sizeof(err)) == NULL);
	CHECK_INT(errno, ENOSPC);
	CHECK(memcmp(key, zero, sizeof(zero)) == 0);
	CHECK_INT(kv_keys_new_secret(&l, a, key2, err, sizeof(err)), -1);
	CHECK_INT(errno, ENOSPC);
	CHECK_INT(kv_keys_revoke(b), 0);
	CHECK_INT(kv_keys_new_secret(&l, b, key2, err, sizeof(err)), -1);
	CHECK_INT(errno, EKEYREVOKED);
	kv_ledger_close(&l);
}

/* Issue 33, ids and labels: a name never reads as an id, and survives an
 * admin API path unchanged; the one rule for the config, kvctl, the admin
 * API and another host's keys (kv_keys_issue). */
static void
test_label_rules(void)
{
	static const char *const good[] = { "a", "cafe", "abcde", "dev-1", "team/bot",
		"ops@example.com", "eu:prod.v2", "deadbeefx", "0123456789abcdez", "A_B" };
	static const char *const bad[] = { "", "bd2268f58cb6", "ABCDEF", "123456",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"with space", "q?x", "a#b", "50%", "quo\"te", "back\\slash", "t\x01",
		"caf\xc3\xa9", "/a", "a/", "a//b", ".", "..", "a/./b", "a/..",
		"123456789012345678901234567890123456789012345678" };
	struct kv_ledger l;
	struct kv_key_spec sp;
	uint8_t h[32];
	char err[256];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (kv_key_label_check(good[i], KV_LABEL_MAX, err, sizeof(err)) != 0)
			fprintf(stderr, "  refused '%s': %s\n", good[i], err);
		CHECK_INT(kv_key_label_check(good[i], KV_LABEL_MAX, err, sizeof(err)), 0);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (kv_key_label_check(bad[i], KV_LABEL_MAX, err, sizeof(err)) != -1)
			fprintf(stderr, "  took '%s'\n", bad[i]);
		CHECK_INT(kv_key_label_check(bad[i], KV_LABEL_MAX, err, sizeof(err)), -1);
	}
	CHECK(kv_key_label_idlike("bd2268") && kv_key_label_idlike("BD2268F5"));
	CHECK(!kv_key_label_idlike("bd226") && !kv_key_label_idlike("bd2268g"));
	kv_key_label_check("bd2268f58cb6", KV_LABEL_MAX, err, sizeof(err));
	CHECK(strstr(err, "reads as a key id") != NULL);

	CHECK_INT(open_new(&l, 8), 0);
	kv_key_hash("kv-lab", 6, h);
	sp = spec("bd2268f58cb6", 1);
	CHECK(kv_keys_issue(&l, h, &sp, err, sizeof(err)) == NULL && errno == EINVAL);
	CHECK(strstr(err, "a key's name: it reads as a key id") != NULL);
	sp = spec("a/../b", 1);
	CHECK(kv_keys_issue(&l, h, &sp, err, sizeof(err)) == NULL && errno == EINVAL);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 0);
	sp = spec("team/bot", 1);
	CHECK(kv_keys_issue(&l, h, &sp, err, sizeof(err)) != NULL);
	kv_ledger_close(&l);
}

/* Give A the label NAME as an older build could (no check). */
static void
legacy_label(struct kv_account *a, const char *name)
{
	snprintf(a->label, sizeof(a->label), "%s", name);
	a->flags |= KV_ACCOUNT_NAMED;
}

/* Issue 33, row 8: a tenant's key named after another key's id. A whole
 * id is that key's; a name that is another key's id prefix is a 409
 * (clash), never a guess; a short hex name is a name first. */
static void
test_lookup_ids_first(void)
{
	struct kv_ledger l;
	struct kv_account *leaked, *tenant, *found[4];
	char id[13], short_id[9], four[5];
	uint8_t h[32];
	int clash;

	CHECK_INT(open_new(&l, 16), 0);
	kv_key_hash("sk-leaked", 9, h);
	leaked = kv_ledger_account(&l, h, 1, NULL, 5);
	kv_key_id(h, id);
	kv_key_hash("sk-tenant", 9, h);
	tenant = kv_ledger_account(&l, h, 1, NULL, 5);
	CHECK(leaked != NULL && tenant != NULL);

	legacy_label(tenant, id);
	CHECK_INT(kv_keys_lookup(&l, id, found, 4, &clash), 1);
	CHECK(found[0] == leaked && !clash);
	id[0] = (char)toupper((unsigned char)id[0]);	/* ids in either case */
	CHECK_INT(kv_keys_lookup(&l, id, found, 4, &clash), 1);
	CHECK(found[0] == leaked);
	id[0] = (char)tolower((unsigned char)id[0]);

	memcpy(short_id, id, 8);
	short_id[8] = '\0';
	legacy_label(tenant, short_id);
	CHECK_INT(kv_keys_lookup(&l, short_id, found, 4, &clash), 2);
	CHECK(clash && found[0] == tenant && found[1] == leaked);
	CHECK_INT(kv_keys_lookup(&l, short_id, found, 1, &clash), 2);	/* MAX 1 */
	CHECK(clash && found[0] == tenant);

	/* the same key by name and by id prefix: no clash */
	kv_key_id(tenant->hash, id);
	memcpy(short_id, id, 8);
	legacy_label(tenant, short_id);
	CHECK_INT(kv_keys_lookup(&l, short_id, found, 4, &clash), 1);
	CHECK(found[0] == tenant && !clash);

	/* "cafe"-like names (under 6 digits) stay names first */
	kv_key_id(leaked->hash, id);
	memcpy(four, id, 4);
	four[4] = '\0';
	legacy_label(tenant, four);
	CHECK_INT(kv_keys_lookup(&l, four, found, 4, &clash), 1);
	CHECK(found[0] == tenant && !clash);
	legacy_label(tenant, "tenant");
	CHECK_INT(kv_keys_lookup(&l, four, found, 4, &clash), 1);
	CHECK(found[0] == leaked);
	/* 12 hex digits that are nobody's id: an old name still */
	legacy_label(tenant, "000000000000");
	if (!hash_starts(leaked->hash, "000000000000")) {
		CHECK_INT(kv_keys_lookup(&l, "000000000000", found, 4, &clash), 1);
		CHECK(found[0] == tenant);
	}
	kv_ledger_close(&l);
}

/* A rotated N times: returns the hashes of its secrets in H[0..N]. */
static struct kv_account *
rotated(struct kv_ledger *l, const char *label, int n, uint8_t h[][32])
{
	struct kv_key_spec sp = spec(label, 1000);
	struct kv_account *a;
	char err[256], key[32];
	int i;

	for (i = 0; i <= n; i++) {
		snprintf(key, sizeof(key), "kv-%s-%d", label, i);
		kv_key_hash(key, strlen(key), h[i]);
	}
	a = kv_keys_issue(l, h[0], &sp, err, sizeof(err));
	for (i = 1; a != NULL && i <= n; i++)
		CHECK_INT(kv_keys_rotate(l, a, h[i], err, sizeof(err)), 0);
	return a;
}

/* Issue 33, row 9: max_keys = 8, a key rotated 7 times fills the table;
 * its rotated-out secrets come back after the grace period, or at once
 * when the table is full; revoked and forgotten, nothing of it is left. */
static void
test_slots_come_back(void)
{
	struct kv_ledger l;
	struct kv_reclaim_report rep;
	struct kv_key_spec sp;
	struct kv_account *a, *f;
	uint8_t h[8][32], hn[32];
	char err[256], key[KV_KEY_TEXT], name[8];
	int64_t now = (int64_t)time(NULL), rem;
	int i, r;

	CHECK_INT(open_new(&l, 8), 0);
	a = rotated(&l, "weekly", 7, h);
	CHECK(a != NULL);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 8);	/* kilovolt_keys */
	sp = spec("new", 1);
	atomic_store(&l.hdr->reclaim_wanted, 0);
	CHECK(kv_keys_create(&l, NULL, &sp, key, err, sizeof(err)) == NULL);
	CHECK_INT(errno, EAGAIN);	/* full, but the master can free 6 */
	CHECK(strstr(err, "reclaiming the slots of 6 rotated-out secrets") != NULL);
	CHECK_INT(atomic_load(&l.hdr->reclaim_wanted), 1);

	/* the grace period: none before it ends, all 6 after */
	CHECK_INT(kv_keys_links_reclaimable(&l, now, KV_KEYS_ROTATED_GRACE_S), 0);
	CHECK_INT(kv_ledger_reclaimable(&l, now, -1, KV_KEYS_ROTATED_GRACE_S), 0);
	CHECK_INT(kv_keys_links_reclaimable(&l, now + KV_KEYS_ROTATED_GRACE_S + 1,
	    KV_KEYS_ROTATED_GRACE_S), 6);
	/* the table full: grace 0 */
	CHECK_INT(kv_ledger_reclaimable(&l, now, -1, 0), 6);
	kv_ledger_reclaim(&l, now, -1, 0, &rep);
	CHECK_INT(rep.links, 6);
	CHECK_INT(rep.forgotten + rep.strangers, 0);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 2);
	/* the live secret still works; the old ones are strangers now */
	f = kv_ledger_account(&l, h[7], 0, NULL, 0);
	CHECK(f != NULL && kv_keys_admit(&l, &f, now) == KV_KEY_OK && f == a);
	CHECK(kv_ledger_account(&l, h[3], 0, NULL, 0) == NULL && errno == ENOENT);
	f = kv_ledger_account(&l, h[0], 0, NULL, 0);	/* the account's own */
	CHECK(f == a && kv_keys_admit(&l, &f, now) == KV_KEY_ROTATED);

	/* revoked: the live secret's link stays (401 "revoked", not a stranger) */
	kv_key_hash("kv-weekly-8", 11, hn);
	CHECK_INT(kv_keys_rotate(&l, a, hn, err, sizeof(err)), 0);
	CHECK_INT(kv_keys_revoke(a), 0);
	CHECK_INT(kv_keys_links_reclaimable(&l, now, KV_KEYS_ROTATED_GRACE_S), 1);
	kv_ledger_reclaim(&l, now, -1, KV_KEYS_ROTATED_GRACE_S, &rep);
	CHECK_INT(rep.links, 1);
	f = kv_ledger_account(&l, hn, 0, NULL, 0);
	CHECK(f != NULL && kv_keys_admit(&l, &f, now) == KV_KEY_REVOKED);
	CHECK_INT(kv_keys_links_reclaimable(&l, now + 10 * KV_KEYS_ROTATED_GRACE_S, 0), 0);

	/* forgotten: the account and its last link, once nothing is in flight */
	r = kv_ledger_reserve(&l, &l.workers[0], a, 10, &rem);
	CHECK(r >= 0);
	kv_account_mark_forget(a);
	CHECK_INT(kv_ledger_reclaimable(&l, now, -1, KV_KEYS_ROTATED_GRACE_S), 0);
	kv_ledger_settle(&l, &l.workers[0], r, 0, NULL, NULL);
	CHECK_INT(kv_ledger_reclaimable(&l, now, -1, KV_KEYS_ROTATED_GRACE_S), 1);
	kv_ledger_reclaim(&l, now, -1, KV_KEYS_ROTATED_GRACE_S, &rep);
	CHECK_INT(rep.forgotten, 1);
	CHECK_INT(rep.links, 1);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 0);
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		sp = spec(name, 1);
		CHECK(kv_keys_create(&l, NULL, &sp, key, err, sizeof(err)) != NULL);
	}
	sp = spec("k8", 1);
	CHECK(kv_keys_create(&l, NULL, &sp, key, err, sizeof(err)) == NULL);
	CHECK_INT(errno, ENOSPC);	/* nothing to reclaim: a real full */
	kv_ledger_close(&l);
}

/* Link slots are counted in accounts_used; the repair recounts a ledger
 * an older build counted without them, and a rebuild keeps the count. */
static void
test_used_counts_links(void)
{
	struct kv_ledger l;
	struct kv_repair_report rep;
	uint8_t h[4][32];
	char err[256];

	CHECK_INT(open_new(&l, 8), 0);
	CHECK(rotated(&l, "count", 3, h) != NULL);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 4);
	atomic_store(&l.hdr->accounts_used, 1);		/* as layout 16 to 18 counted */
	CHECK_INT(kv_ledger_repair(&l, 0, &rep), 0);
	CHECK_INT(rep.used_fixed, 1);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 4);
	CHECK_INT(kv_ledger_repair(&l, 0, &rep), 0);
	CHECK_INT(rep.used_fixed, 0);
	CHECK_INT(kv_ledger_grow(&l, path, 16, err, sizeof(err)), 0);
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 4);
	kv_ledger_close(&l);
}

static void
test_period(void)
{
	struct kv_account a;
	int p;

	memset(&a, 0, sizeof(a));
	CHECK_INT(kv_keys_period(&a, KV_PERIOD_WEEKLY), KV_PERIOD_WEEKLY);
	atomic_store(&a.period, KV_PERIOD_NONE + 1);
	CHECK_INT(kv_keys_period(&a, KV_PERIOD_WEEKLY), KV_PERIOD_NONE);
	atomic_store(&a.period, 99);
	CHECK_INT(kv_keys_period(&a, KV_PERIOD_DAILY), KV_PERIOD_DAILY);
	CHECK_INT(kv_keys_parse_period("monthly", &p), 0);
	CHECK_INT(p, KV_PERIOD_MONTHLY);
	CHECK_INT(kv_keys_parse_period("hourly", &p), -1);
}

int
main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/kvkeys.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ledger", tmpdir);
	test_generate();
	test_issue_revoke();
	test_expires();
	test_rotate();
	test_forgotten_and_plain();
	test_grow_keeps_links();
	test_clash();
	test_create_lookup();
	test_label_rules();
	test_lookup_ids_first();
	test_slots_come_back();
	test_used_counts_links();
	test_period();
	unlink(path);
	rmdir(tmpdir);
	return unit_done();
}

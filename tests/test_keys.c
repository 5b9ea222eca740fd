/* Unit tests for shm/keys.c: secrets, issue, revoke, rotate (links), the
 * workers' admission, per-key periods, the config clash, links kept
 * through a rebuild of the ledger (shm/grow.c); issue 33: key names that
 * cannot read as ids (common/key_label.c), and ids found before names. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
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
	CHECK_INT(atomic_load(&l.hdr->accounts_used), 1);

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

/* A link whose account was forgotten (and its slot reused) admits nothing;
 * a key not issued cannot rotate. */
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
	kv_account_retire(&l, a);
	f = kv_ledger_account(&l, h1, 0, NULL, 0);
	CHECK(f != NULL);
	CHECK_INT(kv_keys_admit(&l, &f, 1), KV_KEY_REVOKED);

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
	test_period();
	unlink(path);
	rmdir(tmpdir);
	return unit_done();
}

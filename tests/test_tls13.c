/* worker/tls13.c against OpenSSL's own record layer, on the same bytes: a
 * real TLS 1.3 handshake between two OpenSSL endpoints over memory BIOs,
 * the client's traffic secrets taken from the keylog callback; then
 * kilovolt's layer opens what OpenSSL's server sealed (tickets, data,
 * padding, KeyUpdate with update_requested) and OpenSSL's server opens what
 * kilovolt's layer sealed (data, a maximal and an empty record, our own
 * KeyUpdate). For each of the three TLS 1.3 AEAD suites. */
#include "tests/unit.h"
#include "worker/tls13.h"
#include "worker/tls_handoff.h"

#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

static uint8_t c_secret[48], s_secret[48];
static size_t c_len, s_len;

static size_t
unhex(const char *h, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (h[0] && h[1] && n < cap) {
		unsigned v;
		if (sscanf(h, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

static void
keylog(const SSL *ssl, const char *line)
{
	(void)ssl;
	const char *sp;
	if (strncmp(line, "CLIENT_TRAFFIC_SECRET_0 ", 24) == 0 && (sp = strchr(line + 24, ' ')))
		c_len = unhex(sp + 1, c_secret, sizeof c_secret);
	else if (strncmp(line, "SERVER_TRAFFIC_SECRET_0 ", 24) == 0 && (sp = strchr(line + 24, ' ')))
		s_len = unhex(sp + 1, s_secret, sizeof s_secret);
}

static EVP_PKEY *pkey;
static X509 *cert;

static int
make_cert(void)
{
	pkey = EVP_EC_gen("P-256");
	cert = X509_new();
	if (pkey == NULL || cert == NULL)
		return -1;
	X509_NAME *nm = X509_get_subject_name(cert);
	ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
	X509_gmtime_adj(X509_getm_notBefore(cert), -60);
	X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
	X509_NAME_add_entry_by_txt(nm, "CN", MBSTRING_ASC, (const unsigned char *)"localhost", -1, -1, 0);
	X509_set_issuer_name(cert, nm);
	X509_set_pubkey(cert, pkey);
	return X509_sign(cert, pkey, EVP_sha256()) > 0 ? 0 : -1;
}

struct pair {
	SSL *c, *s;
	BIO *c2s, *s2c;
};

static BIO *
membio(void)
{
	BIO *b = BIO_new(BIO_s_mem());
	BIO_set_mem_eof_return(b, -1);
	return b;
}

static int handoff_mode;

static int
pair_open(struct pair *p, const char *suite)
{
	SSL_CTX *sc = SSL_CTX_new(TLS_server_method()), *cc = SSL_CTX_new(TLS_client_method());
	if (!sc || !cc)
		return -1;
	SSL_CTX_set_min_proto_version(sc, TLS1_3_VERSION);
	SSL_CTX_set_min_proto_version(cc, TLS1_3_VERSION);
	SSL_CTX_set_ciphersuites(sc, suite);
	SSL_CTX_set_ciphersuites(cc, suite);
	SSL_CTX_use_certificate(sc, cert);
	SSL_CTX_use_PrivateKey(sc, pkey);
	if (handoff_mode)
		kv_tls_handoff_ctx(cc);
	else
		SSL_CTX_set_keylog_callback(cc, keylog);
	p->c = SSL_new(cc);
	p->s = SSL_new(sc);
	SSL_CTX_free(sc);
	SSL_CTX_free(cc);
	p->c2s = membio();
	p->s2c = membio();
	BIO_up_ref(p->c2s);
	BIO_up_ref(p->s2c);
	SSL_set_bio(p->c, p->s2c, p->c2s);
	SSL_set_bio(p->s, p->c2s, p->s2c);
	SSL_set_connect_state(p->c);
	SSL_set_accept_state(p->s);
	c_len = s_len = 0;
	int cd = 0, sd = 0;
	for (int i = 0; i < 20 && !(cd && sd); i++) {
		if (!cd)
			cd = SSL_do_handshake(p->c) == 1;
		if (!sd)
			sd = SSL_do_handshake(p->s) == 1;
	}
	return cd && sd && (handoff_mode || (c_len && s_len)) ? 0 : -1;
}

static void
pair_close(struct pair *p)
{
	SSL_free(p->c);
	SSL_free(p->s);
}

static uint8_t raw[1 << 17];
static size_t raw_len, raw_off;

static void
drain_s2c(struct pair *p)
{
	int n = BIO_read(p->s2c, raw, sizeof raw);
	raw_len = n > 0 ? (size_t)n : 0;
	raw_off = 0;
}

/* Next record of raw opened with d: its plaintext length, or -1. */
static long
next(EVP_CIPHER_CTX *c, struct kv_tls13_dir *d, uint8_t *type, uint8_t **pt)
{
	if (raw_len - raw_off < KV_TLS13_HDR)
		return -1;
	long body = kv_tls13_header(raw + raw_off);
	if (body < 0 || raw_len - raw_off < KV_TLS13_HDR + (size_t)body)
		return -1;
	uint8_t *rec = raw + raw_off;
	raw_off += KV_TLS13_HDR + (size_t)body;
	*pt = rec + KV_TLS13_HDR;
	return kv_tls13_open(c, d, rec, KV_TLS13_HDR + (size_t)body, type);
}

/* Seals one record with w and hands it to the server. */
static void
to_server(EVP_CIPHER_CTX *c, struct pair *p, struct kv_tls13_dir *w, uint8_t type,
    const void *in, size_t len)
{
	static uint8_t out[KV_TLS13_HDR + KV_TLS13_MAX_PLAIN + 1 + KV_TLS13_TAG];
	long n = kv_tls13_seal(c, w, type, in, len, out);
	CHECK(n == (long)(KV_TLS13_HDR + len + 1 + KV_TLS13_TAG));
	if (n > 0)
		CHECK_INT(BIO_write(p->c2s, out, (int)n), n);
}

/* What OpenSSL's server sends after the handshake — data, a KeyUpdate
 * asking for ours, data, a ticket, data — read through kv_tls13_recv and
 * kv_tls13_post with the bytes cut at every boundary: the same plaintext,
 * and our KeyUpdate due, whatever the cut. */
static void
split_reads(EVP_CIPHER_CTX *c, struct pair *p, struct kv_tls13_dir *rd)
{
	CHECK_INT(SSL_write(p->s, "one,", 4), 4);
	CHECK_INT(SSL_key_update(p->s, SSL_KEY_UPDATE_REQUESTED), 1);
	CHECK_INT(SSL_write(p->s, "two,", 4), 4);
	CHECK_INT(SSL_new_session_ticket(p->s), 1);
	CHECK_INT(SSL_write(p->s, "three", 5), 5);
	drain_s2c(p);
	static uint8_t stream[4096], rec[KV_TLS13_HDR + KV_TLS13_MAX_CIPHER];
	size_t sl = raw_len;
	CHECK(sl < sizeof stream);
	memcpy(stream, raw, sl);
	int good = 0;
	for (size_t cut = 0; cut <= sl; cut++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
			break;
		struct kv_tls13_conn t = {.rd = *rd};
		struct kv_tls13_part pt = {0};
		char out[64];
		size_t ol = 0;
		int bad = 0, more = 1;
		if (cut && write(sv[1], stream, cut) != (ssize_t)cut)
			bad = 1;
		for (int round = 0; round < 2 && !bad; round++) {
			long n;
			while ((n = kv_tls13_recv(sv[0], rec, &pt)) > 0) {
				uint8_t type, alert;
				long m = kv_tls13_open(c, &t.rd, rec, (size_t)n, &type);
				if (m < 0) {
					bad = 1;
					break;
				}
				enum kv_tls13_what w = kv_tls13_post(&t, type, rec + KV_TLS13_HDR, (size_t)m, &alert);
				if (w == KV_TLS13_DATA && ol + (size_t)m <= sizeof out) {
					memcpy(out + ol, rec + KV_TLS13_HDR, (size_t)m);
					ol += (size_t)m;
				} else if (w != KV_TLS13_NOTHING)
					bad = 1;
			}
			if (n < 0)
				bad = 1;
			/* whatever is in the kernel has been taken: a reader that
			 * left part of a record there could wait for ever */
			int q = -1;
			if (ioctl(sv[0], FIONREAD, &q) < 0 || q != 0)
				bad = 1;
			if (round == 0 && more && write(sv[1], stream + cut, sl - cut) != (ssize_t)(sl - cut))
				bad = 1;
		}
		shutdown(sv[1], SHUT_WR);
		if (!bad && pt.p == NULL && kv_tls13_recv(sv[0], rec, &pt) == -2 && ol == 13 &&
		    memcmp(out, "one,two,three", 13) == 0 && t.key_update_due)
			good++;
		kv_tls13_part_free(&pt);
		close(sv[0]);
		close(sv[1]);
	}
	CHECK_INT(good, sl + 1);
	{	/* end of stream inside a record: an error, never a record */
		int sv[2];
		struct kv_tls13_part pt = {0};
		CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
		CHECK_INT(write(sv[1], stream, 12), 12);
		CHECK_INT(kv_tls13_recv(sv[0], rec, &pt), 0);
		CHECK(pt.p != NULL && pt.have == 12);
		shutdown(sv[1], SHUT_WR);
		CHECK_INT(kv_tls13_recv(sv[0], rec, &pt), -1);
		kv_tls13_part_free(&pt);
		close(sv[0]);
		close(sv[1]);
	}
	{	/* a header TLS 1.3 does not allow, whole or in part: -3 */
		static const uint8_t bad[5] = {KV_TLS13_HANDSHAKE, 3, 3, 0, 32};
		int sv[2];
		struct kv_tls13_part pt = {0};
		CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
		CHECK_INT(write(sv[1], bad, 5), 5);
		CHECK_INT(kv_tls13_recv(sv[0], rec, &pt), -3);
		CHECK_INT(read(sv[0], rec, 5), 5);
		CHECK_INT(write(sv[1], bad, 2), 2);
		CHECK_INT(kv_tls13_recv(sv[0], rec, &pt), 0);
		CHECK_INT(write(sv[1], bad + 2, 3), 3);
		CHECK_INT(kv_tls13_recv(sv[0], rec, &pt), -3);
		kv_tls13_part_free(&pt);
		close(sv[0]);
		close(sv[1]);
	}
	/* move the caller's read state past these records */
	raw_off = 0;
	uint8_t type, *pt, alert;
	struct kv_tls13_conn t = {.rd = *rd};
	long n;
	while ((n = next(c, &t.rd, &type, &pt)) >= 0)
		CHECK(kv_tls13_post(&t, type, pt, (size_t)n, &alert) != KV_TLS13_FAIL);
	*rd = t.rd;
}

static void
one_suite(EVP_CIPHER_CTX *c, const char *name, enum kv_tls13_suite s)
{
	struct pair p;
	struct kv_tls13_dir rd, wd;
	uint8_t type, *pt, buf[KV_TLS13_MAX_PLAIN];
	long n;

	fprintf(stderr, "suite %s\n", name);
	CHECK(pair_open(&p, name) == 0);
	CHECK_INT(kv_tls13_suite_of(SSL_CIPHER_get_protocol_id(SSL_get_current_cipher(p.c))), s);
	CHECK_INT(kv_tls13_dir_init(&rd, s, s_secret, s_len), 0);
	CHECK_INT(kv_tls13_dir_init(&wd, s, c_secret, c_len), 0);

	/* server to us: the tickets (handshake records), then data */
	CHECK_INT(SSL_write(p.s, "hello", 5), 5);
	drain_s2c(&p);
	int tickets = 0;
	while ((n = next(c, &rd, &type, &pt)) >= 0 && type == KV_TLS13_HANDSHAKE) {
		CHECK(n >= 4 && pt[0] == 4);        /* new_session_ticket */
		tickets++;
	}
	CHECK(tickets >= 1);
	CHECK(n == 5 && type == KV_TLS13_APPDATA && memcmp(pt, "hello", 5) == 0);
	CHECK_INT(raw_off, raw_len);

	/* padding: OpenSSL pads to 512, we strip it */
	SSL_set_block_padding(p.s, 512);
	CHECK_INT(SSL_write(p.s, "pad", 3), 3);
	drain_s2c(&p);
	CHECK_INT(raw_len, KV_TLS13_HDR + 512 + KV_TLS13_TAG);
	CHECK(next(c, &rd, &type, &pt) == 3 && type == KV_TLS13_APPDATA && memcmp(pt, "pad", 3) == 0);
	SSL_set_block_padding(p.s, 0);

	/* us to server: data, an empty record, a maximal one */
	to_server(c, &p, &wd, KV_TLS13_APPDATA, "ping", 4);
	CHECK(SSL_read(p.s, buf, sizeof buf) == 4 && memcmp(buf, "ping", 4) == 0);
	static uint8_t big[KV_TLS13_MAX_PLAIN];
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)(i * 7);
	to_server(c, &p, &wd, KV_TLS13_APPDATA, "", 0);
	to_server(c, &p, &wd, KV_TLS13_APPDATA, big, sizeof big);
	CHECK(kv_tls13_seal(c, &wd, KV_TLS13_APPDATA, big, sizeof big + 1, buf) == -1);
	size_t got = 0;
	for (int i = 0; i < 8 && got < sizeof big; i++) {
		int r = SSL_read(p.s, buf + got, (int)(sizeof buf - got));
		if (r > 0)
			got += (size_t)r;
	}
	CHECK(got == sizeof big && memcmp(buf, big, sizeof big) == 0);

	/* KeyUpdate with update_requested: we update our read key, answer with
	 * our own KeyUpdate (update_not_requested) and update our write key */
	CHECK_INT(SSL_key_update(p.s, SSL_KEY_UPDATE_REQUESTED), 1);
	CHECK_INT(SSL_write(p.s, "after", 5), 5);
	drain_s2c(&p);
	n = next(c, &rd, &type, &pt);
	CHECK(n == 5 && type == KV_TLS13_HANDSHAKE && pt[0] == 24 && pt[4] == 1);
	CHECK_INT(kv_tls13_dir_update(&rd), 0);
	n = next(c, &rd, &type, &pt);
	CHECK(n == 5 && type == KV_TLS13_APPDATA && memcmp(pt, "after", 5) == 0);
	static const uint8_t ku[5] = {24, 0, 0, 1, 0};
	to_server(c, &p, &wd, KV_TLS13_HANDSHAKE, ku, sizeof ku);
	CHECK_INT(kv_tls13_dir_update(&wd), 0);
	to_server(c, &p, &wd, KV_TLS13_APPDATA, "reply", 5);
	CHECK(SSL_read(p.s, buf, sizeof buf) == 5 && memcmp(buf, "reply", 5) == 0);
	/* the old write key is gone: a record under it is refused by OpenSSL */

	/* KeyUpdate without update_requested */
	CHECK_INT(SSL_key_update(p.s, SSL_KEY_UPDATE_NOT_REQUESTED), 1);
	CHECK_INT(SSL_write(p.s, "quiet", 5), 5);
	drain_s2c(&p);
	n = next(c, &rd, &type, &pt);
	CHECK(n == 5 && type == KV_TLS13_HANDSHAKE && pt[0] == 24 && pt[4] == 0);
	CHECK_INT(kv_tls13_dir_update(&rd), 0);
	CHECK(next(c, &rd, &type, &pt) == 5 && memcmp(pt, "quiet", 5) == 0);

	/* one flipped byte anywhere in the record: refused, nothing of it left */
	CHECK_INT(SSL_write(p.s, "secret!", 7), 7);
	drain_s2c(&p);
	uint8_t keep[64];
	size_t rl = raw_len;
	CHECK(rl < sizeof keep);
	memcpy(keep, raw, rl);
	int refused = 0;
	for (size_t i = KV_TLS13_HDR; i < rl; i++) {
		struct kv_tls13_dir t = rd;
		memcpy(raw, keep, rl);
		raw[i] ^= 0x01;
		raw_off = 0;
		if (next(c, &t, &type, &pt) == -1 && memmem(raw, rl, "secret!", 7) == NULL)
			refused++;
	}
	CHECK_INT(refused, rl - KV_TLS13_HDR);
	/* a changed header is the AAD: refused too (length byte kept valid) */
	memcpy(raw, keep, rl);
	raw[2] = 1;
	raw_off = 0;
	{
		struct kv_tls13_dir t = rd;
		CHECK(next(c, &t, &type, &pt) == -1);
	}
	memcpy(raw, keep, rl);
	raw_off = 0;
	CHECK(next(c, &rd, &type, &pt) == 7 && memcmp(pt, "secret!", 7) == 0);
	/* a replay (same record, sequence moved on) is refused */
	memcpy(raw, keep, rl);
	raw_off = 0;
	CHECK(next(c, &rd, &type, &pt) == -1);

	split_reads(c, &p, &rd);
	{       /* our answer through kv_tls13_key_update: OpenSSL follows it */
		struct kv_tls13_conn t = {.rd = rd, .wd = wd, .key_update_due = 1};
		static uint8_t out[64];
		long kn = kv_tls13_key_update(c, &t, out);
		CHECK(kn == KV_TLS13_HDR + 5 + 1 + KV_TLS13_TAG && !t.key_update_due);
		CHECK_INT(BIO_write(p.c2s, out, (int)kn), kn);
		wd = t.wd;
		to_server(c, &p, &wd, KV_TLS13_APPDATA, "ack", 3);
		CHECK(SSL_read(p.s, buf, sizeof buf) == 3 && memcmp(buf, "ack", 3) == 0);
	}

	/* close_notify: an alert record, level 1 description 0 */
	SSL_shutdown(p.s);
	drain_s2c(&p);
	n = next(c, &rd, &type, &pt);
	CHECK(n == 2 && type == KV_TLS13_ALERT && pt[0] == 1 && pt[1] == 0);
	pair_close(&p);
}

static void
headers(void)
{
	uint8_t h[5] = {23, 3, 3, 0, 17};
	CHECK_INT(kv_tls13_header(h), 17);
	h[4] = 16;
	CHECK_INT(kv_tls13_header(h), -1);                 /* no room for the type */
	h[3] = (KV_TLS13_MAX_CIPHER >> 8);
	h[4] = (uint8_t)KV_TLS13_MAX_CIPHER;
	CHECK_INT(kv_tls13_header(h), KV_TLS13_MAX_CIPHER);
	h[4]++;
	CHECK_INT(kv_tls13_header(h), -1);                 /* 2^14 + 257 */
	h[3] = 0; h[4] = 20;
	h[0] = 22;
	CHECK_INT(kv_tls13_header(h), -1);                 /* plaintext handshake */
	h[0] = 20;
	CHECK_INT(kv_tls13_header(h), -1);                 /* change_cipher_spec */
	h[0] = 23; h[2] = 1;
	CHECK_INT(kv_tls13_header(h), -1);
}

/* Padding only (no content type) and a sequence number at its end. */
static void
edges(EVP_CIPHER_CTX *c)
{
	uint8_t sec[32] = {1}, rec[64], zeros[8] = {0};
	struct kv_tls13_dir w, r;
	CHECK_INT(kv_tls13_dir_init(&w, KV_TLS13_AES128_GCM, sec, 32), 0);
	CHECK_INT(kv_tls13_dir_init(&r, KV_TLS13_AES128_GCM, sec, 32), 0);
	CHECK_INT(kv_tls13_dir_init(&r, KV_TLS13_AES128_GCM, sec, 48), -1);
	CHECK_INT(kv_tls13_dir_init(&r, KV_TLS13_AES128_GCM, sec, 32), 0);
	/* type 0 with zero content: the inner plaintext is all padding */
	long n = kv_tls13_seal(c, &w, 0, zeros, sizeof zeros, rec);
	uint8_t type;
	CHECK(n > 0 && kv_tls13_open(c, &r, rec, (size_t)n, &type) == -1);
	/* a truncated record */
	n = kv_tls13_seal(c, &w, KV_TLS13_APPDATA, "x", 1, rec);
	CHECK(kv_tls13_open(c, &r, rec, (size_t)n - 1, &type) == -1);
	w.seq = UINT64_MAX;
	CHECK(kv_tls13_seal(c, &w, KV_TLS13_APPDATA, "x", 1, rec) == -1);
	r.seq = UINT64_MAX;
	CHECK(kv_tls13_open(c, &r, rec, (size_t)n, &type) == -1);
	CHECK_INT(kv_tls13_suite_of(0x1304), KV_TLS13_NONE);  /* CCM stays on OpenSSL */
}

/* kv_tls_handoff: after OpenSSL read tickets and data and wrote data of
 * its own, our layer carries on with the right keys and sequence numbers;
 * refused while OpenSSL holds unread plaintext, and after a KeyUpdate. */
static void
handoff(EVP_CIPHER_CTX *c, const char *name)
{
	struct pair p;
	struct kv_tls13_conn t;
	uint8_t buf[64], type, *pt;
	handoff_mode = 1;
	CHECK(pair_open(&p, name) == 0);
	CHECK_INT(SSL_write(p.s, "a", 1), 1);
	CHECK(SSL_read(p.c, buf, sizeof buf) == 1 && buf[0] == 'a');
	for (int i = 0; i < 3; i++) {
		CHECK_INT(SSL_write(p.c, "b", 1), 1);
		CHECK(SSL_read(p.s, buf, sizeof buf) == 1 && buf[0] == 'b');
	}
	CHECK_INT(SSL_write(p.s, "xyz", 3), 3);
	CHECK(SSL_read(p.c, buf, 1) == 1 && buf[0] == 'x');
	CHECK_INT(kv_tls_handoff(p.c, &t), -1);      /* "yz" still inside OpenSSL */
	CHECK(SSL_read(p.c, buf, sizeof buf) == 2);
	CHECK_INT(kv_tls_handoff(p.c, &t), 0);
	SSL_free(p.c);
	CHECK_INT(SSL_write(p.s, "d", 1), 1);
	drain_s2c(&p);
	CHECK(next(c, &t.rd, &type, &pt) == 1 && type == KV_TLS13_APPDATA && pt[0] == 'd');
	to_server(c, &p, &t.wd, KV_TLS13_APPDATA, "e", 1);
	CHECK(SSL_read(p.s, buf, sizeof buf) == 1 && buf[0] == 'e');
	SSL_free(p.s);

	CHECK(pair_open(&p, name) == 0);
	CHECK_INT(SSL_key_update(p.s, SSL_KEY_UPDATE_NOT_REQUESTED), 1);
	CHECK_INT(SSL_write(p.s, "a", 1), 1);
	CHECK(SSL_read(p.c, buf, sizeof buf) == 1);
	CHECK_INT(kv_tls_handoff(p.c, &t), -1);      /* key moved on inside OpenSSL */
	pair_close(&p);
	handoff_mode = 0;
}

/* kv_tls13_post on what a hostile server could put in a record. */
static void
posts(void)
{
	uint8_t sec[32] = {2}, a;
	struct kv_tls13_conn t;
	CHECK_INT(kv_tls13_dir_init(&t.rd, KV_TLS13_AES128_GCM, sec, 32), 0);
	t.key_update_due = 0;
	struct kv_tls13_dir before = t.rd;
	static const uint8_t cn[2] = {1, 0}, bad_rec[2] = {2, 20}, one[1] = {1};
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_ALERT, cn, 2, &a), KV_TLS13_END);
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_ALERT, bad_rec, 2, &a), KV_TLS13_FAIL);
	CHECK_INT(a, 20);
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_ALERT, one, 1, &a), KV_TLS13_FAIL);
	CHECK_INT(a, 255);
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_APPDATA, one, 0, &a), KV_TLS13_NOTHING);
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_APPDATA, one, 1, &a), KV_TLS13_DATA);
	CHECK_INT(kv_tls13_post(&t, 20, one, 1, &a), KV_TLS13_FAIL);
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_HANDSHAKE, one, 0, &a), KV_TLS13_FAIL);
	static const uint8_t tk2[] = {4, 0, 0, 1, 9, 4, 0, 0, 0};      /* two tickets */
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_HANDSHAKE, tk2, sizeof tk2, &a), KV_TLS13_NOTHING);
	static const uint8_t span[] = {4, 0, 0, 9, 1};                  /* spans records */
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_HANDSHAKE, span, sizeof span, &a), KV_TLS13_FAIL);
	static const uint8_t ku2[] = {24, 0, 0, 1, 2};                  /* bad request value */
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_HANDSHAKE, ku2, sizeof ku2, &a), KV_TLS13_FAIL);
	static const uint8_t kuplus[] = {24, 0, 0, 1, 0, 4, 0, 0, 0};   /* not at the end */
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_HANDSHAKE, kuplus, sizeof kuplus, &a), KV_TLS13_FAIL);
	static const uint8_t creq[] = {13, 0, 0, 0};                    /* post-handshake auth */
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_HANDSHAKE, creq, sizeof creq, &a), KV_TLS13_FAIL);
	CHECK(memcmp(t.rd.key, before.key, 16) == 0 && !t.key_update_due);
	static const uint8_t ku1[] = {24, 0, 0, 1, 1};
	CHECK_INT(kv_tls13_post(&t, KV_TLS13_HANDSHAKE, ku1, sizeof ku1, &a), KV_TLS13_NOTHING);
	CHECK(memcmp(t.rd.key, before.key, 16) != 0 && t.key_update_due && t.rd.seq == 0);
}


/* One context serves every connection of a worker: records of connections
 * on different suites, sealed and opened in turn, each under its own key,
 * a forged record among them refused without harming the next. */
static void
interleaved(EVP_CIPHER_CTX *c)
{
	struct pair a, b;
	struct kv_tls13_dir ard, awd, brd, bwd;
	uint8_t type, *pt, buf[64];

	CHECK(pair_open(&a, "TLS_AES_128_GCM_SHA256") == 0);
	CHECK_INT(kv_tls13_dir_init(&ard, KV_TLS13_AES128_GCM, s_secret, s_len), 0);
	CHECK_INT(kv_tls13_dir_init(&awd, KV_TLS13_AES128_GCM, c_secret, c_len), 0);
	CHECK(pair_open(&b, "TLS_CHACHA20_POLY1305_SHA256") == 0);
	CHECK_INT(kv_tls13_dir_init(&brd, KV_TLS13_CHACHA20, s_secret, s_len), 0);
	CHECK_INT(kv_tls13_dir_init(&bwd, KV_TLS13_CHACHA20, c_secret, c_len), 0);
	for (int i = 0; i < 3; i++) {
		to_server(c, &a, &awd, KV_TLS13_APPDATA, "to-a", 4);
		to_server(c, &b, &bwd, KV_TLS13_APPDATA, "to-b", 4);
		CHECK(SSL_read(b.s, buf, sizeof buf) == 4 && memcmp(buf, "to-b", 4) == 0);
		CHECK(SSL_read(a.s, buf, sizeof buf) == 4 && memcmp(buf, "to-a", 4) == 0);
		CHECK_INT(SSL_write(a.s, "from-a", 6), 6);
		CHECK_INT(SSL_write(b.s, "from-b", 6), 6);
		drain_s2c(&a);
		while (next(c, &ard, &type, &pt) >= 0 && type == KV_TLS13_HANDSHAKE)
			;	/* the tickets, the first time */
		CHECK(type == KV_TLS13_APPDATA && memcmp(pt, "from-a", 6) == 0);
		drain_s2c(&b);
		if (i == 1) {	/* a copy with a flipped byte: refused, the sequence unmoved */
			static uint8_t forged[KV_TLS13_HDR + 6 + 1 + KV_TLS13_TAG];
			uint64_t seq = brd.seq;
			CHECK(raw_len == sizeof forged);
			memcpy(forged, raw, sizeof forged);
			forged[sizeof forged - 1] ^= 1;
			CHECK(kv_tls13_open(c, &brd, forged, sizeof forged, &type) == -1 && brd.seq == seq);
		}
		while (next(c, &brd, &type, &pt) >= 0 && type == KV_TLS13_HANDSHAKE)
			;
		CHECK(type == KV_TLS13_APPDATA && memcmp(pt, "from-b", 6) == 0);
	}
	pair_close(&a);
	pair_close(&b);
}

int
main(void)
{
	EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
	CHECK(c != NULL && make_cert() == 0);
	headers();
	edges(c);
	posts();
	one_suite(c, "TLS_AES_128_GCM_SHA256", KV_TLS13_AES128_GCM);
	one_suite(c, "TLS_AES_256_GCM_SHA384", KV_TLS13_AES256_GCM);
	one_suite(c, "TLS_CHACHA20_POLY1305_SHA256", KV_TLS13_CHACHA20);
	interleaved(c);
	handoff(c, "TLS_AES_128_GCM_SHA256");
	handoff(c, "TLS_AES_256_GCM_SHA384");
	handoff(c, "TLS_CHACHA20_POLY1305_SHA256");
	EVP_CIPHER_CTX_free(c);
	EVP_PKEY_free(pkey);
	X509_free(cert);
	return unit_done();
}

/* TLS 1.3 record protection: key schedule pieces and one-record seal/open.
 * See tls13.h. Every failure is fatal to the connection: the caller closes;
 * nothing here tries to recover. */
#include "worker/tls13.h"

#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

enum kv_tls13_suite
kv_tls13_suite_of(unsigned id)
{
	switch (id) {
	case 0x1301: return KV_TLS13_AES128_GCM;
	case 0x1302: return KV_TLS13_AES256_GCM;
	case 0x1303: return KV_TLS13_CHACHA20;
	default: return KV_TLS13_NONE;
	}
}

size_t
kv_tls13_secret_len(enum kv_tls13_suite s)
{
	switch (s) {
	case KV_TLS13_AES128_GCM: case KV_TLS13_CHACHA20: return 32;
	case KV_TLS13_AES256_GCM: return 48;
	default: return 0;
	}
}

static size_t
key_len(enum kv_tls13_suite s)
{
	return s == KV_TLS13_AES128_GCM ? 16 : 32;
}

static const EVP_CIPHER *
cipher_of(enum kv_tls13_suite s)
{
	switch (s) {
	case KV_TLS13_AES128_GCM: return EVP_aes_128_gcm();
	case KV_TLS13_AES256_GCM: return EVP_aes_256_gcm();
	case KV_TLS13_CHACHA20: return EVP_chacha20_poly1305();
	default: return NULL;
	}
}

/* The HKDF, fetched once per process: fetching per call would cost a
 * provider lookup per KeyUpdate. */
static EVP_KDF *
hkdf(void)
{
	static EVP_KDF *k;
	if (k == NULL)
		k = EVP_KDF_fetch(NULL, "HKDF", NULL);
	return k;
}

int
kv_tls13_expand_label(enum kv_tls13_suite s, const uint8_t *secret,
    const char *label, const uint8_t *ctx, size_t ctx_len,
    uint8_t *out, size_t out_len)
{
	size_t hl = kv_tls13_secret_len(s), ll = strlen(label);
	uint8_t info[2 + 1 + 255 + 1 + 255];
	size_t n = 0;
	if (hl == 0 || out_len > 0xffff || 6 + ll > 255 || ctx_len > 255 || hkdf() == NULL)
		return -1;
	/* struct HkdfLabel { uint16 length; opaque label<7..255>; opaque context<0..255>; } */
	info[n++] = (uint8_t)(out_len >> 8);
	info[n++] = (uint8_t)out_len;
	info[n++] = (uint8_t)(6 + ll);
	memcpy(info + n, "tls13 ", 6);
	n += 6;
	memcpy(info + n, label, ll);
	n += ll;
	info[n++] = (uint8_t)ctx_len;
	if (ctx_len)
		memcpy(info + n, ctx, ctx_len);
	n += ctx_len;

	EVP_KDF_CTX *k = EVP_KDF_CTX_new(hkdf());
	if (k == NULL)
		return -1;
	int mode = EVP_KDF_HKDF_MODE_EXPAND_ONLY;
	OSSL_PARAM p[] = {
		OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode),
		OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
		    hl == 48 ? "SHA384" : "SHA256", 0),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, hl),
		OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, n),
		OSSL_PARAM_construct_end(),
	};
	int rc = EVP_KDF_derive(k, out, out_len, p) == 1 ? 0 : -1;
	EVP_KDF_CTX_free(k);
	return rc;
}

/* Key and IV from d->secret; sequence 0. */
static int
derive(struct kv_tls13_dir *d)
{
	enum kv_tls13_suite s = d->suite;
	d->seq = 0;
	if (kv_tls13_expand_label(s, d->secret, "key", NULL, 0, d->key, key_len(s)) < 0 ||
	    kv_tls13_expand_label(s, d->secret, "iv", NULL, 0, d->iv, sizeof d->iv) < 0) {
		OPENSSL_cleanse(d, sizeof *d);
		return -1;
	}
	return 0;
}

int
kv_tls13_dir_init(struct kv_tls13_dir *d, enum kv_tls13_suite s,
    const uint8_t *secret, size_t secret_len)
{
	memset(d, 0, sizeof *d);
	if (kv_tls13_secret_len(s) == 0 || secret_len != kv_tls13_secret_len(s))
		return -1;
	d->suite = (uint8_t)s;
	memcpy(d->secret, secret, secret_len);
	return derive(d);
}

int
kv_tls13_dir_update(struct kv_tls13_dir *d)
{
	enum kv_tls13_suite s = d->suite;
	uint8_t next[KV_TLS13_MAX_SECRET];
	size_t hl = kv_tls13_secret_len(s);
	if (hl == 0 || kv_tls13_expand_label(s, d->secret, "traffic upd", NULL, 0, next, hl) < 0)
		return -1;
	memcpy(d->secret, next, hl);
	OPENSSL_cleanse(next, sizeof next);
	return derive(d);
}

long
kv_tls13_header(const uint8_t *hdr)
{
	long len = ((long)hdr[3] << 8) | hdr[4];
	if (hdr[0] != KV_TLS13_APPDATA || hdr[1] != 3 || hdr[2] != 3)
		return -1;
	if (len < KV_TLS13_TAG + 1 || len > KV_TLS13_MAX_CIPHER)
		return -1;
	return len;
}

/* The per-record nonce: the IV XOR the sequence number, big-endian,
 * left-padded to 12 bytes (RFC 8446 §5.3). */
static void
nonce(const struct kv_tls13_dir *d, uint8_t out[12])
{
	memcpy(out, d->iv, 12);
	for (int i = 0; i < 8; i++)
		out[11 - i] ^= (uint8_t)(d->seq >> (8 * i));
}

/* Keys c for one record of d, encrypting or not. One context serves
 * every connection of the worker (a context each would cost its memory per
 * connection), so key and nonce are set per record; the cipher only when it
 * changes: an init with a cipher frees and re-creates the provider's context
 * and looks its parameters up by name, 9,200 of the 21,700 instructions a
 * small request's TLS leg took (bench/instructions.sh MODES=tls). */
static int
rekey(EVP_CIPHER_CTX *c, const struct kv_tls13_dir *d, int enc)
{
	uint8_t n[12];
	const EVP_CIPHER *ci = cipher_of(d->suite), *cur = EVP_CIPHER_CTX_get0_cipher(c);
	if (ci == NULL)
		return -1;
	nonce(d, n);
	if ((cur == NULL || EVP_CIPHER_get_nid(cur) != EVP_CIPHER_get_nid(ci)) &&
	    (EVP_CipherInit_ex(c, ci, NULL, NULL, NULL, enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_IVLEN, 12, NULL) != 1))
		return -1;
	return EVP_CipherInit_ex(c, NULL, NULL, d->key, n, enc) == 1 ? 0 : -1;
}

long
kv_tls13_open(EVP_CIPHER_CTX *c, struct kv_tls13_dir *d,
    uint8_t *rec, size_t rec_len, uint8_t *type)
{
	long body = rec_len >= KV_TLS13_HDR ? kv_tls13_header(rec) : -1;
	if (body < 0 || (size_t)body != rec_len - KV_TLS13_HDR || d->seq == UINT64_MAX)
		return -1;
	uint8_t *p = rec + KV_TLS13_HDR;
	int clen = (int)body - KV_TLS13_TAG, outl = 0, fin = 0;
	if (rekey(c, d, 0) < 0 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, KV_TLS13_TAG, p + clen) != 1 ||
	    EVP_CipherUpdate(c, NULL, &outl, rec, KV_TLS13_HDR) != 1 ||
	    EVP_CipherUpdate(c, p, &outl, p, clen) != 1 ||
	    EVP_CipherFinal_ex(c, p + outl, &fin) != 1) {
		/* a bad tag: what was decrypted in place is unauthenticated */
		OPENSSL_cleanse(p, (size_t)body);
		return -1;
	}
	d->seq++;
	/* TLSInnerPlaintext: content, the type, zero padding (§5.4) */
	long n = clen;
	while (n > 0 && p[n - 1] == 0)
		n--;
	if (n == 0 || n - 1 > KV_TLS13_MAX_PLAIN) {
		OPENSSL_cleanse(p, (size_t)body);
		return -1;
	}
	*type = p[n - 1];
	return n - 1;
}

long
kv_tls13_seal(EVP_CIPHER_CTX *c, struct kv_tls13_dir *d, uint8_t type,
    const void *in, size_t len, uint8_t *out)
{
	if (len > KV_TLS13_MAX_PLAIN || d->seq == UINT64_MAX)
		return -1;
	uint8_t *p = out + KV_TLS13_HDR;
	size_t body = len + 1 + KV_TLS13_TAG;
	int outl = 0, fin = 0;
	if (in != p)
		memmove(p, in, len);
	p[len] = type;
	out[0] = KV_TLS13_APPDATA;
	out[1] = 3;
	out[2] = 3;
	out[3] = (uint8_t)(body >> 8);
	out[4] = (uint8_t)body;
	if (rekey(c, d, 1) < 0 ||
	    EVP_CipherUpdate(c, NULL, &outl, out, KV_TLS13_HDR) != 1 ||
	    EVP_CipherUpdate(c, p, &outl, p, (int)len + 1) != 1 ||
	    EVP_CipherFinal_ex(c, p + outl, &fin) != 1 ||
	    EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, KV_TLS13_TAG, p + len + 1) != 1)
		return -1;
	d->seq++;
	return (long)(KV_TLS13_HDR + body);
}

/* One handshake message after the handshake. */
static enum kv_tls13_what
post_handshake(struct kv_tls13_conn *t, const uint8_t *pt, size_t len)
{
	while (len > 0) {
		if (len < 4)
			return KV_TLS13_FAIL;
		size_t ml = ((size_t)pt[1] << 16) | ((size_t)pt[2] << 8) | pt[3];
		if (ml > len - 4)
			return KV_TLS13_FAIL;        /* spans records: not supported */
		switch (pt[0]) {
		case 4:                              /* new_session_ticket */
			break;
		case 24:                             /* key_update */
			if (ml != 1 || pt[4] > 1 || len != 5)
				return KV_TLS13_FAIL;
			if (kv_tls13_dir_update(&t->rd) < 0)
				return KV_TLS13_FAIL;
			if (pt[4] == 1)
				t->key_update_due = 1;
			return KV_TLS13_NOTHING;
		default:
			return KV_TLS13_FAIL;
		}
		pt += 4 + ml;
		len -= 4 + ml;
	}
	return KV_TLS13_NOTHING;
}

enum kv_tls13_what
kv_tls13_post(struct kv_tls13_conn *t, uint8_t type, const uint8_t *pt, size_t len,
    uint8_t *alert)
{
	switch (type) {
	case KV_TLS13_APPDATA:
		return len ? KV_TLS13_DATA : KV_TLS13_NOTHING;
	case KV_TLS13_ALERT:
		*alert = len == 2 ? pt[1] : 255;
		return len == 2 && pt[1] == 0 ? KV_TLS13_END : KV_TLS13_FAIL;
	case KV_TLS13_HANDSHAKE:
		return len ? post_handshake(t, pt, len) : KV_TLS13_FAIL;
	default:
		return KV_TLS13_FAIL;
	}
}

long
kv_tls13_key_update(EVP_CIPHER_CTX *c, struct kv_tls13_conn *t, uint8_t *out)
{
	static const uint8_t ku[5] = {24, 0, 0, 1, 0};
	long n = kv_tls13_seal(c, &t->wd, KV_TLS13_HANDSHAKE, ku, sizeof ku, out);
	if (n < 0 || kv_tls13_dir_update(&t->wd) < 0)
		return -1;
	t->key_update_due = 0;
	return n;
}

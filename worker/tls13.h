/* TLS 1.3 record protection after the handshake (RFC 8446 §5, §7.1, §7.2):
 * the pure part of kilovolt's own record layer. No sockets, no SSL: a
 * direction's key state, the record header check, and sealing and opening
 * one record in place with one EVP_CIPHER_CTX that the caller owns (one per
 * worker, re-keyed per record); and reading one record from a socket.
 * worker/tls13_io.c wires it into kv_stream (docs/tls-memory.md, "Own
 * record layer"). */
#ifndef KV_TLS13_H
#define KV_TLS13_H

#include <stddef.h>
#include <stdint.h>
#include <openssl/evp.h>

#define KV_TLS13_HDR 5
#define KV_TLS13_TAG 16
#define KV_TLS13_MAX_PLAIN 16384                 /* 2^14 */
#define KV_TLS13_MAX_CIPHER (KV_TLS13_MAX_PLAIN + 256)
#define KV_TLS13_MAX_SECRET 48

/* Record content types (RFC 8446 §5.1). */
#define KV_TLS13_ALERT 21
#define KV_TLS13_HANDSHAKE 22
#define KV_TLS13_APPDATA 23

enum kv_tls13_suite {
	KV_TLS13_NONE = 0,
	KV_TLS13_AES128_GCM,     /* TLS_AES_128_GCM_SHA256 0x1301 */
	KV_TLS13_AES256_GCM,     /* TLS_AES_256_GCM_SHA384 0x1302 */
	KV_TLS13_CHACHA20,       /* TLS_CHACHA20_POLY1305_SHA256 0x1303 */
};

/* One direction: 92 bytes of secret, key and IV, the sequence number. */
struct kv_tls13_dir {
	uint8_t secret[KV_TLS13_MAX_SECRET];
	uint8_t key[32];
	uint8_t iv[12];
	uint64_t seq;
	uint8_t suite;           /* enum kv_tls13_suite */
};

/* The suite for an IANA cipher suite id (SSL_CIPHER_get_protocol_id), or
 * KV_TLS13_NONE for any other: such a connection stays on OpenSSL. */
enum kv_tls13_suite kv_tls13_suite_of(unsigned id);

/* The hash length of a suite's HKDF (32 or 48), 0 for NONE. */
size_t kv_tls13_secret_len(enum kv_tls13_suite s);

/* HKDF-Expand-Label(secret, label, context, out_len) with the suite's hash
 * (RFC 8446 §7.1); label without the "tls13 " prefix. 0, or -1. */
int kv_tls13_expand_label(enum kv_tls13_suite s, const uint8_t *secret,
    const char *label, const uint8_t *ctx, size_t ctx_len,
    uint8_t *out, size_t out_len);

/* Sets d from a traffic secret (secret_len must be the suite's hash length):
 * derives key and IV, sequence 0. 0, or -1 (bad length, KDF failure). */
int kv_tls13_dir_init(struct kv_tls13_dir *d, enum kv_tls13_suite s,
    const uint8_t *secret, size_t secret_len);

/* KeyUpdate for d (RFC 8446 §7.2): the next secret is
 * HKDF-Expand-Label(secret, "traffic upd", "", Hash.length); new key and
 * IV, sequence back to 0. 0, or -1. */
int kv_tls13_dir_update(struct kv_tls13_dir *d);

/* Checks a record header: type application_data (23) — or change_cipher_spec
 * is not accepted after the handshake either — legacy version 0x0303, length
 * at least a tag plus the content type, at most 2^14 + 256. Returns the
 * record's body length (after the header), or -1 for a header a TLS 1.3
 * peer cannot send (a fatal error: close). hdr holds KV_TLS13_HDR bytes. */
long kv_tls13_header(const uint8_t *hdr);

/* Opens a whole record in place: rec holds the header and body
 * (KV_TLS13_HDR + the length the header says), rec_len its size. On
 * success the plaintext starts at rec + KV_TLS13_HDR, *type is the inner
 * content type, the result is the plaintext length (0..2^14) and d->seq
 * has advanced. -1 for a bad header, a bad tag, a sequence number at its
 * end, an inner plaintext of padding only, or one over 2^14: the caller
 * must close and relay nothing of the record (its bytes are then not
 * plaintext; they are zeroed). */
long kv_tls13_open(EVP_CIPHER_CTX *c, struct kv_tls13_dir *d,
    uint8_t *rec, size_t rec_len, uint8_t *type);

/* Seals len (≤ 2^14) bytes of type into one record at out, which needs
 * KV_TLS13_HDR + len + 1 + KV_TLS13_TAG bytes; in may be out + KV_TLS13_HDR
 * (in place) or elsewhere (not overlapping otherwise). No padding. Returns
 * the record's length, or -1 (len too large, sequence at its end, cipher
 * failure). */
long kv_tls13_seal(EVP_CIPHER_CTX *c, struct kv_tls13_dir *d, uint8_t type,
    const void *in, size_t len, uint8_t *out);


/* ---- after the handshake: one connection's record state -------------- */

/* What a connection keeps once OpenSSL's SSL is freed: 2 × 108 bytes. */
struct kv_tls13_conn {
	struct kv_tls13_dir rd, wd;
	uint8_t key_update_due;  /* the peer asked for our KeyUpdate */
};

enum kv_tls13_what {
	KV_TLS13_DATA,           /* application data to relay */
	KV_TLS13_NOTHING,        /* consumed: a ticket, a KeyUpdate, an empty record */
	KV_TLS13_END,            /* close_notify: a clean end */
	KV_TLS13_FAIL,           /* fatal: close at once */
};

/* Acts on one opened record (type and plaintext from kv_tls13_open):
 * application data is DATA (NOTHING when empty); an alert is END for
 * close_notify and FAIL otherwise, *alert set to its description (255 for a
 * malformed alert); handshake records may hold NewSessionTicket (ignored:
 * the ticket that resumption uses arrived before the hand-off) and
 * KeyUpdate (the read key moves on; with update_requested,
 * key_update_due is set). A handshake message that spans records, a
 * KeyUpdate not at the record's end (RFC 8446 §5.1), any other message or
 * content type is FAIL. */
enum kv_tls13_what kv_tls13_post(struct kv_tls13_conn *t, uint8_t type,
    const uint8_t *pt, size_t len, uint8_t *alert);

/* Seals our KeyUpdate (update_not_requested) at out (KV_TLS13_HDR + 5 + 1
 * + KV_TLS13_TAG bytes) and moves the write key on; clears key_update_due.
 * The record's length, or -1. */
long kv_tls13_key_update(EVP_CIPHER_CTX *c, struct kv_tls13_conn *t, uint8_t *out);

/* A record that arrived only in part, kept until the rest comes: the only
 * per-connection read bytes, and only while a record is half there. */
struct kv_tls13_part {
	uint8_t	*p;
	uint16_t have, want;     /* bytes kept; the record's (or header's) size */
};

/* Reads one whole record from socket fd into buf (KV_TLS13_HDR +
 * KV_TLS13_MAX_CIPHER bytes, one per worker). When the kernel holds all of
 * it (the header is peeked, then the record read) it goes straight into
 * buf, so an idle stream costs no userspace bytes. When it holds only
 * part, that part moves into pt (malloc'd to the record's size) and later
 * calls add to it: a reader must drain the socket, or TCP's
 * window may stay shut with the record half in. Returns the record's
 * length (the record is in buf, pt empty again); 0 when it is not all
 * there yet (wait for readability); -2 for end of stream at a record
 * boundary; -3 for a header a TLS 1.3 peer cannot send (kv_tls13_header);
 * -1 for an error or end of stream inside a record. Never blocks. */
long kv_tls13_recv(int fd, uint8_t *buf, struct kv_tls13_part *pt);

/* Forgets (cleansed) a record kept in part. */
void kv_tls13_part_free(struct kv_tls13_part *pt);

#endif

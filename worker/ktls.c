/* Kernel TLS after the TLS 1.3 hand-off, with the own record layer as the
 * fallback; see ktls.h. Untested against a kernel that has TLS. */
#include "worker/ktls.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/tls.h>

#include <openssl/crypto.h>

#include "common/log.h"
#include "worker/stream.h"
#include "worker/tls13.h"

#ifndef SOL_TLS
#define SOL_TLS	282
#endif

#define REC_ALERT	21
#define REC_HANDSHAKE	22
#define REC_DATA	23
#define HS_NEW_SESSION_TICKET	4
#define HS_KEY_UPDATE	24

static int probed = -1;		/* -1: not looked yet */
static int said;

/* The fallback, once per process: why the kernel path is not taken. */
static void
say_fallback(const char *why)
{
	if (said)
		return;
	said = 1;
	kv_log_warnx("KV0663", "kernel TLS unavailable (%s): TLS 1.3 legs use kilovolt's own "
	    "record layer", why);
}

int
kv_ktls_available(void)
{
	if (probed == -1) {
		probed = access("/proc/net/tls_stat", F_OK) == 0;
		if (!probed)
			say_fallback("no /proc/net/tls_stat: the kernel's tls module is not loaded");
	}
	return probed;
}

static void
put_seq(unsigned char out[8], uint64_t seq)
{
	int i;

	for (i = 7; i >= 0; i--, seq >>= 8)
		out[i] = (unsigned char)seq;
}

/* The kernel's AES-GCM info (of either key size, whose fields differ only
 * in the key's length) from the direction D's secrets. */
#define GCM_INFO(g, cipher, d) do {					\
	(g).info.version = TLS_1_3_VERSION;				\
	(g).info.cipher_type = (cipher);				\
	memcpy((g).salt, (d)->iv, 4);					\
	memcpy((g).iv, (d)->iv + 4, 8);					\
	memcpy((g).key, (d)->key, sizeof((g).key));			\
	put_seq((g).rec_seq, (d)->seq);					\
} while (0)

/* One direction's keys for TLS_TX or TLS_RX: for AES-GCM the kernel takes
 * the IV's first 4 bytes as its salt and the other 8 as its IV (the
 * nonce is the two XOR the sequence, as RFC 8446 §5.3 says); ChaCha20
 * takes the 12 bytes as the IV. Returns 0 or -1 (another suite). */
static int
set_dir(int fd, int optname, const struct kv_tls13_dir *d)
{
	union {
		struct tls12_crypto_info_aes_gcm_128 g128;
		struct tls12_crypto_info_aes_gcm_256 g256;
		struct tls12_crypto_info_chacha20_poly1305 cc;
	} ci;
	socklen_t len;
	int r;

	memset(&ci, 0, sizeof ci);
	switch (d->suite) {
	case KV_TLS13_AES128_GCM:
		GCM_INFO(ci.g128, TLS_CIPHER_AES_GCM_128, d);
		len = sizeof ci.g128;
		break;
	case KV_TLS13_AES256_GCM:
		GCM_INFO(ci.g256, TLS_CIPHER_AES_GCM_256, d);
		len = sizeof ci.g256;
		break;
	case KV_TLS13_CHACHA20:
		ci.cc.info.version = TLS_1_3_VERSION;
		ci.cc.info.cipher_type = TLS_CIPHER_CHACHA20_POLY1305;
		memcpy(ci.cc.iv, d->iv, 12);
		memcpy(ci.cc.key, d->key, 32);
		put_seq(ci.cc.rec_seq, d->seq);
		len = sizeof ci.cc;
		break;
	default:
		errno = EINVAL;
		return -1;
	}
	r = setsockopt(fd, SOL_TLS, optname, &ci, len);
	OPENSSL_cleanse(&ci, sizeof ci);
	return r;
}

int
kv_ktls_start(int fd, const struct kv_tls13_conn *t)
{
	/* The ULP alone changes nothing on the wire: a socket with it and no
	 * keys passes bytes as before, so a refusal here or at the first
	 * direction leaves the own record layer free to take the leg. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")) == -1) {
		say_fallback(errno == ENOENT ? "TCP_ULP \"tls\": no such module" : strerror(errno));
		return 1;
	}
	if (set_dir(fd, TLS_TX, &t->wd) == -1) {
		say_fallback(strerror(errno));
		return 1;
	}
	if (set_dir(fd, TLS_RX, &t->rd) == -1) {
		kv_log_warn("KV0664", "kernel TLS took the write key but refused the read key; "
		    "connection closed");
		return -1;
	}
	return 0;
}

/* A record that is not application data: a ticket is dropped (0), a
 * close_notify is the end (1), anything else is fatal (-1). */
static int
control_record(unsigned type, const unsigned char *p, ssize_t n)
{
	if (type == REC_HANDSHAKE && n >= 1 && p[0] == HS_NEW_SESSION_TICKET)
		return 0;
	if (type == REC_ALERT && n == 2 && p[1] == 0)
		return 1;
	kv_log_warnx("KV0662", "upstream TLS: fatal record (alert %u or bad message); closed",
	    type == REC_ALERT && n == 2 ? (unsigned)p[1] : 0u);
	return -1;
}

ssize_t
kv_ktls_read(int fd, void *buf, size_t len, int *want)
{
	char cbuf[CMSG_SPACE(sizeof(unsigned char))];
	struct cmsghdr *cm;
	struct msghdr msg;
	struct iovec iov;
	unsigned type;
	ssize_t n;
	int r, spare = 4;

	/* at most 4 records without data a call, as on the own record layer
	 * (tls13_io.c): a peer sending tickets back to back must not hold
	 * the worker */
	for (; spare > 0; spare--) {
		memset(&msg, 0, sizeof msg);
		iov.iov_base = buf;
		iov.iov_len = len;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof cbuf;
		do
			n = recvmsg(fd, &msg, 0);
		while (n == -1 && errno == EINTR);
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			*want = EPOLLIN;
			return KV_IO_AGAIN;
		}
		if (n == -1)
			return KV_IO_ERROR;	/* EBADMSG: a bad tag; EKEYEXPIRED: a KeyUpdate */
		cm = CMSG_FIRSTHDR(&msg);
		type = REC_DATA;
		if (cm != NULL && cm->cmsg_level == SOL_TLS && cm->cmsg_type == TLS_GET_RECORD_TYPE)
			type = *(unsigned char *)CMSG_DATA(cm);
		/* an end without close_notify may be a cut: an error, as on the
		 * own record layer */
		if (type == REC_DATA)
			return n > 0 ? n : KV_IO_ERROR;
		if ((r = control_record(type, buf, n)) == 1)
			return 0;
		if (r == -1)
			return KV_IO_ERROR;
	}
	*want = EPOLLIN;
	return KV_IO_AGAIN;
}

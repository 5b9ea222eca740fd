/* Secrets and record counts recorded during OpenSSL's life on a connection
 * (tls_handoff.h). OpenSSL 3.0 has no API for a record sequence number:
 * each protected record it reads or writes is seen by the message callback
 * as SSL3_RT_INNER_CONTENT_TYPE; those after the application secret took
 * over are the sequence number. */
#include "worker/tls_handoff.h"

#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>

struct handoff_state {
	uint8_t c_secret[KV_TLS13_MAX_SECRET], s_secret[KV_TLS13_MAX_SECRET];
	uint8_t c_len, s_len;
	uint8_t key_update;      /* a KeyUpdate went by: hand-off refused */
	uint64_t rseq, wseq;     /* records under the application secrets */
};

static int ex_index = -1;

static void
state_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	if (ptr) {
		OPENSSL_cleanse(ptr, sizeof(struct handoff_state));
		free(ptr);
	}
}

static struct handoff_state *
state_of(const SSL *ssl, int create)
{
	struct handoff_state *h = SSL_get_ex_data(ssl, ex_index);
	if (h == NULL && create && (h = calloc(1, sizeof *h)) != NULL &&
	    SSL_set_ex_data((SSL *)ssl, ex_index, h) != 1) {
		free(h);
		h = NULL;
	}
	return h;
}

static size_t
unhex(const char *p, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (; n < cap; n++, p += 2) {
		int hi = OPENSSL_hexchar2int((unsigned char)p[0]);
		int lo = hi < 0 ? -1 : OPENSSL_hexchar2int((unsigned char)p[1]);
		if (lo < 0)
			break;
		out[n] = (uint8_t)(hi << 4 | lo);
	}
	return p[0] == '\0' ? n : 0;
}

/* "LABEL <client_random> <secret>" */
static void
keylog(const SSL *ssl, const char *line)
{
	const char *sp;
	int client = strncmp(line, "CLIENT_TRAFFIC_SECRET_0 ", 24) == 0;
	if (!client && strncmp(line, "SERVER_TRAFFIC_SECRET_0 ", 24) != 0)
		return;
	struct handoff_state *h = state_of(ssl, 1);
	if (h == NULL || (sp = strchr(line + 24, ' ')) == NULL)
		return;
	if (client)
		h->c_len = (uint8_t)unhex(sp + 1, h->c_secret, sizeof h->c_secret);
	else
		h->s_len = (uint8_t)unhex(sp + 1, h->s_secret, sizeof h->s_secret);
}

static void
msg(int write_p, int version, int type, const void *buf, size_t len, SSL *ssl, void *arg)
{
	(void)version, (void)arg;
	struct handoff_state *h = state_of(ssl, 0);
	if (h == NULL)
		return;
	if (type == SSL3_RT_HANDSHAKE && len > 0 && ((const uint8_t *)buf)[0] == 24)
		h->key_update = 1;
	if (type != SSL3_RT_INNER_CONTENT_TYPE)
		return;
	if (write_p && h->c_len)
		h->wseq += ((const uint8_t *)buf)[0] == SSL3_RT_APPLICATION_DATA;
	else if (!write_p && h->s_len)
		h->rseq++;
}

int
kv_tls_handoff_ctx(SSL_CTX *ctx)
{
	if (ex_index < 0)
		ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, state_free);
	if (ex_index < 0)
		return -1;
	SSL_CTX_set_keylog_callback(ctx, keylog);
	SSL_CTX_set_msg_callback(ctx, msg);
	return 0;
}

int
kv_tls_handoff(SSL *ssl, struct kv_tls13_conn *t)
{
	struct handoff_state *h = ex_index < 0 ? NULL : state_of(ssl, 0);
	if (h == NULL || SSL_version(ssl) != TLS1_3_VERSION || h->key_update ||
	    SSL_pending(ssl) != 0 || SSL_has_pending(ssl) || !SSL_is_init_finished(ssl))
		return -1;
	const SSL_CIPHER *ci = SSL_get_current_cipher(ssl);
	enum kv_tls13_suite s = ci ? kv_tls13_suite_of(SSL_CIPHER_get_protocol_id(ci)) : KV_TLS13_NONE;
	memset(t, 0, sizeof *t);
	if (s == KV_TLS13_NONE ||
	    kv_tls13_dir_init(&t->rd, s, h->s_secret, h->s_len) < 0 ||
	    kv_tls13_dir_init(&t->wd, s, h->c_secret, h->c_len) < 0) {
		OPENSSL_cleanse(t, sizeof *t);
		return -1;
	}
	t->rd.seq = h->rseq;
	t->wd.seq = h->wseq;
	return 0;
}

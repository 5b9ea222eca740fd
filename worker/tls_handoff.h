/* The OpenSSL side of kilovolt's TLS 1.3 record layer (worker/tls13.h):
 * while OpenSSL does the handshake, the traffic secrets and the number of
 * records each direction has used under them are recorded on the SSL; once
 * it is safe, kv_tls_handoff turns the SSL into a kv_tls13_conn and the
 * caller frees the SSL. Not yet called by the relay (issue 21). */
#ifndef KV_TLS_HANDOFF_H
#define KV_TLS_HANDOFF_H

#include <openssl/ssl.h>
#include "worker/tls13.h"

/* Installs the keylog and message callbacks on a client context. 0 or -1.
 * The message callback replaces any other; the keylog callback too. */
int kv_tls_handoff_ctx(SSL_CTX *ctx);

/* Fills t from ssl and returns 0 when the hand-off is safe: TLS 1.3, one of
 * the three AEAD suites, both application secrets seen, no KeyUpdate seen
 * either way, and OpenSSL holds no byte it has read but not handed out
 * (SSL_pending() == 0 and !SSL_has_pending(): nothing decrypted, no
 * partial or whole record in its buffer). Otherwise -1 and the connection
 * stays on OpenSSL (try again after a later read). On 0 the caller must not
 * use ssl for I/O again: SSL_free it (without SSL_shutdown). */
int kv_tls_handoff(SSL *ssl, struct kv_tls13_conn *t);

#endif

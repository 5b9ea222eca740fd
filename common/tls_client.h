/* The one TLS client set-up every process uses: the workers' upstreams,
 * the master's health checks, its Redis connection and its alerts, and so
 * one verification policy (anchors, protocol floor, host check). */
#ifndef KV_COMMON_TLS_CLIENT_H
#define KV_COMMON_TLS_CLIENT_H

#include <openssl/ssl.h>

/* A client context with the upstreams' verification (the workers', the
 * master's health checks, Redis and alerts alike): TLS 1.2 or later, the
 * peer's certificate verified against STORE when not NULL (shared: a
 * reference is taken), else CA_FILE, else the system's anchors; ALPN
 * http/1.1; MODE (SSL_CTX_set_mode); never SSL_MODE_AUTO_RETRY: a read
 * that met only a ticket or a KeyUpdate returns SSL_ERROR_WANT_READ, even
 * on a blocking socket, and the caller retries within its own deadline.
 * NULL, with OpenSSL's errors cleared, when the anchors cannot be loaded. */
SSL_CTX	*kv_tls_client_ctx(const char *ca_file, X509_STORE *store, long mode);

/* Make SSL check that the peer is HOST: the IP address when NUMERIC, else
 * the name (sent as SNI too; no partial wildcards). 0, or -1. */
int	kv_tls_expect_host(SSL *ssl, const char *host, int numeric);

#endif

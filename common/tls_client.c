/* The one TLS client context and host check (common/tls_client.h). */
#include "common/tls_client.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

SSL_CTX *
kv_tls_client_ctx(const char *ca_file, X509_STORE *store, long mode)
{
	SSL_CTX *ctx;
	int ok;

	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		ERR_clear_error();
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, mode);
	/* With auto-retry a read goes on to the next record after a ticket or
	 * a KeyUpdate for as long as the peer sends them: a health-checked
	 * target sending tickets held the master for 6 s (issue 34). Without
	 * it such a record ends the read with SSL_ERROR_WANT_READ, and the
	 * caller's loop decides. */
	SSL_CTX_clear_mode(ctx, SSL_MODE_AUTO_RETRY);
	SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x08http/1.1", 9);
	ok = 1;
	if (store != NULL)
		SSL_CTX_set1_cert_store(ctx, store);
	else if (ca_file != NULL)
		ok = SSL_CTX_load_verify_locations(ctx, ca_file, NULL);
	else
		ok = SSL_CTX_set_default_verify_paths(ctx);
	if (ok != 1) {
		ERR_clear_error();
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

int
kv_tls_expect_host(SSL *ssl, const char *host, int numeric)
{
	if (numeric)	/* the IP address the URL names */
		return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
	if (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)
		return -1;
	SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	return 0;
}

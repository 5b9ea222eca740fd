/* Vertex AI's pieces that need no network: its request targets
 * (common/vertex_path.h), Google's credential documents
 * (common/gcp_parse.h), the RS256 signer (common/jwt_sign.h, checked with
 * OpenSSL's verifier over the signing input), and the token's shared slot
 * (common/gcp_token.h). */
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "common/b64url.h"
#include "common/gcp_parse.h"
#include "common/gcp_token.h"
#include "common/jwt_sign.h"
#include "common/vertex_path.h"
#include "tests/unit.h"

#define VX(s, p)	kv_vx_path(s, strlen(s), p)

static void
paths(void)
{
	static const char claude[] =
	    "/v1/projects/my-p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929";
	char t[512];
	struct kv_vx_path p;

	snprintf(t, sizeof(t), "%s:rawPredict", claude);
	CHECK_INT(VX(t, &p), KV_VX_RAW);
	CHECK(p.anthropic && p.model_len == 26 && memcmp(t + p.model_off, "claude-sonnet-4-5@20250929", 26) == 0);
	CHECK(strncmp(t + p.rest_off, "/publishers/", 12) == 0);
	snprintf(t, sizeof(t), "%s:streamRawPredict?alt=sse", claude);
	CHECK_INT(VX(t, &p), KV_VX_STREAM_RAW);
	CHECK(kv_vx_streams(p.kind));
	CHECK_INT(VX("/v1/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict", &p),
	    KV_VX_COUNT);
	CHECK_INT(VX("/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-pro:generateContent", &p),
	    KV_VX_GENERATE);
	CHECK(!p.anthropic);
	CHECK_INT(VX("/v1beta1/projects/p/locations/l/publishers/google/models/g:streamGenerateContent", &p),
	    KV_VX_STREAM_GENERATE);
	CHECK_INT(VX("/v1/projects/p/locations/l/publishers/google/models/g:countTokens", &p), KV_VX_COUNT);
	/* under /v1/projects/, but nothing kilovolt meters */
	CHECK_INT(VX("/v1/projects/p/locations/l/publishers/google/models/g:rawPredict", &p), KV_VX_OTHER);
	CHECK_INT(VX("/v1/projects/p/locations/l/publishers/meta/models/m:rawPredict", &p), KV_VX_OTHER);
	CHECK_INT(VX("/v1/projects/p/locations/l/endpoints/123:predict", &p), KV_VX_OTHER);
	CHECK_INT(VX("/v1/projects//locations/l/publishers/anthropic/models/m:rawPredict", &p), KV_VX_OTHER);
	CHECK_INT(VX("/v1/projects/p/locations/l/publishers/anthropic/models/m%40x:rawPredict", &p), KV_VX_OTHER);
	CHECK_INT(VX("/v1/projects/p/locations/l/publishers/anthropic/models/m:rawPredict/x", &p), KV_VX_OTHER);
	CHECK_INT(kv_vx_path("/v1/projects/p/locations/l/publishers/anthropic/models/m\0:rawPredict", 64, &p),
	    KV_VX_OTHER);
	CHECK_INT(VX("/v1/chat/completions", &p), KV_VX_NONE);
	CHECK_INT(VX("/v1/projectsx", &p), KV_VX_NONE);
}

static void
documents(void)
{
	static struct kv_gcp_sa sa;
	struct kv_gcp_token tok;
	char err[256];
	const char *f = "{\"type\":\"service_account\",\"private_key_id\":\"k1\",\"private_key\":"
	    "\"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\\n\","
	    "\"client_email\":\"a@p.iam.gserviceaccount.com\",\"extra\":[1,{\"x\":null}]}";

	CHECK_INT(kv_gcp_parse_sa(f, strlen(f), &sa, err, sizeof(err)), 0);
	CHECK_STR(sa.client_email, "a@p.iam.gserviceaccount.com");
	CHECK_STR(sa.token_uri, KV_GCP_TOKEN_URI);
	CHECK_STR(sa.private_key_id, "k1");
	CHECK(strstr(sa.private_key, "\nAAAA\n") != NULL);
	f = "{\"type\":\"authorized_user\",\"client_email\":\"a\",\"private_key\":\"b\"}";
	CHECK_INT(kv_gcp_parse_sa(f, strlen(f), &sa, err, sizeof(err)), -1);
	CHECK(strstr(err, "service_account") != NULL);
	f = "{\"type\":\"service_account\",\"client_email\":\"a\"}";
	CHECK_INT(kv_gcp_parse_sa(f, strlen(f), &sa, err, sizeof(err)), -1);
	CHECK_INT(kv_gcp_parse_sa("{", 1, &sa, err, sizeof(err)), -1);

	f = "{\"access_token\":\"ya29.x\",\"expires_in\":3599,\"token_type\":\"Bearer\"}";
	CHECK_INT(kv_gcp_parse_token(f, strlen(f), 1000, &tok, err, sizeof(err)), 0);
	CHECK_STR(tok.token, "ya29.x");
	CHECK_INT(tok.expires, 4599);
	f = "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}";
	CHECK_INT(kv_gcp_parse_token(f, strlen(f), 1000, &tok, err, sizeof(err)), -1);
	CHECK_STR(err, "invalid_grant: Invalid JWT Signature.");
	f = "{\"access_token\":\"a b\",\"expires_in\":60}";
	CHECK_INT(kv_gcp_parse_token(f, strlen(f), 1000, &tok, err, sizeof(err)), -1);
	CHECK(tok.token[0] == '\0');	/* nothing half-kept */
	f = "{\"access_token\":\"t\",\"expires_in\":1.5}";
	CHECK_INT(kv_gcp_parse_token(f, strlen(f), 1000, &tok, err, sizeof(err)), -1);
	f = "{\"access_token\":\"t\",\"expires_in\":86401}";
	CHECK_INT(kv_gcp_parse_token(f, strlen(f), 1000, &tok, err, sizeof(err)), -1);
	f = "{\"access_token\":\"t\",\"expires_in\":60,\"token_type\":\"mac\"}";
	CHECK_INT(kv_gcp_parse_token(f, strlen(f), 1000, &tok, err, sizeof(err)), -1);
}

/* PKEY as PEM (PKCS #8), into BUF. */
static void
pem_of(EVP_PKEY *k, char *buf, size_t cap)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n;

	PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL);
	n = BIO_read(b, buf, (int)cap - 1);
	buf[n > 0 ? n : 0] = '\0';
	BIO_free(b);
}

static void
signer(void)
{
	static char pem[8192], jwt[4096];
	unsigned char part[1024];
	EVP_PKEY *k = EVP_RSA_gen(2048);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	char err[256], *dot1, *dot2;
	long n, dl;

	pem_of(k, pem, sizeof(pem));
	n = kv_jwt_sign_rs256(pem, "kid-1", "{\"iss\":\"a\"}", jwt, sizeof(jwt), err, sizeof(err));
	CHECK(n > 0 && (size_t)n == strlen(jwt));
	dot1 = strchr(jwt, '.');
	dot2 = dot1 != NULL ? strchr(dot1 + 1, '.') : NULL;
	CHECK(dot1 != NULL && dot2 != NULL);
	if (dot1 == NULL || dot2 == NULL)
		return;
	dl = kv_b64url_decode(jwt, (size_t)(dot1 - jwt), part, sizeof(part));
	CHECK(dl > 0 && memcmp(part, "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"kid-1\"}", (size_t)dl) == 0);
	dl = kv_b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), part, sizeof(part));
	CHECK(dl == 11 && memcmp(part, "{\"iss\":\"a\"}", 11) == 0);
	dl = kv_b64url_decode(dot2 + 1, strlen(dot2 + 1), part, sizeof(part));
	CHECK(dl == 256);
	CHECK(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, k) == 1 &&
	    EVP_DigestVerify(md, part, (size_t)dl, (unsigned char *)jwt, (size_t)(dot2 - jwt)) == 1);
	/* not a key; a kid that would break the header; too small a buffer */
	CHECK_INT(kv_jwt_sign_rs256("nope", "", "{}", jwt, sizeof(jwt), err, sizeof(err)), -1);
	CHECK_INT(kv_jwt_sign_rs256(pem, "a\"b", "{}", jwt, sizeof(jwt), err, sizeof(err)), -1);
	CHECK_INT(kv_jwt_sign_rs256(pem, "", "{}", jwt, 64, err, sizeof(err)), -1);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(k);
}

static void
slot(void)
{
	struct kv_gcp_slot *s = kv_gcp_slot_map();
	struct kv_gcp_token t = { .expires = 7, .source = KV_GCP_METADATA }, out;
	uint64_t gen;

	CHECK(s != NULL && kv_gcp_slot_get() == s && kv_gcp_slot_map() == s);
	if (s == NULL)
		return;
	CHECK_INT(kv_gcp_slot_read(s, &out, &gen), -1);
	strcpy(t.token, "ya29.one");
	kv_gcp_slot_publish(s, &t);
	CHECK_INT(kv_gcp_slot_generation(s), 1);
	CHECK_INT(kv_gcp_slot_read(s, &out, &gen), 0);
	CHECK(gen == 1 && strcmp(out.token, "ya29.one") == 0 && out.expires == 7);
	CHECK_STR(kv_gcp_source_name(out.source), "metadata server");
}

int
main(void)
{
	paths();
	documents();
	signer();
	slot();
	return unit_done();
}

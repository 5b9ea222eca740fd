/* The responses the gateway makes itself, in the provider's own error
 * shape (OpenAI, Anthropic, Bedrock or Google) so SDKs surface them; see errors.h. */

#include "worker/errors.h"

#include "common/jsonline.h"

#include <stdio.h>
#include <string.h>

struct err_shape {
	int		 status;
	const char	*reason;
	const char	*openai_type;
	const char	*openai_code;
	const char	*anthropic_type;
	const char	*bedrock_type;	/* x-amzn-ErrorType: what AWS's SDKs read */
	const char	*google_status;	/* google.rpc.Code's name for it */
};

/* Types follow what each provider sends for the same condition; 402 uses
 * the codes SPEC.md names so clients can tell a budget refusal apart. */
static const struct err_shape shapes[] = {
	{ 400, "Bad Request", "invalid_request_error", "bad_request", "invalid_request_error",
	    "ValidationException", "INVALID_ARGUMENT" },
	{ 401, "Unauthorized", "invalid_request_error", "invalid_api_key", "authentication_error",
	    "UnrecognizedClientException", "UNAUTHENTICATED" },
	{ 402, "Payment Required", "insufficient_quota", "budget_exceeded", "budget_exceeded",
	    "ServiceQuotaExceededException", "RESOURCE_EXHAUSTED" },
	{ 404, "Not Found", "invalid_request_error", "not_found", "not_found_error",
	    "ResourceNotFoundException", "NOT_FOUND" },
	{ 408, "Request Timeout", "invalid_request_error", "timeout", "timeout_error",
	    "ModelTimeoutException", "DEADLINE_EXCEEDED" },
	{ 413, "Payload Too Large", "invalid_request_error", "request_too_large", "request_too_large",
	    "ValidationException", "INVALID_ARGUMENT" },
	{ 414, "URI Too Long", "invalid_request_error", "uri_too_long", "invalid_request_error",
	    "ValidationException", "INVALID_ARGUMENT" },
	{ 429, "Too Many Requests", "requests", "rate_limit_exceeded", "rate_limit_error",
	    "ThrottlingException", "RESOURCE_EXHAUSTED" },
	{ 431, "Request Header Fields Too Large", "invalid_request_error", "headers_too_large", "invalid_request_error",
	    "ValidationException", "INVALID_ARGUMENT" },
	{ 501, "Not Implemented", "invalid_request_error", "not_implemented", "invalid_request_error",
	    "ValidationException", "UNIMPLEMENTED" },
	{ 502, "Bad Gateway", "upstream_error", "bad_gateway", "api_error",
	    "InternalServerException", "UNAVAILABLE" },
	{ 503, "Service Unavailable", "service_unavailable", "gateway_overloaded", "overloaded_error",
	    "ServiceUnavailableException", "UNAVAILABLE" },
	{ 504, "Gateway Timeout", "upstream_error", "gateway_timeout", "timeout_error",
	    "ModelTimeoutException", "DEADLINE_EXCEEDED" },
	{ 505, "HTTP Version Not Supported", "invalid_request_error", "bad_version", "invalid_request_error",
	    "ValidationException", "INVALID_ARGUMENT" },
};

static const struct err_shape *
shape_for(int status)
{
	size_t i;

	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (shapes[i].status == status)
			return &shapes[i];
	return &shapes[0];
}

const char *
kv_http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 403: return "Forbidden";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	default: return shape_for(status)->reason;
	}
}

/* Messages are our own fixed texts or short reasons; still escape them,
 * as a JSON string literal (quotes included) in DST. One too long for DST
 * is cut, 64 bytes at a time, so the literal stays whole. */
static void
json_message(char *dst, size_t len, const char *s)
{
	size_t n = strlen(s), pos = 0;

	while (kv_jsonline_string(dst, len, &pos, s, n) != 0) {
		pos = 0;
		n = n > 64 ? n - 64 : 0;
	}
}

int
kv_error_response(char *buf, size_t len, int shape, int status,
    const char *message, int keep_alive, const char *extra)
{
	return kv_error_response_typed(buf, len, shape, status, NULL, message,
	    keep_alive, extra);
}

int
kv_error_response_typed(char *buf, size_t len, int shape, int status,
    const char *openai_type, const char *message, int keep_alive, const char *extra)
{
	const struct err_shape *sh = shape_for(status);
	char msg[512], body[1024], amzn[80] = "";
	int blen, n;

	json_message(msg, sizeof(msg), message);
	if (shape == KV_ERR_GOOGLE)
		blen = snprintf(body, sizeof(body),
		    "{\"error\":{\"code\":%d,\"message\":%s,\"status\":\"%s\"}}",
		    status, msg, sh->google_status);
	else if (shape == KV_ERR_BEDROCK) {
		blen = snprintf(body, sizeof(body), "{\"message\":%s}", msg);
		snprintf(amzn, sizeof(amzn), "x-amzn-ErrorType: %s\r\n", sh->bedrock_type);
	} else if (shape == KV_ERR_ANTHROPIC)
		blen = snprintf(body, sizeof(body),
		    "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":%s}}",
		    sh->anthropic_type, msg);
	else
		blen = snprintf(body, sizeof(body),
		    "{\"error\":{\"message\":%s,\"type\":\"%s\",\"param\":null,\"code\":\"%s\"}}",
		    msg, openai_type != NULL ? openai_type : sh->openai_type, sh->openai_code);
	if (blen < 0 || (size_t)blen >= sizeof(body))
		return -1;
	n = snprintf(buf, len,
	    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %d\r\n%s%s%s\r\n%s",
	    status, kv_http_reason(status), blen,
	    keep_alive ? "" : "Connection: close\r\n", amzn, extra ? extra : "", body);
	if (n < 0 || (size_t)n >= len)
		return -1;
	return n;
}

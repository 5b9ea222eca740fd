/* Responses the gateway makes itself, in the provider's own error shape
 * (OpenAI, Anthropic or Bedrock, chosen by the request path) so SDKs
 * surface them. */
#ifndef KV_ERRORS_H
#define KV_ERRORS_H

#include <stddef.h>

/* The error body's shape: OpenAI's {"error":{...}}, Anthropic's
 * {"type":"error","error":{...}}, Bedrock's {"message":...} with the
 * error's name in an x-amzn-ErrorType header (ValidationException, ...),
 * or Google's {"error":{"code":N,"message":...,"status":"INVALID_ARGUMENT"}}
 * (the Gemini API and Vertex AI). */
enum kv_err_shape { KV_ERR_OPENAI = 0, KV_ERR_ANTHROPIC = 1, KV_ERR_BEDROCK = 2,
	KV_ERR_GOOGLE = 3 };

/* Write a complete HTTP/1.1 response into buf: status line, JSON error
 * body for STATUS with MESSAGE in SHAPE (enum kv_err_shape), Connection:
 * close unless keep_alive, and EXTRA (pre-formatted "Name: value\r\n"
 * lines, may be NULL). Returns the length, or -1 when buf is too small. */
int	kv_error_response(char *buf, size_t len, int shape, int status,
	    const char *message, int keep_alive, const char *extra);

/* kv_error_response with OpenAI's error "type" given, where one status
 * has several (a 429 is "requests" or "tokens", as OpenAI names the limit
 * that was hit); NULL means the status's own. */
int	kv_error_response_typed(char *buf, size_t len, int shape, int status,
	    const char *openai_type, const char *message, int keep_alive,
	    const char *extra);

/* The reason phrase for a status code ("Bad Gateway"). */
const char *kv_http_reason(int status);

#endif

/* Responses the gateway makes itself, in the provider's own error shape
 * (OpenAI or Anthropic, chosen by the request path) so SDKs surface them. */
#ifndef KV_ERRORS_H
#define KV_ERRORS_H

#include <stddef.h>

/* Write a complete HTTP/1.1 response into buf: status line, JSON error
 * body for STATUS with MESSAGE, Connection: close unless keep_alive, and
 * EXTRA (pre-formatted "Name: value\r\n" lines, may be NULL).
 * anthropic selects {"type":"error","error":{...}} over {"error":{...}}.
 * Returns the length, or -1 when buf is too small. */
int	kv_error_response(char *buf, size_t len, int anthropic, int status,
	    const char *message, int keep_alive, const char *extra);

/* kv_error_response with OpenAI's error "type" given, where one status
 * has several (a 429 is "requests" or "tokens", as OpenAI names the limit
 * that was hit); NULL means the status's own. */
int	kv_error_response_typed(char *buf, size_t len, int anthropic, int status,
	    const char *openai_type, const char *message, int keep_alive,
	    const char *extra);

/* The reason phrase for a status code ("Bad Gateway"). */
const char *kv_http_reason(int status);

#endif

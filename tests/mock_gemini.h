/* mock_gemini: the Gemini API as the stand-in provider speaks it
 * (mock_gemini.c), for tests/mock_upstream.c. */
#ifndef KV_MOCK_GEMINI_H
#define KV_MOCK_GEMINI_H

#include <stddef.h>

#define MOCK_GM_PIECES	4096

/* A response: STATUS, CTYPE, and its body in NPIECES pieces (a whole JSON
 * body is one; a stream's events or array elements one each, sent as a
 * chunk each); CHUNKED for a stream. free() BUF when done. */
struct mock_gm_out {
	int		 status;
	const char	*ctype;
	int		 chunked;
	char		*buf;
	size_t		 off[MOCK_GM_PIECES + 1];
	size_t		 npieces;
};

/* What steers the answer: TOKENS candidates tokens (cut to the body's
 * generationConfig.maxOutputTokens), THOUGHTS thinking tokens, CACHED of
 * the prompt tokens cached. */
struct mock_gm_in {
	long		 tokens, thoughts, cached;
};

/* Answer METHOD PATH?QUERY with BODY (LEN bytes) when PATH is a Gemini
 * API model method (/v1beta/models/{m}:{method} or /v1/...): 0 with *OUT
 * filled, or -1 when it is not one. Prompt tokens are the body's bytes / 4,
 * AUDIO among them a quarter of the base64 bytes of each inlineData of an
 * audio/... mimeType. */
int	mock_gemini(const char *method, const char *path, const char *query,
	    const char *body, size_t len, const struct mock_gm_in *in,
	    struct mock_gm_out *out);

#endif

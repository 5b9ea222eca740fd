/* The request scanner: reads a whole request body as it arrives (any split),
 * validates it strictly (jsonv.h: one JSON object) and takes what admission
 * needs: the model, whether it streams, its output limits and n, where
 * stream_options lies, and whether it makes the provider fetch or recall
 * content its bytes do not show. Holds no body bytes. The bodies: OpenAI's
 * and Anthropic's (Bedrock's InvokeModel of an Anthropic model too: the
 * Messages body, its model in the path) and Bedrock's Converse. */
#ifndef KV_REQSCAN_H
#define KV_REQSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "worker/jsonv.h"
#include "worker/media_bound.h"
#include "worker/usage.h"

#define KV_REQ_MODEL	96	/* model names are shorter; longer is a 400 */
#define KV_REQ_LIMIT_MAX 2147483647	/* output limits and n past this: 400 */
#define KV_REQ_THINK_DYNAMIC	(-2)	/* ri.thinking: the model decides (Gemini) */

enum { KV_GEO_GLOBAL = 0, KV_GEO_US, KV_GEO_OTHER };

/* What a complete, valid body says. Top-level members only, the last of
 * duplicate names winning, except where noted. */
struct kv_request_info {
	char		 model[KV_REQ_MODEL];	/* "" when absent */
	int		 stream;		/* "stream": true */
	int		 background;		/* "background": true (Responses API) */
	int		 has_stream_options;	/* a "stream_options" member */
	int		 include_usage;		/* the client asked: its last
						   stream_options.include_usage is true */
	int64_t		 max_output;	/* largest of max_tokens,
					   max_completion_tokens,
					   max_output_tokens (Converse:
					   inferenceConfig.maxTokens, and a
					   max_tokens in additionalModelRequest-
					   Fields); -1 when none */
	int64_t		 thinking;	/* thinking.budget_tokens (Converse: in
					   additionalModelRequestFields, or its
					   reasoning_config); -1 none. The output
					   limit bounds it: Anthropic counts the
					   thinking in max_tokens. Gemini:
					   thinkingConfig.thinkingBudget, and
					   KV_REQ_THINK_DYNAMIC when unset or -1
					   (up to the model's max output) */
	int64_t		 mult;		/* max(n, best_of, 1) x the prompts of a
					   legacy completions "prompt" array */
	int64_t		 images;	/* inline images (data: URLs, base64) */
	int64_t		 hidden;	/* Anthropic's hidden tool prompts, tokens */
	/* server tools (the provider loops: each call an internal turn) */
	int64_t		 tool_uses;	/* sum of their max_uses */
	int		 tools_unbounded;	/* server tools without max_uses */
	int64_t		 ws_uses;	/* web search: max_uses summed, */
	int		 ws_unbounded;	/* ... and such tools without one */
	int64_t		 wf_uses;	/* web fetch, the same */
	int		 wf_unbounded;
	int64_t		 max_tool_calls;	/* Responses max_tool_calls; -1 */
	/* the price dimensions it asks for (issue 33; null is absent) */
	int		 fast;		/* "speed": 0 absent or "standard", 1
					   "fast", 2 another */
	int		 geo;		/* "inference_geo": KV_GEO_* */
	int		 tier;		/* "service_tier": enum kv_tier (absent,
					   "auto", "default": standard) */
	char		 dim_other[48];	/* "" or the last value of those
					   kilovolt has no rule for: 'speed "turbo"' */
	int		 audio_out;	/* it may answer in audio: a top-level
					   "audio", or "audio" in "modalities" */
	int		 audio_in;	/* it carries or recalls audio input:
					   an input_audio part, an audio.id,
					   Gemini's inlineData that is not an
					   image or fileData */
	int		 cache_ctl;	/* a "cache_control" anywhere (Anthropic
					   cache writes; Converse: a cachePoint), */
	int		 cache_1h;	/* ... and a "ttl": "1h" */
	int64_t		 img_tok[KV_IMG_NRULES];	/* their tokens at most,
					   summed under each rule (media_bound.h) */
	char		 fetches[48];	/* "" or what makes the provider fetch or
					   recall content (any depth): "image_url URL",
					   "file_id", "web_search tool", ... */
	uint64_t	 so_start;	/* offset of the last stream_options '{', */
	uint64_t	 so_end;	/* ... and of its '}'; both 0 when it is not
					   an object */
	uint64_t	 so_null_off;	/* offset of the last one's value when it is
					   null, else 0 */
	int		 so_members;	/* members in that object */
	int		 so_count;	/* top-level "stream_options" members */
	int		 so_has_iu;	/* include_usage members in the last one */
	uint64_t	 so_iu_off;	/* offset of the last one's value, */
	int		 so_iu_len;	/* ... its length: 4 true/null, 5 false */
	uint64_t	 obj_end;	/* offset of the top-level '}' */
	int		 members;	/* top-level members */
};

struct kv_reqscan {
	struct kv_jv	 jv;
	enum kv_api	 api;
	int		 bad;		/* a member has a value admission refuses */
	int		 key;		/* id of the member name just read */
	int		 top;		/* id of the top-level member being read */
	int		 inkey;		/* between a name's quotes */
	size_t		 klen;		/* kbuf's bytes */
	int		 cap;		/* what the current string/number is kept for */
	size_t		 vlen;		/* vbuf's bytes */
	int		 vlong;		/* it did not fit */
	int64_t		 lim[7];	/* the three limits, n, best_of, the
					   thinking budget, Converse's maxTokens
					   (LIM_*, reqscan_int.h); -1 absent */
	int64_t		 prompts;	/* strings or token arrays in "prompt" */
	int		 ntools;	/* elements of the top-level "tools" */
	int		 tkind;		/* the tool being read: 0, or T_* */
	int64_t		 tuses;		/* its max_uses, -1 */
	int		 prompt_ints;	/* "prompt" is one array of token ids */
	int		 audio_lvl;	/* level of the "audio" object being read
					   below the top, 0 none */
	int		 intools;	/* the value is inside a tools element */
	int		 path_model;	/* the path named the model (Bedrock) */
	/* Converse (reqscan_converse.c): the member id of each level's
	 * value (K_NONE: an array element), and the level below which the
	 * values are the client's own JSON (a tool's input), 0 none */
	uint8_t		 cpath[16];
	int		 cv_skip;
	int64_t		 gm_img0;	/* Gemini: ri.images when inlineData.data began */
	/* an inline data: URL or base64 string, decoded as it arrives: its
	 * first bytes are the file's header (media_bound.h) */
	int		 mph;		/* M_* phase */
	int		 mdata;		/* it is a data: URL */
	int		 mimage;	/* its media type is image/... */
	size_t		 mmlen;		/* mmeta's bytes */
	uint32_t	 macc;
	int		 mbits;
	size_t		 mlen;		/* mbuf's bytes */
	struct kv_request_info ri;
	/* Buffers read only up to their lengths above (err: from its first
	 * byte on): kv_reqscan_init leaves their bytes as they were, a
	 * memset of them per request being most of its cost. */
	char		 err[128];	/* why the body is refused */
	char		 kbuf[40];	/* the name being read */
	char		 vbuf[KV_REQ_MODEL];	/* the value kept (cap) */
	char		 mmeta[16];	/* the start of the data: URL's media type */
	uint8_t		 mbuf[512];
};

/* Start scanning a body for a request to API. */
void	kv_reqscan_init(struct kv_reqscan *r, enum kv_api api);

/* The model a Bedrock path names (N bytes, decoded): the body names none,
 * and a "model" member in it is refused. A Prompt management ARN
 * (arn:...:prompt/...) runs a prompt the body does not show (ri.fetches).
 * Call after kv_reqscan_init, before the body. Returns 0, or -1 when it is
 * longer than KV_REQ_MODEL - 1 bytes or holds a NUL (r->err). */
int	kv_reqscan_model(struct kv_reqscan *r, const char *model, size_t n);

/* Feed decoded body bytes. Returns 0, or -1 once the body is refused
 * (r->err says why, fit for the client); later calls return -1. */
int	kv_reqscan_feed(struct kv_reqscan *r, const char *buf, size_t len);

/* The body ended. Returns 0 with r->ri filled in, or -1 (r->err). */
int	kv_reqscan_finish(struct kv_reqscan *r);

/* Parse JSON number text (already valid by the grammar) as an integer
 * value: "8192", "8192.0", "8.192e3" are 8192. Returns 0 and *out, or -1
 * with *why "is not an integer", "is negative" or "is out of range" (above
 * max). */
int	kv_reqscan_intval(const char *s, size_t n, int64_t max, int64_t *out,
	    const char **why);

#endif

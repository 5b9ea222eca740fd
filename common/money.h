/* Cost arithmetic in integer nano-dollars. No floating point decides a charge. */
#ifndef KV_MONEY_H
#define KV_MONEY_H

#include <stddef.h>
#include <stdint.h>

#include "common/config.h"

/* Token counts of one response, as the provider reported them, normalised:
 * input counts every billed input token, cached_input the cache reads among
 * them and cache_write the cache writes among them (OpenAI's prompt_tokens
 * already include cached tokens; Anthropic's input_tokens exclude both cache
 * fields, so the scanner adds them). */
/* The service tier a response says it ran on (OpenAI "service_tier"). */
enum kv_tier {
	KV_TIER_STANDARD = 0,	/* absent, "default" or "standard" */
	KV_TIER_PRIORITY,	/* "priority" */
	KV_TIER_FLEX,		/* "flex" */
	KV_TIER_OTHER,		/* any other name ("scale", ...): the dearest price */
};

struct kv_usage {
	int64_t	  input;
	int64_t	  output;	/* includes reasoning tokens */
	int64_t	  cached_input;
	int64_t	  cache_write;
	int64_t	  cache_write_1h;	/* among cache_write: Anthropic 1-hour writes */
	/* among input (uncached) and output: audio tokens (OpenAI
	 * prompt/completion_tokens_details.audio_tokens), and reasoning
	 * tokens (completion_tokens_details.reasoning_tokens), which cost
	 * their own prices where the price sets them */
	int64_t	  audio_input;
	int64_t	  audio_output;
	int64_t	  reasoning;
	/* server-tool calls the provider bills per call (Anthropic
	 * usage.server_tool_use, OpenAI Responses web_search_call items),
	 * and container time of code execution in milliseconds */
	int64_t	  web_search;
	int64_t	  web_fetch;
	int64_t	  code_exec_ms;
	int	  tier;		/* enum kv_tier */
	/* what multiplies every token price (issue 33): Anthropic fast mode
	 * and US-only inference, OpenAI's regional processing (enum
	 * kv_region: KV_REGION_US or _EU; else none) */
	int	  fast;
	int	  geo_us;
	int	  region;
	int	  found;	/* the response carried usage */
	int	  estimated;	/* counts are an estimate (cut stream, no usage) */
};

/* cost = uncached text input × input + audio input × audio_input
 *      + cached × cached_input
 *      + 5-minute writes × cache_write + 1-hour writes × cache_write_1h
 *      + text output × output + audio output × audio_output
 *      + reasoning × reasoning_output,
 *      prices per 1M tokens, times each multiplier the usage asks for and
 *      the price sets (fast_mult, geo_us_mult, region_*_mult; an unset
 *      one is 1), rounded up to the nano-dollar once,
 *      + the per-call fees (kv_cost_fees).
 * Unset cached_input and cache_write cost the input price, an unset
 * cache_write_1h twice the input price (Anthropic's rule), unset audio and
 * reasoning prices the input / output price. When the price has a
 * long-context tier and input passes its threshold, every token is priced
 * at the long-context prices (its own cache prices where set, else scaled
 * by the same ratio as input; reasoning by output's ratio). A priority or
 * flex tier uses that tier's prices when the section has them (its own
 * cache prices where set, else scaled likewise); a tier the section
 * cannot price is charged at the dearest input and output prices the
 * section has, never the standard ones. Returns 0, or -1 on overflow or
 * inconsistent counts (then *cost is INT64_MAX). */
int	kv_cost(const struct kv_price *p, const struct kv_usage *u, int64_t *cost);

/* V x NUM / DEN rounded up (INT64_MAX past it), NUM when DEN <= 0 (a free
 * base price): how kv_cost moves a price with a tier's (the catalogue
 * reader checks a tier price it is given against it). */
int64_t	kv_price_scaled(int64_t v, int64_t num, int64_t den);

/* The per-call fees of U at P: web_search x web_search_call + web_fetch x
 * web_fetch_call + code_exec_ms x code_exec_hour / 3,600,000 (rounded up);
 * an unset fee (-1) costs 0. kv_cost already adds this to the token cost.
 * Returns 0, or -1 on overflow or a negative count (*fees INT64_MAX). */
int	kv_cost_fees(const struct kv_price *p, const struct kv_usage *u, int64_t *fees);

/* 1 when U reports calls whose fee P does not set (charged 0: the caller
 * warns), else 0. */
int	kv_cost_fees_unpriced(const struct kv_price *p, const struct kv_usage *u);

/* Parse a decimal amount ("2.00", "0.075") scaled by 1e9 into *out exactly.
 * Returns 0, or -1 for a bad number, a negative value, more than 9
 * decimals, or overflow. Used for USD budgets and per-1M-token prices. */
int	kv_parse_nano(const char *s, int64_t *out);

/* Format nano-dollars as USD with 6 decimals ("1.997500", "-0.000001"). */
void	kv_format_usd(int64_t nusd, char *buf, size_t len);

/* The same text at OUT, no NUL, at most KV_USD_MAX bytes ("-9223372036.854775");
 * returns its length. */
#define KV_USD_MAX	18
size_t	kv_fmt_usd(char *out, int64_t nusd);

/* The same with the dollar sign after any minus: "$1.997500", "-$0.000005".
 * Every text a person reads (kvctl, the 402 message, the status page) uses
 * this form. */
void	kv_format_dollars(int64_t nusd, char *buf, size_t len);

#endif

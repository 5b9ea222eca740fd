/* mock_bill: what the stand-in provider bills a response, in nano-dollars,
 * by the providers' published rules for the models tests/t_prices_dims.sh
 * sends (issue 33), so that a test compares kilovolt's ledger with a bill
 * computed apart from kilovolt's own price table. Prices are USD per 1M
 * tokens as published:
 *   Anthropic  https://docs.claude.com/en/docs/about-claude/pricing
 *              (input, output, cache reads, 5-minute and 1-hour writes;
 *              web search $10 per 1,000; "Fast mode" for Opus 4.6 at six
 *              times the standard rates; "data residency": inference_geo
 *              "us" at 1.1 times the rates of every token category)
 *   OpenAI     https://platform.openai.com/docs/pricing
 *              (standard, flex and priority tiers; audio tokens of the
 *              audio-preview models; cache writes where a model bills
 *              them; web search $10 per 1,000 calls for reasoning models;
 *              regional processing (data residency) +10 % on the models
 *              released after it began)
 * A model not in the table bills 0 (nusd=0): its tests read the counts. */
#include <stdint.h>
#include <string.h>

#include "tests/mock_bill.h"

#define U(usd)	((int64_t)((usd) * 1e9 + 0.5))	/* USD -> nano-USD (exact here) */

/* Per 1M tokens in nano-USD; fees per call in nano-USD; multipliers in
 * thousandths (0: the model does not offer it). */
struct bill_price {
	const char	*model;		/* exact, or a prefix ending in '*' */
	int64_t		 in, out, cached, write, write1h;
	int64_t		 audio_in, audio_out;
	int64_t		 prio_in, prio_out, prio_cached, flex_in, flex_out, flex_cached;
	int64_t		 search;
	int64_t		 fast, geo_us, region;
};

static const struct bill_price table[] = {
	{ "claude-opus-4-6", U(5), U(25), U(0.5), U(6.25), U(10), 0, 0,
	    0, 0, 0, 0, 0, 0, U(0.01), 6000, 1100, 0 },
	{ "claude-haiku-4-5*", U(1), U(5), U(0.1), U(1.25), U(2), 0, 0,
	    0, 0, 0, 0, 0, 0, U(0.01), 0, 1100, 0 },
	{ "o3-2025-04-16", U(2), U(8), U(0.5), 0, 0, 0, 0,
	    U(3.5), U(14), U(0.875), U(1), U(4), U(0.25), U(0.01), 0, 0, 0 },
	{ "gpt-4o-mini-audio-preview*", U(0.15), U(0.6), 0, 0, 0, U(10), U(20),
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ "gpt-5.6", U(5), U(30), U(0.5), U(6.25), 0, 0, 0,
	    U(10), U(60), U(1), U(2.5), U(15), U(0.25), U(0.01), 0, 0, 1100 },
};

static const struct bill_price *
find(const char *model)
{
	size_t i, n;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		n = strlen(table[i].model);
		if (table[i].model[n - 1] == '*' ? strncmp(model, table[i].model, n - 1) == 0 :
		    strcmp(model, table[i].model) == 0)
			return &table[i];
	}
	return NULL;
}

static int64_t
or_else(int64_t v, int64_t dflt)
{
	return v > 0 ? v : dflt;
}

int64_t
mock_bill_nusd(const struct mock_bill_in *b)
{
	const struct bill_price *p = find(b->model);
	int64_t in, out, cached, den = 1000000;
	__int128 sum;

	if (p == NULL)
		return 0;
	in = p->in, out = p->out, cached = or_else(p->cached, p->in);
	if (strcmp(b->tier, "priority") == 0 && p->prio_in > 0)
		in = p->prio_in, out = p->prio_out, cached = p->prio_cached;
	else if (strcmp(b->tier, "flex") == 0 && p->flex_in > 0)
		in = p->flex_in, out = p->flex_out, cached = p->flex_cached;
	sum = (__int128)(b->input - b->cached - b->cache_write - b->audio_in) * in +
	    (__int128)b->cached * cached +
	    (__int128)(b->cache_write - b->cache_1h) * or_else(p->write, in) +
	    (__int128)b->cache_1h * or_else(p->write1h, 2 * in) +
	    (__int128)b->audio_in * or_else(p->audio_in, in) +
	    (__int128)(b->output - b->audio_out) * out +
	    (__int128)b->audio_out * or_else(p->audio_out, out);
	if (b->fast && p->fast > 0)
		sum *= p->fast, den *= 1000;
	if (b->geo_us && p->geo_us > 0)
		sum *= p->geo_us, den *= 1000;
	if (b->region && p->region > 0)
		sum *= p->region, den *= 1000;
	/* the token cost rounded up to the nano-dollar once, then the fees */
	return (int64_t)((sum + den - 1) / den) + b->web_search * p->search;
}

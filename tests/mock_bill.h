/* mock_bill: the stand-in provider's bill in nano-dollars (mock_bill.c). */
#ifndef KV_MOCK_BILL_H
#define KV_MOCK_BILL_H

#include <stdint.h>

/* What a response used, as the provider counts it: INPUT every input
 * token (cache reads, writes and audio among them), OUTPUT every output
 * token (audio among them); TIER the service tier it ran on. */
struct mock_bill_in {
	const char	*model;
	const char	*tier;
	long		 input, cached, cache_write, cache_1h, audio_in;
	long		 output, audio_out, web_search;
	int		 fast, geo_us, region;
};

/* The bill of B by the published prices of its model; 0 for a model the
 * table does not list. */
int64_t	mock_bill_nusd(const struct mock_bill_in *b);

#endif

/* libFuzzer target: kv_catalog_parse (LiteLLM's price catalogue through
 * common/jsonread.c) over arbitrary bytes: it never reads past LEN and
 * either keeps entries with both prices set and a provider counted, or
 * fails with a message. */
#include <stdint.h>
#include <stdlib.h>

#include "common/catalog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const provs[] = { "openai", "anthropic", NULL };
	struct kv_catalog_stats st;
	struct kv_price *v = NULL;
	size_t n = 0, i;
	char err[512];

	/* every provider is kept; an entry of one not priced by bare name
	 * that carries a field not understood on a served model is refused */
	if (kv_catalog_parse((const char *)data, size, provs, "", &v, &n, &st, err,
	    sizeof(err)) == 0)
		for (i = 0; i < n; i++)
			if (v[i].input < 0 || v[i].output < 0 || v[i].prov > st.nprov ||
			    (v[i].prov == 0 && st.nprov < KV_CATALOG_PROVIDERS))
				abort();
	free(v);
	return 0;
}

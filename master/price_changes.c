/* A reload's price changes, logged per model (price_changes.h). */
#include <stddef.h>
#include <stdio.h>

#include "common/log.h"
#include "common/money.h"
#include "common/pricetab.h"
#include "master/price_changes.h"

/* The figures of A and B that differ, beyond input and output. */
static int
others_differ(const struct kv_price *a, const struct kv_price *b)
{
	size_t i;
	int n = 0;

	for (i = 2; i < KV_PRICE_NFIELDS; i++)
		n += (&a->input)[i] != (&b->input)[i];
	return n;
}

/* "$5.000000 / $25.000000 per 1M" of P into BUF. */
static void
in_out(const struct kv_price *p, char *buf, size_t len)
{
	char in[32], out[32];

	kv_format_dollars(p->input, in, sizeof(in));
	kv_format_dollars(p->output, out, sizeof(out));
	snprintf(buf, len, "%s / %s per 1M", in, out);
}

/* WAS is looked up in NEW as the requests it priced were: by its own
 * provider's rules. An entry no lookup reached priced none; one another
 * entry shadowed for its provider ("vertex_ai/M" over Vertex's M) is the
 * other's to report. */
static void
one_model(const struct kv_config *old, const struct kv_config *new,
    const struct kv_price *was)
{
	enum kv_price_rule rule;
	const struct kv_price *now;
	char a[80], b[80];
	int more, provider = kv_price_reached_by(was);

	if (provider == -1 || kv_price_find_for(old, provider, was->model) != was)
		return;
	now = kv_price_find_in(new, provider, NULL, was->model, &rule, NULL);

	in_out(was, a, sizeof(a));
	if (now == NULL || rule == KV_RULE_GLOB || rule == KV_RULE_DEFAULT) {
		if (now != NULL)
			in_out(now, b, sizeof(b));
		kv_log_warnx("KV0135", "prices: model %s dropped by the reload (was %s): now %s %s",
		    was->model, a, now == NULL ? "refused" : rule == KV_RULE_GLOB ?
		    "priced by [price GLOB] at" : "priced by [price default] at",
		    now == NULL ? "(no price)" : b);
		return;
	}
	more = others_differ(was, now);
	if (now->input == was->input && now->output == was->output && more == 0)
		return;
	in_out(now, b, sizeof(b));
	kv_log_warnx("KV0136", "prices: model %s repriced by the reload: %s -> %s (%d other "
	    "figure%s changed)", was->model, a, b, more, more == 1 ? "" : "s");
}

void
kv_price_changes_log(const struct kv_config *old, const struct kv_config *new)
{
	size_t i;

	for (i = 0; i < old->nprice_exact; i++)
		one_model(old, new, old->price_exact[i]);
}

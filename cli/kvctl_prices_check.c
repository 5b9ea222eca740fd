/* kvctl prices --check: what a refreshed catalogue would change against
 * the running prices, and which of its changes a [price] section hides. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "cli/kvctl.h"
#include "cli/kvctl_prices.h"

#include <stdlib.h>
#include <string.h>

#include "common/catalog.h"
#include "common/config.h"
#include "common/jsonline.h"
#include "common/pricetab.h"

static int
same_price(const struct priced *a, const struct priced *b)
{
	size_t i;

	if (a->rule != b->rule || (a->p == NULL) != (b->p == NULL))
		return 0;
	for (i = 0; a->p != NULL && i < NFIELDS; i++)
		if (kvctl_price_field_value(a->p, &kvctl_price_fields[i]) != kvctl_price_field_value(b->p, &kvctl_price_fields[i]))
			return 0;
	return 1;
}

/* Each figure that differs from PA to PB (either may be NULL: none),
 * "SEPinput $15.00 -> $5.00, output ...", of those in MASK (bits
 * kv_price_bit; all: ~0). */
static void
print_fields(FILE *f, const struct kv_price *pa, const struct kv_price *pb, const char *sep,
    uint64_t mask)
{
	char va[64], vb[64];
	size_t i;
	int64_t x, y;

	for (i = 0; i < NFIELDS; i++) {
		x = pa != NULL ? kvctl_price_field_value(pa, &kvctl_price_fields[i]) : -1;
		y = pb != NULL ? kvctl_price_field_value(pb, &kvctl_price_fields[i]) : -1;
		if (x == y || (mask >> kv_price_bit(kvctl_price_fields[i].off) & 1) == 0)
			continue;
		kvctl_price_format_field(&kvctl_price_fields[i], x, 1, va, sizeof(va));
		kvctl_price_format_field(&kvctl_price_fields[i], y, 1, vb, sizeof(vb));
		fprintf(f, "%s%s %s -> %s", sep, kvctl_price_fields[i].label, va, vb);
		sep = ", ";
	}
}

/* "claude-opus-4-6: glob ([price claude-opus-4*]) -> file; input $15.00
 * -> $5.00, ..." — the rule when it changes (a file entry, or one under the
 * same section, is the same rule whichever file), then each figure that
 * does. */
static void
print_change(FILE *f, const struct kv_config *was, const struct kv_config *now,
    const struct priced *a, const struct priced *b)
{
	char sa[4200], sb[4200];

	kvctl_price_rule_source(was, a, sa, sizeof(sa));
	kvctl_price_rule_source(now, b, sb, sizeof(sb));
	fprintf(f, "%s: %s", a->model, a->p == NULL ? "now priced" : b->p == NULL ?
	    "now refused" : "changed");
	if (a->rule != b->rule || (a->rule != KV_RULE_FILE && a->rule != KV_RULE_OVERRIDE &&
	    strcmp(sa, sb) != 0))
		fprintf(f, "; %s (%s) -> %s (%s)", kvctl_price_rule_name(a->rule), sa, kvctl_price_rule_name(b->rule), sb);
	print_fields(f, a->p, b->p, "; ", ~(uint64_t)0);
	fputc('\n', f);
}

/* Walk the exact names of both tables (each sorted) as one list. */
static size_t
diff_tables(const struct kv_config *was, const struct kv_config *now, int json)
{
	struct priced a, b;
	const struct kv_price *e;
	size_t i = 0, j = 0, ndiff = 0;
	const char *name;
	int c, provider;

	while (i < was->nprice_exact || j < now->nprice_exact) {
		c = i == was->nprice_exact ? 1 : j == now->nprice_exact ? -1 :
		    strcmp(was->price_exact[i]->model, now->price_exact[j]->model);
		e = c <= 0 ? was->price_exact[i] : now->price_exact[j];
		name = e->model;
		i += c <= 0;
		j += c >= 0;
		/* as the requests it prices look it up: by its provider's rules */
		if ((provider = kv_price_reached_by(e)) == -1)
			continue;
		kvctl_price_lookup_for(was, provider, NULL, name, &a);
		kvctl_price_lookup_for(now, provider, NULL, name, &b);
		if (same_price(&a, &b))
			continue;
		if (json) {
			fputs(ndiff ? "," : "", stdout);
			fputs("{\"model\":", stdout);
			kv_json_write_string(stdout, name);
			fputs(",\"before\":", stdout);
			kvctl_price_json(stdout, was, &a);
			fputs(",\"after\":", stdout);
			kvctl_price_json(stdout, now, &b);
			fputc('}', stdout);
		} else {
			print_change(stdout, was, now, &a, &b);
		}
		ndiff++;
	}
	return ndiff;
}

/* A catalogue's own entries, sorted by name (kv_catalog_parse sorts):
 * what a [price] section of the same name hides from the running table. */
struct raw {
	struct kv_price	*e;
	size_t		 n;
};

/* FILE as the daemon would read it: the providers CF keeps (openai and
 * anthropic without a config), into RAW (may be NULL: validated only).
 * 0, or -1 with "FILE: line:col: what" said. */
static int
load_raw(const struct kv_config *cf, const char *file, struct raw *raw, char *summary,
    size_t len)
{
	const char *prov[KV_CATALOG_PROVIDERS_MAX];
	struct kv_catalog_stats st;
	struct kv_price *out = NULL;
	size_t n = 0;
	char err[4400];
	int r;

	kv_catalog_providers(cf, prov);
	r = kv_catalog_load(file, prov, cf != NULL ? cf->prices_ignore : "", &out, &n, &st, err,
	    sizeof(err));
	if (r == -1 || raw == NULL)
		free(out);
	if (r == -1) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	if (raw != NULL) {
		raw->e = out;
		raw->n = n;
	}
	if (summary != NULL)
		kv_catalog_summary(&st, summary, len);
	return 0;
}

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct kv_price *)a)->model, ((const struct kv_price *)b)->model);
}

static const struct kv_price *
raw_find(const struct raw *raw, const char *model)
{
	struct kv_price key;

	if (raw->n == 0)
		return NULL;
	snprintf(key.model, sizeof(key.model), "%s", model);
	return bsearch(&key, raw->e, raw->n, sizeof(*raw->e), cmp_entry);
}

/* Are A and B (either may be NULL) the same in the figures of MASK? */
static int
same_fields(const struct kv_price *a, const struct kv_price *b, uint64_t mask)
{
	size_t i;

	if (a == NULL || b == NULL)
		return a == b;
	for (i = 0; i < NFIELDS; i++)
		if ((mask >> kv_price_bit(kvctl_price_fields[i].off) & 1) != 0 &&
		    kvctl_price_field_value(a, &kvctl_price_fields[i]) != kvctl_price_field_value(b, &kvctl_price_fields[i]))
			return 0;
	return 1;
}

/* The [price NAME] sections over a catalogue entry whose figures the new
 * file changes where the section sets them: those hold (the operator's
 * contract price), but the operator should know the catalogue moved under
 * them. The figures the section leaves to the file move with it, and
 * diff_tables lists them. A section alone whose name the file now lists
 * is named too. "gpt-4o-mini: overridden by [price gpt-4o-mini] (the
 * figures it sets hold); in the file: changed; input $0.15 -> $0.20".
 * Returns how many. */
static size_t
diff_overrides(const struct kv_config *was, const struct kv_config *now,
    const struct raw *ra, const struct raw *rb, int json)
{
	const struct kv_price *fa, *fb, *sec;
	struct priced pa, pb;
	uint64_t mask;
	size_t i, n = 0;

	for (i = 0; i < was->nprice_exact; i++) {
		sec = was->price_exact[i];
		if (sec->src == KV_PRICE_FILE)
			continue;
		mask = sec->src == KV_PRICE_OVERRIDE ? sec->set : ~(uint64_t)0;
		fa = raw_find(ra, sec->model);
		fb = raw_find(rb, sec->model);
		if (same_fields(fa, fb, mask))
			continue;	/* both absent, or the same where it counts */
		if (json) {
			pa = (struct priced){ sec->model, fa, KV_RULE_FILE, NULL };
			pb = (struct priced){ sec->model, fb, KV_RULE_FILE, NULL };
			fputs(n ? "," : "", stdout);
			fputs("{\"model\":", stdout);
			kv_json_write_string(stdout, sec->model);
			fputs(",\"section\":", stdout);
			kv_json_write_string(stdout, sec->model);
			fputs(",\"file_before\":", stdout);
			if (fa != NULL)
				kvctl_price_json(stdout, was, &pa);
			else
				fputs("null", stdout);
			fputs(",\"file_after\":", stdout);
			if (fb != NULL)
				kvctl_price_json(stdout, now, &pb);
			else
				fputs("null", stdout);
			fputc('}', stdout);
		} else {
			printf("%s: overridden by [price %s] (the figures it sets hold); in the "
			    "file: %s", sec->model, sec->model, fa == NULL ? "now listed" :
			    fb == NULL ? "no longer listed" : "changed");
			print_fields(stdout, fa, fb, "; ", mask);
			fputc('\n', stdout);
		}
		n++;
	}
	return n;
}

/* --check without a config: the file alone. */
static int
check_alone(const char *file, int json)
{
	char summary[4096];

	if (load_raw(NULL, file, NULL, summary, sizeof(summary)) == -1)
		return KVCTL_EXIT_NOTFOUND;
	if (json) {
		fputs("{\"file\":", stdout);
		kv_json_write_string(stdout, file);
		fputs(",\"valid\":true,\"summary\":", stdout);
		kv_json_write_string(stdout, summary);
		fputs("}\n", stdout);
	} else {
		printf("%s: ok: %s\n", file, summary);
	}
	return KVCTL_EXIT_OK;
}

/* The running prices (CF: its catalogue and its [price] sections) against
 * the same config with FILE as its catalogue: what a refresh changes, and
 * which of the catalogue's changes an override hides. */
static void
check_report(const struct kv_config *cf, const struct kv_config *now, const char *file,
    const char *summary, const struct raw *ra, const struct raw *rb, int json)
{
	size_t ndiff, nover;

	if (json) {
		fputs("{\"file\":", stdout);
		kv_json_write_string(stdout, file);
		fputs(",\"valid\":true,\"summary\":", stdout);
		kv_json_write_string(stdout, summary);
		fputs(",\"differences\":[", stdout);
	} else {
		printf("%s: ok: %s\n", file, summary);
	}
	ndiff = diff_tables(cf, now, json);
	if (json)
		fputs("],\"overridden\":[", stdout);
	nover = diff_overrides(cf, now, ra, rb, json);
	if (json) {
		fputs("]}\n", stdout);
		return;
	}
	printf("%zu model%s priced differently with %s than with the running prices (%s%s"
	    "%zu [price] section%s)\n", ndiff, ndiff == 1 ? "" : "s", file, cf->prices_file,
	    cf->prices_file[0] != '\0' ? " and " : "", cf->nprices_ini,
	    cf->nprices_ini == 1 ? "" : "s");
	printf("%zu [price] section%s override%s a catalogue entry %s changes (the "
	    "figures a section sets hold)\n", nover, nover == 1 ? "" : "s", nover == 1 ? "s" : "",
	    file);
}

int
kvctl_prices_check(const struct kv_config *cf, const char *config, const char *file, int json)
{
	struct raw ra = { NULL, 0 }, rb = { NULL, 0 };
	struct kv_config *now = NULL;
	char summary[4096], err[4400];
	int rc = KVCTL_EXIT_USAGE;

	if (cf == NULL)
		return check_alone(file, json);
	if (load_raw(cf, file, &rb, summary, sizeof(summary)) == -1)
		return KVCTL_EXIT_NOTFOUND;
	/* the running catalogue's own entries: under the [price] sections */
	if (cf->prices_file[0] != '\0' && load_raw(cf, cf->prices_file, &ra, NULL, 0) == -1)
		goto out;
	if ((now = calloc(1, sizeof(*now))) == NULL) {
		perror("kvctl");
		goto out;
	}
	if (kv_config_load_prices(now, config, file, err, sizeof(err)) == -1) {
		fprintf(stderr, "kvctl: %s\n", err);
		free(now);
		now = NULL;
		goto out;
	}
	check_report(cf, now, file, summary, &ra, &rb, json);
	rc = KVCTL_EXIT_OK;
out:
	if (now != NULL) {
		kv_config_free(now);
		free(now);
	}
	free(ra.e);
	free(rb.e);
	return rc;
}

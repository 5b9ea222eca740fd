/* What kvctl prices (kvctl_prices.c) and its --check (kvctl_prices_check.c)
 * share, from kvctl_price_fields.c: the figures of a price, one lookup's
 * result, and how each is said. Private to kvctl. */
#ifndef KVCTL_PRICES_H
#define KVCTL_PRICES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/config.h"
#include "common/pricetab.h"

enum { K_PRICE, K_FEE, K_TOKENS, K_MULT };

/* Every figure of a kv_price, in the order a person reads them. */
struct pfield {
	const char	*label;		/* human form */
	const char	*json;		/* JSON name, before its _nusd suffix */
	size_t		 off;
	int		 kind;
	const char	*how;		/* how it is reserved and charged */
};

/* A model's price as one lookup found it. */
struct priced {
	const char		*model;
	const struct kv_price	*p;	/* NULL: refused */
	enum kv_price_rule	 rule;
	const struct kv_price	*older;	/* the glob it is newer than, or NULL */
};

/* Every figure of a kv_price, in the order a person reads them. */
extern const struct pfield kvctl_price_fields[];
extern const size_t kvctl_price_nfields;
#define NFIELDS	kvctl_price_nfields

/* Nano-dollars NUSD as "$5.00", "$0.075", "$0.0000375" into BUF: every
 * digit the price has, at least two decimals. */
void	kvctl_price_format(int64_t nusd, char *buf, size_t len);
/* The figure F of P (nano-dollars, tokens, or a multiplier x 10^9). */
int64_t	kvctl_price_field_value(const struct kv_price *p, const struct pfield *f);
/* V of F into BUF, with its unit unless BARE ("$5.00" against "$5.00 / 1M
 * tokens"). */
void	kvctl_price_format_field(const struct pfield *f, int64_t v, int bare, char *buf,
	    size_t len);
/* The rule's name as kvctl says it ("exact", "glob", ...). */
const char *kvctl_price_rule_name(enum kv_price_rule r);
/* Where M's price was written into BUF: the file, the section, or the
 * file's entry under the section's figures. */
void	kvctl_price_rule_source(const struct kv_config *cf, const struct priced *m, char *buf,
	    size_t len);
/* MODEL's price in CF, as the daemon finds it, into M. */
void	kvctl_price_lookup(const struct kv_config *cf, const char *model, struct priced *m);
/* ... for a request to an upstream of PROVIDER (enum kv_provider) in
 * REGION (may be NULL): kv_price_find_in. */
void	kvctl_price_lookup_for(const struct kv_config *cf, int provider, const char *region,
	    const char *model, struct priced *m);
/* The litellm_provider of P's catalogue entry, or NULL (a section alone). */
const char *kvctl_price_provider(const struct kv_config *cf, const struct kv_price *p);
/* M as a JSON object on F. */
void	kvctl_price_json(FILE *f, const struct kv_config *cf, const struct priced *m);

/* --check: FILE (a catalogue) against the running prices of CF (the config
 * at CONFIG; NULL: FILE is validated alone), as text or JSON. Returns a
 * kvctl exit code. */
int	kvctl_prices_check(const struct kv_config *cf, const char *config, const char *file,
	    int json);

#endif

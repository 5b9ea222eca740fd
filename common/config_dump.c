/* kilovoltd -T: the effective config, every key of the table with its
 * value after defaults, KILOVOLT_* overrides and path resolution, as an
 * ini that kilovoltd -t reads back to the same output. Secrets are
 * printed as ***. Made from the key table (config_keys.c), so a new key
 * is printed without a line here. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "common/config_int.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "common/config_units.h"

static long long
load_int(const void *field, size_t width)
{
	int64_t v64;
	uint32_t v32;

	if (width == sizeof(v32)) {
		memcpy(&v32, field, sizeof(v32));
		return v32;
	}
	memcpy(&v64, field, sizeof(v64));
	return v64;
}

void
cfg_show_path(FILE *f, const char *name, const char *path)
{
	char cwd[PATH_MAX];

	if (path[0] == '\0')
		fprintf(f, "; %s: not set\n", name);
	else if (path[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		fprintf(f, "%s = %s/%s\n", name, cwd, path);
	else
		cfg_show_kv(f, name, path);
}

/* "name = value"; a value that starts with ';' is written "name =;..."
 * because the reader takes a ';' after a blank for a comment. */
void
cfg_show_kv(FILE *f, const char *name, const char *value)
{
	fprintf(f, "%s =%s%s\n", name, value[0] == ';' ? "" : " ", value);
}

/* A list, wrapped: a line holds 198 bytes, and a list key takes more
 * lines. Two words may not start a line: one that starts with ';' must
 * (cfg_show_kv), and one that starts with "env:" must not, or the line
 * would read as an environment variable; such a word stays on the line
 * before, even past the wrap. */
static void
show_words(FILE *f, const char *name, char *const *w, size_t n)
{
	size_t i, col = 0;
	int wrap;

	for (i = 0; i < n; i++) {
		wrap = col == 0 || col + 1 + strlen(w[i]) > 150 || w[i][0] == ';';
		if (wrap && col > 0 && strncmp(w[i], "env:", 4) == 0)
			wrap = 0;
		if (!wrap) {
			col += (size_t)fprintf(f, " %s", w[i]);
			continue;
		}
		if (col > 0)
			fputc('\n', f);
		col = (size_t)fprintf(f, "%s =%s%s", name, w[i][0] == ';' ? "" : " ", w[i]);
	}
	if (col > 0)
		fputc('\n', f);
	else
		fprintf(f, "; %s: not set\n", name);
}

static void
show_enum(FILE *f, const struct cfg_key *k, long long v)
{
	const struct cfg_word *w;

	for (w = k->words; w->word != NULL; w++)
		if (w->value == v) {
			fprintf(f, "%s = %s\n", k->name, w->word);
			return;
		}
	fprintf(f, "; %s: %lld\n", k->name, v);	/* not one of its words: a bug */
}

/* An integer-valued key (int, duration, size, money, word) in its form. */
static void
show_number(FILE *f, const struct cfg_key *k, long long v)
{
	char buf[64];

	switch (k->type) {
	case CFG_T_SECS:
		kv_cfg_format_secs(v, buf, sizeof(buf));
		break;
	case CFG_T_SIZE:
		kv_cfg_format_size((uint64_t)v, buf, sizeof(buf));
		break;
	case CFG_T_MONEY:
		kv_cfg_format_nano(v * (k->scale > 0 ? k->scale : 1), buf, sizeof(buf));
		break;
	case CFG_T_ENUM:
		show_enum(f, k, v);
		return;
	default:
		snprintf(buf, sizeof(buf), "%lld", v);
		break;
	}
	fprintf(f, "%s = %s\n", k->name, buf);
}

void
cfg_show_value(FILE *f, const struct kv_config *cf, const void *obj, const struct cfg_key *k)
{
	const char *field = (const char *)obj + k->off;
	long long v;

	(void)cf;
	switch (k->type) {
	case CFG_T_INT:
	case CFG_T_SECS:
	case CFG_T_SIZE:
	case CFG_T_MONEY:
	case CFG_T_ENUM:
		v = load_int(field, k->width);
		/* unset: the [budget] default's, or the price's own fallback */
		if (!(k->flags & CFG_OPTIONAL) || v >= (k->type == CFG_T_MONEY ? 0 : k->min))
			show_number(f, k, v);
		break;
	case CFG_T_PATH:
		if (*field == '\0' && (k->flags & CFG_OFF))
			fprintf(f, "%s = off\n", k->name);
		else
			cfg_show_path(f, k->name, field);
		break;
	case CFG_T_STR:
		if (*field == '\0')
			fprintf(f, "; %s: not set\n", k->name);
		else
			cfg_show_kv(f, k->name, field);
		break;
	case CFG_T_SECRET:
		fprintf(f, *(char *const *)field != NULL ? "%s = ***\n" : "; %s: not set\n",
		    k->name);
		break;
	case CFG_T_WORDS:
		show_words(f, k->name, *(char *const *const *)field,
		    *(const size_t *)((const char *)obj + k->off_n));
		break;
	case CFG_T_SPECIAL:
		fprintf(f, "; %s: no printer\n", k->name);	/* a table bug */
		break;
	}
}

static void
show_section(FILE *f, const struct kv_config *cf, enum cfg_sect s, const void *obj)
{
	const struct cfg_key *k;

	for (k = kv_cfg_sect_keys[s]; k->name != NULL; k++) {
		if (k->base == CFG_B_CONFIG)
			obj = cf;	/* a key of a whole-file section */
		if (k->show != NULL)
			k->show(f, cf, obj, k);
		else
			cfg_show_value(f, cf, obj, k);
	}
}

int
kv_config_dump(const struct kv_config *cf, FILE *f)
{
	size_t i;

	fprintf(f, "; kilovoltd -T: the effective config of %s\n"
	    "; (defaults, KILOVOLT_* overrides and paths resolved; secrets shown as ***)\n",
	    cf->path);
	fprintf(f, "\n[server]\n");
	show_section(f, cf, SECT_SERVER, cf);
	fprintf(f, "\n[budget]\n");
	show_section(f, cf, SECT_BUDGET, cf);
	for (i = 0; i < cf->nupstreams; i++) {
		if (cf->upstreams[i].target_of != 0)
			continue;	/* another's extra target: its url line */
		fprintf(f, "\n[upstream %s]\n", cf->upstreams[i].name);
		show_section(f, cf, SECT_UPSTREAM, &cf->upstreams[i]);
	}
	if (cf->has_default_price) {
		fprintf(f, "\n[price default]\n");
		show_section(f, cf, SECT_PRICE, &cf->default_price);
	}
	/* the [price] sections; the catalogue's entries come from prices */
	for (i = 0; i < cf->nprices_ini && i < cf->nprices; i++) {
		fprintf(f, "\n[price %s]\n", cf->prices[i].model);
		show_section(f, cf, SECT_PRICE, &cf->prices[i]);
	}
	for (i = 0; i < cf->nteams; i++) {
		fprintf(f, "\n[team %s]\n", cf->teams[i].name);
		show_section(f, cf, SECT_TEAM, &cf->teams[i]);
	}
	for (i = 0; i < cf->ntags; i++) {
		fprintf(f, "\n[tag %s]\n", cf->tags[i].name);
		show_section(f, cf, SECT_TAG, &cf->tags[i]);
	}
	for (i = 0; i < cf->nkeys; i++) {
		fprintf(f, "\n[key %s]\n", cf->keys[i].label);
		show_section(f, cf, SECT_KEY, &cf->keys[i]);
	}
	if (cf->cluster.enabled) {
		fprintf(f, "\n[cluster]\n");
		show_section(f, cf, SECT_CLUSTER, cf);
	}
	if (cf->alerts.enabled) {
		fprintf(f, "\n[alerts]\n");
		show_section(f, cf, SECT_ALERTS, cf);
	}
	if (cf->auth_jwt.enabled) {
		fprintf(f, "\n[auth jwt]\n");
		show_section(f, cf, SECT_AUTH_JWT, cf);
	}
	return fflush(f) == EOF || ferror(f) ? -1 : 0;
}

/* The pieces of HTML the status page's sections share: text escaped for
 * HTML and for a query string, dollars, and the SVG bar charts. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "master/status_html_parts.h"

#include <inttypes.h>
#include <stdio.h>

#include "common/money.h"
#include "shm/history.h"

/* Charts are SVG bar charts drawn with one path per series (a few bytes a
 * bar): the key table's are small, the overview's are wide. Bars stand on
 * the baseline; each chart's buckets are BAR units apart in its viewBox. */
#define KEY_CHART_H	26
#define TOP_CHART_H	70

void
kv_html_urlenc(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.')
			fputc(ch, f);
		else
			fprintf(f, "%%%02X", ch);
	}
}

void
kv_html_esc(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
		}
	}
}

const char *
kv_html_usd(int64_t nusd, char buf[32])
{
	kv_format_dollars(nusd, buf, 32);
	return buf;
}

int64_t
kv_html_max_of(const int64_t *v, int n)
{
	int64_t m = 0;
	int i;

	for (i = 0; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

/* One series of N bars, BAR units apart, scaled so MAX fills H: a path of
 * the bars but the newest, and the newest apart (it is still filling). */
static void
bars(FILE *f, const int64_t *v, int n, int64_t max, int bar, int h, const char *cls)
{
	int i, y, pass;

	if (max <= 0)
		return;
	for (pass = 0; pass < 2; pass++) {
		int any = 0;

		for (i = pass ? n - 1 : 0; i < (pass ? n : n - 1); i++) {
			if (v[i] <= 0)
				continue;
			y = (int)((double)v[i] * (h - 2) / (double)max + 0.5);
			if (y < 1)
				y = 1;
			if (!any)
				fprintf(f, "<path class=\"%s%s\" d=\"", cls, pass ? " now" : "");
			fprintf(f, "M%d %dv-%dh%dv%dz", i * bar, h - 1, y, bar > 2 ? bar - 1 : bar, y);
			any = 1;
		}
		if (any)
			fputs("\"/>", f);
	}
}

/* Open a chart of N buckets BAR units apart and H high, newest on the
 * right, with TITLE as its tooltip; its bars() follow, on a scale shared
 * by the charts beside it. CSS sizes it (class CLS). */
static void
chart_open(FILE *f, int n, int bar, int h, const char *cls, const char *title)
{
	fprintf(f, "<svg class=\"chart %s\" viewBox=\"0 0 %d %d\" preserveAspectRatio=\"none\" "
	    "role=\"img\"><title>%s</title><line x1=\"0\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>",
	    cls, n * bar, h, title, h - 1, n * bar, h - 1);
}

void
kv_html_key_chart(FILE *f, const int64_t *v, int n, int64_t max, const char *what)
{
	char title[96], m[32];
	int64_t total = 0;
	int i;

	for (i = 0; i < n; i++)
		total += v[i];
	snprintf(title, sizeof(title), "%s spent in the last %s", kv_html_usd(total, m), what);
	chart_open(f, n, n == KV_HIST_MINUTES ? 3 : 5, KEY_CHART_H, "k", title);
	bars(f, v, n, max, n == KV_HIST_MINUTES ? 3 : 5, KEY_CHART_H, "sp");
	fputs("</svg>", f);
}

void
kv_html_top_chart(FILE *f, const char *id, const char *what, const int64_t *v,
    const int64_t *err, int n, int money)
{
	int64_t max = kv_html_max_of(v, n), total = 0, etotal = 0;
	char top[48], tot[64], title[160], m[32];
	int i, bar = n == KV_HIST_MINUTES ? 10 : 25;

	for (i = 0; i < n; i++) {
		total += v[i];
		etotal += err ? err[i] : 0;
	}
	if (err != NULL && kv_html_max_of(err, n) > max)
		max = kv_html_max_of(err, n);
	if (money) {
		snprintf(top, sizeof(top), "%s", kv_html_usd(max, m));
		snprintf(tot, sizeof(tot), "%s", kv_html_usd(total, m));
	} else {
		snprintf(top, sizeof(top), "%" PRId64, max);
		snprintf(tot, sizeof(tot), "%" PRId64 " requests, %" PRId64 " errors", total, etotal);
	}
	snprintf(title, sizeof(title), "%s in the %s", tot, what);
	fprintf(f, "<figure id=\"%s\"><figcaption><b>%s</b> <span class=\"muted\">%s"
	    "</span></figcaption><span class=\"top\">%s/%s</span>", id, what, tot, top,
	    n == KV_HIST_MINUTES ? "min" : "h");
	chart_open(f, n, bar, TOP_CHART_H, "t", title);
	bars(f, v, n, max, bar, TOP_CHART_H, money ? "sp" : "rq");
	if (err != NULL)
		bars(f, err, n, max, bar, TOP_CHART_H, "er");
	fputs("</svg></figure>\n", f);
}

void
kv_html_table_end(FILE *f, size_t rows, int cols, const char *empty, const char *tail)
{
	if (rows == 0)
		fprintf(f, "<tr><td class=\"empty\" colspan=\"%d\">%s</td></tr>\n", cols, empty);
	fputs(tail, f);
}

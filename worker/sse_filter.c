/* The SSE filter (sse_filter.h): events held until whole, the usage-only
 * event dropped, ,"usage":null cut from the rest. */
#include "worker/sse_filter.h"

#include <stdlib.h>
#include <string.h>

#include "worker/usage_json.h"

void
kv_sse_filter_init(struct kv_sse_filter *f, kv_sse_out out, void *arg)
{
	f->out = out;
	f->arg = arg;
}

/* End of the event starting at e[0]: offset past its blank line, or 0. */
static size_t
event_end(const char *e, size_t len)
{
	const char *p = e, *end, *nl;

	if (len < 2)
		return 0;
	end = e + len;
	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL && nl + 1 < end) {
		if (nl[1] == '\n')
			return (size_t)(nl + 2 - e);
		if (nl[1] == '\r' && nl + 2 < end && nl[2] == '\n')
			return (size_t)(nl + 3 - e);
		p = nl + 1;
	}
	return 0;
}

static const char *
json_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++;
	return p;
}

/* Where the key "usage" occurs in an event, in one pass: *obj when one has
 * an object value (it may be the usage event), *strip at the first
 * ,"usage":null (what include_usage adds to every chunk). A quote inside a
 * JSON string is escaped, so "usage" only occurs as a key or a whole
 * string value. Most events hold neither, and are never parsed. */
static void
usage_marks(const char *e, size_t len, int *obj, const char **strip)
{
	const char *p = e, *end = e + len, *k, *v;

	*obj = 0;
	*strip = NULL;
	while ((k = memmem(p, (size_t)(end - p), "\"usage\"", 7)) != NULL) {
		p = k + 7;
		if (*strip == NULL && k > e && k[-1] == ',' && end - p >= 5 &&
		    memcmp(p, ":null", 5) == 0) {
			*strip = k - 1;
			continue;
		}
		v = json_ws(p, end);
		if (v < end && *v == ':' && (v = json_ws(v + 1, end)) < end && *v == '{')
			*obj = 1;
	}
}

/* The JSON of an event's data line, for the usage-only check. */
static int
event_drop(const char *e, size_t len)
{
	const char *p = e, *end = e + len, *nl;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (nl - p >= 5 && memcmp(p, "data:", 5) == 0) {
			p += 5;
			if (p < nl && *p == ' ')
				p++;
			return kv_sse_is_usage_only(p, (size_t)(nl - p - (nl > p && nl[-1] == '\r')));
		}
		p = nl + 1;
	}
	return 0;
}

/* End of an event whose first part (ending in tail[0..tlen)) came in an
 * earlier read: offset in p past its blank line, or 0. The blank line may
 * begin in the tail, so its last two bytes are searched with p's first two. */
static size_t
event_end_after(const char *tail, size_t tlen, const char *p, size_t len)
{
	char join[4];
	size_t k = tlen < 2 ? tlen : 2, m = len < 2 ? len : 2, e;

	memcpy(join, tail + tlen - k, k);
	memcpy(join + k, p, m);
	if ((e = event_end(join, k + m)) > k)
		return e - k;
	return event_end(p, len);
}

/* Emit an event without the ,"usage":null the provider adds to every chunk
 * when include_usage is on, so the client sees the chunk it would have seen. */
static int
emit_cut(struct kv_sse_filter *f, const char *e, size_t len, const char *strip)
{
	const size_t plen = sizeof(",\"usage\":null") - 1;

	if (strip == NULL)
		return f->out(f->arg, e, len, NULL, 0);
	return f->out(f->arg, e, (size_t)(strip - e), strip + plen, len - (size_t)(strip - e) - plen);
}

static int
emit_stripped(struct kv_sse_filter *f, const char *e, size_t len)
{
	const char *strip;
	int obj;

	usage_marks(e, len, &obj, &strip);
	return emit_cut(f, e, len, strip);
}

/* Pass one whole event on, unless it is the usage event the client never
 * asked for. */
static int
event_out(struct kv_sse_filter *f, const char *e, size_t len)
{
	int whole = !f->eoverflow, obj;
	const char *strip;

	f->eoverflow = 0;
	usage_marks(e, len, &obj, &strip);
	if (whole && obj && event_drop(e, len))
		return 0;
	return emit_cut(f, e, len, strip);
}

/* Bytes of a flushed event kept back: the start of the blank line that
 * ends it, or of a "usage":null, may be among them. */
#define EVENT_KEEP 16

/* Keep the start of an event for the next read, in a buffer as large as
 * it (a stream waiting for its next token holds a few hundred bytes, not
 * KV_EBUF_SIZE). An event past KV_EBUF_SIZE is too big to be the small
 * usage event: its first part goes out as soon as the buffer is full. */
static int
ebuf_append(struct kv_sse_filter *f, const char *p, size_t len)
{
	size_t take;
	char *nb;

	while (len > 0) {
		if (f->elen == KV_EBUF_SIZE) {
			if (emit_stripped(f, f->ebuf, f->elen - EVENT_KEEP) == -1)
				return -1;
			memmove(f->ebuf, f->ebuf + f->elen - EVENT_KEEP, EVENT_KEEP);
			f->elen = EVENT_KEEP;
			f->eoverflow = 1;
		}
		take = KV_EBUF_SIZE - f->elen < len ? KV_EBUF_SIZE - f->elen : len;
		if ((nb = realloc(f->ebuf, f->elen + take)) == NULL)
			return -1;
		f->ebuf = nb;
		memcpy(f->ebuf + f->elen, p, take);
		f->elen += take;
		p += take;
		len -= take;
	}
	return 0;
}

/* Hold each SSE event until it is whole, then pass it on (event_out).
 * Whole events go out straight from the read; only an event cut by the
 * end of a read is copied, to wait for the rest. */
int
kv_sse_filter_feed(struct kv_sse_filter *f, const char *p, size_t len)
{
	size_t end;

	if (len == 0)
		return 0;	/* a chunk-size line: no data, and p may be NULL */
	if (f->elen > 0) {
		end = event_end_after(f->ebuf, f->elen, p, len);
		if (ebuf_append(f, p, end > 0 ? end : len) == -1)
			return -1;
		if (end == 0)
			return 0;
		p += end;
		len -= end;
		if (event_out(f, f->ebuf, f->elen) == -1)
			return -1;
		free(f->ebuf);
		f->ebuf = NULL;
		f->elen = 0;
	}
	while ((end = event_end(p, len)) > 0) {
		if (event_out(f, p, end) == -1)
			return -1;
		p += end;
		len -= end;
	}
	return ebuf_append(f, p, len);
}
int
kv_sse_filter_flush(struct kv_sse_filter *f)
{
	if (f->elen > 0 && f->out(f->arg, f->ebuf, f->elen, NULL, 0) == -1)
		return -1;
	f->elen = 0;
	return 0;
}

void
kv_sse_filter_free(struct kv_sse_filter *f)
{
	free(f->ebuf);
	f->ebuf = NULL;
	f->elen = 0;
}

void
kv_sse_filter_idle(struct kv_sse_filter *f)
{
	if (f->elen == 0) {
		free(f->ebuf);
		f->ebuf = NULL;
	}
}

/* The usage-only chunk: a lexer client of its own (usage_json.h). */

enum { CH_NONE, CH_OPEN, CH_EMPTY, CH_OTHER };

struct uonly {
	struct kv_json	j;
	int		choices;
	int		usage_obj;
};

/* A value starts inside the top-level object or inside "choices". */
static void
uonly_value(struct uonly *u, int level, int ev)
{
	int key = key_at(&u->j, level - 1);

	if (level == 2 && key_at(&u->j, 0) == K_CHOICES && u->choices == CH_OPEN)
		u->choices = CH_OTHER;
	if (level != 1)
		return;
	if (key == K_CHOICES)
		u->choices = ev == EV_ARR_OPEN ? CH_OPEN : CH_OTHER;
	if (key == K_USAGE)
		u->usage_obj = ev == EV_OBJ_OPEN;
}

int
kv_sse_is_usage_only(const char *json, size_t len)
{
	struct uonly u;
	size_t i = 0;
	int ev;

	memset(&u, 0, sizeof(u));
	usage_json_init(&u.j, 0);
	while (i < len && u.j.state != S_ERR) {
		ev = usage_json_step(&u.j, (unsigned char)json[i]);
		if (!(ev & EV_AGAIN))
			i++;
		switch (ev & EV_MASK) {
		case EV_OBJ_OPEN:
		case EV_ARR_OPEN:
			uonly_value(&u, u.j.evdepth - 1, ev & EV_MASK);
			break;
		case EV_STR_BEGIN:
		case EV_NUM:
		case EV_LIT:
			uonly_value(&u, u.j.depth, ev & EV_MASK);
			break;
		case EV_ARR_CLOSE:
			if (u.j.evdepth == 2 && key_at(&u.j, 0) == K_CHOICES &&
			    u.choices == CH_OPEN)
				u.choices = CH_EMPTY;
			break;
		}
	}
	return u.j.state == S_END && u.choices == CH_EMPTY && u.usage_obj;
}

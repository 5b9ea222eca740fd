/* The usage scanner. Three layers, each a byte-at-a-time state machine so
 * that any split of the input gives the same result:
 *   SSE lines  -> the data of each event (or the whole body when not SSE):
 *                 here, with a fast path for one-token events
 *   JSON lexer -> events with the current key path (usage_json.c)
 *   clients    -> the response scanner (usage_scan.c) and the usage-only
 *                 chunk test (sse_filter.c), each reading the lexer's
 *                 events. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "worker/usage.h"
#include "worker/usage_json.h"
#include "worker/usage_scan.h"

enum { L_START, L_FIELD, L_SPACE, L_DATA, L_IGNORE };

static void
sse_event_end(struct kv_usage_scanner *s)
{
	usage_json_reset(&s->json);
	usage_scan_event_reset(s);
	s->sse_data = 0;
}

/* A "data" field starts: lines of one event join with '\n', which JSON
 * reads as whitespace. */
static void
sse_data_line(struct kv_usage_scanner *s)
{
	if (s->sse_data++ > 0)
		usage_scan_json(s, (const unsigned char *)"\n", 1);
}

static void
sse_field_byte(struct kv_usage_scanner *s, unsigned char c)
{
	if (c == ':') {
		s->sse_state = s->sse_fpos == 4 ? L_SPACE : L_IGNORE;
		if (s->sse_fpos == 4)
			sse_data_line(s);
	} else if (s->sse_fpos >= 0 && s->sse_fpos < 4 && c == "data"[s->sse_fpos]) {
		s->sse_fpos++;
	} else {
		s->sse_fpos = -1;
	}
}

/* Everything up to the end of a line; returns how many bytes it took. */
static size_t
sse_line_run(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	const unsigned char *nl = memchr(p, '\n', n), *cr;
	size_t k = nl != NULL ? (size_t)(nl - p) : n;

	if ((cr = memchr(p, '\r', k)) != NULL)
		k = (size_t)(cr - p);
	if (s->sse_state == L_DATA)
		usage_scan_json(s, p, k);
	return k;
}

static void
sse_eol(struct kv_usage_scanner *s, unsigned char c)
{
	if (s->sse_state == L_START)
		sse_event_end(s);
	else if (s->sse_state == L_FIELD && s->sse_fpos == 4)
		sse_data_line(s);	/* "data" alone: an empty data line */
	s->sse_state = L_START;
	s->sse_cr = c == '\r';
}

/* End of the JSON string whose content starts at p: its closing quote. */
static const unsigned char *
str_close(const unsigned char *p, const unsigned char *e)
{
	const unsigned char *q;

	while ((q = memchr(p, '"', (size_t)(e - p))) != NULL) {
		const unsigned char *b = q;

		while (b > p && b[-1] == '\\')
			b--;
		if ((q - b) % 2 == 0)
			return q;	/* not escaped */
		p = q + 1;
	}
	return NULL;
}

/* key_intern for the few names the fast path cares about, by length first:
 * it runs for every member of every event. */
static int
fast_key(const char *k, size_t len)
{
#define FK(name, id) if (memcmp(k, name, len) == 0) return id
	switch (len) {
	case 4:  FK("text", K_TEXT); FK("type", K_TYPE); break;
	case 5:  FK("usage", K_USAGE); FK("model", K_MODEL); break;
	case 7:  FK("content", K_CONTENT); FK("refusal", K_REFUSAL); break;
	case 8:  FK("thinking", K_THINKING); break;
	case 9:  FK("arguments", K_ARGUMENTS); FK("container", K_CONTAINER); break;
	case 12: FK("partial_json", K_PARTIAL_JSON); FK("service_tier", K_SERVICE_TIER); break;
	case 17: FK("reasoning_content", K_REASONING_CONTENT); break;
	}
#undef FK
	return K_OTHER;
}

/* One pass over a line's strings: every member name is a string followed
 * by a colon (a quote inside a string is escaped). Counts the raw bytes of
 * counted keys' string values into cnt[0], the high ones among them into
 * cnt[1] and the non-ASCII characters into cnt[2], and sets *texts when a
 * value was not empty. Returns -1 when lexing could
 * change the result: a non-null "usage", a "model" other than the one
 * seen, a "service_tier" naming another tier than TIER, a "container", a
 * string that does not close, or a member name with an escape in it
 * ("mod\u0065l" is "model" to the lexer and to every client). */
static int
line_fast_count(const unsigned char *p, size_t n, const char *model, int tier, int64_t cnt[3],
    int *texts)
{
	const unsigned char *e = p + n, *q, *v, *ve;
	size_t kl;
	int key;

	while ((q = memchr(p, '"', (size_t)(e - p))) != NULL) {
		if ((p = str_close(q + 1, e)) == NULL)
			return -1;
		kl = (size_t)(p - q - 1);
		for (v = ++p; v < e && is_ws(*v); v++)
			;
		if (v >= e || *v != ':')
			continue;	/* a string value, not a member name */
		for (v++; v < e && is_ws(*v); v++)
			;
		if (memchr(q + 1, '\\', kl) != NULL)
			return -1;
		key = fast_key((const char *)q + 1, kl);
		if (key == K_USAGE && (v >= e || *v != 'n'))
			return -1;
		/* Anthropic's end of message makes its usage final */
		if (key == K_TYPE && e - v >= 14 && memcmp(v, "\"message_stop\"", 14) == 0)
			return -1;
		/* and its error event makes a cut of it */
		if (key == K_TYPE && e - v >= 7 && memcmp(v, "\"error\"", 7) == 0)
			return -1;
		/* Anthropic's code execution is charged where a container is
		 * named (container_seen): rare, lexed */
		if (key == K_CONTAINER)
			return -1;
		/* a tier other than the one seen would set it (if at the top:
		 * the same tier, or none taken, changes nothing) */
		if (key == K_SERVICE_TIER && v < e && *v == '"') {
			if ((ve = str_close(v + 1, e)) == NULL ||
			    memchr(v + 1, '\\', (size_t)(ve - v - 1)) != NULL ||
			    usage_tier_name((const char *)v + 1, (size_t)(ve - v - 1)) != tier)
				return -1;
			p = ve + 1;
			continue;
		}
		if (v >= e || *v != '"' || (key != K_MODEL && !usage_counted_key(key)))
			continue;
		if ((ve = str_close(v + 1, e)) == NULL)
			return -1;
		if (key == K_MODEL && ((size_t)(ve - v - 1) != strlen(model) ||
		    memcmp(v + 1, model, (size_t)(ve - v - 1)) != 0))
			return -1;
		if (key != K_MODEL) {
			cnt[0] += ve - v - 1;
			usage_count_high(v + 1, (size_t)(ve - v - 1), &cnt[1], &cnt[2]);
			*texts |= ve - v - 1 > 0;
		}
		p = ve + 1;
	}
	return 0;
}

/* Most events of a stream are one token of text: once the model is known,
 * an event that is a single whole data line with no usage in it needs no
 * JSON lexing, only its text counted (40+ instructions a byte saved).
 * Returns the bytes skipped, 0 to lex the line as usual. */
static size_t
sse_skip_event(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	const unsigned char *nl;
	int64_t cnt[3] = { 0, 0, 0 };
	int texts = 0;
	size_t k, end;

	/* (a Gemini chunk carries usageMetadata, which the fast count
	 * does not look for) */
	if (s->model[0] == '\0' || s->api == KV_API_OPENAI_RESPONSES || s->api == KV_API_GEMINI ||
	    s->sse_data != 1 || s->json.state != S_VALUE || s->json.depth != 0 ||
	    (nl = memchr(p, '\n', n)) == NULL)
		return 0;
	k = (size_t)(nl - p);
	end = k + 1;
	/* the event must end right here: a blank line follows */
	if (!(end < n && (p[end] == '\n' || (p[end] == '\r' && end + 1 < n &&
	    p[end + 1] == '\n'))))
		return 0;
	if (k > 0 && p[k - 1] == '\r')
		k--;
	if (memchr(p, '\r', k) != NULL || line_fast_count(p, k, s->model, (int)s->usage.tier, cnt, &texts) == -1)
		return 0;
	s->json.nbytes += cnt[0];
	s->json.nhigh += cnt[1];
	s->json.nchars += cnt[2];
	s->output_events += texts;
	usage_json_fail(&s->json);	/* nothing more of this event is read */
	return k;
}

static void
sse_feed(struct kv_usage_scanner *s, const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = p[i];

		if (s->sse_cr) {
			s->sse_cr = 0;
			if (c == '\n') {
				i++;
				continue;
			}
		}
		if (c == '\r' || c == '\n') {
			sse_eol(s, c);
			i++;
			continue;
		}
		switch (s->sse_state) {
		case L_START:
			s->sse_state = c == ':' ? L_IGNORE : L_FIELD;
			s->sse_fpos = 0;
			if (c != ':')
				sse_field_byte(s, c);
			i++;
			break;
		case L_FIELD:
			sse_field_byte(s, c);
			i++;
			break;
		case L_SPACE:
			s->sse_state = L_DATA;
			if (c == ' ')
				i++;
			i += sse_skip_event(s, p + i, n - i);
			break;
		default:
			i += sse_line_run(s, p + i, n - i);
			break;
		}
	}
}

static void
text_counts(struct kv_usage_scanner *s)
{
	s->output_bytes = s->json.nbytes;
	s->output_high = s->json.nhigh;
	s->output_chars = s->json.nchars;
}

void
kv_usage_feed(struct kv_usage_scanner *s, const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;

	if (s->sse)
		sse_feed(s, p, len);
	else
		usage_scan_json(s, p, len);
	text_counts(s);
}

void
kv_usage_feed_event(struct kv_usage_scanner *s, const char *buf, size_t len)
{
	usage_scan_json(s, (const unsigned char *)buf, len);
	text_counts(s);
}

void
kv_usage_end_event(struct kv_usage_scanner *s)
{
	sse_event_end(s);
}

#define MARK_AT		offsetof(struct kv_usage_scanner, json)
#define MARK_PAST	(MARK_AT + sizeof(struct kv_json))

void
kv_usage_mark(const struct kv_usage_scanner *s, struct kv_usage_mark *m)
{
	memcpy(m->head, s, MARK_AT);
	memcpy(m->tail, (const char *)s + MARK_PAST, sizeof(*s) - MARK_PAST);
	m->text[0] = s->json.nbytes;
	m->text[1] = s->json.nhigh;
	m->text[2] = s->json.nchars;
}

void
kv_usage_undo(struct kv_usage_scanner *s, const struct kv_usage_mark *m)
{
	memcpy(s, m->head, MARK_AT);
	memcpy((char *)s + MARK_PAST, m->tail, sizeof(*s) - MARK_PAST);
	usage_json_reset(&s->json);
	s->json.nbytes = m->text[0];
	s->json.nhigh = m->text[1];
	s->json.nchars = m->text[2];
}

int64_t
kv_usage_output_estimate(const struct kv_usage_scanner *s)
{
	int64_t ascii = s->output_bytes - s->output_high;
	int64_t est = (ascii + 3) / 4 + s->output_chars;

	return est > s->output_events ? est : s->output_events;
}

const struct kv_usage *
kv_usage_result(const struct kv_usage_scanner *s)
{
	return &s->usage;
}

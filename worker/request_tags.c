/* A request's tags header read into its [tag] nodes: see request_tags.h. */
#include "worker/request_tags.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/tags.h"
#include "worker/conn-t.h"
#include "worker/worker.h"

/* One name of the header: a [tag] of the config, or the request's 400. */
static int
one_tag(void *arg, const char *name, size_t len, const char **why)
{
	static char msg[KV_TAG_NAME + 160];	/* the worker answers one head at a time */
	struct kv_conn *c = arg;
	int t = kv_config_tag(c->w->cf, name, len);

	if (t < 0) {
		snprintf(msg, sizeof(msg), "unknown tag '%.*s' in %s: a tag is charged only when "
		    "kilovolt.ini has a [tag %.*s] section", (int)len, name, c->w->cf->tags_header,
		    (int)len, name);
		*why = msg;
		return -1;
	}
	c->req.tag[c->req.ntags++] = (short)t;
	return 0;
}

int
kv_request_tags(struct kv_conn *c, const struct kv_http_request *req, const char **why)
{
	static char msg[160];
	const struct kv_http_header *h = NULL;
	size_t i;

	c->req.ntags = 0;
	for (i = 0; i < req->nheaders; i++) {
		if (!kv_request_tags_header(c, req->headers[i].name, req->headers[i].name_len))
			continue;
		if (h != NULL) {
			*why = "the tags header is repeated: send the tags in one, separated by commas";
			return -1;
		}
		h = &req->headers[i];
	}
	if (h == NULL || h->value_len == 0)
		return 0;
	switch (kv_tags_split(h->value, h->value_len, c->w->cf->max_tags, one_tag, c, why)) {
	case -2:
		snprintf(msg, sizeof(msg), "%s names more than %d tags ([budget] max_tags)",
		    c->w->cf->tags_header, c->w->cf->max_tags);
		*why = msg;
		return -1;
	case -1:
	case -3:
		return -1;
	default:
		return 0;
	}
}

int
kv_request_tags_header(const struct kv_conn *c, const char *name, size_t len)
{
	const struct kv_config *cf = c->w->cf;

	return cf->tags_header_len == len && strncasecmp(name, cf->tags_header, len) == 0;
}
